// The value of one spec key, as the schema sees it: one of six shapes. Typed fields of the spec
// tree (chip_spec.h) convert to and from this at the schema's boundary only, so the loader,
// overrides, JSON dump and `--keys` listing each handle six shapes instead of every field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace trnsim::arch {

enum class ValueType : uint8_t { kBool, kInt, kFloat, kString, kIntList, kStringList };

using Value = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                           std::vector<std::string>>;

// "bool", "int", "float", "string", "int list", "string list".
std::string_view type_name(ValueType t);
ValueType type_of(const Value& v);

// Human form: 2.4, 128, true, "inf" (unquoted), [128, 64, 32].
std::string to_string(const Value& v);
nlohmann::json to_json(const Value& v);

// A number for figures and ratios; only for int and float values (is_number).
double as_number(const Value& v);
bool is_number(const Value& v);

}  // namespace trnsim::arch
