// Each subcommand lives in its own file (cmd_<name>.cc) and registers itself here.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>

namespace trnsim::cli {

struct Io {
  std::ostream& out;
  std::ostream& err;
};

// Adds the subcommand to `app`; its callback writes to `io`.
void setup_spec_command(CLI::App& app, Io& io);

// What `trnsim` with no arguments runs: the built-in default job.
void run_default_job(Io& io);

}  // namespace trnsim::cli
