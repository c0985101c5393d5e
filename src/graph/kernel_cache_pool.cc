#include "graph/kernel_cache_pool.h"

#include <fmt/format.h>

namespace trnsim::graph {

struct KernelCachePool::Entry {
  std::unique_ptr<arch::ChipSpec> chip;
  std::unique_ptr<fabric::SystemSpec> system;
  std::unique_ptr<KernelCache> cache;
};

KernelCachePool::KernelCachePool() = default;
KernelCachePool::~KernelCachePool() = default;

KernelCache& KernelCachePool::get(const KernelCacheKey& k) {
  // The chip by name and overrides (a spec file gives one chip per name); the system by name
  // (its chip is `chip`; its server count does not change a TP group inside a server).
  std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}|{}", k.chip->meta.name, k.system ? k.system->name : "", k.tp,
                  k.lnc, k.search, k.warm, k.runtime);
  for (const arch::Override& o : k.overrides) key += fmt::format("|{}={}", o.key, o.value);
  std::unique_ptr<Entry>& e = entries_[key];
  if (!e) {
    e = std::make_unique<Entry>();
    e->chip = std::make_unique<arch::ChipSpec>(*k.chip);
    if (k.system) e->system = std::make_unique<fabric::SystemSpec>(*k.system);
    e->cache =
        std::make_unique<KernelCache>(*e->chip, k.tp, e->system.get(), k.search, k.lnc, k.runtime);
    e->cache->set_warm_timing(k.warm);
  }
  return *e->cache;
}

int KernelCachePool::kernels_simulated() const {
  int n = 0;
  for (const auto& [key, e] : entries_) n += e->cache->distinct();
  return n;
}

}  // namespace trnsim::graph
