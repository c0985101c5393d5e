// Kernels timed together. A compiled Neuron graph is one instruction stream per engine, not a
// call per kernel: the next operator's loads that do not read what the operators before it
// write (its weights) are issued while those run, as far as SBUF room and the DMA queues'
// order let them, and the engines fill and drain once, not at every operator. A sum of
// kernels timed alone misses both, which matters most where kernels are short (a batch-1
// encoder, a decode step: weight streams separated by norms and attention).
//
// A segment is consecutive compute kernels emitted into one program
// (KernelBuilder::begin_kernel): each reads the HBM tensors that earlier kernels of the
// segment wrote where the graph says it does (a fused q/k/v linear's columns for attention's
// q, k and v), so those loads wait for the stores that wrote them, and everything else
// (weights, the graph's inputs) is a tensor of its own that the loads may start on at once.
// Tiles are placed over the whole program (kernel/placement.h), so a kernel's weight buffers
// land where the kernel before it is not working, where room allows.
#pragma once

#include <string>
#include <vector>

#include "arch/chip_spec.h"
#include "base/units.h"
#include "graph/graph.h"
#include "graph/lower.h"
#include "isa/program.h"

namespace trnsim::graph {

// Kernels are timed beside the kernel before them only while the two together last at most
// this long alone (picoseconds): what one gains beside the other is bounded by its first
// weight blocks' loads and one fill and drain, 6-16 us measured on Llama-3.1-8B's kernels of
// 0.2-7 ms (docs/models.md), so beyond 1 ms it is a few percent at most and not worth
// simulating both kernels again.
inline constexpr Picoseconds kSegmentMaxTime{1'000'000'000};

struct SegmentItem {
  const Node* node = nullptr;
  Kernel kernel;  // with its tiling chosen (KernelCache::tiling)
};

// Whether a kernel of this kind can be emitted into a segment: the inference kernels
// (linear, attention, norm, embedding, elementwise). Collectives, the MoE router and the
// training kernels are timed alone.
bool segmentable(KernelKind k);

// Names the segment for the timing cache: the kernels' keys and tilings, and which earlier
// outputs feed which inputs.
std::string segment_key(const std::vector<SegmentItem>& items);

// The segment's program for one rank. InputError when an output does not fit the input it
// feeds (a shape no kernel pair of the library produces).
isa::Program build_segment(const arch::ChipSpec& chip, const std::vector<SegmentItem>& items);

}  // namespace trnsim::graph
