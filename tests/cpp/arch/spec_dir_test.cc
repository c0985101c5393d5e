// Chip names resolve in $TRNSIM_SPEC_DIR when it is set (an installed package), else in the
// source tree's spec/ directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "arch/arch.h"
#include "base/error.h"

namespace trnsim::arch {
namespace {

namespace fs = std::filesystem;

class SpecDirEnv : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trnsim_spec_dir_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "chips");
    fs::copy_file(fs::path(TRNSIM_SPEC_SOURCE_DIR) / "chips" / "trn2.toml",
                  dir_ / "chips" / "trn2x.toml", fs::copy_options::overwrite_existing);
    ::setenv("TRNSIM_SPEC_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("TRNSIM_SPEC_DIR");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(SpecDirEnv, NamesResolveInTheEnvironmentsDirectory) {
  EXPECT_EQ(spec_dir(), dir_);
  EXPECT_EQ(list_chips(), std::vector<std::string>{"trn2x"});
  EXPECT_EQ(load_chip("trn2x").chip.cores, 8);
  EXPECT_THROW(load_chip("trn3"), InputError);
}

TEST(SpecDir, DefaultIsTheSourceTree) {
  if (std::getenv("TRNSIM_SPEC_DIR") != nullptr) GTEST_SKIP() << "TRNSIM_SPEC_DIR is set";
  EXPECT_EQ(spec_dir(), fs::path(TRNSIM_SPEC_SOURCE_DIR));
  const auto chips = list_chips();
  EXPECT_NE(std::find(chips.begin(), chips.end(), "trn4-projected"), chips.end());
  // An argument with a '/' is a path, not a name.
  EXPECT_EQ(load_chip(std::string(TRNSIM_SPEC_SOURCE_DIR) + "/chips/trn1.toml").meta.name, "trn1");
}

}  // namespace
}  // namespace trnsim::arch
