// ModelResult as JSON (`trnsim model --json`, trnsim.models) and as a Chrome / Perfetto trace.
#include <fmt/format.h>

#include "graph/model_run.h"

namespace trnsim::graph {

nlohmann::json ModelResult::to_json() const {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpRow& r : rows)
    ops.push_back({{"name", r.name},
                   {"kernel", r.kind},
                   {"detail", r.detail},
                   {"count", r.count},
                   {"time_us", r.time_us},
                   {"total_us", r.total_us()},
                   {"flops", r.flops},
                   {"hbm_bytes", r.hbm_bytes},
                   {"bound", r.bound},
                   {"tiling", r.tiling},
                   {"fused", r.fused}});
  nlohmann::json j = {{"model", model},
                      {"source", source},
                      {"chip", chip},
                      {"tp", tp},
                      {"ep", ep},
                      {"batch", batch},
                      {"seq", seq},
                      {"layers", layers},
                      {"params", params},
                      {"latency_us", latency_us},
                      {"overlapped_us", overlapped_us},
                      {"launch_us", launch_us},
                      {"prefetch_us", prefetch_us},
                      {"overlap_us", overlap_us},
                      {"flops", flops},
                      {"mfu", mfu},
                      {"hbm_bytes", hbm_bytes},
                      {"collective_bytes", collective_bytes},
                      {"weight_bytes_per_rank", weight_bytes},
                      {"activation_bytes_per_rank", activation_bytes},
                      {"hbm_capacity_bytes_per_rank", hbm_capacity_bytes},
                      {"kv_cache_bytes_per_rank", cache_bytes},
                      {"optimizer_bytes_per_rank", optimizer_bytes},
                      {"train", train},
                      {"micro_batches", micro_batches},
                      {"lnc", lnc},
                      {"system", system},
                      {"fits", fits()},
                      {"kernels", kernels},
                      {"kernels_simulated", kernels_simulated},
                      {"cache_hits", cache_hits},
                      {"simulations", simulations},
                      {"fusion",
                       {{"nodes_before", fusion.nodes_before},
                        {"nodes_after", fusion.nodes_after},
                        {"applied", fusion.applied}}},
                      {"ops", ops}};
  if (train && outputs.contains("loss")) j["loss"] = loss;
  return j;
}

nlohmann::json ModelResult::trace_json() const {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back({{"name", "process_name"},
                {"ph", "M"},
                {"pid", 0},
                {"args", {{"name", fmt::format("{} on {} (rank 0 of {})", model, chip, tp)}}}});
  ev.push_back({{"name", "thread_name"},
                {"ph", "M"},
                {"pid", 0},
                {"tid", 0},
                {"args", {{"name", "kernels"}}}});
  ev.push_back({{"name", "thread_name"},
                {"ph", "M"},
                {"pid", 0},
                {"tid", 1},
                {"args", {{"name", "collectives"}}}});
  for (const Slice& s : timeline)
    ev.push_back(
        {{"name", s.name},
         {"cat", s.kind},
         {"ph", "X"},
         {"pid", 0},
         {"tid",
          s.kind == "all_reduce" || s.kind == "all_gather" || s.kind == "reduce_scatter" ? 1 : 0},
         {"ts", s.start_us},
         {"dur", s.dur_us}});
  return {{"traceEvents", ev}, {"displayTimeUnit", "ns"}};
}

}  // namespace trnsim::graph
