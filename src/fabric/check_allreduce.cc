// VALIDATION.md s4 as data: nccom-test's 2-rank fp32 all-reduce on the two NeuronCores of one
// Trn1 chip (NCCOM, first example set, 2023), and trnsim's time for the same setup.
#include "fabric/collective.h"

namespace trnsim::fabric {

std::vector<SweepCheck> allreduce_2rank_check() {
  struct Row {
    int64_t bytes;
    double us;
  };
  static const Row published[] = {
      {1 * kKiB, 58},    {4 * kKiB, 58},     {16 * kKiB, 58},   {64 * kKiB, 58},
      {256 * kKiB, 60},  {1 * kMiB, 68},     {4 * kMiB, 107},   {16 * kMiB, 332},
      {64 * kMiB, 1214}, {256 * kMiB, 4750}, {1 * kGiB, 18930},
  };
  Placement pl;
  pl.unit = RankUnit::kCore;
  pl.ranks = 2;
  const Fabric f(load_system("trn1.32xlarge"), load_runtime(kDefaultRuntime), pl);
  std::vector<SweepCheck> out;
  for (const Row& r : published) {
    CollectiveRequest req;
    req.op = Op::kAllReduce;
    req.bytes = r.bytes;
    const CollectiveResult res = f.simulate(req);
    out.push_back({r.bytes, r.us, static_cast<double>(res.time.v) * 1e-6});
  }
  return out;
}

}  // namespace trnsim::fabric
