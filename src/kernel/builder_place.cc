// build()'s placement step (builder.h, placement.h): tiles placed by live range, spills added as
// DMAs through HBM, every operand rewritten to its tile's place, and the dependencies resolved
// on the final addresses, in the order the kernel emitted its instructions.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "base/error.h"
#include "isa/op_table.h"
#include "kernel/builder.h"
#include "kernel/placement.h"

namespace trnsim::kernel {

namespace {

std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out.empty() ? "tile" : out;
}

// Element-wise ops: each element is read before it is written, at the same place, so the
// result may go over a dying input (placement.h, "In place").
bool element_wise(isa::Opcode op) {
  switch (op) {
    case isa::Opcode::kTensorTensor:
    case isa::Opcode::kTensorScalar:
    case isa::Opcode::kScalarTensorTensor:
    case isa::Opcode::kActivation:
    case isa::Opcode::kTensorCopy:
    case isa::Opcode::kTensorTensorScan:
    case isa::Opcode::kSelect:
    case isa::Opcode::kReciprocal:
    case isa::Opcode::kExponential:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<int32_t> KernelBuilder::in_place_sources(const std::vector<uint64_t>& first_use) const {
  std::vector<int32_t> reuse(uses_.size(), -1);
  // A use's rectangle relative to its tile's (virtual) base.
  const auto relative = [&](const UseRec& r) {
    Rect x = r.where.rect;
    const int64_t b0 = footprint(tiles_[static_cast<size_t>(r.tile)].whole).rect.b0;
    x.b0 -= b0;
    x.b1 -= b0;
    return x;
  };
  for (size_t k = 0; k < order_.size(); ++k) {
    const InstrRef ref = order_[k].ref;
    if (!element_wise(prog_.stream(ref.stream)[static_cast<size_t>(ref.index)].op)) continue;
    for (uint64_t w = first_use[k]; w < first_use[k + 1]; ++w) {
      const UseRec& out = uses_[w];
      if (out.tile < 0 || !out.write || !out.whole) continue;
      const Rect at = relative(out);
      for (uint64_t r = first_use[k]; r < first_use[k + 1]; ++r) {
        const UseRec& in = uses_[r];
        if (in.tile < 0 || in.write || in.tile == out.tile ||
            in.where.key.space != out.where.key.space ||
            tiles_[static_cast<size_t>(in.tile)].bytes !=
                tiles_[static_cast<size_t>(out.tile)].bytes)
          continue;
        const Rect from = relative(in);
        if (from.p0 == at.p0 && from.p1 == at.p1 && from.b0 == at.b0 && from.b1 == at.b1) {
          reuse[w] = in.tile;
          break;
        }
      }
    }
  }
  return reuse;
}

void KernelBuilder::place() {
  // Where each use's tile is placed (on chip; HBM uses keep their addresses).
  std::vector<int64_t> base_of(uses_.size(), 0);
  std::vector<uint64_t> first_use(order_.size() + 1, 0);  // order_[k]'s uses start here
  for (size_t k = 0; k < order_.size(); ++k) first_use[k + 1] = first_use[k] + order_[k].uses;

  // A loop's body runs again and again at the same places. A tile whose value crosses from
  // one iteration to the next (its first use in the body reads it, or writes part of it) keeps
  // one residency from the body's first instruction to its last (two extra reads), and no
  // write in the body starts a new live range of it; a tile the body writes whole before
  // reading it is the body's own, placed by live range within the body as anywhere else.
  std::vector<bool> carried(uses_.size(), false);  // per use: of a tile a loop carries
  std::vector<std::vector<std::pair<int64_t, int32_t>>> extra(order_.size());  // (k, tile)
  for (const LoopRec& L : loops_) {
    std::vector<int8_t> seen(tiles_.size(), 0);  // 0: not yet, 1: carried, 2: the body's own
    for (size_t k = L.first_order; k < L.end_order; ++k)
      for (uint64_t u = first_use[k]; u < first_use[k + 1]; ++u) {
        const UseRec& r = uses_[u];
        if (r.tile < 0) continue;
        int8_t& s = seen[static_cast<size_t>(r.tile)];
        if (s == 0) s = r.write && r.whole ? 2 : 1;
      }
    for (size_t k = L.first_order; k < L.end_order; ++k)
      for (uint64_t u = first_use[k]; u < first_use[k + 1]; ++u)
        if (uses_[u].tile >= 0 && seen[static_cast<size_t>(uses_[u].tile)] == 1) carried[u] = true;
    for (size_t t = 0; t < seen.size(); ++t)
      if (seen[t] == 1)
        for (size_t k : {L.first_order, L.end_order - 1})
          extra[k].push_back({static_cast<int64_t>(k), static_cast<int32_t>(t)});
  }
  std::vector<bool> in_loop(order_.size(), false);
  for (const LoopRec& L : loops_)
    for (size_t k = L.first_order; k < L.end_order; ++k) in_loop[k] = true;

  std::vector<PlaceTile> tiles;
  tiles.reserve(tiles_.size());
  for (const TileRec& t : tiles_) tiles.push_back({t.whole.name(), t.bytes});
  const auto describe = [&](int64_t k) {
    const InstrRef r = order_[static_cast<size_t>(k)].ref;
    const isa::Instruction& in = prog_.stream(r.stream)[static_cast<size_t>(r.index)];
    return fmt::format("instruction {} of the kernel ({} on {})", k, isa::mnemonic(in.op),
                       isa::engine_name(in.engine));
  };
  const std::vector<int32_t> reuse = in_place_sources(first_use);
  Placement sbuf_place;
  for (isa::Space space : {isa::Space::kSbuf, isa::Space::kPsum}) {
    const bool sbuf = space == isa::Space::kSbuf;
    std::vector<PlaceUse> uses;
    std::vector<size_t> which;  // index into uses_
    constexpr size_t kSynthetic = SIZE_MAX;
    for (size_t k = 0; k < order_.size(); ++k) {
      for (uint64_t u = first_use[k]; u < first_use[k + 1]; ++u) {
        const UseRec& r = uses_[u];
        if (r.tile < 0 || r.where.key.space != space) continue;
        uses.push_back({static_cast<int64_t>(k), r.tile, r.write, r.whole && !carried[u],
                        carried[u] ? -1 : reuse[u]});
        which.push_back(u);
      }
      for (const auto& [at, t] : extra[k]) {
        if (tiles_[static_cast<size_t>(t)].whole.space() != space) continue;
        uses.push_back({at, t, false, false, -1});
        which.push_back(kSynthetic);
      }
    }
    const PlaceMemory mem{sbuf ? "SBUF" : "PSUM", sbuf ? sbuf_capacity_ : psum_capacity_,
                          sbuf ? kSbufAlignment : kPsumAlignment,
                          sbuf ? 0 : int64_t{core_.psum.bank_bytes}, sbuf};
    Placement p = place_tiles(mem, tiles, uses, describe);
    for (size_t i = 0; i < which.size(); ++i)
      if (which[i] != kSynthetic) base_of[which[i]] = p.use_base[i];
    for (const SpillOp& op : p.spills)
      if (in_loop[static_cast<size_t>(op.at)])
        throw InputError(
            "kernel build", "loop",
            fmt::format("the tiles a hardware loop uses do not fit in SBUF together "
                        "(tile '{}' would spill at {}): a loop's body keeps every "
                        "tile in place for the whole loop",
                        tiles_[static_cast<size_t>(op.tile)].whole.name(), describe(op.at)));
    if (sbuf) sbuf_place = std::move(p);
  }

  // One HBM scratch tensor per spilled tile, declared when first needed.
  std::vector<int32_t> spill_tensor(tiles_.size(), -1);
  std::vector<View> spill_views;
  const auto spill_view = [&](int32_t t) -> const View& {
    int32_t& i = spill_tensor[static_cast<size_t>(t)];
    if (i < 0) {
      const View& w = tiles_[static_cast<size_t>(t)].whole;
      spill_views.push_back(tensor(fmt::format("spill_{}_{}", identifier(w.name()), t), w.dtype(),
                                   w.region().shape, isa::TensorKind::kScratch));
      i = static_cast<int32_t>(spill_views.size() - 1);
    }
    return spill_views[static_cast<size_t>(i)];
  };

  std::array<isa::Stream, isa::kNumEngines> traced;
  for (size_t e = 0; e < traced.size(); ++e) traced[e] = std::move(prog_.streams[e]);
  for (auto& s : prog_.streams) s.clear();
  std::vector<Footprint> where;
  std::vector<AgentSeq> deps;
  // Where each traced instruction lands (spills move them), for branch targets and loops.
  std::array<std::vector<int32_t>, isa::kNumEngines> moved;
  for (size_t e = 0; e < traced.size(); ++e) moved[e].assign(traced[e].size() + 1, -1);
  bool barrier = false;
  const auto append = [&](isa::Instruction in, const std::vector<Footprint>& fp,
                          const std::vector<bool>& write) {
    deps.clear();
    for (size_t i = 0; i < fp.size(); ++i) deps_.conflicts(fp[i], write[i], deps);
    if (barrier) deps = sync_.latest();
    const int32_t agent = agent_of(in);
    const InstrRef ref{in.engine, static_cast<int32_t>(prog_.stream(in.engine).size())};
    const AgentSeq me = sync_.add(agent, in.engine, ref, deps);
    for (int pass = 0; pass < 2; ++pass)  // reads first: a read-write operand ends as written
      for (size_t i = 0; i < fp.size(); ++i)
        if (write[i] == (pass == 1)) deps_.record(fp[i], write[i], me);
    prog_.append(std::move(in));
  };
  size_t next_load = 0;
  const auto spill = [&](const SpillOp& op) {
    const TileRec& t = tiles_[static_cast<size_t>(op.tile)];
    const View& hbm = spill_view(op.tile);
    const auto& loads = dma_policy_.load_triggers;
    const isa::Engine trigger =
        op.store ? dma_policy_.store_trigger : loads[next_load++ % loads.size()];
    isa::Instruction in =
        make(isa::Opcode::kDmaCopy, trigger,
             op.store ? std::vector<View>{hbm, t.whole} : std::vector<View>{t.whole, hbm});
    in.operands[op.store ? 1 : 0].offset = op.base;
    assign_dma_queue(in, trigger);
    const Footprint tile_fp{{isa::Space::kSbuf, -1},
                            {0, t.whole.partitions(), op.base, op.base + t.bytes}};
    append(std::move(in), {footprint(hbm), tile_fp}, {op.store, !op.store});
    const int64_t bytes = t.bytes * t.whole.partitions();
    if (op.store) {
      ++prog_.spill.stores;
      prog_.spill.bytes_spilled += bytes;
    } else {
      ++prog_.spill.reloads;
      prog_.spill.bytes_reloaded += bytes;
    }
  };

  const std::vector<SpillOp>& spills = sbuf_place.spills;
  size_t si = 0;
  std::vector<bool> write;
  for (size_t k = 0; k < order_.size(); ++k) {
    while (si < spills.size() && spills[si].at == static_cast<int64_t>(k) && !spills[si].store)
      spill(spills[si++]);
    const InstrRef r = order_[k].ref;
    isa::Instruction in =
        std::move(traced[static_cast<size_t>(r.stream)][static_cast<size_t>(r.index)]);
    moved[static_cast<size_t>(r.stream)][static_cast<size_t>(r.index)] =
        static_cast<int32_t>(prog_.stream(r.stream).size());
    barrier = order_[k].barrier;
    // Operands: each at its tile's place at this instruction.
    for (int j = 0; j < in.num_operands; ++j) {
      isa::AccessPattern& ap = in.operands[static_cast<size_t>(j)];
      if (ap.space == isa::Space::kHbm || ap.offset < kVirtualBase) continue;
      const int32_t t = tile_at(ap.offset);
      uint64_t u = first_use[k];
      while (u < first_use[k + 1] && uses_[u].tile != t) ++u;
      TRNSIM_ASSERT(u < first_use[k + 1]);
      ap.offset += base_of[u] - tiles_[static_cast<size_t>(t)].whole.region().base;
    }
    where.clear();
    write.clear();
    for (uint64_t u = first_use[k]; u < first_use[k + 1]; ++u) {
      Footprint f = uses_[u].where;
      if (uses_[u].tile >= 0) {
        const int64_t shift =
            base_of[u] - tiles_[static_cast<size_t>(uses_[u].tile)].whole.region().base;
        f.rect.b0 += shift;
        f.rect.b1 += shift;
      }
      where.push_back(f);
      write.push_back(uses_[u].write);
    }
    append(std::move(in), where, write);
    barrier = false;
    while (si < spills.size() && spills[si].at == static_cast<int64_t>(k) && spills[si].store)
      spill(spills[si++]);
  }
  remap_positions(moved);
  TRNSIM_ASSERT(si == spills.size());
  prog_.spill.tiles = sbuf_place.spilled_tiles;
}

}  // namespace trnsim::kernel

namespace trnsim::kernel {

void KernelBuilder::remap_positions(std::array<std::vector<int32_t>, isa::kNumEngines>& moved) {
  // A branch target or a loop boundary is the position after an instruction: it stays right
  // after where that instruction landed, ahead of any spill added before the next one.
  const auto after = [&](isa::Engine e, int32_t t) {
    return t <= 0 ? 0 : moved[static_cast<size_t>(e)][static_cast<size_t>(t - 1)] + 1;
  };
  const auto at = [&](const InstrRef& r) {
    return moved[static_cast<size_t>(r.stream)][static_cast<size_t>(r.index)];
  };
  for (isa::Engine e : isa::kAllEngines)
    for (isa::Instruction& in : prog_.stream(e))
      if (in.op == isa::Opcode::kBranch && in.p.branch_target >= 0)
        in.p.branch_target = after(e, in.p.branch_target);
  for (LoopRec& L : loops_) {
    for (isa::Engine e : isa::kAllEngines) {
      const auto i = static_cast<size_t>(e);
      L.head[i] = after(e, L.head[i]);
      L.end[i] = after(e, L.end[i]);
      if (e != L.reset.stream) L.go[i].index = at(L.go[i]);
    }
    L.reset.index = at(L.reset);
    L.restore.index = at(L.restore);
  }
}

}  // namespace trnsim::kernel
