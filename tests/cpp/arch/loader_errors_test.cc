// Every malformed data file is rejected with an InputError that names the file, the line and the
// dotted key, so a user can go straight to the mistake.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "arch/arch.h"
#include "base/error.h"

namespace trnsim::arch {
namespace {

const std::string kBad = std::string(TRNSIM_TEST_DATA_DIR) + "/spec_bad/";

struct BadCase {
  const char* file;  // the file loaded, and (unless `in` is set) the one the error names
  int line;
  const char* key;
  const char* says;          // part of the detail
  const char* in = nullptr;  // the file the error names, when it is another one
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.file; }

class SpecLoaderErrors : public testing::TestWithParam<BadCase> {};

TEST_P(SpecLoaderErrors, NamesFileLineAndKey) {
  const BadCase& c = GetParam();
  const std::string named = c.in != nullptr ? c.in : c.file;
  try {
    load_chip(kBad + c.file);
    FAIL() << c.file << " loaded without error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.where(), kBad + named + ":" + std::to_string(c.line)) << what;
    EXPECT_EQ(e.key(), c.key) << what;
    EXPECT_NE(what.find(named + ":" + std::to_string(c.line)), std::string::npos) << what;
    if (*c.key != '\0') EXPECT_NE(what.find(c.key), std::string::npos) << what;
    EXPECT_NE(e.detail().find(c.says), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SpecBad, SpecLoaderErrors,
    testing::Values(
        BadCase{"unknown_key.toml", 2, "cores_per_chip", "unknown key"},
        BadCase{"nested_unknown_key.toml", 11, "core.tensor.clok_ghz",
                "did you mean 'core.tensor.clock_ghz'"},
        BadCase{"wrong_type.toml", 10, "core.vector.clock_ghz",
                "wrong type: expected float (GHz), got string \"fast\""},
        BadCase{"missing_key.toml", 10, "core.tensor.pe_cols", "missing required key"},
        BadCase{"out_of_range.toml", 11, "core.tensor.clock_ghz", "out of range: 99"},
        BadCase{"missing_src.toml", 11, "chip.hbm.bandwidth_gbps", "no source"},
        BadCase{"bare_value.toml", 10, "chip.cores", "no source"},
        BadCase{"bad_inherits.toml", 4, "meta.inherits", "no chip named 'trn9'"},
        // The cycle closes at cycle_b's `inherits`; the message shows the whole chain.
        BadCase{"cycle_a.toml", 4, "meta.inherits",
                "inheritance cycle: cycle_a.toml -> cycle_b.toml -> cycle_a.toml", "cycle_b.toml"},
        BadCase{"syntax_error.toml", 7, "", "TOML syntax error"},
        BadCase{"unknown_source.toml", 10, "core.tensor.clock_ghz", "unknown source 'AG9'"},
        BadCase{"bad_unit.toml", 7, "chip.hbm.bandwidth_gbps", "unit 'GiB' is not a unit of GB/s"},
        BadCase{"unknown_field.toml", 7, "chip.cc_cores.source", "unknown field of a value"},
        BadCase{"bad_choice.toml", 7, "core.dma.write_barrier", "'sometimes' is not one of"},
        BadCase{"bad_drop.toml", 5, "meta.drop", "did you mean 'core.tensor.clock_ghz'"},
        BadCase{"value_is_table.toml", 7, "core.tensor", "is a table of keys, not a value"}));

TEST(SpecLoaderErrors, UnknownChipNameListsTheKnownOnes) {
  try {
    load_chip("trn9");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "trn9");
    EXPECT_NE(e.detail().find("trn2"), std::string::npos) << e.what();
  }
}

TEST(SpecLoaderErrors, MissingFile) {
  EXPECT_THROW(load_chip(kBad + "no_such_file.toml"), InputError);
}

}  // namespace
}  // namespace trnsim::arch

namespace trnsim::arch {
namespace {

// toml++ 3.3.0 has undefined behaviour for some non-ASCII code points (toml_reader.cc): they
// are refused before it parses, naming the file and line, or the --set value.
TEST(SpecLoaderErrors, CodePointsTheTomlParserMishandlesAreRefused) {
  const auto path = std::filesystem::temp_directory_path() / "trnsim_tomlpp_unsafe.toml";
  std::ofstream(path) << "[meta]\ninherits = \"trn2\"\n# \xC2\xB1 2 %\n";
  try {
    load_chip(path.string());
    FAIL() << "loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path.string() + ":3") << e.what();
    EXPECT_NE(std::string(e.what()).find("U+00B1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_chip("trn2", {parse_override("core.name=\"a\xEF\xBB\xB7\"")}), InputError);
  // Other non-ASCII text is still fine in strings (U+2014, an em dash).
  std::ofstream(path) << "[meta]\ninherits = \"trn2\"\n# \xE2\x80\x94 a comment\n";
  EXPECT_EQ(load_chip(path.string()).core.name, load_chip("trn2").core.name);
}

}  // namespace
}  // namespace trnsim::arch
