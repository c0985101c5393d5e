#include <iostream>
#include <string>
#include <vector>

#include "base/interrupt.h"
#include "cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Ctrl-C stops a simulation at its next check (base/interrupt.h) and exits 130.
  const trnsim::SigintScope sigint;
  return trnsim::cli::run(args, std::cout, std::cerr);
}
