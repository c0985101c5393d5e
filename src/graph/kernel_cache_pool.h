// Kernel caches kept across model runs. A plan search (planner/plan_search.h) runs one model at
// hundreds of plans; the stage runs of one TP degree on one chip compile to the same kernels,
// so they share one KernelCache and each distinct kernel is simulated once for the whole
// search. A cache is keyed by everything its timings depend on: the chip and its --set
// overrides, the system of the all-reduces, TP, LNC, the collective runtime, tiling search and
// warm timing. The pool owns the chip and system copies the caches refer to.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "arch/chip_spec.h"
#include "fabric/system.h"
#include "graph/kernel_cache.h"

namespace trnsim::graph {

struct KernelCacheKey {
  const arch::ChipSpec* chip = nullptr;        // copied into the pool on first use
  std::vector<arch::Override> overrides;       // what made `chip` differ from its spec file
  const fabric::SystemSpec* system = nullptr;  // null: no all-reduces across chips
  int tp = 1, lnc = 1;
  bool search = true, warm = false;
  std::string runtime;
};

class KernelCachePool {
 public:
  KernelCachePool();
  ~KernelCachePool();
  KernelCachePool(const KernelCachePool&) = delete;
  KernelCachePool& operator=(const KernelCachePool&) = delete;

  // The cache for `key`, made on first use. Not thread-safe: one pool per thread.
  KernelCache& get(const KernelCacheKey& key);
  size_t size() const { return entries_.size(); }
  // Distinct kernels simulated by all the caches.
  int kernels_simulated() const;

 private:
  struct Entry;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
};

}  // namespace trnsim::graph
