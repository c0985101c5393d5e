#include <string>

#include "validate/target_list.h"

namespace trnsim::validate {

std::span<const Target> targets() {
  static const std::vector<Target> list{
      {"matmul-tutorial",
       "NKI matmul tutorial, four versions, 4096x8192x8192 bf16 on one NeuronCore-v2 (s2)",
       matmul_tutorial_records},
      {"dma", "one HBM->SBUF DMA of a [4, 4096] bf16 tensor on Trn2 (s3)", single_dma_records},
      {"allreduce-2rank", "2-rank fp32 all-reduce, cores of a Trn1 (s4)", allreduce_2rank_records},
  };
  return list;
}

}  // namespace trnsim::validate
