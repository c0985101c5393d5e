#include <fmt/format.h>

#include <array>

#include "base/error.h"
#include "fabric/plan.h"

namespace trnsim::fabric {

namespace {
constexpr std::array<std::pair<Op, std::string_view>, 7> kOps{{
    {Op::kAllReduce, "all-reduce"},
    {Op::kReduceScatter, "reduce-scatter"},
    {Op::kAllGather, "all-gather"},
    {Op::kAllToAll, "all-to-all"},
    {Op::kAllToAllV, "all-to-all-v"},
    {Op::kBroadcast, "broadcast"},
    {Op::kPermute, "permute"},
}};
}  // namespace

std::string_view op_name(Op op) {
  for (auto [o, n] : kOps)
    if (o == op) return n;
  return "?";
}

Op parse_op(std::string_view name) {
  for (auto [o, n] : kOps)
    if (n == name) return o;
  throw InputError("", std::string(name),
                   fmt::format("unknown collective; known: {}", fmt::join(op_names(), ", ")));
}

std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (auto [o, n] : kOps) out.emplace_back(n);
  return out;
}

double busbw_factor(Op op, int64_t ranks) {
  const double r = static_cast<double>(ranks);
  switch (op) {
    case Op::kAllReduce:
      return 2 * (r - 1) / r;
    case Op::kReduceScatter:
    case Op::kAllGather:
    case Op::kAllToAll:
    case Op::kAllToAllV:
      return (r - 1) / r;
    case Op::kBroadcast:
    case Op::kPermute:
      return 1;
  }
  return 1;
}

}  // namespace trnsim::fabric
