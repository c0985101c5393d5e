#include "core/dma/hbm_pool.h"

#include "core/dma/dma_engines.h"

namespace trnsim::core {

void HbmPool::reweigh(DmaEngines& member, uint64_t before, uint64_t after, Picoseconds now) {
  if (before == after) return;
  for (DmaEngines* m : members_)
    if (m != &member) m->advance(now);  // served so far at the old share
  weight_ = weight_ - before + after;
  for (DmaEngines* m : members_)
    if (m != &member) m->settle(now);  // the new share from now on
}

}  // namespace trnsim::core
