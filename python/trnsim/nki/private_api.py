"""``neuronxcc.nki._private.private_api``: the private module through which NKI Beta 1's kernels
reached the core-to-core instructions before ``nki.isa`` documented them (neuronx-distributed's
indexed_flatten imports ``sendrecv`` from it). The same functions as ``nki.isa``'s."""

from trnsim.nki.isa import core_barrier, sendrecv

__all__ = ["core_barrier", "sendrecv"]
