#include "kernel/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/error.h"
#include "kernel/allocator.h"

namespace trnsim::kernel {

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

struct TileState {
  bool resident = false;
  int64_t base = 0;
  bool dirty = false;   // written since it last came from (or went to) HBM
  bool in_hbm = false;  // HBM holds its current contents
  int64_t last_write = -1;
  int64_t next_use = kNever;  // the next instruction that uses it, from the walk's position
  bool next_kill = false;     // ... and that instruction writes all of it without reading it
  int64_t last_use = -1;
  int64_t given_at = -1;  // the instruction whose result took its bytes (in place)
};

class Walk {
 public:
  Walk(const PlaceMemory& mem, const std::vector<PlaceTile>& tiles,
       const std::vector<PlaceUse>& uses, const DescribeInstr& describe)
      : mem_(mem),
        tiles_(tiles),
        uses_(uses),
        describe_(describe),
        alloc_(mem.name, mem.capacity, mem.alignment, mem.bank),
        state_(tiles.size()),
        next_(uses.size(), kNever) {
    // Whether each use's instruction overwrites its tile without reading it (a kill): per
    // (instruction, tile), over all its uses there.
    std::vector<bool> kill(uses.size(), false);
    for (size_t a = 0; a < uses.size();) {
      size_t b = a;
      while (b < uses.size() && uses[b].instr == uses[a].instr) ++b;
      for (size_t u = a; u < b; ++u) {
        bool read = false, whole = false;
        for (size_t v = a; v < b; ++v)
          if (uses[v].tile == uses[u].tile) {
            read |= !uses[v].write;
            whole |= uses[v].write && uses[v].whole;
          }
        kill[u] = whole && !read;
      }
      a = b;
    }
    // Backwards: for each use, the next instruction (after its own) that uses its tile.
    struct Upcoming {
      int64_t cur = kNever, after = kNever;
      bool cur_kill = false, after_kill = false;
    };
    std::vector<Upcoming> up(tiles.size());
    next_kill_.assign(uses.size(), false);
    for (size_t u = uses.size(); u-- > 0;) {
      Upcoming& x = up[static_cast<size_t>(uses[u].tile)];
      if (x.cur != uses[u].instr) {
        x.after = x.cur;
        x.after_kill = x.cur_kill;
        x.cur = uses[u].instr;
        x.cur_kill = kill[u];
      }
      next_[u] = x.after;
      next_kill_[u] = x.after_kill;
      TileState& s = state_[static_cast<size_t>(uses[u].tile)];
      if (s.last_use < 0) s.last_use = uses[u].instr;
    }
    for (size_t t = 0; t < tiles.size(); ++t) state_[t].next_use = up[t].cur;
  }

  Placement run() {
    out_.use_base.assign(uses_.size(), 0);
    for (size_t a = 0; a < uses_.size();) {
      size_t b = a;
      while (b < uses_.size() && uses_[b].instr == uses_[a].instr) ++b;
      instruction(a, b);
      a = b;
    }
    return std::move(out_);
  }

 private:
  std::string what(int64_t instr) const {
    return describe_ ? describe_(instr) : fmt::format("instruction {}", instr);
  }

  // The tiles of uses [a, b) (one instruction), largest first.
  std::vector<int32_t> operands(size_t a, size_t b) const {
    std::vector<int32_t> ts;
    for (size_t u = a; u < b; ++u)
      if (std::find(ts.begin(), ts.end(), uses_[u].tile) == ts.end()) ts.push_back(uses_[u].tile);
    std::stable_sort(ts.begin(), ts.end(), [&](int32_t x, int32_t y) {
      return tiles_[static_cast<size_t>(x)].bytes > tiles_[static_cast<size_t>(y)].bytes;
    });
    return ts;
  }

  void instruction(size_t a, size_t b) {
    const int64_t k = uses_[a].instr;
    const std::vector<int32_t> ts = operands(a, b);
    for (int32_t t : ts) {
      TileState& s = state_[static_cast<size_t>(t)];
      if (s.resident || s.given_at == k) continue;  // given: its bytes hold the result now
      if (take_over(t, k, a, b)) continue;
      bring_in(t, k, ts);
      // Contents kept in HBM come back, unless this instruction only overwrites them all.
      bool read = false, whole = false;
      for (size_t u = a; u < b; ++u)
        if (uses_[u].tile == t) {
          read |= !uses_[u].write;
          whole |= uses_[u].write && uses_[u].whole;
        }
      if (s.in_hbm && (read || !whole)) {
        out_.spills.push_back({false, t, k, s.base});
        s.dirty = false;
      }
    }
    for (size_t u = a; u < b; ++u) {
      TileState& s = state_[static_cast<size_t>(uses_[u].tile)];
      out_.use_base[u] = s.base;
      s.next_use = next_[u];
      s.next_kill = next_kill_[u];
      if (uses_[u].write) {
        s.dirty = true;
        s.in_hbm = false;
        s.last_write = k;
      }
    }
    // A tile used for the last time, or whose next use overwrites it all (its value is dead
    // until then: a new live range starts there), gives its bytes back.
    for (int32_t t : ts) {
      TileState& s = state_[static_cast<size_t>(t)];
      if (!s.resident) continue;  // its bytes went to the tile written in place
      if (s.last_use == k || s.next_kill) {
        leave(t);
        s.dirty = s.in_hbm = false;
      }
    }
  }

  // In place (placement.h): `t`, written whole by instruction k (uses [a, b)), takes the bytes
  // of a resident source of its size that dies here. Returns whether it did.
  bool take_over(int32_t t, int64_t k, size_t a, size_t b) {
    for (size_t u = a; u < b; ++u)
      if (uses_[u].tile == t && !uses_[u].write) return false;  // its own value is read here
    for (size_t u = a; u < b; ++u) {
      const PlaceUse& w = uses_[u];
      if (w.tile != t || !w.write || !w.whole || w.reuse < 0 || w.reuse == t) continue;
      TileState& d = state_[static_cast<size_t>(w.reuse)];
      if (!d.resident || !(d.last_use == k || d.next_kill) ||
          tiles_[static_cast<size_t>(w.reuse)].bytes != tiles_[static_cast<size_t>(t)].bytes)
        continue;
      TileState& s = state_[static_cast<size_t>(t)];
      s.resident = true;
      s.base = d.base;
      d.resident = false;
      d.dirty = d.in_hbm = false;
      d.given_at = k;
      *std::find(resident_.begin(), resident_.end(), w.reuse) = t;
      return true;
    }
    return false;
  }

  void bring_in(int32_t t, int64_t k, const std::vector<int32_t>& pinned) {
    const PlaceTile& tile = tiles_[static_cast<size_t>(t)];
    TileState& s = state_[static_cast<size_t>(t)];
    if (tile.bytes > mem_.capacity)
      throw InputError("kernel build", tile.name,
                       fmt::format("tile '{}' needs {} bytes per partition; the {} has {}",
                                   tile.name, tile.bytes, mem_.name, mem_.capacity));
    for (;;) {
      // PSUM keeps the plain ring: DMA does not reach PSUM, so no store is still reading
      // the bytes a PSUM tile gives back.
      const auto fit = mem_.can_spill ? ByteAllocator::Fit::kOldest : ByteAllocator::Fit::kNext;
      if (const auto start = alloc_.allocate(tile.bytes, tile.name, fit)) {
        s.resident = true;
        s.base = *start;
        resident_.push_back(t);
        out_.high_water = std::max(out_.high_water, *start + tile.bytes);
        return;
      }
      const int32_t v = victim(pinned);
      if (v < 0) throw cannot_fit(t, k, pinned);
      evict(v);
    }
  }

  // The resident tile not used by the current instruction that costs least to evict (clean:
  // a reload; dirty: a store and a reload), and of those the one whose next use is furthest.
  int32_t victim(const std::vector<int32_t>& pinned) const {
    if (!mem_.can_spill) return -1;
    int32_t best = -1;
    const auto cost = [](const TileState& s) { return s.dirty ? 1 : 0; };
    for (int32_t t : resident_) {
      if (std::find(pinned.begin(), pinned.end(), t) != pinned.end()) continue;
      const TileState& s = state_[static_cast<size_t>(t)];
      if (best < 0) {
        best = t;
        continue;
      }
      const TileState& b = state_[static_cast<size_t>(best)];
      if (cost(s) < cost(b) || (cost(s) == cost(b) && s.next_use > b.next_use)) best = t;
    }
    return best;
  }

  void evict(int32_t v) {
    TileState& s = state_[static_cast<size_t>(v)];
    if (s.dirty) {
      out_.spills.push_back({true, v, s.last_write, s.base});
      if (!spilled_once(v)) ++out_.spilled_tiles;
      s.in_hbm = true;
      s.dirty = false;
    }
    leave(v);
  }

  void leave(int32_t t) {
    TileState& s = state_[static_cast<size_t>(t)];
    alloc_.release(s.base);
    s.resident = false;
    auto it = std::find(resident_.begin(), resident_.end(), t);
    *it = resident_.back();
    resident_.pop_back();
  }

  bool spilled_once(int32_t v) {
    if (static_cast<size_t>(v) >= ever_.size()) ever_.resize(tiles_.size(), false);
    const bool was = ever_[static_cast<size_t>(v)];
    ever_[static_cast<size_t>(v)] = true;
    return was;
  }

  InputError cannot_fit(int32_t t, int64_t k, const std::vector<int32_t>& pinned) const {
    int64_t total = 0;
    std::string names;
    for (int32_t p : pinned) {
      const PlaceTile& x = tiles_[static_cast<size_t>(p)];
      total += x.bytes;
      names += fmt::format("{}'{}' {} B", names.empty() ? "" : ", ", x.name, x.bytes);
    }
    const std::string why =
        mem_.can_spill ? fmt::format(
                             "its tiles ({}; {} bytes per partition in all) cannot be in the {} "
                             "at once ({} bytes per partition)",
                             names, total, mem_.name, mem_.capacity)
                       : fmt::format(
                             "its tiles ({}) need room for '{}' ({} bytes per partition), but the "
                             "{} ({} bytes per partition, {} free, largest free range {}) holds "
                             "live tiles: {}",
                             names, tiles_[static_cast<size_t>(t)].name,
                             tiles_[static_cast<size_t>(t)].bytes, mem_.name, mem_.capacity,
                             alloc_.free_bytes(), alloc_.largest_free(), alloc_.live());
    return InputError("kernel build", tiles_[static_cast<size_t>(t)].name,
                      fmt::format("{}: {}", what(k), why));
  }

  const PlaceMemory& mem_;
  const std::vector<PlaceTile>& tiles_;
  const std::vector<PlaceUse>& uses_;
  const DescribeInstr& describe_;
  ByteAllocator alloc_;
  std::vector<TileState> state_;
  std::vector<int64_t> next_;      // per use: the next instruction using its tile
  std::vector<bool> next_kill_;    // ... overwrites it all without reading it
  std::vector<int32_t> resident_;  // the tiles in memory
  std::vector<bool> ever_;
  Placement out_;
};

}  // namespace

Placement place_tiles(const PlaceMemory& mem, const std::vector<PlaceTile>& tiles,
                      const std::vector<PlaceUse>& uses, const DescribeInstr& describe) {
  for (size_t u = 1; u < uses.size(); ++u) TRNSIM_ASSERT(uses[u - 1].instr <= uses[u].instr);
  Placement p = Walk(mem, tiles, uses, describe).run();
  // Stores were recorded at their tile's last write, which may precede later spills' places.
  std::stable_sort(p.spills.begin(), p.spills.end(), [](const SpillOp& x, const SpillOp& y) {
    // At one instruction: reloads (before it) come first, stores (after it) last.
    const auto key = [](const SpillOp& o) { return std::pair{o.at, o.store ? 1 : 0}; };
    return key(x) < key(y);
  });
  return p;
}

}  // namespace trnsim::kernel
