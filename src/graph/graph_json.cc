#include "graph/graph_json.h"

#include <fmt/format.h>

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
                                           {"all_reduce", OpKind::kAllReduce}};
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

Graph graph_from_json_unchecked(std::string_view json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw InputError("graph", "", fmt::format("not valid JSON: {}", e.what()));
  }
  Graph g;
  try {
    g.batch = j.at("batch").get<int64_t>();
    g.seq = j.at("seq").get<int64_t>();
    g.tp = j.value("tp", 1);
    if (g.batch < 1 || g.seq < 1)
      throw InputError("graph", "batch", "batch and seq must be positive");
    for (const json& v : j.at("values")) {
      Value x;
      x.name = v.at("name").get<std::string>();
      x.shape = v.at("shape").get<std::vector<int64_t>>();
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
        std::vector<int> out = n.value(key, std::vector<int>{});
        for (int id : out)
          if (id < 0 || id >= nv)
            throw InputError(where, key, fmt::format("value id {} outside 0..{}", id, nv - 1));
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
      x.heads = n.value("heads", int64_t{0});
      x.kv_heads = n.value("kv_heads", x.heads);
      x.head_dim = n.value("head_dim", int64_t{0});
      x.causal = n.value("causal", true);
      x.rope_theta = n.value("rope_theta", 10000.0);
      x.batch = g.batch;
      x.seq = g.seq;
      // The layer a node belongs to: the first numbered component of its module path.
      static const std::regex kLayer(R"(^(?:\w+\.)*?\w+\.(\d+)\.)");
      std::smatch m;
      if (std::regex_search(x.name, m, kLayer)) x.repeat_of = std::stoi(m[1].str());
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
