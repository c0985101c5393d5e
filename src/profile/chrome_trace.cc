#include "profile/chrome_trace.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace trnsim::profile {

namespace {

constexpr int64_t kPsPerUs = 1'000'000;

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

// The label part of an event, serialised once per label: "name":..,"cat":..,"args":{..}.
std::string label_fragment(const Label& l) {
  std::string s = "\"name\":" + quoted(l.name) + ",\"cat\":" + quoted(l.category);
  s += ",\"args\":{";
  for (size_t i = 0; i < l.args.size(); ++i) {
    if (i) s += ',';
    s += quoted(l.args[i].first) + ':' + quoted(l.args[i].second);
  }
  s += '}';
  return s;
}

}  // namespace

std::string ps_to_us_string(Picoseconds t) {
  const bool neg = t.v < 0;
  const uint64_t mag = neg ? static_cast<uint64_t>(-(t.v + 1)) + 1 : static_cast<uint64_t>(t.v);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%06" PRIu64, neg ? "-" : "",
                mag / static_cast<uint64_t>(kPsPerUs), mag % static_cast<uint64_t>(kPsPerUs));
  return buf;
}

void write_chrome_trace(const Trace& trace, std::ostream& out) {
  // Processes numbered from 1 in order of first appearance; thread ids are track index + 1.
  std::map<std::string, int> pids;
  const auto pid_of = [&](const std::string& p) {
    auto it = pids.find(p);
    if (it == pids.end()) it = pids.emplace(p, static_cast<int>(pids.size()) + 1).first;
    return it->second;
  };
  std::vector<int> track_pid(trace.tracks().size());
  for (size_t i = 0; i < trace.tracks().size(); ++i)
    track_pid[i] = pid_of(trace.tracks()[i].process);
  std::vector<int> counter_pid(trace.counters().size());
  for (size_t i = 0; i < trace.counters().size(); ++i)
    counter_pid[i] = pid_of(trace.counters()[i].process);
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  const auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  std::vector<std::pair<int, std::string>> procs;
  for (const auto& [name, pid] : pids) procs.emplace_back(pid, name);
  std::sort(procs.begin(), procs.end());
  for (const auto& [pid, name] : procs) {
    sep();
    out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid
        << ",\"tid\":0,\"args\":{\"name\":" << quoted(name) << "}}";
  }
  for (size_t i = 0; i < trace.tracks().size(); ++i) {
    sep();
    out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << track_pid[i] << ",\"tid\":" << i + 1
        << ",\"args\":{\"name\":" << quoted(trace.tracks()[i].name)
        << "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" << track_pid[i]
        << ",\"tid\":" << i + 1 << ",\"args\":{\"sort_index\":" << i << "}}";
  }
  std::vector<std::string> fragments;
  fragments.reserve(trace.labels().size());
  for (const Label& l : trace.labels()) fragments.push_back(label_fragment(l));
  for (const Span& s : sorted_spans(trace)) {
    sep();
    out << "{\"ph\":\"X\",\"pid\":" << track_pid.at(s.track) << ",\"tid\":" << s.track + 1
        << ",\"ts\":" << ps_to_us_string(s.start) << ",\"dur\":" << ps_to_us_string(s.end - s.start)
        << ',' << fragments.at(s.label) << '}';
  }
  // Counters ("ph":"C"): one series per counter, named by its unit.
  std::vector<CounterSample> samples = trace.counter_samples();
  std::stable_sort(samples.begin(), samples.end(),
                   [](const CounterSample& a, const CounterSample& b) { return a.t < b.t; });
  for (const CounterSample& c : samples) {
    const Counter& k = trace.counters().at(c.counter);
    sep();
    out << "{\"ph\":\"C\",\"pid\":" << counter_pid[c.counter]
        << ",\"tid\":0,\"name\":" << quoted(k.name) << ",\"ts\":" << ps_to_us_string(c.t)
        << ",\"args\":{" << quoted(k.unit.empty() ? "value" : k.unit) << ':'
        << nlohmann::json(c.value).dump() << "}}";
  }
  out << "]}\n";
}

std::string chrome_trace_json(const Trace& trace) {
  std::ostringstream os;
  write_chrome_trace(trace, os);
  return os.str();
}

}  // namespace trnsim::profile
