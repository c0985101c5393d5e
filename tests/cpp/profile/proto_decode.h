// A tiny protobuf wire-format reader for tests: walks varint, fixed and length-delimited fields
// without a schema, and reads back what profile/perfetto_trace.h writes into plain structs
// (field numbers from Perfetto's protos, as the writer uses them).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::proto_test {

struct ProtoField {
  uint32_t number = 0;
  uint32_t wire = 0;   // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t value = 0;  // varint and fixed values
  std::string_view bytes;
};

inline uint64_t read_varint(std::string_view s, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= s.size()) throw std::runtime_error("varint past the end");
    const auto b = static_cast<uint8_t>(s[at++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return v;
  }
  throw std::runtime_error("varint longer than 10 bytes");
}

// Every field of one message, in order; throws on malformed input.
inline std::vector<ProtoField> proto_fields(std::string_view s) {
  std::vector<ProtoField> out;
  size_t at = 0;
  while (at < s.size()) {
    const uint64_t key = read_varint(s, at);
    ProtoField f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    if (f.number == 0) throw std::runtime_error("field number 0");
    switch (f.wire) {
      case 0:
        f.value = read_varint(s, at);
        break;
      case 1:
      case 5: {
        const size_t n = f.wire == 1 ? 8 : 4;
        if (at + n > s.size()) throw std::runtime_error("fixed past the end");
        for (size_t i = 0; i < n; ++i)
          f.value |= static_cast<uint64_t>(static_cast<uint8_t>(s[at + i])) << (8 * i);
        at += n;
        break;
      }
      case 2: {
        const uint64_t n = read_varint(s, at);
        if (n > s.size() - at) throw std::runtime_error("length past the end");
        f.bytes = s.substr(at, n);
        at += n;
        break;
      }
      default:
        throw std::runtime_error("unknown wire type " + std::to_string(f.wire));
    }
    out.push_back(f);
  }
  return out;
}

// The fields of one message by number (repeated fields in order).
struct ProtoMessage {
  std::multimap<uint32_t, ProtoField> f;
  explicit ProtoMessage(std::string_view s) {
    for (const ProtoField& x : proto_fields(s)) f.emplace(x.number, x);
  }
  bool has(uint32_t n) const { return f.count(n) != 0; }
  uint64_t u(uint32_t n) const { return f.find(n)->second.value; }
  std::string_view b(uint32_t n) const { return f.find(n)->second.bytes; }
  std::vector<ProtoField> all(uint32_t n) const {
    std::vector<ProtoField> v;
    for (auto [it, end] = f.equal_range(n); it != end; ++it) v.push_back(it->second);
    return v;
  }
};

// A Perfetto trace read back: descriptors, interned strings and events, in file order.
struct PerfettoEvent {
  uint64_t ts = 0;
  uint64_t type = 0;  // 1 slice begin, 2 slice end, 4 counter
  uint64_t track = 0;
  std::string name, category;
  std::map<std::string, std::string> args;  // integer args as their decimal text
  std::vector<uint64_t> flows, terminating_flows;
  double counter = 0;
};
struct PerfettoTrack {
  uint64_t uuid = 0, parent = 0;
  std::string name;  // thread, process or counter name
  enum Kind { kProcess, kThread, kCounter } kind = kThread;
  int64_t pid = 0, tid = 0;
};
struct PerfettoFile {
  std::vector<PerfettoTrack> tracks;
  std::vector<PerfettoEvent> events;
  size_t packets = 0;
  bool first_clears_state = false;
  bool one_sequence = true;
  bool interned_before_use = true;
  const PerfettoTrack* track(uint64_t uuid) const {
    for (const auto& t : tracks)
      if (t.uuid == uuid) return &t;
    return nullptr;
  }
  const PerfettoTrack* track_named(const std::string& name) const {
    for (const auto& t : tracks)
      if (t.name == name) return &t;
    return nullptr;
  }
};

inline PerfettoFile read_perfetto(std::string_view data) {
  PerfettoFile out;
  std::map<uint64_t, std::string> names, categories, arg_names, arg_values;
  for (const ProtoField& p : proto_fields(data)) {
    if (p.number != 1 || p.wire != 2) throw std::runtime_error("a Trace holds packets only");
    const ProtoMessage pkt(p.bytes);
    if (out.packets++ == 0) out.first_clears_state = pkt.has(13) && (pkt.u(13) & 1) != 0;
    out.one_sequence = out.one_sequence && pkt.has(10) && pkt.u(10) == 1;
    if (pkt.has(12)) {
      const ProtoMessage in(pkt.b(12));
      const auto load = [&](uint32_t n, std::map<uint64_t, std::string>& into) {
        for (const ProtoField& e : in.all(n)) {
          const ProtoMessage m(e.bytes);
          into[m.u(1)] = std::string(m.b(2));
        }
      };
      load(1, categories);
      load(2, names);
      load(3, arg_names);
      load(29, arg_values);
    }
    if (pkt.has(60)) {
      const ProtoMessage d(pkt.b(60));
      PerfettoTrack t;
      t.uuid = d.u(1);
      if (d.has(5)) t.parent = d.u(5);
      if (d.has(3)) {
        const ProtoMessage pr(d.b(3));
        t.kind = PerfettoTrack::kProcess;
        t.pid = static_cast<int64_t>(pr.u(1));
        t.name = std::string(pr.b(6));
      } else if (d.has(4)) {
        const ProtoMessage th(d.b(4));
        t.pid = static_cast<int64_t>(th.u(1));
        t.tid = static_cast<int64_t>(th.u(2));
        t.name = std::string(th.b(5));
      } else {
        t.kind = PerfettoTrack::kCounter;
        t.name = std::string(d.b(2));
      }
      out.tracks.push_back(t);
    }
    if (pkt.has(11)) {
      const ProtoMessage e(pkt.b(11));
      PerfettoEvent ev;
      ev.ts = pkt.u(8);
      ev.type = e.u(9);
      ev.track = e.u(11);
      const auto lookup = [&](const std::map<uint64_t, std::string>& m, uint64_t iid) {
        const auto it = m.find(iid);
        if (it == m.end()) {
          out.interned_before_use = false;
          return std::string();
        }
        return it->second;
      };
      if (e.has(10)) ev.name = lookup(names, e.u(10));
      if (e.has(3)) ev.category = lookup(categories, e.u(3));
      for (const ProtoField& a : e.all(4)) {
        const ProtoMessage m(a.bytes);
        const std::string key = lookup(arg_names, m.u(1));
        ev.args[key] =
            m.has(4) ? std::to_string(static_cast<int64_t>(m.u(4))) : lookup(arg_values, m.u(17));
      }
      for (const ProtoField& x : e.all(47)) ev.flows.push_back(x.value);
      for (const ProtoField& x : e.all(48)) ev.terminating_flows.push_back(x.value);
      if (e.has(30)) ev.counter = static_cast<double>(static_cast<int64_t>(e.u(30)));
      if (e.has(44)) {
        const uint64_t bits = e.u(44);
        std::memcpy(&ev.counter, &bits, sizeof bits);
      }
      out.events.push_back(ev);
    }
  }
  return out;
}

}  // namespace trnsim::proto_test
