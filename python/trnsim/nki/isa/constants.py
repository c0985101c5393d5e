"""nki.isa.constants for trnsim: the enums the ISA calls take (``from nki.isa.constants import
oob_mode``); ``nki.isa`` exports the same objects."""

from __future__ import annotations

import enum


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
    """What an instruction does with its engine's reduce registers. trnsim models the
    reduction of one instruction (idle / reset_reduce); carrying a sum across instructions
    (reduce, load_reduce) raises (_ops.check_reduce_cmd)."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


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


class dma_engine(enum.Enum):
    """Which DMA mechanism sendrecv uses (only ``dma``, the standard DMA queues, is
    modelled)."""

    dma = "dma"
    gpsimd_dma = "gpsimd_dma"


class nc_version(enum.IntEnum):
    gen2 = 2
    gen3 = 3
    gen4 = 4
