#include "graph/graph_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/error.h"

namespace trnsim::graph {

namespace {

using nlohmann::json;

const std::map<std::string, OpKind> kKinds{{"embedding", OpKind::kEmbedding},
                                           {"norm", OpKind::kNorm},
                                           {"linear", OpKind::kLinear},
                                           {"add", OpKind::kAdd},
                                           {"mul", OpKind::kMul},
                                           {"act", OpKind::kAct},
                                           {"head_norm", OpKind::kHeadNorm},
                                           {"rope", OpKind::kRope},
                                           {"attention", OpKind::kAttention},
                                           {"all_reduce", OpKind::kAllReduce},
                                           {"all_gather", OpKind::kAllGather},
                                           {"reduce_scatter", OpKind::kReduceScatter}};
const std::map<std::string, ValueKind> kValueKinds{{"input", ValueKind::kInput},
                                                   {"weight", ValueKind::kWeight},
                                                   {"activation", ValueKind::kActivation},
                                                   {"output", ValueKind::kOutput}};
const std::map<std::string, ops::Norm> kNorms{
    {"none", ops::Norm::kNone}, {"rmsnorm", ops::Norm::kRms}, {"layernorm", ops::Norm::kLayer}};
const std::map<std::string, ops::Act> kActs{{"none", ops::Act::kNone},
                                            {"silu", ops::Act::kSilu},
                                            {"gelu", ops::Act::kGelu},
                                            {"gelu_tanh", ops::Act::kGeluTanh},
                                            {"relu", ops::Act::kRelu}};

template <class T>
T pick(const std::map<std::string, T>& table, const std::string& v, const std::string& where,
       const std::string& key) {
  auto it = table.find(v);
  if (it == table.end()) {
    std::vector<std::string> names;
    for (const auto& [k, _] : table) names.push_back(k);
    throw InputError(where, key, fmt::format("'{}' is not one of {}", v, fmt::join(names, ", ")));
  }
  return it->second;
}

// Integers read without nlohmann's casts, which are undefined for a float out of range: the
// JSON value must be an integer in [lo, hi].
int64_t int_of(const json& v, const std::string& where, const std::string& key, int64_t lo,
               int64_t hi) {
  if (!v.is_number_integer())
    throw InputError(where, key, fmt::format("expected an integer, got {}", v.dump()));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    throw InputError(where, key, fmt::format("{} is outside [{}, {}]", v.dump(), lo, hi));
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi)
    throw InputError(where, key, fmt::format("{} is outside [{}, {}]", x, lo, hi));
  return x;
}

int64_t int_field(const json& o, const char* key, int64_t dflt, const std::string& where,
                  int64_t lo, int64_t hi) {
  if (!o.contains(key)) return dflt;
  return int_of(o.at(key), where, key, lo, hi);
}

std::vector<int64_t> int_list(const json& o, const char* key, const std::string& where, int64_t lo,
                              int64_t hi) {
  std::vector<int64_t> out;
  if (!o.contains(key)) return out;
  const json& a = o.at(key);
  if (!a.is_array()) throw InputError(where, key, "expected a list of integers");
  for (const json& v : a) out.push_back(int_of(v, where, key, lo, hi));
  return out;
}

constexpr int64_t kMaxDim = int64_t{1} << 40;

Graph graph_from_json_unchecked(std::string_view json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range
    throw InputError("graph", "", fmt::format("not valid JSON: {}", e.what()));
  }
  Graph g;
  try {
    if (!j.is_object()) throw InputError("graph", "", "a graph is a JSON object");
    if (!j.contains("batch") || !j.contains("seq"))
      throw InputError("graph", "batch", "batch and seq are required");
    g.batch = int_of(j.at("batch"), "graph", "batch", 1, int64_t{1} << 24);
    g.seq = int_of(j.at("seq"), "graph", "seq", 1, int64_t{1} << 24);
    g.tp = static_cast<int>(int_field(j, "tp", 1, "graph", 1, 1024));
    g.sequence_parallel = j.value("sequence_parallel", false);
    for (const json& v : j.at("values")) {
      Value x;
      x.name = v.at("name").get<std::string>();
      x.shape = int_list(v, "shape", x.name, 1, kMaxDim);
      x.dtype = num::parse_format(v.value("dtype", "bf16"));
      x.kind = pick(kValueKinds, v.value("kind", "activation"), x.name, "kind");
      g.add_value(std::move(x));
    }
  } catch (const json::exception& e) {
    throw InputError("graph", "values", e.what());
  }
  const auto nv = static_cast<int>(g.values.size());
  for (const json& n : j.at("nodes")) {
    Node x;
    const std::string src = n.value("source", "");
    x.name = n.value("name", "?");
    const std::string where = src.empty() ? x.name : fmt::format("{} ({})", x.name, src);
    try {
      x.kind = pick(kKinds, n.at("kind").get<std::string>(), where, "kind");
      auto ids = [&](const char* key) {
        std::vector<int> out;
        for (int64_t id : int_list(n, key, where, 0, std::max(0, nv - 1)))
          out.push_back(static_cast<int>(id));
        return out;
      };
      x.inputs = ids("inputs");
      x.weights = ids("weights");
      x.biases = ids("biases");
      x.norm_weights = ids("norm_weights");
      x.outputs = ids("outputs");
      x.norm = pick(kNorms, n.value("norm", "none"), where, "norm");
      x.eps = n.value("eps", 1e-5);
      x.act = pick(kActs, n.value("act", "none"), where, "act");
      x.heads = int_field(n, "heads", 0, where, 0, 1 << 16);
      x.kv_heads = int_field(n, "kv_heads", x.heads, where, 0, 1 << 16);
      x.head_dim = int_field(n, "head_dim", 0, where, 0, 1 << 16);
      x.causal = n.value("causal", true);
      x.eager = n.value("eager", false);
      x.rope_theta = n.value("rope_theta", 10000.0);
      x.batch = g.batch;
      x.seq = g.seq;
      // The layer a node belongs to: the first numbered component of its module path.
      static const std::regex kLayer(R"(^(?:\w+\.)*?\w+\.(\d+)\.)");
      std::smatch m;
      if (std::regex_search(x.name, m, kLayer) && m[1].length() <= 6)
        x.repeat_of = std::stoi(m[1].str());
      if (x.outputs.empty()) throw InputError(where, "outputs", "a node writes at least one value");
    } catch (const json::exception& e) {
      throw InputError(where, "", e.what());
    }
    g.add_node(std::move(x));
  }
  return g;
}

}  // namespace

Graph graph_from_json(std::string_view json_text) {
  try {
    return graph_from_json_unchecked(json_text);
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong type or a missing table outside a node ("nodes", a node that is
    // not an object): the document's shape is wrong.
    throw InputError("graph", "", fmt::format("malformed graph JSON: {}", e.what()));
  }
}

}  // namespace trnsim::graph
