// Each subcommand lives in its own file (cmd_<name>.cc) and registers itself here.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trnsim::cli {

struct Io {
  std::ostream& out;
  std::ostream& err;
  int status = 0;            // the process exit code a command asks for (1: the run found faults)
  std::string command_line;  // "trnsim run ...", for the manifests of results
};

// Adds the subcommand to `app`; its callback writes to `io`.
void setup_spec_command(CLI::App& app, Io& io);
void setup_collective_command(CLI::App& app, Io& io);
void setup_check_command(CLI::App& app, Io& io);
void setup_run_command(CLI::App& app, Io& io);
void setup_profile_command(CLI::App& app, Io& io);
void setup_validate_command(CLI::App& app, Io& io);
void setup_isa_command(CLI::App& app, Io& io);
void setup_model_command(CLI::App& app, Io& io);
void setup_serve_command(CLI::App& app, Io& io);
void setup_train_command(CLI::App& app, Io& io);
void setup_plan_command(CLI::App& app, Io& io);

// What `trnsim` with no arguments runs: the built-in default job.
void run_default_job(Io& io);

// The manifest a model-level result carries (`model`, `serve`): version, commit, the command
// line, the --set overrides and the spec folder. (cmd_model.cc)
nlohmann::json result_manifest(const Io& io, const std::vector<std::string>& overrides);
// Prints a planner result (`train`, `serve`, `plan`): with --json its JSON and the manifest,
// else its text. (cmd_model.cc)
void print_planner_result(Io& io, bool json, nlohmann::json result, const std::string& text,
                          const std::vector<std::string>& overrides);

// --weights and --quantize (`model`, `serve`): weight-only quantization of the decoder layers'
// linears (graph::ModelRunOptions::weights, quantize_mlp_only). (cmd_model.cc)
void add_weight_options(CLI::App* sub, std::string& weights, std::string& quantize);
// --attention flash|eager (graph/build.h eager_attention).
void add_attention_option(CLI::App* sub, std::string& attention);

// JSON as the commands print it (2-space indent). Bytes that are not UTF-8 (a file name or
// argument echoed in a manifest) become U+FFFD instead of failing the whole output.
inline std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace trnsim::cli
