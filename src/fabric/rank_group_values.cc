// What a meeting of a collective's ranks computes (rank_group.h): whether the ranks agree
// (kind, op, sizes, dtype, permute pairs) and, when they do, each rank's result from every
// rank's src: sums by the fabric's plan for the chosen algorithm (its order of fp32 adds),
// max / min and the moves exactly.
#include <fmt/format.h>

#include <algorithm>

#include "fabric/rank_codes.h"
#include "fabric/rank_group.h"
#include "isa/names.h"
#include "mem/tile_io.h"
#include "numerics/convert.h"

namespace trnsim::fabric {

namespace {

using isa::CollectiveKind;
using namespace rank_codes;  // NOLINT(google-build-using-namespace): this layer's own helpers

}  // namespace

std::string RankGroup::mismatch(const std::vector<Arrival>& m) const {
  if (m[0].ins->op == isa::Opcode::kCollectiveV) return mismatch_v(m);
  const isa::Instruction& first = *m[0].ins;
  const auto n = static_cast<int64_t>(m.size()) / lnc_;  // ranks
  const isa::Params& p = first.p;
  for (const Arrival& a : m) {
    if (lnc_ > 1 &&
        (dst_of(*a.ins).space != isa::Space::kHbm || src_of(*a.ins).space != isa::Space::kHbm))
      return fmt::format(
          "rank {} has {} physical cores, each with SBUF of its own: trnsim runs "
          "the collectives of such ranks on HBM tensors",
          rank_of(a.core), lnc_);
    const isa::Instruction& in = *a.ins;
    if (in.p.collective != p.collective || in.p.reduce_op != p.reduce_op ||
        in.p.collective_outer != p.collective_outer)
      return fmt::format("rank {} issues {} (op {}, outer {}), rank {} {} (op {}, outer {})",
                         rank_of(m[0].core), isa::name_of(p.collective), isa::name_of(p.reduce_op),
                         p.collective_outer, rank_of(a.core), isa::name_of(in.p.collective),
                         isa::name_of(in.p.reduce_op), in.p.collective_outer);
    if (src_of(in).dtype != src_of(first).dtype ||
        src_of(in).elements() != src_of(first).elements() ||
        dst_of(in).elements() != dst_of(first).elements())
      return fmt::format("rank {} gives {} src elements of {} into {}, rank {} {} of {} into {}",
                         rank_of(m[0].core), src_of(first).elements(), src_of(first).dtype.name(),
                         dst_of(first).elements(), rank_of(a.core), src_of(in).elements(),
                         src_of(in).dtype.name(), dst_of(in).elements());
  }
  const int64_t s = src_of(first).elements(), d = dst_of(first).elements();
  const int64_t outer = p.collective_outer;
  switch (p.collective) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kPermute:
      break;
    case CollectiveKind::kAllGather:
      if (d != n * s)
        return fmt::format("all_gather of {} ranks: dst has {} elements, src {} (dst = {} x src)",
                           n, d, s, n);
      break;
    case CollectiveKind::kReduceScatter:
      if (s != n * d)
        return fmt::format(
            "reduce_scatter of {} ranks: src has {} elements, dst {} (src = {} x "
            "dst)",
            n, s, d, n);
      [[fallthrough]];
    case CollectiveKind::kAllToAll:
      if (s % (outer * n) != 0)
        return fmt::format(
            "{} of {} ranks: the collective dim of src ({} elements, {} blocks) "
            "does not split into {} chunks",
            isa::name_of(p.collective), n, s, outer, n);
      break;
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
      // Validation refuses them on a collective; collective_v meets in rank_group_v.cc.
      return fmt::format("{} reads its sizes at run time: it is a collective_v",
                         isa::name_of(p.collective));
  }
  if (p.collective == CollectiveKind::kPermute) {
    const auto at = [&](int rank) -> const Arrival* {
      for (const Arrival& a : m)
        if (rank_of(a.core) == rank) return &a;
      return nullptr;
    };
    for (const Arrival& a : m) {
      const int to = a.ins->p.send_to, from = a.ins->p.recv_from;
      const Arrival* t = to >= 0 ? at(to) : nullptr;
      const Arrival* f = from >= 0 ? at(from) : nullptr;
      const int rank = rank_of(a.core);
      if ((to >= 0 && (t == nullptr || t->ins->p.recv_from != rank)) ||
          (from >= 0 && (f == nullptr || f->ins->p.send_to != rank)))
        return fmt::format(
            "permute: rank {} sends to {} and receives from {}; the pairs of the "
            "ranks do not agree",
            a.core, to, from);
    }
  }
  return "";
}

std::vector<std::vector<uint8_t>> RankGroup::compute(const std::vector<Arrival>& m,
                                                     std::string& why) {
  const size_t n = m.size();
  const isa::Params& p = m[0].ins->p;
  const num::Format dtype = src_of(*m[0].ins).dtype;
  const int width = dtype.storage_bytes;
  std::vector<std::vector<uint64_t>> src(n);
  for (size_t j = 0; j < n; ++j) {
    const core::Executor& ex = *members_[static_cast<size_t>(m[j].core)].exec;
    for (const isa::AccessPattern* ap : {&src_of(*m[j].ins), &dst_of(*m[j].ins)})
      if (std::optional<mem::Fault> f = ex.memory().check(*ap)) {
        why = fmt::format("rank {}: {}", rank_of(m[j].core), f->to_string());
        return {};
      }
    std::vector<uint8_t> bytes;
    mem::read_codes(ex.memory(), src_of(*m[j].ins), bytes);
    src[j] = to_codes(bytes, width);
  }
  const auto S = static_cast<int64_t>(src[0].size());
  const int64_t outer = p.collective_outer;
  const auto N = static_cast<int64_t>(n);
  std::vector<std::vector<uint64_t>> out(n);
  // Element-wise max / min over the ranks (exact: one of the values, whatever the order).
  const auto extreme = [&](int64_t i, const auto& value_of) {
    uint64_t best = value_of(0, i);
    for (size_t r = 1; r < n; ++r) {
      const uint64_t c = value_of(r, i);
      const double a = num::decode(dtype, best), b = num::decode(dtype, c);
      if (p.reduce_op == isa::AluOp::kMax ? b > a : b < a) best = c;
    }
    return best;
  };
  const auto add_by_fabric = [&](Op op, std::vector<std::vector<uint64_t>> data) {
    Buffers buf;
    buf.data = std::move(data);
    CollectiveRequest req;
    req.op = op;
    req.dtype = dtype;
    req.bytes = static_cast<int64_t>(buf.data[0].size()) * width;
    req.placement = Placement{RankUnit::kCore, N, lnc_, 0};
    fabric(N).run(req, buf);
    return std::move(buf.data);
  };
  switch (p.collective) {
    case CollectiveKind::kAllReduce:
      if (p.reduce_op == isa::AluOp::kAdd) {
        out = add_by_fabric(Op::kAllReduce, src);
      } else {
        std::vector<uint64_t> r(static_cast<size_t>(S));
        for (int64_t i = 0; i < S; ++i)
          r[static_cast<size_t>(i)] =
              extreme(i, [&](size_t k, int64_t e) { return src[k][static_cast<size_t>(e)]; });
        out.assign(n, r);
      }
      break;
    case CollectiveKind::kAllGather: {
      const int64_t inner = S / outer;
      std::vector<uint64_t> g(static_cast<size_t>(N * S));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t r = 0; r < N; ++r)
          std::copy_n(src[static_cast<size_t>(r)].begin() + o * inner, inner,
                      g.begin() + (o * N + r) * inner);
      out.assign(n, g);
      break;
    }
    case CollectiveKind::kReduceScatter: {
      // src as (outer, N, inner): rank j keeps the reduction of chunk j, as (outer, inner).
      const int64_t inner = S / (outer * N), D = S / N;
      const auto at = [&](int64_t j, int64_t e) {  // element e of chunk j, in src order
        return (e / inner) * N * inner + j * inner + e % inner;
      };
      if (p.reduce_op == isa::AluOp::kAdd) {
        // Chunk-major for the fabric's blocks (block j = chunk j), then back.
        std::vector<std::vector<uint64_t>> data(n, std::vector<uint64_t>(static_cast<size_t>(S)));
        for (size_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < N; ++j)
            for (int64_t e = 0; e < D; ++e)
              data[r][static_cast<size_t>(j * D + e)] = src[r][static_cast<size_t>(at(j, e))];
        data = add_by_fabric(Op::kReduceScatter, std::move(data));
        for (size_t j = 0; j < n; ++j)
          out[j].assign(data[j].begin() + static_cast<int64_t>(j) * D,
                        data[j].begin() + static_cast<int64_t>(j + 1) * D);
      } else {
        for (size_t j = 0; j < n; ++j) {
          out[j].resize(static_cast<size_t>(D));
          for (int64_t e = 0; e < D; ++e)
            out[j][static_cast<size_t>(e)] =
                extreme(at(static_cast<int64_t>(j), e),
                        [&](size_t k, int64_t i) { return src[k][static_cast<size_t>(i)]; });
        }
      }
      break;
    }
    case CollectiveKind::kAllToAll: {
      // src as (outer, N, inner): chunk r of rank j's dst is chunk j of rank r's src.
      const int64_t inner = S / (outer * N);
      for (size_t j = 0; j < n; ++j) {
        out[j].resize(static_cast<size_t>(S));
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t r = 0; r < N; ++r)
            std::copy_n(
                src[static_cast<size_t>(r)].begin() + (o * N + static_cast<int64_t>(j)) * inner,
                inner, out[j].begin() + (o * N + r) * inner);
      }
      break;
    }
    case CollectiveKind::kPermute:
      for (size_t j = 0; j < n; ++j) {
        const int from = m[j].ins->p.recv_from;
        for (size_t k = 0; k < n; ++k)
          if (rank_of(m[k].core) == from) out[j] = src[k];  // none: dst keeps its values
      }
      break;
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
      break;  // refused by mismatch()
  }
  std::vector<std::vector<uint8_t>> bytes(n);
  for (size_t j = 0; j < n; ++j) bytes[j] = to_bytes(out[j], width);
  return bytes;
}

}  // namespace trnsim::fabric
