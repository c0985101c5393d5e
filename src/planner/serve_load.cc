#include "planner/serve_load.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <random>

#include "base/error.h"
#include "planner/serve_steps.h"

namespace trnsim::planner {

namespace {

// Uniform in [lo, hi] and in [0, 1), from the generator's bits (the same on every platform,
// unlike the standard distributions).
int64_t uniform(std::mt19937_64& g, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(g() % static_cast<uint64_t>(hi - lo + 1));
}
double unit(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

struct Live {
  size_t req = 0;
  int64_t generated = 0;  // tokens so far (the prefill gives the first)
};

}  // namespace

double RequestRecord::tpot_ms() const {
  return output > 1 ? (done_ms - first_token_ms) / static_cast<double>(output - 1) : 0.0;
}

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  auto rank = [&](double q) {
    const auto i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(i, 1, v.size()) - 1];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  return p;
}

LoadResult serve_load(const graph::ModelConfig& m, const ServeOptions& opts, const LoadOptions& l) {
  if (l.concurrency < 1) throw InputError("serve", "concurrency", "at least 1");
  if (opts.speculation_length > 0)
    throw InputError("serve", "speculation-length",
                     "speculative decoding is modelled for one batch, not under a load");
  if (l.rate < 0 || !std::isfinite(l.rate))
    throw InputError("serve", "rate", "requests per second, >= 0 (0: closed loop)");
  if (l.requests < 0) throw InputError("serve", "requests", "at least 1 (0: the default)");
  if (l.input_spread < 0 || l.input_spread >= opts.input_tokens)
    throw InputError("serve", "input-spread",
                     fmt::format("0 to {} tokens (every prompt >= 1)", opts.input_tokens - 1));
  if (l.output_spread < 0 || l.output_spread >= opts.output_tokens)
    throw InputError("serve", "output-spread",
                     fmt::format("0 to {} tokens (every output >= 1)", opts.output_tokens - 1));
  if (opts.cached_prefix > 0 && opts.cached_prefix >= opts.input_tokens - l.input_spread)
    throw InputError("serve", "cached-prefix",
                     fmt::format("{} cached tokens: the shortest prompt has {} (at least its last "
                                 "token is prefilled)",
                                 opts.cached_prefix, opts.input_tokens - l.input_spread));
  ServeOptions base = opts;
  // The compiled sequence holds the longest request; the batch is what is in flight at once.
  if (base.max_seq == 0)
    base.max_seq =
        pow2_bucket(opts.input_tokens + l.input_spread + opts.output_tokens + l.output_spread,
                    int64_t{1} << 40);
  if (base.compiled_batch == 0) base.compiled_batch = std::max(base.batch, l.concurrency);
  if (base.ctx_batch == 0) base.ctx_batch = 1;  // continuous batching: prompts one by one
  base.input_tokens = opts.input_tokens + l.input_spread;
  base.output_tokens = opts.output_tokens + l.output_spread;
  const int64_t fixed_bucket = opts.bucket;
  base.bucket = 0;
  ServeOptions o = resolve(base);  // checks the longest request against max_seq
  o.input_tokens = opts.input_tokens;
  o.output_tokens = opts.output_tokens;
  o.bucket = fixed_bucket;

  LoadResult res;
  res.model = m.name;
  res.load = l;
  if (res.load.requests == 0) res.load.requests = l.rate > 0 ? 64 : 4 * l.concurrency;
  const auto n = static_cast<size_t>(res.load.requests);

  // The requests: lengths drawn up front, so that the load does not depend on the schedule.
  std::mt19937_64 gen(l.seed);
  res.requests.resize(n);
  double t_arrive = 0;
  for (RequestRecord& r : res.requests) {
    r.input = uniform(gen, o.input_tokens - l.input_spread, o.input_tokens + l.input_spread);
    r.output = uniform(gen, o.output_tokens - l.output_spread, o.output_tokens + l.output_spread);
    if (l.rate > 0) {
      t_arrive += -std::log1p(-unit(gen)) / l.rate * 1e3;
      r.arrival_ms = t_arrive;
    }
  }
  const int64_t prefix = o.cached_prefix;  // each prompt's tokens already in the KV cache
  if (o.bucket > 0)
    for (const RequestRecord& r : res.requests)
      if (r.input - prefix > o.bucket)
        throw InputError(
            "serve", "bucket",
            fmt::format("{} positions cannot hold a {}-token prompt{}", o.bucket, r.input - prefix,
                        prefix > 0 ? " (after its cached prefix)" : ""));

  StepCosts steps(m, step_options(o));
  const bool closed = l.rate <= 0;
  size_t issued = closed ? std::min(n, static_cast<size_t>(l.concurrency)) : n;
  std::deque<size_t> waiting;
  size_t next_arrival = 0;  // requests [0, next_arrival) have arrived
  std::vector<Live> live;
  size_t done = 0;
  double t = 0, live_sum = 0;
  auto add_energy = [&](const std::optional<Energy>& e) {
    if (!e) return;
    if (!res.energy) res.energy = Energy{};
    *res.energy += *e;
  };
  auto finish = [&](size_t req) {
    res.requests[req].done_ms = t;
    ++done;
    if (closed && issued < n) res.requests[issued++].arrival_ms = t;  // the client's next
  };
  // The KV positions a decode step reads: the bucket of the longest live sequence's next token.
  auto read_kv = [&] {
    int64_t kv = 0;
    for (const Live& s : live) kv = std::max(kv, res.requests[s.req].input + s.generated);
    return o.kv_buckets == KvBuckets::kPow2 ? pow2_bucket(kv, o.max_seq)
           : o.kv_buckets == KvBuckets::kMax
               ? o.max_seq
               : std::min(o.max_seq, (kv + 127) / 128 * 128);  // exact: to 128 positions, so
                                                               // that steps share their runs
  };
  // Each live sequence's token of a decode step; the finished ones leave.
  auto decode_tokens = [&] {
    ++res.decode_steps;
    live_sum += static_cast<double>(live.size());
    std::vector<Live> still;
    for (Live& s : live) {
      if (++s.generated == res.requests[s.req].output)
        finish(s.req);
      else
        still.push_back(s);
    }
    live = std::move(still);
  };
  // Chunked prefill: the prompt being filled and its positions so far.
  std::optional<size_t> filling;
  int64_t filled = 0;
  while (done < n) {
    while (next_arrival < issued && res.requests[next_arrival].arrival_ms <= t)
      waiting.push_back(next_arrival++);
    const auto slots = static_cast<size_t>(o.compiled_batch);
    if (o.prefill_chunk > 0) {
      // While a prompt is being filled, one step of the chunk graph a turn: the live
      // sequences' decode tokens, and the rest of its slots the prompt's next chunk. The next
      // waiting prompt starts when a decode slot is free for it; with none being filled, the
      // live sequences decode in the token-generation graph (below).
      if (!filling && !waiting.empty() && live.size() < slots) {
        filling = waiting.front();
        waiting.pop_front();
        filled = o.cached_prefix;
      }
      if (filling) {
        const int64_t room = o.prefill_chunk - static_cast<int64_t>(live.size());
        const StepCost c = steps.chunk_step(o.prefill_chunk, filled,
                                            live.empty() ? 0 : o.compiled_batch, read_kv());
        t += c.ms;
        add_energy(steps.energy(c));
        if (!live.empty()) decode_tokens();
        const RequestRecord& r = res.requests[*filling];
        filled = std::min(r.input, filled + room);
        if (filled == r.input) {
          res.requests[*filling].first_token_ms = t;
          ++res.prefills;
          if (r.output == 1)
            finish(*filling);
          else
            live.push_back({*filling, 1});
          filling.reset();
        }
        continue;
      }
    } else if (!waiting.empty() && live.size() < slots) {
      std::vector<size_t> batch;
      int64_t longest = 0;
      while (!waiting.empty() && batch.size() < static_cast<size_t>(o.ctx_batch) &&
             live.size() + batch.size() < slots) {
        batch.push_back(waiting.front());
        longest = std::max(longest, res.requests[waiting.front()].input);
        waiting.pop_front();
      }
      const int64_t bucket =
          o.bucket > 0 ? o.bucket : pow2_bucket(longest - prefix, o.max_seq - prefix);
      const StepCost& c = steps.prefill(o.ctx_batch, bucket, prefix);
      t += c.ms;
      add_energy(steps.energy(c));
      ++res.prefills;
      for (size_t r : batch) {
        res.requests[r].first_token_ms = t;
        if (res.requests[r].output == 1)
          finish(r);
        else
          live.push_back({r, 1});
      }
      continue;
    }
    if (!live.empty()) {
      const StepCost& c = steps.decode(o.compiled_batch, read_kv());
      t += c.ms;
      add_energy(steps.energy(c));
      decode_tokens();
      continue;
    }
    if (next_arrival >= issued)  // cannot happen: a finished request issues the next
      throw InternalError("serve_load: idle with no request to come");
    // Idle between requests, at static power (not before the first: the makespan starts there).
    if (res.prefills > 0) add_energy(steps.idle_energy(res.requests[next_arrival].arrival_ms - t));
    t = res.requests[next_arrival].arrival_ms;  // idle until the next request
  }

  res.options = o;
  res.tp = steps.tp();
  res.lnc = steps.lnc();
  res.where = steps.where();
  res.step_runs = steps.runs();
  std::vector<double> ttft, tpot, e2e;
  int64_t tokens = 0;
  double first = res.requests.front().arrival_ms;
  for (const RequestRecord& r : res.requests) {
    ttft.push_back(r.ttft_ms());
    if (r.output > 1) tpot.push_back(r.tpot_ms());
    e2e.push_back(r.e2e_ms());
    tokens += r.output;
    first = std::min(first, r.arrival_ms);
  }
  res.ttft_ms = percentiles(ttft);
  res.tpot_ms = percentiles(tpot);
  res.e2e_ms = percentiles(e2e);
  res.makespan_ms = t - first;
  res.output_tokens_per_s =
      res.makespan_ms > 0 ? static_cast<double>(tokens) / (res.makespan_ms / 1e3) : 0.0;
  res.power = steps.power();
  if (res.energy && tokens > 0) {
    res.joules_per_output_token = res.energy->joules() / static_cast<double>(tokens);
    res.output_tokens_per_s_per_mw = res.output_tokens_per_s / (res.energy->mean_power_w() / 1e6);
  }
  res.mean_live = res.decode_steps > 0 ? live_sum / static_cast<double>(res.decode_steps) : 0.0;
  return res;
}

namespace {

nlohmann::json percentiles_json(const Percentiles& p) {
  return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
}

}  // namespace

nlohmann::json LoadResult::to_json() const {
  nlohmann::json reqs = nlohmann::json::array();
  for (const RequestRecord& r : requests)
    reqs.push_back({{"input_tokens", r.input},
                    {"output_tokens", r.output},
                    {"arrival_ms", r.arrival_ms},
                    {"ttft_ms", r.ttft_ms()},
                    {"tpot_ms", r.tpot_ms()},
                    {"e2e_ms", r.e2e_ms()}});
  nlohmann::json out = {
      {"model", model},
      {"where", where},
      {"tp", tp},
      {"lnc", lnc},
      {"compiled_batch", options.compiled_batch},
      {"ctx_batch", options.ctx_batch},
      {"max_seq", options.max_seq},
      {"kv_buckets", kv_buckets_name(options.kv_buckets)},
      {"cached_prefix", options.cached_prefix},
      {"prefill_chunk", options.prefill_chunk},
      {"requests", load.requests},
      {"concurrency", load.rate > 0 ? nlohmann::json(nullptr) : nlohmann::json(load.concurrency)},
      {"rate_per_s", load.rate},
      {"seed", load.seed},
      // The keys scripts read (as for one batch): means over the requests.
      {"ttft_ms", ttft_ms.mean},
      {"tpot_ms", tpot_ms.mean},
      {"e2e_ms", e2e_ms.mean},
      {"output_tokens_per_s", output_tokens_per_s},
      {"percentiles",
       {{"ttft_ms", percentiles_json(ttft_ms)},
        {"tpot_ms", percentiles_json(tpot_ms)},
        {"e2e_ms", percentiles_json(e2e_ms)}}},
      {"makespan_ms", makespan_ms},
      {"mean_live_sequences", mean_live},
      {"prefills", prefills},
      {"decode_steps", decode_steps},
      {"graphs_timed", step_runs},
      {"per_request", reqs}};
  add_energy_json(out, energy, power, joules_per_output_token, output_tokens_per_s_per_mw);
  return out;
}

std::string LoadResult::text() const {
  std::string out = fmt::format(
      "{} on {} (tp {}{}), {} requests, {}, {} +- {} input / {} +- {} output tokens\n", model,
      where, tp, lnc > 1 ? fmt::format(", LNC={}", lnc) : "", load.requests,
      load.rate > 0 ? fmt::format("Poisson arrivals at {:.3g}/s", load.rate)
                    : fmt::format("{} in flight (closed loop)", load.concurrency),
      options.input_tokens, load.input_spread, options.output_tokens, load.output_spread);
  out += fmt::format(
      "compiled: decode batch {}, prefill batch {}, {} positions, KV buckets {} ({} graphs "
      "timed)\n",
      options.compiled_batch, options.ctx_batch, options.max_seq,
      kv_buckets_name(options.kv_buckets), step_runs);
  if (options.cached_prefix > 0)
    out += fmt::format("prefix caching: the first {} tokens of each prompt are in the KV cache\n",
                       options.cached_prefix);
  if (options.prefill_chunk > 0)
    out += fmt::format("chunked prefill: steps of {} token slots\n", options.prefill_chunk);
  auto row = [&](const char* name, const Percentiles& p) {
    return fmt::format("{:<6} mean {:9.2f}  p50 {:9.2f}  p90 {:9.2f}  p99 {:9.2f}  ms\n", name,
                       p.mean, p.p50, p.p90, p.p99);
  };
  out += row("TTFT", ttft_ms) + row("TPOT", tpot_ms) + row("E2E", e2e_ms);
  out += fmt::format(
      "{:.1f} output tokens/s over {:.1f} ms; {} prefills, {} decode steps with {:.1f} live "
      "sequences on average\n",
      output_tokens_per_s, makespan_ms, prefills, decode_steps, mean_live);
  if (energy)
    out += fmt::format(
        "energy {:.3g} J on {} chip{} ({:.0f} W mean), {:.3g} J per output token, {:.3g} output "
        "tokens/s per MW\n",
        energy->joules(), energy->chips, energy->chips > 1 ? "s" : "", energy->mean_power_w(),
        joules_per_output_token, output_tokens_per_s_per_mw);
  return out;
}

}  // namespace trnsim::planner
