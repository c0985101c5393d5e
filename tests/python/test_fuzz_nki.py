"""Property tests of the NKI front end (trnsim.nki) with Hypothesis: random small kernels from
a grammar of nl.load / arithmetic / nl.store against numpy, random launch grids and kernel
arguments, random NKI calls with random arguments inside a kernel, and indexing of kernel
tensors; every outcome must be a correct result or a clean error (fuzz_helpers.outcome: an
NkiError / ValueError / TypeError / NotImplementedError with a message, never the front
end's fallback for an unchecked argument). Profiles: conftest.py."""

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
import trnsim.nki.legacy.isa as legacy_isa
from fuzz_helpers import expected_index, index_items, junk, junk_arrays, outcome

FLOATS = [np.float32, ml_dtypes.bfloat16, np.float16]
chips = st.sampled_from(["trn1", "trn2", "trn3"])

# --- random kernels: load, elementwise arithmetic, store; values against numpy ---

BINARY = {"add": (nl.add, np.add), "subtract": (nl.subtract, np.subtract),
          "multiply": (nl.multiply, np.multiply), "maximum": (nl.maximum, np.maximum),
          "minimum": (nl.minimum, np.minimum)}
OPERATOR = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
            "multiply": lambda a, b: a * b}
UNARY = {"abs": (nl.abs, np.abs), "negative": (nl.negative, np.negative),
         "relu": (nl.relu, lambda x: np.maximum(x, np.float32(0))),
         "copy": (nl.copy, lambda x: x)}

step = st.one_of(
    st.tuples(st.just("tt"), st.sampled_from(sorted(BINARY)), st.integers(0, 5),
              st.integers(0, 5), st.booleans()),
    st.tuples(st.just("ts"), st.sampled_from(sorted(BINARY)), st.integers(0, 5),
              st.integers(-32, 32).map(lambda k: k / 16), st.booleans()),
    st.tuples(st.just("un"), st.sampled_from(sorted(UNARY)), st.integers(0, 5), st.none(),
              st.none()))


def _round(x, dtype):
    """fp32 result rounded to the tile's dtype (RNE), as the engines write it."""
    return x.astype(np.float32).astype(dtype)


@given(chip=chips, shape=st.one_of(
           st.tuples(st.integers(1, 128), st.integers(1, 64)),
           st.tuples(st.integers(1, 32), st.integers(1, 8), st.integers(1, 8))),
       dtypes=st.lists(st.sampled_from(FLOATS), min_size=1, max_size=3),
       steps=st.lists(step, min_size=1, max_size=3), grid=st.sampled_from([(), (1,), (2,)]),
       seed=st.integers(0, 2**32 - 1))
def test_random_kernels_match_numpy(chip, shape, dtypes, steps, grid, seed):
    """Values on a 1/16 grid in [-2, 2] (exact in every dtype here; at most three steps keep
    them far from overflow and subnormals): every step is one fp32 operation rounded once
    to the first tile operand's dtype, so the result is bit-exact."""
    rng = np.random.default_rng(seed)
    xs = [(rng.integers(-32, 33, shape) / 16).astype(dt) for dt in dtypes]

    def kernel(*args):
        tiles = [nl.load(a) for a in args]
        for kind, name, a, b, flag in steps:
            x = tiles[a % len(tiles)]
            if kind == "tt":
                y = tiles[b % len(tiles)]
                tiles.append(OPERATOR[name](x, y) if flag and name in OPERATOR
                             else BINARY[name][0](x, y))
            elif kind == "ts":
                tiles.append(BINARY[name][0](b, x) if flag else BINARY[name][0](x, b))
            else:
                tiles.append(UNARY[name][0](x))
        r = tiles[-1]
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out

    ref = list(xs)
    for kind, name, a, b, flag in steps:
        x = ref[a % len(ref)]
        if kind == "tt":
            y = ref[b % len(ref)]
            r = BINARY[name][1](x.astype(np.float32), y.astype(np.float32))
        elif kind == "ts":
            c = np.float32(b)
            r = BINARY[name][1](c, x.astype(np.float32)) if flag else BINARY[name][1](
                x.astype(np.float32), c)
        else:
            r = UNARY[name][1](x.astype(np.float32))
        ref.append(_round(r, x.dtype))
    k = nki.jit(kernel, chip=chip)
    got = (k[grid] if grid else k)(*xs)
    assert got.dtype == ref[-1].dtype and got.shape == ref[-1].shape
    np.testing.assert_array_equal(got.astype(np.float32), ref[-1].astype(np.float32))


# --- launch grids and kernel arguments ---

@nki.jit
def add_kernel(a, b):
    # nl.load first: `a.shape` of a None argument would fail in the kernel's own code, which
    # trnsim leaves alone (errors of the kernel's own code are the kernel's).
    ta, tb = nl.load(a), nl.load(b)
    out = nl.ndarray(ta.shape, dtype=ta.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=ta + tb)
    return out


grid_axes = st.one_of(st.integers(-3, 4), st.just(10**9), st.floats(-2, 3), st.text(max_size=2),
                      st.none(), st.booleans(), st.lists(st.integers(0, 2), max_size=2),
                      st.integers(-1, 3).map(nl.nc), st.sampled_from([np.int64(2), 2.0]))
grids = st.one_of(grid_axes, st.lists(grid_axes, max_size=3).map(tuple))


@given(grid=grids, chip=chips)
def test_launch_grids(grid, chip):
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    kind, res = outcome(lambda: nki.simulate(add_kernel, chip=chip)[grid](a, a))
    if kind == "ok":
        np.testing.assert_array_equal(res, a + a)


arg_values = st.one_of(st.just(np.arange(8, dtype=np.float32).reshape(2, 4)),
                       st.just(np.ones((2, 4), ml_dtypes.bfloat16)), junk_arrays(), junk())


@given(a=arg_values, b=arg_values)
def test_kernel_arguments(a, b):
    kind, res = outcome(add_kernel, a, b)
    if kind == "ok" and isinstance(a, np.ndarray) and a.dtype == np.float32 and \
            isinstance(b, np.ndarray) and b.shape == a.shape:
        np.testing.assert_array_equal(res, a + b.astype(np.float32))


# --- random NKI calls with random arguments ---

def _calls():
    """NKI functions that take operands (their names for the report)."""
    names = ["load", "store", "ndarray", "zeros", "full", "exp", "add", "multiply", "sum",
             "max", "mean", "softmax", "matmul", "transpose", "copy", "where", "ds", "arange",
             "broadcast_to", "expand_dims", "static_cast", "shared_constant", "program_id",
             "num_programs", "affine_range", "shared_identity_matrix", "abs", "negative",
             "load_transpose2d", "zeros_like", "invert", "logical_not"]
    out = [(f"nl.{n}", getattr(nl, n)) for n in names]
    for n in ["tensor_copy", "tensor_scalar", "tensor_tensor", "memset", "iota", "activation",
              "tensor_reduce", "dma_copy", "nc_matmul", "nc_transpose", "reciprocal",
              "tensor_tensor_scan", "affine_select", "select", "bn_stats", "max8",
              "tensor_partition_reduce", "scalar_tensor_tensor", "exponential",
              "dma_transpose", "tensor_scalar_reduce", "activation_reduce"]:
        out.append((f"nisa.{n}", getattr(nisa, n)))
    for n in ["nc_matmul", "activation", "tensor_reduce", "tensor_tensor", "tensor_scalar",
              "tensor_copy", "iota", "affine_select", "memset", "bn_stats", "dma_copy",
              "nc_transpose", "exponential", "max8", "dma_transpose"]:
        out.append((f"legacy nisa.{n}", getattr(legacy_isa, n)))
    return out


CALLS = _calls()


class Tile:
    """The i-th tile of test_nki_calls_with_random_arguments' kernel."""

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"Tile({self.i})"
METHODS = ["reshape", "broadcast_to", "view", "ap", "astype", "slice", "select", "permute",
           "expand_dim", "squeeze_dim", "flatten_dims", "broadcast", "__getitem__",
           "__add__", "__mul__", "__lt__", "__neg__", "__abs__", "get_pattern"]
others = st.sampled_from([nl.add, nl.multiply, nl.exp, np.add, nl.float32, nl.bfloat16,
                          nl.int32, nl.sbuf, nl.psum, nl.shared_hbm, (4, 8), (4, 1), [4, 8],
                          (128, 512), 0, 1, -1, 3, 2.0, [[1, 8]], [[8, 4], [1, 8]],
                          nisa.engine.vector, nisa.engine.gpsimd, "add", slice(0, 2)])


@given(call=st.one_of(st.sampled_from(CALLS), st.sampled_from(METHODS)), data=st.data(),
       chip=chips)
def test_nki_calls_with_random_arguments(call, data, chip):
    """One NKI call (or tile method) with random positional arguments, after a few valid
    ones; what the kernel gives back is not checked, only that it runs or fails cleanly."""

    def kernel(x, y):
        t = nl.load(x)  # [4, 8] fp32
        c = nl.load(y)  # [4, 1] fp32
        ps = nl.zeros((4, 8), dtype=nl.float32, buffer=nl.psum)
        tiles = [t, c, ps, x, y, t[0:2], t[:, 1:3]]
        # Tiles are drawn by position: Hypothesis keeps what it draws, and C++ views kept past
        # the test make nanobind report leaks at exit.
        pool = st.one_of(st.integers(0, len(tiles) - 1).map(Tile), others, junk())
        if isinstance(call, str):
            target = tiles[data.draw(st.integers(0, 3), label="self")]
            fn = getattr(target, call)
        else:
            fn = call[1]
        args = data.draw(st.lists(pool, max_size=5), label="args")
        fn(*[tiles[a.i] if isinstance(a, Tile) else a for a in args])
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=t)
        return out

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.ones((4, 1), np.float32)
    outcome(nki.jit(kernel, chip=chip), x, y)


@given(shape=st.lists(st.integers(1, 8), min_size=1, max_size=3), on_chip=st.booleans(),
       key=st.one_of(index_items, st.lists(index_items, max_size=4).map(tuple)))
def test_indexing_kernel_tensors(shape, on_chip, key):
    """nl tensors index as the kernel API's views do (fuzz_helpers.expected_index)."""
    got = {}

    def kernel(a):
        t = nl.load(a) if on_chip else a
        got["shape"] = list(t.shape)
        got["view"] = tuple(t[key].shape)

    a = np.zeros(shape if len(shape) > 1 or not on_chip else shape + [1], np.float32)
    kind, err = outcome(nki.jit(kernel), a)
    want = expected_index(got["shape"], key, on_chip)
    if want is None:
        assert kind == "error", f"{got['shape']}[{key!r}] gave {got.get('view')}"
    else:
        assert kind == "ok", f"{got['shape']}[{key!r}] failed: {err}"
        assert list(got["view"]) == want
