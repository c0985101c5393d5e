// Chip, system and runtime inputs that once got past the loaders (found by fuzzing,
// docs/fuzzing.md): each is an InputError now, not an overflow, an endless read, an escaping
// filesystem_error or a value silently dropped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "arch/arch.h"
#include "base/error.h"
#include "fabric/runtime.h"
#include "fabric/system.h"

namespace trnsim::fabric {
namespace {

namespace fs = std::filesystem;

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("trnsim_loader_inputs_" + name + ".toml");
  std::ofstream(p) << text;
  return p;
}

TEST(LoaderInputs, TorusSizesWhoseProductOverflows) {
  const fs::path p = write_temp("torus", R"([meta]
name = "x"
chip = "trn2"
status = "what-if"
[server]
chips = 16
torus_dims = [4096, 4096, 4096, 4096, 4096, 4096]
link_gbps = 1
[collective]
step_latency_ns = 1
)");
  EXPECT_THROW(load_system(p.string()), InputError);
  fs::remove(p);
}

TEST(LoaderInputs, OnlyRegularFilesAreRead) {
  const fs::path p = write_temp("dev_zero", "[meta]\ninherits = \"/dev/zero\"\n");
  EXPECT_THROW(load_system(p.string()), InputError);
  fs::remove(p);
  EXPECT_THROW(load_system("/dev/zero"), InputError);
  EXPECT_THROW(load_runtime("/dev/zero"), InputError);
  EXPECT_THROW(load_runtime(fs::temp_directory_path().string() + "/"), InputError);
}

TEST(LoaderInputs, NamesTooLongForTheFileSystem) {
  // ENAMETOOLONG made std::filesystem::is_regular_file throw filesystem_error.
  const std::string name(300, 'x');
  EXPECT_THROW(arch::load_chip(name), InputError);
  EXPECT_THROW(arch::load_chip(name + ".toml"), InputError);
  EXPECT_THROW(load_system(name), InputError);
  EXPECT_THROW(load_system(name + ".toml"), InputError);
  EXPECT_THROW(load_runtime(name), InputError);
}

TEST(LoaderInputs, RuntimeMetaIsATableOfStrings) {
  // Complete but for [meta], so nothing else stops the load.
  const std::string rest = R"(
[launch]
launch_us = { v = 58, assume = "test" }
overlap_us = { v = 20, assume = "test" }
[sync]
peer_us = { v = 4, assume = "test" }
efa_message_us = { v = 13, assume = "test" }
ranks_per_proxy = { v = 32, assume = "test" }
[select]
mesh_max_bytes = { v = 1, unit = "MiB", assume = "test" }
rdh_max_bytes = { v = 56, unit = "MiB", assume = "test" }
mesh_max_ranks = { v = 512, assume = "test" }
inter_ring_max_servers = { v = 16, assume = "test" }
)";
  const fs::path good = write_temp("runtime_good", "[meta]\nname = \"r\"\n" + rest);
  EXPECT_EQ(load_runtime(good.string()).name, "r");
  const fs::path number = write_temp("runtime_meta_number", "[meta]\nname = 5\n" + rest);
  EXPECT_THROW(load_runtime(number.string()), InputError);
  const fs::path scalar = write_temp("runtime_meta_scalar", "meta = 5\n" + rest);
  EXPECT_THROW(load_runtime(scalar.string()), InputError);
  for (const fs::path& p : {good, number, scalar}) fs::remove(p);
}

}  // namespace
}  // namespace trnsim::fabric
