// Scale of the collective simulator (issue 4 s5): a 1 GiB fp32 all-reduce over a Trn4
// UltraCluster, timing mode, folded (symmetry classes + uniform steps simulated once).
//
//  BM_AllReduce1GiB/<ranks>   wall time of one simulated all-reduce over <ranks> chips:
//                             UltraServers of 128 chips joined by EFA (hierarchical all-reduce);
//                             100,000 chips are 800 servers x 125 chips. Targets: 32,768 chips
//                             < 10 s, 100,000 chips < 60 s, < 4 GiB memory, one host core.
//  then a 1 GiB all-to-all over 32,768 chips (pairwise: memory linear in ranks).
//
// After the benchmarks the program prints the scaling curve (ranks, wall seconds, simulated
// time, flows per step, symmetry classes) and the peak resident memory of the process.
// Run: build/<dir>/bench/bench_collective_scale
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fabric/collective.h"

namespace {

using namespace trnsim;

struct Point {
  int64_t ranks, servers, per_server;
};

// 128-chip UltraServers, filled; 100,000 = 800 x 125 (128 does not divide it).
std::vector<Point> points() {
  std::vector<Point> out;
  for (int64_t servers : {2, 8, 32, 128, 256}) out.push_back({servers * 128, servers, 128});
  out.push_back({100'000, 800, 125});
  return out;
}

fabric::CollectiveResult run(const Point& p, fabric::Op op = fabric::Op::kAllReduce) {
  fabric::Placement pl;
  pl.unit = fabric::RankUnit::kChip;
  pl.ranks = p.ranks;
  pl.ranks_per_server = p.per_server;
  const fabric::Fabric f(
      fabric::load_system("trn4-ultracluster", {{"cluster.servers", std::to_string(p.servers)}}),
      fabric::load_runtime(fabric::kDefaultRuntime), pl);
  fabric::CollectiveRequest req;
  req.op = op;
  req.bytes = kGiB;
  req.placement = pl;
  return f.simulate(req);
}

void BM_AllReduce1GiB(benchmark::State& state, Point p) {
  for (auto _ : state) {
    const fabric::CollectiveResult r = run(p);
    benchmark::DoNotOptimize(r.time);
    state.counters["simulated_us"] = static_cast<double>(r.time.v) * 1e-6;
  }
}

const int kRegistered = [] {
  for (const Point& p : points())
    benchmark::RegisterBenchmark(("BM_AllReduce1GiB/" + std::to_string(p.ranks)).c_str(),
                                 BM_AllReduce1GiB, p)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
  return 0;
}();

double peak_rss_gib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0 / static_cast<double>(kGiB);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::printf("\nScaling curve: 1 GiB fp32 all-reduce, trn4-ultracluster, folded timing\n");
  std::printf("%10s %8s %10s %14s %12s %10s  %s\n", "ranks", "servers", "wall(s)", "simulated(us)",
              "flows/step", "classes", "algorithm");
  double t32k = 0, t100k = 0;
  for (const Point& p : points()) {
    const auto t0 = std::chrono::steady_clock::now();
    const fabric::CollectiveResult r = run(p);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t flows = 0, classes = 0;
    for (const auto& ph : r.timing.phases) {
      flows = std::max(flows, ph.flows);
      classes = std::max(classes, ph.flow_classes);
    }
    std::printf("%10lld %8lld %10.3f %14.1f %12lld %10lld  %s\n", static_cast<long long>(p.ranks),
                static_cast<long long>(p.servers), wall, static_cast<double>(r.time.v) * 1e-6,
                static_cast<long long>(flows), static_cast<long long>(classes),
                r.algorithm.c_str());
    if (p.ranks == 32768) t32k = wall;
    if (p.ranks == 100'000) t100k = wall;
  }
  // All-to-all: beyond select.mesh_max_ranks the pairwise algorithm, one transfer per rank a
  // step, so memory is linear in ranks (the mesh's r(r-1) transfers were 4.3 GB at 4,096).
  const Point a2a{32768, 256, 128};
  const auto t0 = std::chrono::steady_clock::now();
  const fabric::CollectiveResult r = run(a2a, fabric::Op::kAllToAll);
  const double t_a2a = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\n1 GiB all-to-all, 32,768 chips: %.3f s wall, %.1f us simulated, %s\n", t_a2a,
              static_cast<double>(r.time.v) * 1e-6, r.algorithm.c_str());
  const double rss = peak_rss_gib();
  std::printf("\n32,768 chips: %.3f s (target < 10 s) %s\n", t32k, t32k < 10 ? "ok" : "MISSED");
  std::printf("100,000 chips: %.3f s (target < 60 s) %s\n", t100k, t100k < 60 ? "ok" : "MISSED");
  std::printf("peak memory: %.3f GiB (target < 4 GiB) %s\n", rss, rss < 4 ? "ok" : "MISSED");
  return 0;
}
