#include "cli/cli.h"

#include <fmt/format.h>

#include <ostream>

#include "base/error.h"
#include "cli/commands.h"

namespace trnsim::cli {

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Io io{out, err, 0, "trnsim"};
  for (const std::string& a : args) io.command_line += " " + a;
  CLI::App app{"trnsim: the AWS Trainium family, simulated (bit-accurate, cycle-approximate)",
               "trnsim"};
  app.set_version_flag("--version", std::string("trnsim ") + TRNSIM_VERSION);
  app.require_subcommand(0, 1);
  setup_spec_command(app, io);
  setup_collective_command(app, io);
  setup_check_command(app, io);
  setup_run_command(app, io);
  setup_validate_command(app, io);

  try {
    // CLI11 wants argv order reversed when given a vector.
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
    if (app.get_subcommands().empty()) run_default_job(io);
    return io.status;
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  } catch (const InputError& e) {
    err << "trnsim: error: " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    err << "trnsim: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace trnsim::cli
