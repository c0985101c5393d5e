// The calibration targets, one file each (target_<name>.cc); targets.cc lists them in order.
#pragma once

#include <vector>

#include "validate/validate.h"

namespace trnsim::validate {

std::vector<Record> matmul_tutorial_records();  // VALIDATION.md s2, trn1
std::vector<Record> single_dma_records();       // VALIDATION.md s3, trn2
std::vector<Record> allreduce_2rank_records();  // VALIDATION.md s4, trn1 (fabric)
std::vector<Record> vendor_constant_records();  // VALIDATION.md s5, trn1 and trn2
std::vector<Record> collective_s7_records();    // VALIDATION.md s7, trn1 and trn2 (fabric)
std::vector<Record> collective_page_records();  // nccom-test page sweeps not in VALIDATION.md
std::vector<Record> serving_records();          // VALIDATION.md s9, trn1 and trn2 (planner)
std::vector<Record> serving_table_records();    // Neuron's trn1 decoder latency table, the rest
std::vector<Record> training_records();         // VALIDATION.md s8, trn1 (planner, training)
std::vector<Record> training_table_records();   // Neuron's trn1 training tables
std::vector<Record> encoder_table_records();    // Neuron's trn1 encoder inference tables

}  // namespace trnsim::validate
