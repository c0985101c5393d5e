#include "arch/value.h"

#include <fmt/format.h>

#include "base/error.h"

namespace trnsim::arch {

std::string_view type_name(ValueType t) {
  switch (t) {
    case ValueType::kBool:
      return "bool";
    case ValueType::kInt:
      return "int";
    case ValueType::kFloat:
      return "float";
    case ValueType::kString:
      return "string";
    case ValueType::kIntList:
      return "int list";
    case ValueType::kStringList:
      return "string list";
  }
  return "?";
}

ValueType type_of(const Value& v) { return static_cast<ValueType>(v.index()); }

namespace {
// Shortest text that reads back to the same double ("2.4", not "2.3999999999999999").
std::string number_text(double d) { return fmt::format("{}", d); }
}  // namespace

std::string to_string(const Value& v) {
  switch (type_of(v)) {
    case ValueType::kBool:
      return std::get<bool>(v) ? "true" : "false";
    case ValueType::kInt:
      return std::to_string(std::get<int64_t>(v));
    case ValueType::kFloat:
      return number_text(std::get<double>(v));
    case ValueType::kString:
      return std::get<std::string>(v);
    case ValueType::kIntList:
      return fmt::format("[{}]", fmt::join(std::get<std::vector<int64_t>>(v), ", "));
    case ValueType::kStringList:
      return fmt::format("[{}]", fmt::join(std::get<std::vector<std::string>>(v), ", "));
  }
  return {};
}

nlohmann::json to_json(const Value& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

bool is_number(const Value& v) {
  return type_of(v) == ValueType::kInt || type_of(v) == ValueType::kFloat;
}

double as_number(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  TRNSIM_ASSERT(false && "as_number on a non-numeric value");
  return 0;
}

}  // namespace trnsim::arch
