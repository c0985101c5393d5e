// The kernel-building API, in the spirit of NKI: declare HBM tensors, allocate tiles in SBUF
// and PSUM, and call engine operations on views of them. Each call appends instructions to
// the engine streams of an isa::Program; build() returns it, with every cross-engine
// dependency turned into semaphore waits and signals (sync_resolver.h: the rule), ready for
// the functional runner or the timing model.
//
//   KernelBuilder kb(chip);
//   Tensor a = kb.input("a", num::bf16(), {128, 64});       // [K, M]
//   Tensor b = kb.input("b", num::bf16(), {128, 512});      // [K, N]
//   Tensor c = kb.output("c", num::fp32(), {64, 512});
//   Tile at = kb.sbuf("at", num::bf16(), {128, 64});
//   Tile bt = kb.sbuf("bt", num::bf16(), {128, 512});
//   kb.dma_copy(at, a);
//   kb.dma_copy(bt, b);
//   Tile acc = kb.psum("acc", num::fp32(), {64, 512});
//   kb.matmul(acc, at, bt);                                  // acc = at.T @ bt
//   Tile res = kb.sbuf("res", num::fp32(), {64, 512});
//   kb.tensor_copy(res, acc);
//   kb.dma_copy(c, res);
//   isa::Program p = kb.build();
//
// Loops: the API has no loop construct. A C++ loop around calls unrolls into the instruction
// streams, as NKI's static_range (and affine_range, which the compiler unrolls too) does: the
// program is straight-line code, its size proportional to the iterations.
//
// Tiles are placed when the kernel is built, as the Neuron compiler places them: after the
// whole kernel is traced, each SBUF / PSUM tile holds memory only from the first to the last
// instruction that uses it (its live range), by next fit over the free ranges (placement.h).
// So a tile created inside a loop body holds one generation however long its C++ / Python
// name lives, and tiles whose live ranges do not overlap share bytes. While tracing, a tile has
// a virtual base of its own (Region::base >= kVirtualBase), so instructions and dependencies see
// tiles apart; build() then
//   - places the tiles (an InputError only where nothing can fit: a tile larger than a
//     partition, which the tile call reports, or one instruction whose tiles cannot be in
//     memory together, or PSUM that is full: PSUM does not spill);
//   - when the live set exceeds SBUF, spills: the tile used furthest in the future is stored
//     to an HBM scratch tensor (`spill_<tile>_<n>`) after its last write and reloaded before
//     its next use (DMAs on the DMA policy's streams, so in the timing; Program::spill counts
//     them and the run summary reports them);
//   - rewrites every operand to its tile's place and resolves the dependencies on final
//     addresses: an instruction writing bytes a dead tile held waits for that tile's last
//     readers and writers (WAR, WAW) as for any other conflict (sync_resolver.h).
// A tile reused in a loop still serialises the iterations on it (write-after-read); to let
// iterations overlap, rotate through several buffers allocated outside the loop
// (sbuf_buffers).
//
// Errors. A shape, dtype or memory-space mistake is an InputError thrown by the call that made
// it, naming the call and its operands; every instruction is also checked against the
// generation's rules (isa/validate.h) when it is emitted.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "isa/program.h"
#include "kernel/allocator.h"
#include "kernel/dep_tracker.h"
#include "kernel/footprint.h"
#include "kernel/operands.h"
#include "kernel/sync_resolver.h"
#include "kernel/view.h"

namespace trnsim::kernel {

class KernelBuilder {
 public:
  explicit KernelBuilder(const arch::ChipSpec& chip);
  KernelBuilder(const arch::CoreSpec& core, const arch::NumericsSpec& numerics,
                std::string chip_name);
  ~KernelBuilder();
  KernelBuilder(const KernelBuilder&) = delete;
  KernelBuilder& operator=(const KernelBuilder&) = delete;

  const arch::CoreSpec& core() const { return core_; }
  // The program's seed: it keys the random bits of stochastic rounding (with the engine, the
  // instruction's issue number and the element, core/exec/exec_options.h sr_stream), so one
  // seed gives the same results on every run, functional or timed.
  void set_seed(uint64_t seed) { prog_.seed = seed; }
  // The rounding of the output cast of the instructions emitted from now on, for the opcodes
  // that have one (op table: the `rounding` parameter; DMA copies included); round to nearest
  // even until set. kStochastic on a generation without stochastic rounding is refused by the
  // first such call (numerics.stochastic_rounding). Set it around the casts that need it
  // (an optimizer's bf16 weight from its fp32 master) and back to kNearestEven after.
  void set_rounding(num::Rounding r) { rounding_ = r; }
  num::Rounding rounding() const { return rounding_; }
  // Throws InputError for a policy without load triggers.
  void set_dma_policy(const DmaPolicy& p);
  // Where the instructions emitted from now on come from, for traces, profiles and diagnostics
  // (isa::Origin): a file registered by add_source_file (-1: none) and a line in it (0: none).
  // A front end sets it before each call (the NKI one: the kernel's .py line that made it).
  int32_t add_source_file(std::string path);
  void set_source(int32_t file, int32_t line);

  // --- HBM tensors (row-major, outermost dim first) ---
  Tensor input(std::string name, num::Format dtype, std::vector<int64_t> shape);
  Tensor output(std::string name, num::Format dtype, std::vector<int64_t> shape);
  Tensor inout(std::string name, num::Format dtype, std::vector<int64_t> shape);
  Tensor scratch(std::string name, num::Format dtype, std::vector<int64_t> shape);

  // --- Several kernels in one program (graph/segment.h: a compiled graph's kernels timed as
  // the one instruction stream the compiler makes of them) ---
  // Starts the next kernel. The HBM tensors it declares are named `prefix` + name (two
  // kernels' "x" do not collide), except an input whose name is in `bound`: that returns the
  // bound view (an earlier kernel's output, or columns of one), which must have the shape
  // and dtype asked, so its loads wait for the stores that wrote it (read after write in
  // HBM), while loads of its other tensors (weights) may start under the kernels before it.
  // The DMA policy and the rounding return to their defaults. InputError when a bound view's
  // shape or dtype is not the one asked.
  void begin_kernel(std::string prefix, std::map<std::string, View> bound);
  // A tensor the current kernel declared (or was bound), by its unprefixed name; null when it
  // declared none of that name.
  const View* kernel_tensor(const std::string& name) const;

  // --- On-chip tiles: shape[0] is the partition dim (<= 128), the rest free dims ---
  // Placed at build() (above). Throws InputError naming the tile and the bytes when it is
  // larger than a partition of the memory.
  Tile sbuf(std::string name, num::Format dtype, std::vector<int64_t> shape);
  // PSUM (HARDWARE.md s2.2): a tile of at most one bank per partition lies inside one bank.
  Tile psum(std::string name, num::Format dtype, std::vector<int64_t> shape);
  // `n` tiles named name0, name1, ...: buffers to rotate through in a loop.
  std::vector<Tile> sbuf_buffers(const std::string& name, num::Format dtype,
                                 const std::vector<int64_t>& shape, int n);
  std::vector<Tile> psum_buffers(const std::string& name, num::Format dtype,
                                 const std::vector<int64_t>& shape, int n);

  // --- DMA (dma_copy): HBM <-> SBUF, SBUF -> SBUF, HBM -> HBM; equal element counts ---
  void dma_copy(const View& dst, const View& src, DmaOpts opts = {});
  void dma_transpose(const View& dst, const View& src, DmaOpts opts = {});

  // --- Indirect DMA (builder_indirect.cc): rows picked at run time by an SBUF tile ---
  // `table` is every row of an HBM tensor (view dim 0 = the tensor's rows from row 0; any
  // columns: t[:, 0:64]), `offsets` an SBUF [P, 1] int32 / uint32 tile of row numbers, read when
  // the transfer runs: partition p moves row offsets[p]. A row outside the tensor is an
  // index_range fault of the run. The descriptors come from software DGE, so GpSimd triggers
  // the transfer (DmaOpts::trigger may only name GpSimd). The whole table counts as read
  // (gather) or written (scatter) for dependencies: which rows is not known when building.
  // dst[p, :] = table[offsets[p], :]; dst is an SBUF tile [P, F] (a cast when dtypes differ).
  void dma_gather(const View& dst, const View& table, const View& offsets, DmaOpts opts = {});
  // table[offsets[p], :] = src[p, :]; a row repeated in offsets keeps the last partition's.
  void dma_scatter(const View& table, const View& src, const View& offsets, DmaOpts opts = {});

  // --- TensorE ---
  // dst[M, N] (PSUM) = stationary[K, M].T @ moving[K, N] (both SBUF), accumulated in fp32.
  // Accumulation groups: the first matmul into a PSUM region overwrites it (acc=first), the
  // following ones into the same region accumulate (middle), and the group closes (last) when
  // anything else touches the region; MatmulOpts::start begins a new group explicitly. The
  // stationary is loaded once for back-to-back matmuls that share it.
  void matmul(const View& dst, const View& stationary, const View& moving, MatmulOpts opts = {});
  // NC-v4 MX matmul: dst[M, N] (PSUM, fp32) (+)= dequant(stationary).T @ dequant(moving), the
  // operands MXFP8 [K/4 partitions, 4 M] and [K/4, 4 N] (4 packed elements of K per
  // partition), their E8M0 scales [K/4, M] and [K/4, N] (one per 8 partitions x 4 elements,
  // rows laid out as quantize_mx writes them). Accumulation groups as for matmul.
  void matmul_mx(const View& dst, const View& stationary, const View& moving,
                 const View& stationary_scale, const View& moving_scale, MatmulOpts opts = {});
  // dst[F, P] = src[P, F]: TensorE (dst in PSUM, through the PE array) or VectorE (<= 32x32).
  void transpose(const View& dst, const View& src, isa::Engine engine = isa::Engine::kTensor);
  // VectorE partition moves (NKI nc_stream_shuffle): dst partition 32 q + i <- src partition
  // 32 q + mask[i] in each quadrant q, partitions counted from each view's start; 255 leaves a
  // dst partition unchanged. dst and src: one dtype, one number of elements per partition.
  void stream_shuffle(const View& dst, const View& src, const std::array<uint8_t, 32>& mask);
  // VectorE running op (NKI tensor_scalar_cumulative): per partition along the free elements,
  // r = op1(src[i] op0 arg0, r) (reverse0: arg0 op0 src[i]), dst[i] = r; r starts at `init`,
  // or with `continue_acc` at the lane's accumulator register (which keeps the last r).
  // op1: add, subtract, mult, max or min.
  void tensor_scalar_cumulative(const View& dst, const View& src, isa::AluOp op0, Scalar arg0,
                                isa::AluOp op1, Scalar init, bool continue_acc = false,
                                bool reverse0 = false);

  // --- ScalarE: dst = func(src * scale + bias) ---
  void activation(const View& dst, const View& src, isa::ActFunc func, Scalar scale = 1.0f,
                  Scalar bias = 0.0f, float alpha = 0.0f);
  // ... and reduce_dst[P, 1] = sum over the free dims of the result (accumulate).
  void activation_reduce(const View& dst, const View& reduce_dst, const View& src,
                         isa::ActFunc func, Scalar scale = 1.0f, Scalar bias = 0.0f);
  // NC-v4 (NKI activate2): dst = func((src op0 arg0) op1 arg1), the two ALU ops in FP32 (op0 /
  // op1: mult then add, subtract or bypass; add, subtract or bypass then bypass); `alpha` the
  // function's parameter. With reduce_dst [P, 1]: also reduce_op (add, max, min, abs_max,
  // abs_min) of each row of the result.
  void activate2(const View& dst, const View& src, isa::ActFunc func, AluArg first,
                 AluArg second = {}, float alpha = 0.0f);
  void activate2_reduce(const View& dst, const View& reduce_dst, const View& src, isa::ActFunc func,
                        AluArg first, AluArg second, isa::AluOp reduce_op, float alpha = 0.0f);

  // --- VectorE (and GpSimd where the engine may run it) ---
  void tensor_tensor(const View& dst, const View& in0, const View& in1, isa::AluOp op,
                     isa::Engine engine = isa::Engine::kVector);
  // dst = (src op0 arg0) op1 arg1; a second step with op bypass (the default) is none.
  void tensor_scalar(const View& dst, const View& src, AluArg first, AluArg second = {},
                     isa::Engine engine = isa::Engine::kVector);
  // dst = (in0 op0 arg0) op1 in1.
  void scalar_tensor_tensor(const View& dst, const View& in0, AluArg first, isa::AluOp op1,
                            const View& in1);
  // dst = op over the innermost `axes` dims of src (as the view's dims, before merging).
  void tensor_reduce(const View& dst, const View& src, isa::AluOp op, int axes = 1);
  void tensor_copy(const View& dst, const View& src, isa::Engine engine = isa::Engine::kVector);
  void memset(const View& dst, double value, isa::Engine engine = isa::Engine::kVector);
  void select(const View& dst, const View& predicate, const View& on_true, const View& on_false);
  // NC-v4: dst (MXFP8, src's shape) and scale ([P, F/4] E8M0) of src (bf16/fp16) in blocks
  // of 8 partitions x 4 elements.
  void quantize_mx(const View& dst, const View& scale, const View& src);
  void bn_stats(const View& dst, const View& src);  // dst [P, 6], src [P, <= 512]
  void bn_aggr(const View& dst, const View& src);   // dst [P, 2] = mean, variance
  void reciprocal(const View& dst, const View& src);
  void max8(const View& dst, const View& src);  // dst [P, 8]
  // dst [P, 8] (uint16 / uint32) = the position in data [P, 8..16384] of each of vals [P, 8].
  void find_index8(const View& dst, const View& data, const View& vals);
  // dst = data [P, <= 16384] with the first occurrence of each of vals [P, 8] replaced by
  // `value`; dst_idx [P, 8] (uint16 / uint32) = their positions.
  void match_replace8(const View& dst, const View& dst_idx, const View& data, const View& vals,
                      double value);
  // NC-v3 (NKI range_select): dst = on_true where
  // (range_start + i) op0 bound0 and (range_start + i) op1 bound1 (i: flat free index), else
  // on_false; reduce_res [P, 1] = max of dst, with `accumulate` also of the VectorE
  // accumulator's max from earlier range_selects.
  void range_select(const View& dst, const View& reduce_res, const View& on_true, isa::AluOp op0,
                    Scalar bound0, isa::AluOp op1, Scalar bound1, int64_t range_start,
                    double on_false, bool accumulate);
  // The engine's random generator (VectorE or GpSimd), per lane: seeds [1 or P, k] int32 /
  // uint32 (one row for every lane, or row p for lane p); rand draws dst's values, uniform in
  // [0, 1); dropout (VectorE) zeroes each element of src whose draw is below prob.
  void rand_seed(const View& seeds, isa::Engine engine = isa::Engine::kGpSimd);
  void rand(const View& dst, isa::Engine engine = isa::Engine::kGpSimd);
  // The generator's raw 32-bit words, the low bits dst's integer type holds (NKI rng).
  void rng(const View& dst, isa::Engine engine = isa::Engine::kGpSimd);
  // NC-v4 VectorE: dst = min + u (max - min), u uniform in [0, 1) (NKI rand2).
  void rand2(const View& dst, Scalar min, Scalar max);
  // dst [lanes, 6 (GpSimd) or 24 (VectorE)] uint32: each lane's state, which rand_seed of the
  // same words restores (NKI rand_get_state).
  void rand_get_state(const View& dst, isa::Engine engine = isa::Engine::kGpSimd);
  void dropout(const View& dst, const View& src, Scalar prob);
  // NC-v4: dst = exp(src - max_value) on VectorE (its running sum stays in the engine).
  void exponential(const View& dst, const View& src, Scalar max_value = 0.0f);
  // r[i] = (in0[i] op0 r[i-1]) op1 in1[i] along the free dims, r[-1] = initial (builder_scan.cc).
  void tensor_tensor_scan(const View& dst, const View& in0, const View& in1, Scalar initial,
                          isa::AluOp op0, isa::AluOp op1);
  // dst = src op arg, and reduce_dst[P, 1] = reduce_op over the free dims of dst.
  void tensor_scalar_reduce(const View& dst, const View& reduce_dst, const View& src, AluArg first,
                            isa::AluOp reduce_op);

  // --- GpSimd ---
  // dst[p, i] = base + channel_multiplier * p + i (i: flat free index).
  void iota(const View& dst, int64_t base, int64_t channel_multiplier);
  // dst = (base + channel_multiplier * p + i) cmp 0 ? src : fill.
  void affine_select(const View& dst, const View& src, isa::AluOp cmp, int64_t base,
                     int64_t channel_multiplier, double fill);
  void partition_reduce(const View& dst, const View& src, isa::AluOp op);  // dst [1, F]
  // Index ops (builder_gather.cc). dst[p, j] = data[p, indices[p, j]] (indices uint32, data's
  // free elements counted in order; dst has data's dtype).
  void n_gather(const View& dst, const View& data, const View& indices);
  // Per 16-partition core: its slice of `index` (uint16) read partition first, the first
  // `indices` of them (0: all), and each partition p of the core gets src[p, i .. i + elems)
  // for each index i in turn: dst [P, indices x elems].
  void local_gather(const View& dst, const View& src, const View& index, int elems = 1,
                    int indices = 0);
  // dst [1, 2 n] (fp32 / int32): the start of each id's run of equal ids, then one past its
  // end; id 0 is padding (n, -1).
  void sequence_bounds(const View& dst, const View& segment_ids);
  // NC-v3. In partitions 0, 16, ..., 112: dst [P, F + 1] (int32) = the positions + offset of
  // src's nonzero elements, `padding` for the rest, then their count; other partitions keep
  // their values.
  void nonzero_with_count(const View& dst, const View& src, int32_t offset, int32_t padding);

  // --- Between the physical cores of a logical core (NC-v3+; chip/spmd_run.h runs them) ---
  // Every core of the logical core waits here until all have reached their matching barrier.
  // `data` is the shared HBM tensor the cores synchronise on (NKI core_barrier): the barrier
  // waits for this core's earlier accesses of it, and later accesses wait for the barrier.
  void core_barrier(const View& data, isa::Engine engine = isa::Engine::kGpSimd);
  // src (SBUF) goes to core `send_to`'s dst; core `recv_from`'s src arrives in dst (SBUF, the
  // same dtype and shape). The k-th sendrecv on `pipe` meets the peer's k-th on that pipe.
  void sendrecv(const View& dst, const View& src, int send_to, int recv_from, int pipe = 0,
                DmaOpts opts = {});

  // A collective with the other ranks of a replica group (nki.collectives; run by
  // fabric/rank_run.h, which holds the groups): dst and src both in SBUF or both in HBM, of
  // one dtype. The k-th collective a rank issues on a group meets the k-th of every other rank
  // of its list there.
  struct CollectiveArgs {
    isa::CollectiveKind kind = isa::CollectiveKind::kAllReduce;
    isa::AluOp op = isa::AluOp::kAdd;  // all_reduce, reduce_scatter: add, max or min
    int group = 0;                     // index into the rank run's replica groups
    // The product of the tensor dims before the collective dim: a chunk of all_gather,
    // reduce_scatter or all_to_all is `outer` runs of contiguous elements (row-major).
    int64_t outer = 1;
    int send_to = -1, recv_from = -1;  // permute: global ranks, -1 for none
  };
  void collective(const View& dst, const View& src, const CollectiveArgs& args, DmaOpts opts = {});
  // all_to_all_v / all_gather_v: sizes and places from `metadata` (uint32, one column per
  // rank of the list; isa::CollectiveKind), read when the collective runs, its receive counts
  // written back unless `flags` has isa::kRecvCountsKnown. dst and src flat element buffers.
  void collective_v(const View& dst, const View& src, const View& metadata,
                    isa::CollectiveKind kind, int group, uint8_t flags, DmaOpts opts = {});

  // Finishes the program: closes open accumulation groups, places the tiles (spilling if
  // SBUF is short), adds the semaphores, validates the whole program. The builder cannot be
  // used afterwards.
  isa::Program build();

  const SyncStats& sync_stats() const { return sync_.stats(); }
  const SyncResolver& sync() const { return sync_; }
  // --- Scalar registers (builder_registers.cc) ---
  // NKI's virtual registers. Register r is r on every engine's sequencer (r0..r63), backed by a
  // one-element int32 SBUF tile, its home: register_set writes the home (memset),
  // register_load copies one element into it (a DMA from HBM or SBUF, a VectorE copy from
  // PSUM; floats convert to int32). An instruction that reads r on an engine (a dynamic view,
  // reg_store, a loop's branch) first loads the home into that engine's r (reg_load) unless the
  // engine's copy is current. A loop's counter lives in the registers only. Throws InputError when
  // all are in use, or for a register not allocated.
  int32_t new_register();
  void free_register(int32_t r);
  void register_set(int32_t r, int64_t value);
  void register_load(int32_t r, const View& src);   // src: one element
  void register_store(const View& dst, int32_t r);  // dst: one element; on the Sync engine

  // --- Hardware loops (builder_loop.cc; NKI dynamic_range, while on a register) ---
  // The instructions emitted until end_loop() run as one loop on every engine, with the
  // registers and branches of the sequencers. As the Neuron compiler does (NKI dynamic loops),
  // the loop starts after a drain of every engine and DMA queue, every iteration ends with a
  // drain and a barrier of all engines, and the semaphores are reset before the next one, so
  // iterations never overlap. Tiles used in the body keep one place for the whole loop (a body
  // that does not fit in SBUF without spilling is an InputError at build()).
  struct Bound {
    int64_t value = 0;
    int32_t reg = -1;  // >= 0: the register's value when the loop starts
  };
  // for (i = start; i < stop; i += step), step > 0. Returns i's register: a view made dynamic
  // with it moves every iteration; it is freed by end_loop().
  int32_t begin_for(Bound start, Bound stop, int64_t step);
  // while (r != 0), r read at the start and after every iteration.
  void begin_while(int32_t r);
  void end_loop();
  int loop_depth() const { return static_cast<int>(open_loops_.size()); }

  // As emitted so far (tiles at their virtual bases until build()).
  const isa::Program& program() const { return prog_; }

  // Instructions the program may hold: emitting one more throws InputError naming the limit.
  // The default bounds the program's host memory (sizeof(isa::Instruction) bytes each) to half
  // of what the host has free when the builder is made, so a kernel called with absurd sizes
  // stops with an error instead of exhausting the host.
  void set_max_instructions(size_t n) { max_instructions_ = n; }
  size_t max_instructions() const { return max_instructions_; }

 private:
  struct Use {
    View view;
    bool write = false;
    std::string_view role;  // the operand's name in messages
  };
  // An open matmul accumulation group: its PSUM region and its last multiply_moving.
  // An on-chip tile: its whole view and virtual base.
  struct TileRec {
    View whole;
    int64_t bytes = 0;    // per partition
    int32_t symbol = -1;  // its name in Program::symbols
  };
  // An instruction's access of memory, as traced (tiles at their virtual bases).
  struct UseRec {
    Footprint where;
    int32_t tile = -1;  // on chip: the tile
    bool write = false;
    bool whole = false;  // a write of every byte of the tile
  };
  struct Emitted {
    InstrRef ref;  // in the streams as emitted
    uint32_t uses = 0;
    bool barrier = false;  // waits for the latest instruction of every agent (a drain)
  };
  struct RegisterRec {
    bool used = false;
    bool counter = false;  // a loop's counter: in the registers only, no home
    Tile home;
  };
  // One hardware loop: per engine, the stream positions of its parts (as emitted, remapped by
  // place()), and the range of order_ it spans.
  struct LoopRec {
    size_t first_order = 0, end_order = 0;  // order_ [first, end): the body and its tail
    std::array<int32_t, isa::kNumEngines> head{}, end{};  // stream [head, end): the same
    InstrRef reset, restore;  // the leader's semaphore reset and restore (set at build())
    std::array<InstrRef, isa::kNumEngines> go{};    // the others' wait for the reset
    std::array<InstrRef, isa::kNumEngines> skip{};  // the branches past a loop of 0 trips
                                                    // (as traced: end_loop patches them)
    int32_t counter = -1, stop = -1, cond = -1;
    int64_t step = 0, stop_value = 0;  // stop_value: when `stop` (its register) is -1
  };
  struct Group {
    Footprint where;
    InstrRef last;
    int32_t count = 0;
  };
  // The open accumulation group at exactly dst's region (after closing the ones `dst` cuts
  // into, or the one there when `start`), or null: a new group begins.
  Group* accumulation_group(const View& dst, bool start);
  // Records `ref`, a matmul into dst's region, in `group` (or a new group).
  void note_accumulation(Group* group, const View& dst, InstrRef ref);

  Tensor tensor(std::string name, num::Format dtype, std::vector<int64_t> shape,
                isa::TensorKind kind);
  Tile tile(isa::Space space, std::string name, num::Format dtype, std::vector<int64_t> shape);
  int32_t dma_agent(const isa::Instruction& in);
  int32_t agent_of(const isa::Instruction& in);
  // Sets the DMA queue of a transfer triggered by `trigger` (builder_dma.cc).
  void assign_dma_queue(isa::Instruction& in, isa::Engine trigger);
  // The tile whose virtual range holds on-chip byte address `vaddr`.
  int32_t tile_at(int64_t vaddr) const;
  // `in` with its on-chip operands at offsets relative to their tiles (for validation).
  isa::Instruction at_zero(isa::Instruction in) const;
  // The source position and each operand's tile or tensor name (symbols), from the uses.
  isa::Origin origin_of(const isa::Instruction& in, const std::vector<Use>& uses) const;
  // Per use: the tile whose bytes this write may take in place (placement.h), or -1.
  std::vector<int32_t> in_place_sources(const std::vector<uint64_t>& first_use) const;
  // build(): places the tiles, adds spills, rewrites operands, resolves dependencies
  // (builder_place.cc).
  void place();
  isa::Engine dma_trigger(const View& src, const DmaOpts& opts);
  // dma_gather / dma_scatter (builder_indirect.cc); slot: the table's operand slot.
  void dma_indirect(std::string_view call, isa::Opcode op, const View& sbuf, const View& table,
                    const View& offsets, const DmaOpts& opts);

  // Appends one instruction after checking it against the generation's rules (throws an
  // InputError naming `call` and the operands), with its dependencies resolved. `uses` are
  // the views it reads and writes.
  void emit(std::string_view call, isa::Instruction in, const std::vector<Use>& uses,
            bool matmul = false);
  void check(std::string_view call, const isa::Instruction& in, const std::vector<Use>& uses);
  // Closes the accumulation groups that overlap a non-matmul access of PSUM.
  void close_groups(const View& v);
  void close_all_groups();
  // The instruction of one op on `engine` with operands `ops` (access patterns of the views).
  isa::Instruction make(isa::Opcode op, isa::Engine engine, const std::vector<View>& ops) const;
  // Emits `op` on `engine` over `ops` (dst first, in op-table role order), with [P, 1] column
  // operands appended for the Scalars that are columns (their Params field names the slot).
  using ColumnArg = std::pair<const Scalar*, isa::ScalarArg isa::Params::*>;
  void emit_op(std::string_view call, isa::Opcode op, isa::Engine engine,
               const std::vector<View>& ops, isa::Params p = {},
               std::initializer_list<ColumnArg> columns = {});
  // Registers (builder_registers.cc): loads r's home into engine e's r; the registers `in`
  // reads, on its engine, where that engine's copy is not current.
  void materialize(int32_t r, isa::Engine e);
  void materialize_registers(const isa::Instruction& in);
  void check_register(std::string_view call, int32_t r) const;
  void stale_everywhere(int32_t r);
  void stale_but_counters();  // every register but the open loops' counters (builder_loop.cc)
  // Loops (builder_loop.cc): a control instruction with no memory operands, appended as is
  // (branch targets are stream positions, which validation of one instruction cannot check);
  // a drain of every agent on every engine; the semaphore deltas of build().
  InstrRef emit_control(isa::Instruction in, bool barrier = false);
  void drain();
  // Records `L` as the innermost open loop, its body starting here on every engine.
  void open_loop(LoopRec L);
  void finish_loops();
  // place(): moves branch targets and the loops' positions to where the traced instructions
  // landed (`moved`: per stream, traced index -> placed index; -1: not placed).
  void remap_positions(std::array<std::vector<int32_t>, isa::kNumEngines>& moved);

  arch::CoreSpec core_;
  arch::NumericsSpec numerics_;
  isa::Program prog_;
  isa::Program scratch_;  // one instruction at a time, for validation at the call
  int64_t sbuf_capacity_ = 0, psum_capacity_ = 0;
  std::vector<TileRec> tiles_;  // by tile number, in order of virtual base
  int64_t next_vbase_;
  std::vector<Emitted> order_;  // every instruction, in the order emitted
  std::vector<UseRec> uses_;    // theirs, in that order (order_[i].uses of them each)
  DepTracker deps_;
  SyncResolver sync_;
  DmaPolicy dma_policy_;
  // begin_kernel: the current kernel's prefix, bindings and tensors by unprefixed name.
  bool multi_kernel_ = false;
  std::string kernel_prefix_;
  std::map<std::string, View> kernel_bound_, kernel_tensors_;
  num::Rounding rounding_ = num::Rounding::kNearestEven;  // set_rounding
  std::array<int32_t, isa::kNumEngines> dma_rotation_{};
  size_t next_load_trigger_ = 0;
  std::vector<Group> groups_;
  std::optional<isa::Instruction> stationary_;  // the last load_stationary, while still valid
  std::optional<Footprint> stationary_where_;
  bool built_ = false;
  uint64_t id_;            // in the regions it makes: a view of another builder's memory is refused
  int64_t hbm_bytes_ = 0;  // the chip's HBM, which the tensors must fit (0: not known)
  size_t emitted_ = 0;
  size_t max_instructions_;
  std::array<RegisterRec, isa::kScalarRegisters> regs_{};
  std::array<std::array<bool, isa::kScalarRegisters>, isa::kNumEngines> reg_fresh_{};
  std::vector<LoopRec> loops_;
  std::vector<size_t> open_loops_;              // into loops_, innermost last
  std::vector<int32_t> tensor_symbols_;         // by tensor index: its name in Program::symbols
  int32_t source_file_ = -1, source_line_ = 0;  // set_source
};

// Where the virtual bases of tiles start while a kernel is traced (far above any memory).
inline constexpr int64_t kVirtualBase = int64_t{1} << 40;

// Instructions whose records fit half of the host memory available now (at least 1 Mi).
size_t default_max_instructions();
// A new builder's id (never 0, never reused within the process).
uint64_t next_builder_id();

}  // namespace trnsim::kernel
