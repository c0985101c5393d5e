// A Trainium generation (or a what-if chip), as typed data: the core, the chip around it, its
// numerics policy and the systems built from it. As in core_spec.h, member paths are the dotted
// keys of the data files; provenance of every key is in `fields`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/core_spec.h"
#include "arch/provenance.h"
#include "numerics/policy.h"

namespace trnsim::arch {

// Chip-level compute as published (dense unless named). `fp8` is the chip's headline FP8 figure:
// cFP8 on Trn1, FP8 on Trn2, MXFP8/MXFP4 on Trn3 (see ChipLevel::fp8_label).
struct ChipTflops {
  std::optional<double> fp8, fp4;
  double bf16 = 0;  // BF16/FP16/TF32
  double fp32 = 0;
  std::optional<double> sparse;
};

struct HbmSpec {
  double capacity_gib = 0;
  double bandwidth_gbps = 0;
  std::optional<int> stacks;
};

struct ChipDmaSpec {
  double bandwidth_gbps = 0;
  std::optional<int> engines, extra_engines;
};

struct LinkSpec {
  std::string version;
  std::optional<int> count;
  double bandwidth_gbps = 0;  // per chip, all links
  std::optional<bool> nvlink_fusion;
};

// Power (planner/energy.h): none of it is published as such; each value says where it comes
// from. Absent: the chip has no power model (energy figures are left out).
struct PowerSpec {
  std::optional<double> tdp_w;             // the chip at full load
  std::optional<double> static_w;          // the chip powered, idle
  std::optional<double> hbm_pj_per_byte;   // HBM read or write, device side
  std::optional<double> link_pj_per_byte;  // chip-to-chip link (NeuronLink), per byte sent
};

// Logical NeuronCores (HARDWARE.md s6): how many physical cores may form one logical core.
struct LncSpec {
  std::vector<int> degrees{1};  // allowed LNC degrees (1; 1 and 2 on Trn2/Trn3)
  int default_degree = 1;
  double remote_semaphore_ns = 0;  // core_barrier: one core's semaphore write to another
};

struct ChipLevel {
  std::string name;
  int cores = 0;
  std::optional<int> dies;
  std::string fp8_label;
  ChipTflops tflops;
  std::optional<double> int8_tops;
  HbmSpec hbm;
  std::optional<double> sbuf_mib;  // as published per chip; derived.cc also computes it
  ChipDmaSpec dma;
  int cc_cores = 0;
  LncSpec lnc;
  LinkSpec link;
  std::optional<int> memory_pool_chips;
  std::optional<std::vector<std::string>> sbuf_layouts;
  PowerSpec power;
};

// The per-generation numeric policy (numerics/policy.h) plus what the TensorE accepts.
struct NumericsSpec : num::NumericPolicy {
  bool stochastic_rounding = false;
  std::vector<std::string> tensor_fp8_formats;
  std::optional<std::vector<std::string>> tensor_mx_formats;

  const num::NumericPolicy& policy() const { return *this; }
};

// Totals the vendor publishes for a system, kept as facts to compare with chips x chip figure.
struct SystemPublished {
  std::optional<double> hbm_capacity_gib, hbm_bandwidth_gbps;
  std::optional<double> fp8_pflops, bf16_pflops, fp32_pflops;
};

// A server, UltraServer or UltraCluster. Absent (present == false) when the data has no such
// level for the chip.
struct SystemSpec {
  bool present = false;
  std::string name;
  int64_t chips = 0;
  std::optional<int> members;           // lower-level systems it is built from
  std::optional<int> chips_per_member;  // chips in each of them
  std::optional<std::string> topology;
  std::optional<double> efa_gbps;
  SystemPublished published;
};

struct MetaSpec {
  std::string name;    // what the chip is called on the command line ("trn2")
  std::string title;   // "Trainium2 (Trn2)"
  std::string kind;    // "generation" (every leaf sourced) or "what-if"
  std::string status;  // "shipped", "announced", "projected", "what-if"
  std::string description;
  std::optional<std::string> inherits;
  std::vector<std::string> drop;  // inherited keys or tables this file removes
};

struct ChipSpec {
  MetaSpec meta;
  CoreSpec core;
  ChipLevel chip;
  NumericsSpec numerics;
  SystemSpec server, ultraserver, ultracluster;

  FieldRecords fields;               // provenance of every key that holds a value
  std::vector<std::string> files;    // data files applied, base first
  std::vector<std::string> lineage;  // chip names, base first ("trn3", "trn4-projected")
};

}  // namespace trnsim::arch
