// What `trnsim` (and `python -m trnsim`) does with no arguments: the NKI tutorial's fully
// optimised matmul on one NeuronCore of Trn1, Trn2 and Trn3, values and time from the same run,
// printed as the equivalent `trnsim run` command would print it.
#include <ostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/commands.h"

namespace trnsim::cli {

void run_default_job(Io& io) {
  const std::vector<std::string> args{
      "run", "matmul_fully_optimized", "m=2048", "k=1024", "n=1024", "--chip", "trn1,trn2,trn3"};
  std::string shown = "trnsim";
  for (const std::string& a : args) shown += " " + a;
  io.out << "$ " << shown << "\n";
  io.status = run(args, io.out, io.err);
  io.out << "\nMore: trnsim run --list (kernels), trnsim validate (against hardware), trnsim spec "
            "--compare trn1 trn2 trn3 (generations), trnsim --help.\n";
}

}  // namespace trnsim::cli
