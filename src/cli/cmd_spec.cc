// Placeholder until the arch layer's `trnsim spec` lands (being written now).
#include <ostream>

#include "cli/commands.h"

namespace trnsim::cli {

void setup_spec_command(CLI::App& app, Io& io) {
  auto* sub = app.add_subcommand("spec", "print a Trainium generation's specification");
  sub->callback([&io] { io.out << "spec: not yet\n"; });
}

void run_default_job(Io& io) { io.out << "trnsim\n"; }

}  // namespace trnsim::cli
