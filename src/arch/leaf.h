// One leaf of a data file, checked against its schema row: the value (type, unit conversion,
// range) and its provenance. Accepted forms:
//   key = { v = 2.4, src = "AG3" }                  a published value
//   key = { v = 16, assume = "why" }                an assumption
//   key = { v = 256, unit = "KiB", derived = "how" } a derivation, stated in another unit
//   key = { v = ..., src = ..., note = "...", alt = [{ v = ..., src = ... }, ...] }
//   key = 3.0                                        what-if files only: an override
#pragma once

#include <string>
#include <string_view>

#include "arch/provenance.h"
#include "arch/raw_node.h"
#include "arch/schema.h"

namespace trnsim::arch {

struct LeafContext {
  std::string file;     // data file path; empty for a command-line `--set`
  bool strict = false;  // generation file: every leaf needs src, assume or derived
};

struct ParsedLeaf {
  Value value;
  FieldRecord record;
};

// Throws InputError("file:line", key, ...) naming what is wrong.
ParsedLeaf parse_leaf(const KeyInfo& k, const RawNode& node, const LeafContext& ctx);

// "file:line" of a node, or "--set" outside a file.
std::string where_of(const LeafContext& ctx, const RawNode& node);

}  // namespace trnsim::arch
