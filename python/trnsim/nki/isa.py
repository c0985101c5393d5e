"""nki.isa for trnsim, current dialect (NKI 0.3+): every instruction takes its destination
first (``nisa.tensor_copy(dst=t, src=x)``) and emits one engine instruction of the C++ kernel
builder (a few documented exceptions emit two; docs/nki.md). Names left out raise
NotImplementedError naming them."""

from __future__ import annotations

import enum

from trnsim.nki import _ctx, _ops
from trnsim.nki._ctx import stub


class engine(enum.Enum):
    """Which engine runs an instruction (unknown: the instruction's default)."""

    unknown = "unknown"
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    activation = "activation"
    gpsimd = "gpsimd"
    sync = "sync"


tensor_engine, vector_engine = engine.tensor, engine.vector
scalar_engine, gpsimd_engine, sync_engine = engine.scalar, engine.gpsimd, engine.sync
unknown_engine = engine.unknown


class reduce_cmd(enum.Enum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3


class dge_mode(enum.Enum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):
    error = 0
    skip = 1


class matmul_perf_mode(enum.Enum):
    none = "none"
    double_row = "double_row"
    double_row_gen3 = "double_row"


class nc_version(enum.IntEnum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


def get_nc_version():
    """The NeuronCore version of the generation being simulated (trn1: gen2 ... trn3: gen4)."""
    return {"trn1": nc_version.gen2, "trn2": nc_version.gen3}.get(_ctx.ctx().chip.name,
                                                                  nc_version.gen4)


nc_matmul = _ops.nc_matmul
nc_transpose = _ops.nc_transpose
activation = _ops.activation
activation_reduce = _ops.activation_reduce
tensor_tensor = _ops.tensor_tensor
tensor_scalar = _ops.tensor_scalar
scalar_tensor_tensor = _ops.scalar_tensor_tensor
tensor_reduce = _ops.tensor_reduce
tensor_partition_reduce = _ops.tensor_partition_reduce
tensor_tensor_scan = _ops.tensor_tensor_scan
tensor_scalar_reduce = _ops.tensor_scalar_reduce
tensor_copy = _ops.tensor_copy
reciprocal = _ops.reciprocal
exponential = _ops.exponential
memset = _ops.memset
iota = _ops.iota
affine_select = _ops.affine_select
bn_stats = _ops.bn_stats
bn_aggr = _ops.bn_aggr
max8 = _ops.max8
dma_copy = _ops.dma_copy
dma_transpose = _ops.dma_transpose


def select(dst, predicate, on_true, on_false, name=None):
    """dst = predicate != 0 ? on_true : on_false (VectorE)."""
    return _ops.select(dst, predicate, on_true, on_false)


_WHY = {
    "rng": "the ISA random generators are not modelled",
    "gather": "no gather instruction is modelled",
    "register": "runtime registers and dynamic control flow are not traced",
    "mx": "MX matmul / quantisation are not exposed by the kernel builder yet",
}
for _name, _why in {
    "nc_matmul_mx": "mx", "quantize_mx": "mx", "activate2": "",
    "dropout": "rng", "rng": "rng", "rand2": "rng", "rand_set_state": "rng",
    "rand_get_state": "rng", "set_rng_seed": "rng", "local_gather": "gather",
    "nc_n_gather": "gather", "nc_find_index8": "", "nc_match_replace8": "",
    "nc_stream_shuffle": "", "range_select": "", "select_reduce": "", "sequence_bounds": "",
    "tensor_copy_predicated": "", "tensor_copy_dynamic_src": "register",
    "tensor_copy_dynamic_dst": "register", "tensor_scalar_cumulative": "",
    "dma_compute": "", "register_alloc": "register", "register_load": "register",
    "register_move": "register", "register_store": "register", "core_barrier": "",
    "sendrecv": "", "nonzero_with_count": "",
}.items():
    globals()[_name] = stub(f"nki.isa.{_name}", _WHY.get(_why, ""))
