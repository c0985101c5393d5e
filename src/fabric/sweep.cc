// nccom-test-like size sweeps: parsing "8B:1GiB", the table and its JSON.
#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "base/error.h"
#include "fabric/collective.h"

namespace trnsim::fabric {

namespace {

// A collective buffer larger than this exceeds every chip's HBM many times over; the bound
// also keeps sizes and sweep steps far from int64 overflow.
constexpr int64_t kMaxCollectiveBytes = int64_t{1} << 40;  // 1 TiB

int64_t parse_count(const std::string& digits, const std::string& text, const char* what) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && n > kMaxCollectiveBytes))
    throw InputError("--sizes", text, fmt::format("{} is too large", what));
  if (ec != std::errc() || end != digits.data() + digits.size())
    throw InputError("--sizes", text, fmt::format("{} is not a whole number", what));
  return n;
}

}  // namespace

int64_t parse_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) throw InputError("--sizes", text, "expected a size such as 8B, 64KiB or 1GiB");
  const int64_t n = parse_count(text.substr(0, i), text, "the size");
  const std::string unit = text.substr(i);
  static const std::vector<std::pair<std::string, int64_t>> units = {
      {"", 1},         {"B", 1},      {"K", kKiB}, {"KB", 1000},       {"KiB", kKiB}, {"M", kMiB},
      {"MB", 1000000}, {"MiB", kMiB}, {"G", kGiB}, {"GB", 1000000000}, {"GiB", kGiB},
  };
  for (const auto& [u, f] : units) {
    if (u != unit) continue;
    if (n > kMaxCollectiveBytes / f)
      throw InputError("--sizes", text,
                       fmt::format("over the largest size a sweep takes ({} bytes, 1 TiB)",
                                   kMaxCollectiveBytes));
    return n * f;
  }
  throw InputError("--sizes", text, "unknown unit; use B, KiB, MiB, GiB (or KB, MB, GB)");
}

std::vector<int64_t> parse_sizes(const std::string& text) {
  std::vector<int64_t> out;
  if (text.find(',') != std::string::npos) {
    size_t start = 0;
    while (start <= text.size()) {
      const size_t comma = text.find(',', start);
      out.push_back(parse_size(text.substr(start, comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return out;
  }
  const size_t c1 = text.find(':');
  if (c1 == std::string::npos) return {parse_size(text)};
  const size_t c2 = text.find(':', c1 + 1);
  const int64_t lo = parse_size(text.substr(0, c1));
  const int64_t hi = parse_size(text.substr(c1 + 1, c2 == std::string::npos ? c2 : c2 - c1 - 1));
  const int64_t factor =
      c2 == std::string::npos ? 2 : parse_count(text.substr(c2 + 1), text, "the factor");
  if (lo < 1 || hi < lo || factor < 2)
    throw InputError("--sizes", text, "expected LO:HI[:FACTOR] with 1 <= LO <= HI, FACTOR >= 2");
  for (int64_t s = lo; s <= hi; s *= factor) {
    out.push_back(s);
    if (s > hi / factor) break;  // the next step is past HI (and must not overflow)
  }
  return out;
}

std::string format_sweep(const Fabric& f, const std::vector<CollectiveResult>& rows) {
  return format_sweep_json(sweep_json(f, rows));
}

std::string format_sweep_json(const nlohmann::json& sweep) {
  const nlohmann::json& rows = sweep.at("rows");
  std::string out;
  if (!rows.empty()) {
    const std::string op = rows[0].at("op").get<std::string>();
    const auto ranks = sweep.at("ranks").get<int64_t>();
    out += fmt::format("# {} on {} ({} x {}), {} ranks ({} per chip), runtime {}\n", op,
                       sweep.at("system").get<std::string>(), sweep.at("chips").get<int64_t>(),
                       sweep.at("chip").get<std::string>(), ranks,
                       sweep.at("ranks_per_chip").get<int64_t>(),
                       sweep.at("runtime").get<std::string>());
    out += fmt::format(
        "# launch {} us (overlap {} us); per step and peer {} us, across EFA {} us; busbw "
        "factor {:.4f}\n",
        sweep.at("launch_us").get<double>(), sweep.at("overlap_us").get<double>(),
        sweep.value("peer_sync_us", 0.0), sweep.value("efa_message_us", 0.0),
        busbw_factor(parse_op(op), ranks));
    if (sweep.contains("groups")) {
      const auto k = sweep.at("groups").get<int64_t>();
      out += fmt::format(
          "# {} {} groups of {} ranks at once; each row is the slowest group's (busbw by its "
          "ranks)\n",
          k, sweep.value("group_layout", std::string("contiguous")), ranks / k);
    }
  }
  out += fmt::format("{:>14} {:>12} {:>6} {:>12} {:>12} {:>12}  {}\n", "size(B)", "count", "type",
                     "time(us)", "algbw(GB/s)", "busbw(GB/s)", "algorithm");
  for (const auto& r : rows) {
    out += fmt::format("{:>14} {:>12} {:>6} {:>12.1f} {:>12.2f} {:>12.2f}  {}\n",
                       r.at("size_bytes").get<int64_t>(), r.at("count").get<int64_t>(),
                       r.at("dtype").get<std::string>(), r.at("time_us").get<double>(),
                       r.at("algbw_gib_s").get<double>(), r.at("busbw_gib_s").get<double>(),
                       r.at("algorithm").get<std::string>());
  }
  out += "# GB/s are GiB/s, as nccom-test prints them\n";
  return out;
}

nlohmann::json sweep_json(const Fabric& f, const std::vector<CollectiveResult>& rows) {
  nlohmann::json j;
  j["system"] = f.system().name;
  j["chip"] = f.system().chip_name;
  j["runtime"] = f.runtime().name;
  j["chips"] = f.system().chips();
  j["ranks"] = f.network().ranks();
  j["ranks_per_chip"] = f.network().ranks_per_chip();
  // What a bound needs: a rank's collective DMA rate (a reduction costs `red` times its bytes).
  j["rank_dma_gbps"] = f.network().dma_bytes_per_s() / 1e9;
  j["reduction_dma_factor"] = f.network().near_memory_accumulation() ? 1 : 2;
  j["step_latency_us"] = static_cast<double>(f.network().step_latency().v) * 1e-6;
  j["launch_us"] = f.runtime().launch_us;
  j["overlap_us"] = f.runtime().overlap_us;
  j["peer_sync_us"] = f.runtime().peer_sync_us;
  j["efa_message_us"] = f.runtime().efa_message_us;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) j["rows"].push_back(sweep_row_json(r));
  return j;
}

nlohmann::json sweep_row_json(const CollectiveResult& r) {
  nlohmann::json row{{"op", op_name(r.op)},
                     {"algorithm", r.algorithm},
                     {"size_bytes", r.bytes},
                     {"count", r.count},
                     {"dtype", r.dtype},
                     {"time_us", static_cast<double>(r.time.v) * 1e-6},
                     {"device_us", static_cast<double>(r.device.v) * 1e-6},
                     {"sync_us", static_cast<double>(r.timing.sync.v) * 1e-6},
                     {"algbw_gib_s", r.algbw_gib_s()},
                     {"busbw_gib_s", r.busbw_gib_s()},
                     {"link_bytes", r.timing.link_bytes},
                     {"efa_bytes", r.timing.efa_bytes}};
  int64_t rd = 0, wr = 0, rd_max = 0;
  for (size_t c = 0; c < r.timing.hbm_read.size(); ++c) {
    rd += r.timing.hbm_read[c];
    wr += r.timing.hbm_write[c];
    rd_max = std::max(rd_max, r.timing.hbm_read[c] + r.timing.hbm_write[c]);
  }
  row["hbm_read_bytes"] = rd;
  row["hbm_write_bytes"] = wr;
  row["hbm_max_chip_bytes"] = rd_max;
  for (const auto& p : r.timing.phases) {
    row["phases"].push_back({{"name", p.name},
                             {"steps", p.steps},
                             {"time_us", static_cast<double>(p.time.v) * 1e-6},
                             {"sync_us", static_cast<double>(p.sync.v) * 1e-6},
                             {"flows_per_step", p.flows},
                             {"flow_classes", p.flow_classes}});
  }
  return row;
}

}  // namespace trnsim::fabric
