// A compiled graph's kernels on two in-order streams: the compute engines, and the collective
// engines (the CC-cores sequencing the collective DMA, HARDWARE.md s7), as a Neuron graph runs
// its collectives beside the compute that does not need their result. Each kernel starts when
// its node's inputs are written and its stream is free, so a collective overlaps the compute
// kernels after it in program order until the first that reads its output (a backward's
// all-gather of a saved input under the grad-input matmul, the reduce-scatter of grad-input
// under the grad-weight matmul), and a compute kernel waits for a collective it reads.
// Not modelled: the HBM bandwidth the two share (a collective's DMA and a kernel's loads).
#pragma once

#include <cstdint>
#include <vector>

#include "base/units.h"
#include "graph/graph.h"

namespace trnsim::graph {

class StreamSchedule {
 public:
  explicit StreamSchedule(size_t values) : ready_(values, Picoseconds(0)) {}

  // When node `n` may start: all of its inputs written (picoseconds).
  Picoseconds inputs_ready(const Node& n) const;
  // Places one kernel, of `dur` on the collective stream or the compute stream, no earlier
  // than `after` (its node's inputs, or its node's previous kernel): returns its start.
  Picoseconds place(bool collective, Picoseconds after, Picoseconds dur);
  // Node `n` finished at `t`: its outputs are written then.
  void finish(const Node& n, Picoseconds t);

  Picoseconds makespan() const { return end_; }
  // Each collective kernel's time that no compute kernel ran beside (picoseconds), in the
  // order they were placed (compute kernels: their whole time), so that the sum over all
  // kernels is the makespan when neither stream idles while the other waits.
  std::vector<Picoseconds> exposed() const;

 private:
  struct Span {
    Picoseconds start, end;
    bool collective = false;
  };
  std::vector<Picoseconds> ready_;  // per value: when it is written
  std::vector<Span> spans_;         // every kernel placed, in placing order
  Picoseconds compute_free_{0}, collective_free_{0}, end_{0};
};

}  // namespace trnsim::graph
