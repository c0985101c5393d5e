#include "planner/energy.h"

#include <fmt/format.h>

#include "base/error.h"

namespace trnsim::planner {

PowerModel power_model(const arch::ChipSpec& chip) {
  const arch::PowerSpec& s = chip.chip.power;
  const auto need = [&](const std::optional<double>& v, const char* key) {
    if (!v)
      throw InputError(chip.meta.name, fmt::format("chip.power.{}", key),
                       "not in the spec: the chip has no power model (trnsim spec --keys)");
    return *v;
  };
  PowerModel p;
  p.chip = chip.meta.name;
  p.tdp_w = need(s.tdp_w, "tdp_w");
  p.static_w = need(s.static_w, "static_w");
  p.hbm_j_per_byte = need(s.hbm_pj_per_byte, "hbm_pj_per_byte") * 1e-12;
  p.link_j_per_byte = need(s.link_pj_per_byte, "link_pj_per_byte") * 1e-12;
  p.bf16_flops_per_s = chip.chip.tflops.bf16 * 1e12;
  const double hbm_w = p.hbm_j_per_byte * chip.chip.hbm.bandwidth_gbps * 1e9;
  const double link_w = p.link_j_per_byte * chip.chip.link.bandwidth_gbps * 1e9;
  p.tensor_busy_w = p.tdp_w - p.static_w - hbm_w - link_w;
  if (p.tensor_busy_w <= 0 || p.bf16_flops_per_s <= 0)
    throw InputError(chip.meta.name, "chip.power.tdp_w",
                     fmt::format("{:.0f} W leaves nothing for TensorE after {:.0f} W static, "
                                 "{:.0f} W of HBM and {:.0f} W of links at their peaks",
                                 p.tdp_w, p.static_w, hbm_w, link_w));
  return p;
}

std::optional<PowerModel> power_model_if_any(const arch::ChipSpec& chip) {
  const arch::PowerSpec& s = chip.chip.power;
  if (!s.tdp_w && !s.static_w && !s.hbm_pj_per_byte && !s.link_pj_per_byte) return std::nullopt;
  return power_model(chip);
}

nlohmann::json PowerModel::to_json() const {
  return {{"chip", chip},
          {"tdp_w", tdp_w},
          {"static_w", static_w},
          {"tensor_busy_w", tensor_busy_w},
          {"hbm_pj_per_byte", hbm_j_per_byte * 1e12},
          {"link_pj_per_byte", link_j_per_byte * 1e12}};
}

Energy& Energy::operator+=(const Energy& o) {
  seconds += o.seconds;
  chips = std::max(chips, o.chips);
  static_j += o.static_j;
  tensor_j += o.tensor_j;
  hbm_j += o.hbm_j;
  link_j += o.link_j;
  return *this;
}

nlohmann::json Energy::to_json() const {
  return {{"joules", joules()},   {"mean_power_w", mean_power_w()},
          {"static_j", static_j}, {"tensor_j", tensor_j},
          {"hbm_j", hbm_j},       {"link_j", link_j},
          {"seconds", seconds},   {"chips", chips}};
}

void add_energy_json(nlohmann::json& out, const std::optional<Energy>& e,
                     const std::optional<PowerModel>& p, double joules_per_output_token,
                     double output_tokens_per_s_per_mw) {
  out["energy"] = e ? e->to_json() : nlohmann::json(nullptr);
  out["power_model"] = p ? p->to_json() : nlohmann::json(nullptr);
  out["joules_per_output_token"] = e ? nlohmann::json(joules_per_output_token) : nullptr;
  out["output_tokens_per_s_per_mw"] = e ? nlohmann::json(output_tokens_per_s_per_mw) : nullptr;
}

Energy scaled(Energy e, double f) {
  e.seconds *= f;
  e.static_j *= f;
  e.tensor_j *= f;
  e.hbm_j *= f;
  e.link_j *= f;
  return e;
}

Energy energy_of(const PowerModel& p, double seconds, int64_t chips, double flops, double hbm_bytes,
                 double link_bytes) {
  Energy e;
  e.seconds = seconds;
  e.chips = chips;
  e.static_j = p.static_w * static_cast<double>(chips) * seconds;
  e.tensor_j = p.tensor_busy_w * flops / p.bf16_flops_per_s;
  e.hbm_j = p.hbm_j_per_byte * hbm_bytes;
  e.link_j = p.link_j_per_byte * link_bytes;
  return e;
}

}  // namespace trnsim::planner
