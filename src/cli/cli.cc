#include "cli/cli.h"

#include <fmt/format.h>

#include <new>
#include <ostream>

#include "base/error.h"
#include "base/interrupt.h"
#include "cli/commands.h"

namespace trnsim::cli {

namespace {

int run_app(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Io io{out, err, 0, "trnsim"};
  for (const std::string& a : args) io.command_line += " " + a;
  CLI::App app{"trnsim: the AWS Trainium family, simulated (bit-accurate, cycle-approximate)",
               "trnsim"};
  app.set_version_flag("--version",
                       std::string("trnsim ") + TRNSIM_VERSION + " (commit " + commit() + ")");
  app.require_subcommand(0, 1);
  setup_spec_command(app, io);
  setup_collective_command(app, io);
  setup_check_command(app, io);
  setup_run_command(app, io);
  setup_profile_command(app, io);
  setup_validate_command(app, io);
  setup_isa_command(app, io);
  setup_model_command(app, io);
  setup_serve_command(app, io);
  setup_train_command(app, io);
  setup_plan_command(app, io);

  try {
    // CLI11 wants argv order reversed when given a vector.
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
    if (app.get_subcommands().empty()) run_default_job(io);
    return io.status;
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with code 0; every other parse error is bad input,
    // reported as every other error is (CLI11's own codes, 105 and up, say nothing to a shell).
    if (e.get_exit_code() == 0) return app.exit(e, out, err);
    err << "trnsim: error: " << e.what() << " (trnsim [COMMAND] --help lists the options)\n";
    return kExitBadInput;
  }
}

}  // namespace

// The one error boundary of the command: whatever a subcommand throws ends here as one line
// on `err` and an exit code, never as an escaping exception, a traceback or abort().
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    return run_app(args, out, err);
  } catch (const Interrupted&) {
    out.flush();
    err << "trnsim: interrupted\n";
    return kExitInterrupted;
  } catch (const InternalError& e) {
    err << "trnsim: " << e.what()
        << "\ntrnsim: this is a bug in trnsim, not in the input; please report it with the "
           "command line above\n";
    return kExitInternal;
  } catch (const Error& e) {  // InputError and the like: the message names the input
    err << "trnsim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    err << "trnsim: error: out of host memory (lower the problem size, or see --help for the "
           "limits)\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    // A library below trnsim refused the input (a length error, an out-of-range conversion):
    // reported as bad input, with what the library said.
    err << "trnsim: error: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace trnsim::cli
