// One semantics function per op family (STYLE.md practice 5): plain C++ over decoded tiles,
// bit-accurate, with engine math in FP32 and casts in and out (HARDWARE.md s2.3, s5). Each
// family lives in one exec_*.cc file; semantics_for() maps every opcode to its function, and a
// test checks that none is missing. Operand slots: core/exec/operand_roles.h.
#pragma once

#include "core/exec/exec_context.h"
#include "isa/opcode.h"

namespace trnsim::core {

using SemanticsFn = void (*)(ExecContext&);

// nullptr only for an opcode nobody registered (a test keeps that from happening).
SemanticsFn semantics_for(isa::Opcode op);

// exec_control.cc: nop, semaphores (no data semantics: the runner applies waits and
// signals), scalar registers and branches.
void exec_nop(ExecContext&);
void exec_control(ExecContext&);  // reg_set, reg_alu, branch
void exec_reg_load(ExecContext&);
void exec_reg_store(ExecContext&);
// exec_matmul.cc, exec_matmul_mx.cc, exec_transpose.cc
void exec_load_stationary(ExecContext&);
void exec_multiply_moving(ExecContext&);
void exec_matmul_mx(ExecContext&);
void exec_transpose_pe(ExecContext&);
void exec_transpose_dve(ExecContext&);
void exec_dma_transpose(ExecContext&);
void exec_stream_shuffle(ExecContext&);            // exec_shuffle.cc
void exec_tensor_scalar_cumulative(ExecContext&);  // exec_cumulative.cc
// exec_gather.cc: GpSimd's index ops
void exec_n_gather(ExecContext&);
void exec_local_gather(ExecContext&);
void exec_sequence_bounds(ExecContext&);
void exec_nonzero_with_count(ExecContext&);
// exec_activation.cc
void exec_activation(ExecContext&);
void exec_exponential(ExecContext&);
void exec_activate2(ExecContext&);  // and activate2_reduce
// exec_elementwise.cc
void exec_tensor_tensor(ExecContext&);
void exec_tensor_scalar(ExecContext&);
void exec_scalar_tensor_tensor(ExecContext&);
void exec_tensor_copy(ExecContext&);
void exec_reciprocal(ExecContext&);
// exec_reduce.cc
void exec_tensor_reduce(ExecContext&);
void exec_tensor_tensor_scan(ExecContext&);
void exec_tensor_scalar_reduce(ExecContext&);
void exec_partition_reduce(ExecContext&);
// exec_fill.cc
void exec_memset(ExecContext&);
void exec_iota(ExecContext&);
void exec_select(ExecContext&);
void exec_affine_select(ExecContext&);
// exec_stats.cc
void exec_bn_stats(ExecContext&);
void exec_bn_aggr(ExecContext&);
void exec_max8(ExecContext&);
void exec_find_index8(ExecContext&);     // exec_match8.cc
void exec_match_replace8(ExecContext&);  // exec_match8.cc
void exec_range_select(ExecContext&);    // exec_range_select.cc
void exec_rand_seed(ExecContext&);       // exec_random.cc
void exec_rand(ExecContext&);            // exec_random.cc
void exec_rng(ExecContext&);
void exec_rand2(ExecContext&);
void exec_rand_state(ExecContext&);
void exec_dropout(ExecContext&);  // exec_random.cc
// exec_quantize_mx.cc
void exec_quantize_mx(ExecContext&);
// exec_dma.cc
void exec_dma_copy(ExecContext&);
void exec_dma_indirect(ExecContext&);  // dma_gather, dma_scatter (exec_dma_indirect.cc)
// sendrecv run by one core: there is no peer (chip/core_group.h moves the data between cores).
void exec_sendrecv_alone(ExecContext&);
// collective run by one core outside a rank run (fabric/rank_run.h): there are no ranks.
void exec_collective_alone(ExecContext&);
// Its fault message, shared with the timing model's.
std::string collective_alone_message(const isa::Instruction& ins);

}  // namespace trnsim::core
