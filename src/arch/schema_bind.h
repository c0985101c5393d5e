// How a schema row binds to a member of ChipSpec. Internal to the schema_*.cc files.
//
// TRNSIM_KEY(tensor.clock_ghz) expands to the key text "tensor.clock_ghz" and an accessor
// returning that member, so the dotted key and the C++ member path are written once, together,
// and cannot drift apart. A Scope prefixes keys and composes accessors for a sub-tree, so the
// rows of an engine or a system are written once and bound several times.
#pragma once

#include <climits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "arch/schema.h"
#include "numerics/policy_names.h"

#define TRNSIM_KEY(path) \
#path, [](auto& x_) -> auto& { return x_.path; }

namespace trnsim::arch::bind {

// Conversion between a field's C++ type and the schema Value, plus its default constraints.
template <class T>
struct Traits;

template <>
struct Traits<bool> {
  static constexpr ValueType type = ValueType::kBool;
  static void set(bool& f, const Value& v) { f = std::get<bool>(v); }
  static Value get(bool f) { return f; }
};
template <>
struct Traits<int> {
  static constexpr ValueType type = ValueType::kInt;
  static constexpr double lo = 0, hi = INT_MAX;
  static void set(int& f, const Value& v) { f = static_cast<int>(std::get<int64_t>(v)); }
  static Value get(int f) { return int64_t{f}; }
};
template <>
struct Traits<int64_t> {
  static constexpr ValueType type = ValueType::kInt;
  static constexpr double lo = 0, hi = 1e15;
  static void set(int64_t& f, const Value& v) { f = std::get<int64_t>(v); }
  static Value get(int64_t f) { return f; }
};
template <>
struct Traits<double> {
  static constexpr ValueType type = ValueType::kFloat;
  static void set(double& f, const Value& v) { f = std::get<double>(v); }
  static Value get(double f) { return f; }
};
template <>
struct Traits<std::string> {
  static constexpr ValueType type = ValueType::kString;
  static void set(std::string& f, const Value& v) { f = std::get<std::string>(v); }
  static Value get(const std::string& f) { return f; }
};
template <>
struct Traits<std::vector<int>> {
  static constexpr ValueType type = ValueType::kIntList;
  static constexpr double lo = 0, hi = INT_MAX;
  static void set(std::vector<int>& f, const Value& v) {
    f.clear();
    for (int64_t x : std::get<std::vector<int64_t>>(v)) f.push_back(static_cast<int>(x));
  }
  static Value get(const std::vector<int>& f) { return std::vector<int64_t>(f.begin(), f.end()); }
};
template <>
struct Traits<std::vector<std::string>> {
  static constexpr ValueType type = ValueType::kStringList;
  static void set(std::vector<std::string>& f, const Value& v) {
    f = std::get<std::vector<std::string>>(v);
  }
  static Value get(const std::vector<std::string>& f) { return f; }
};

// Enums are strings in the data, named by the numerics layer (numerics/policy_names.h).
template <class E, E... kValues>
struct EnumTraits {
  static constexpr ValueType type = ValueType::kString;
  static std::vector<std::string_view> names() { return {num::name_of(kValues)...}; }
  static void set(E& f, const Value& v) {
    for (E e : {kValues...}) {
      if (num::name_of(e) == std::get<std::string>(v)) f = e;
    }
  }
  static Value get(E f) { return std::string(num::name_of(f)); }
};
template <>
struct Traits<num::Overflow>
    : EnumTraits<num::Overflow, num::Overflow::kInfinity, num::Overflow::kSaturate> {};
template <>
struct Traits<num::NanMode>
    : EnumTraits<num::NanMode, num::NanMode::kPropagate, num::NanMode::kCanonical> {};

template <class T>
struct Traits<std::optional<T>> {
  static constexpr ValueType type = Traits<T>::type;
  static void set(std::optional<T>& f, const Value& v) { Traits<T>::set(f.emplace(), v); }
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
std::optional<Value> get_value(const T& f) {
  if constexpr (IsOptional<T>::value) {
    if (!f) return std::nullopt;
    return Traits<typename T::value_type>::get(*f);
  } else {
    return Traits<T>::get(f);
  }
}

// The traits of the field itself, looking through std::optional.
template <class T>
struct Inner {
  using type = T;
};
template <class T>
struct Inner<std::optional<T>> {
  using type = T;
};

template <class F>
void default_constraints(KeyInfo& k) {
  using I = typename Inner<F>::type;
  if constexpr (requires { Traits<I>::lo; }) k.range(Traits<I>::lo, Traits<I>::hi);
  if constexpr (requires { Traits<I>::names(); }) {
    for (std::string_view name : Traits<I>::names()) k.choices.emplace_back(name);
  }
}

// A sub-tree of the spec: keys under `prefix`, members reached through `base`.
template <class Base>
class Scope {
 public:
  Scope(Schema& schema, std::string prefix, Base base, std::string group = "")
      : schema_(schema), prefix_(std::move(prefix)), base_(base), group_(std::move(group)) {}

  template <class Acc>
  KeyInfo& add(std::string_view rel, Acc acc, std::string unit, std::string help) {
    auto full = [ base = base_, acc ](auto& s) -> auto& { return acc(base(s)); };
    using F = std::remove_cvref_t<decltype(full(std::declval<ChipSpec&>()))>;
    KeyInfo k;
    k.key = prefix_ + std::string(rel);
    k.type = Traits<F>::type;
    k.unit = std::move(unit);
    k.help = std::move(help);
    k.required = !IsOptional<F>::value;
    k.group = group_;
    default_constraints<F>(k);
    k.set = [full](ChipSpec& s, const Value& v) { Traits<F>::set(full(s), v); };
    k.get = [full](const ChipSpec& s) { return get_value(full(s)); };
    k.clear = [full](ChipSpec& s) { full(s) = F{}; };
    return schema_.add(std::move(k));
  }

  // The sub-tree at member `rel`; `group` makes it an optional table (systems).
  template <class Acc>
  auto scope(std::string_view rel, Acc acc, std::string group = "") const {
    auto full = [ base = base_, acc ](auto& s) -> auto& { return acc(base(s)); };
    return Scope<decltype(full)>(schema_, prefix_ + std::string(rel) + ".", full,
                                 group.empty() ? group_ : std::move(group));
  }

 private:
  Schema& schema_;
  std::string prefix_;
  Base base_;
  std::string group_;
};

inline auto root(Schema& schema) {
  auto self = [](auto& s) -> auto& { return s; };
  return Scope<decltype(self)>(schema, "", self);
}

}  // namespace trnsim::arch::bind
