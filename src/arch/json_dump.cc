// The resolved spec as JSON: what `trnsim spec NAME --json` prints and the Python bindings
// return. Everything comes from the schema walk, so a new key appears here without code.
#include "arch/arch.h"
#include "arch/derived.h"
#include "arch/schema.h"

namespace trnsim::arch {

namespace {

nlohmann::json::json_pointer pointer_of(const std::string& dotted) {
  std::string p = "/" + dotted;
  for (char& c : p) {
    if (c == '.') c = '/';
  }
  return nlohmann::json::json_pointer(p);
}

nlohmann::json meta_json(const ChipSpec& s) {
  nlohmann::json m;
  m["name"] = s.meta.name;
  m["title"] = s.meta.title;
  m["kind"] = s.meta.kind;
  m["status"] = s.meta.status;
  m["description"] = s.meta.description;
  m["lineage"] = s.lineage;
  m["files"] = s.files;
  return m;
}

}  // namespace

nlohmann::json chip_to_json(const ChipSpec& s) {
  nlohmann::json values = nlohmann::json::object();
  nlohmann::json fields = nlohmann::json::object();
  for (const auto& k : schema().keys()) {
    const auto rec = s.fields.find(k.key);
    if (!k.sourced || rec == s.fields.end()) continue;
    const auto v = k.get(s);
    if (!v) continue;
    values[pointer_of(k.key)] = to_json(*v);
    nlohmann::json f;
    f["value"] = to_json(*v);
    f["unit"] = k.unit;
    f["provenance"] = rec->second.prov.to_json();
    f["alternatives"] = nlohmann::json::array();
    for (const auto& a : rec->second.alts) {
      f["alternatives"].push_back({{"value", to_json(a.value)}, {"provenance", a.prov.to_json()}});
    }
    fields[k.key] = std::move(f);
  }

  nlohmann::json derived = nlohmann::json::object();
  for (const auto& d : derive(s).figures) {
    nlohmann::json f{{"value", d.value}, {"unit", d.unit}, {"how", d.how}, {"inputs", d.inputs}};
    if (!d.published_key.empty()) {
      f["published_key"] = d.published_key;
      const KeyInfo* k = schema().find(d.published_key);
      const auto v =
          (k != nullptr && s.fields.contains(d.published_key)) ? k->get(s) : std::nullopt;
      f["published"] = v ? to_json(*v) : nlohmann::json(nullptr);
    }
    derived[d.key] = std::move(f);
  }

  nlohmann::json j = meta_json(s);
  j["values"] = std::move(values);
  j["fields"] = std::move(fields);
  j["derived"] = std::move(derived);
  return j;
}

nlohmann::json schema_json() {
  nlohmann::json keys = nlohmann::json::array();
  for (const auto& k : schema().keys()) keys.push_back(k.to_json());
  return {{"keys", std::move(keys)}};
}

}  // namespace trnsim::arch
