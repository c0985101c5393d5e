// collective_v between ranks (rank_group.h): NKI's all_to_all_v and all_gather_v, whose sizes
// and places a uint32 metadata tensor of each rank holds when the collective runs (one column
// per rank of the list, in list order; counts and displacements in elements of the flat
// tensors):
//   row 0 send counts, row 1 send displacements, row 2 receive counts (written with what
//   arrived unless kRecvCountsKnown), row 3 receive displacements (with kHasRdispls).
// all_to_all_v: rank i sends src_i[sd_i[j], + sc_i[j]) to rank j, where it lands at
// rd_j[i] (kHasRdispls) or at slot i of n equal slots of dst_j. all_gather_v: rank i sends
// src_i[sd_i[0], + sc_i[0]) to every rank, landing in slot i. Elements of dst that nothing
// lands on keep their values. A chunk outside its src or dst is a kPeer fault of the meeting.
#include <fmt/format.h>

#include <algorithm>

#include "fabric/rank_codes.h"
#include "fabric/rank_group.h"
#include "isa/names.h"
#include "mem/tile_io.h"

namespace trnsim::fabric {

namespace {

using isa::CollectiveKind;
using namespace rank_codes;  // NOLINT(google-build-using-namespace): this layer's own helpers

int rows_of(const isa::Params& p) { return (p.collective_flags & isa::kHasRdispls) != 0 ? 4 : 3; }

}  // namespace

std::string RankGroup::mismatch_v(const std::vector<Arrival>& m) const {
  const isa::Params& p = m[0].ins->p;
  const auto n = static_cast<int64_t>(m.size()) / lnc_;
  for (const Arrival& a : m) {
    const isa::Instruction& in = *a.ins;
    if (in.op != isa::Opcode::kCollectiveV || in.p.collective != p.collective ||
        in.p.collective_flags != p.collective_flags)
      return fmt::format("rank {} issues {} (flags {}), rank {} {} (flags {})", rank_of(m[0].core),
                         isa::name_of(p.collective), p.collective_flags, rank_of(a.core),
                         isa::name_of(in.p.collective), in.p.collective_flags);
    if (src_of(in).dtype != src_of(*m[0].ins).dtype)
      return fmt::format("rank {} moves {}, rank {} {}", rank_of(m[0].core),
                         src_of(*m[0].ins).dtype.name(), rank_of(a.core), src_of(in).dtype.name());
    // Four rows also without receive displacements: the fourth is then not read (NKI's
    // metadata is (4, ranks) whatever the flags; vllm-neuron's wrapper passes it so).
    const int64_t e = meta_of(in).elements();
    if (e != 4 * n && e != rows_of(p) * n)
      return fmt::format(
          "rank {}'s metadata has {} elements: {} rows of one column per rank "
          "({} ranks)",
          rank_of(a.core), e, rows_of(p), n);
  }
  if (p.collective == CollectiveKind::kAllGatherV && (p.collective_flags & isa::kHasRdispls))
    return "all_gather_v places chunk i in slot i: receive displacements are not supported";
  return "";
}

RankGroup::VOutcome RankGroup::compute_v(const std::vector<Arrival>& m, bool values,
                                         std::string& why) {
  const size_t n = m.size();
  const isa::Params& p = m[0].ins->p;
  const int width = src_of(*m[0].ins).dtype.storage_bytes;
  const bool gather = p.collective == CollectiveKind::kAllGatherV;
  VOutcome v;
  v.elements.assign(n, std::vector<int64_t>(n, 0));
  if (!values) {  // timing only: no metadata to read, an even split of each src
    for (size_t i = 0; i < n; ++i) {
      const int64_t s = src_of(*m[i].ins).elements();
      for (size_t j = 0; j < n; ++j) v.elements[i][j] = gather ? s : s / static_cast<int64_t>(n);
    }
    return v;
  }
  // Every rank's metadata [rows][n], src and dst.
  std::vector<std::vector<uint64_t>> meta(n), src(n), dst(n);
  for (size_t j = 0; j < n; ++j) {
    const mem::CoreMemory& mm = members_[static_cast<size_t>(m[j].core)].exec->memory();
    for (const isa::AccessPattern* ap :
         {&dst_of(*m[j].ins), &src_of(*m[j].ins), &meta_of(*m[j].ins)})
      if (std::optional<mem::Fault> f = mm.check(*ap)) {
        why = fmt::format("rank {}: {}", rank_of(m[j].core), f->to_string());
        return {};
      }
    std::vector<uint8_t> bytes;
    mem::read_codes(mm, meta_of(*m[j].ins), bytes);
    meta[j] = to_codes(bytes, 4);
    mem::read_codes(mm, src_of(*m[j].ins), bytes);
    src[j] = to_codes(bytes, width);
    mem::read_codes(mm, dst_of(*m[j].ins), bytes);
    dst[j] = to_codes(bytes, width);
  }
  const auto at = [&](size_t rank, int row, size_t col) {
    return static_cast<int64_t>(meta[rank][static_cast<size_t>(row) * n + col]);
  };
  for (size_t i = 0; i < n; ++i)      // sender
    for (size_t j = 0; j < n; ++j) {  // receiver
      const int64_t count = at(i, 0, gather ? 0 : j), from = at(i, 1, gather ? 0 : j);
      const auto dst_n = static_cast<int64_t>(dst[j].size());
      const int64_t to = (p.collective_flags & isa::kHasRdispls) != 0
                             ? at(j, 3, i)
                             : static_cast<int64_t>(i) * (dst_n / static_cast<int64_t>(n));
      const bool in_src = from + count <= static_cast<int64_t>(src[i].size());
      const bool in_dst = to + count <= dst_n && (count <= dst_n / static_cast<int64_t>(n) ||
                                                  (p.collective_flags & isa::kHasRdispls) != 0);
      if (!in_src || !in_dst) {
        why = fmt::format("rank {} sends {} elements from {} of its {} to rank {} at {} of its {}",
                          rank_of(m[i].core), count, from, src[i].size(), rank_of(m[j].core), to,
                          dst_n);
        return {};
      }
      std::copy_n(src[i].begin() + from, count, dst[j].begin() + to);
      v.elements[i][j] = count;
      if ((p.collective_flags & isa::kRecvCountsKnown) == 0)
        meta[j][2 * n + i] = static_cast<uint64_t>(count);
    }
  for (size_t j = 0; j < n; ++j) {
    v.dst.push_back(to_bytes(dst[j], width));
    v.meta.push_back((p.collective_flags & isa::kRecvCountsKnown) != 0 ? std::vector<uint8_t>{}
                                                                       : to_bytes(meta[j], 4));
  }
  return v;
}

Picoseconds RankGroup::price_v(const std::vector<Arrival>& m, const VOutcome& v) {
  const auto n = static_cast<int64_t>(m.size());
  const num::Format dtype = src_of(*m[0].ins).dtype;
  CollectiveRequest req;
  req.dtype = dtype;
  req.placement = Placement{RankUnit::kCore, n, lnc_, 0};
  int64_t most = 0;  // the largest a rank sends, elements
  for (const auto& row : v.elements) {
    int64_t sent = 0;
    for (int64_t e : row) sent += e;
    most = std::max(most, m[0].ins->p.collective == CollectiveKind::kAllGatherV ? row[0] : sent);
  }
  if (m[0].ins->p.collective == CollectiveKind::kAllGatherV) {
    // As an all-gather of the largest chunk (every rank's slot that size).
    req.op = Op::kAllGather;
    req.bytes = n * most * dtype.storage_bytes;
  } else {
    req.op = Op::kAllToAllV;
    req.bytes = most * dtype.storage_bytes;
    req.a2av = v.elements;
  }
  if (req.bytes == 0) return Picoseconds(0);
  return fabric(n).simulate(req).device;
}

}  // namespace trnsim::fabric
