"""Regression tests of issue 14 ("every bad input a clear error"): each call below once gave
a traceback from trnsim's internals, nanobind's overload listing, a crash, or a silently
wrong / empty result. Now each is a result or an error of a documented type whose message
names the argument (docs/fuzzing_python.md: how the Hypothesis campaign found the later
ones)."""

import ml_dtypes
import numpy as np
import pytest

import trnsim._core as core
import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
import trnsim.nki.legacy.isa as legacy_isa
from trnsim import kernel, numerics, profile, run, spec
from trnsim.kernel import ActFunc, AluOp
from trnsim.nki import NkiError

X = np.ones((3,), np.float32)


def raises(exc, match, fn):
    with pytest.raises(exc, match=match) as e:
        fn()
    assert "incompatible function arguments" not in str(e.value)
    assert "std::bad_cast" not in str(e.value)


# --- numerics ---

@pytest.mark.parametrize("call, exc, match", [
    (lambda: numerics.cast(X, "bf16", rounding=None), TypeError, "cast: rounding"),
    (lambda: numerics.cast(X, "bf16", "stochastic", seed=-1), ValueError, "cast: seed"),
    (lambda: numerics.cast(X, "bf16", "stochastic", seed=2**70), ValueError, "cast: seed"),
    (lambda: numerics.cast(X, "bf16", "stochastic", seed=1.5), TypeError, "cast: seed"),
    (lambda: numerics.cast(X, "bf16", stream=-5), ValueError, "cast: stream"),
    (lambda: numerics.cast(X, "bf16", sr_random_bits=0), ValueError, "sr_random_bits"),
    (lambda: numerics.cast(X, "bf16", sr_random_bits=2**40), ValueError, "sr_random_bits"),
    (lambda: numerics.cast(X, "bf16", sr_random_bits=3.5), TypeError, "sr_random_bits"),
    (lambda: numerics.cast(X, "bf16", chip=2), TypeError, "cast: chip"),
    (lambda: numerics.cast(X, None), TypeError, "cast: dtype"),
    (lambda: numerics.cast(X, "bf16", flush_subnormals="no"), TypeError, "flush_subnormals"),
    (lambda: numerics.cast(None, "bf16"), TypeError, "cast: array"),
    (lambda: numerics.cast(np.ones(2, np.complex64), "bf16"), TypeError, "cast: array"),
    (lambda: numerics.cast(np.arange(3), "bf16"), ValueError, "cast: array: dtype int64"),
    (lambda: numerics.cast(np.ones(2, ">f4"), "bf16"), ValueError, "big-endian"),
    (lambda: numerics.format_info(None), TypeError, "format is needed"),
    # Found by the Hypothesis campaign: numpy parses bytes as a dtype spec (SyntaxError).
    (lambda: numerics.format_name(b","), TypeError, "not a number format"),
    (lambda: numerics.quantize_mx(np.ones(32), b","), TypeError, "elem_dtype"),
    (lambda: numerics.quantize_mx(np.ones(32, np.complex64)), TypeError, "quantize_mx: x"),
    (lambda: numerics.quantize_mx(None), TypeError, "quantize_mx: x"),
    (lambda: numerics.quantize_mx(np.ones(32), rounding="stochastic", seed=-1), ValueError,
     "quantize_mx: seed"),
    (lambda: numerics.dequantize_mx(np.zeros(32, ml_dtypes.float8_e4m3fn),
                                    np.ones(1, np.float32)), ValueError, "scales"),
    (lambda: numerics.dequantize_mx(np.zeros(32, np.float32), np.zeros(1, np.uint8)),
     ValueError, "elements: expected 1-byte"),
    (lambda: numerics.dequantize_mx(np.zeros((2, 64), ml_dtypes.float8_e4m3fn),
                                    np.zeros((4, 1), np.uint8)), ValueError, r"\(2, 2\)"),
])
def test_numerics_errors_name_the_argument(call, exc, match):
    raises(exc, match, call)


def test_numerics_inputs_that_now_work():
    assert numerics.cast(np.float32(3.0), "bf16").shape == ()  # was (1,)
    assert numerics.cast(np.array(3.0, np.float32), "bf16").shape == ()
    # Python ints (numpy makes them int64) convert exactly through float64.
    assert numerics.cast([1, 2, 3], "bf16").astype(np.float32).tolist() == [1, 2, 3]
    assert numerics.cast(3, "int8").tolist() == 3


# --- spec ---

@pytest.mark.parametrize("call, exc, match", [
    (lambda: spec.load(None), TypeError, "spec.load: name"),
    (lambda: spec.load(3), TypeError, "spec.load: name"),
    (lambda: spec.load("trn2", [3]), TypeError, "override"),
    (lambda: spec.load("trn2", {"core.tensor.clock_ghz": None}), TypeError, "value is needed"),
    (lambda: spec.compare(), ValueError, "at least one chip"),
    (lambda: spec.load("trn2", np.array(3)), TypeError, "spec.load: set"),
    (lambda: spec.compare(2), TypeError, "spec.compare: name"),
    (lambda: kernel.load_chip(None), TypeError, "chip"),
])
def test_spec_errors_name_the_argument(call, exc, match):
    raises(exc, match, call)


def test_spec_overrides_as_one_string_or_with_booleans():
    one = spec.load("trn2", "core.tensor.clock_ghz=2.5")  # was split into its characters
    assert one["values"]["core"]["tensor"]["clock_ghz"] == 2.5
    flush = spec.load("trn2", {"numerics.flush_subnormals": True})  # was 'True': no TOML
    assert flush["values"]["numerics"]["flush_subnormals"] is True
    assert kernel.load_chip("trn2", {"core.tensor.clock_ghz": 2.5}).name == "trn2"


# --- the kernel API ---

@pytest.fixture
def kb():
    return kernel.KernelBuilder("trn2")


@pytest.mark.parametrize("call, exc, match", [
    (lambda kb: kernel.KernelBuilder(5), TypeError, "chip"),
    (lambda kb: kb.input("x", None, [4]), TypeError, r"input\('x'\): dtype"),
    (lambda kb: kb.input("x", "fp32", [2**64]), ValueError, "64-bit"),
    (lambda kb: kb.psum("x", "fp32", [-2**63 - 1]), ValueError, "64-bit"),  # campaign
    (lambda kb: kb.input("x", "fp32", [4.5]), TypeError, "dim 0 must be an integer"),
    (lambda kb: kb.input("x", "fp32", "ab"), TypeError, "shape"),
    (lambda kb: kb.input("x", "fp32", 4), TypeError, "shape"),
    (lambda kb: kb.input("x", "fp32", np.array(4)), TypeError, "shape"),
    (lambda kb: kb.input(None, "fp32", [4]), TypeError, "name"),
    (lambda kb: kb.sbuf("t", "fp32", [128, 2**31, 2**31, 2**31]), ValueError, "64 bits"),
    (lambda kb: kb.dma_copy(kb.sbuf("t", "fp32", [4, 4]), None), TypeError, "'src'"),
    (lambda kb: kb.activation(*[kb.sbuf("t", "fp32", [4, 4])] * 2, "exp"), TypeError, "'func'"),
    (lambda kb: kb.activation(*[kb.sbuf("t", "fp32", [4, 4])] * 2, ActFunc.exp, scale="a"),
     TypeError, "scale"),
    (lambda kb: kb.activation(*[kb.sbuf("t", "fp32", [4, 4])] * 2, ActFunc.exp, scale=None),
     TypeError, "scale"),
    (lambda kb: kb.tensor_scalar(*[kb.sbuf("t", "fp32", [4, 4])] * 2, AluOp.add, 10**400),
     ValueError, "too large"),
    (lambda kb: kb.memset(kb.sbuf("t", "fp32", [4, 4]), "a"), TypeError, "'value'"),
    (lambda kb: kb.iota(kb.sbuf("t", "int32", [4, 4]), 2**70, 1), TypeError, "'base'"),
    (lambda kb: kb.set_seed(-1), TypeError, "'seed'"),
    (lambda kb: kb.matmul(kb.psum("p", "fp32", [128, 128]), *[kb.sbuf("a", "bf16", [128, 128])]
                          * 2, tile_position=[0]), ValueError, "tile_position"),
    (lambda kb: kb.matmul(kb.psum("p", "fp32", [128, 128]), *[kb.sbuf("a", "bf16", [128, 128])]
                          * 2, tile_size=[1, 2, 3]), ValueError, "tile_size"),
])
def test_builder_errors_name_the_argument(kb, call, exc, match):
    raises(exc, match, lambda: call(kb))


def test_builder_is_spent_after_build(kb):
    kb.input("x", "fp32", [4])
    kb.build()
    raises(ValueError, "spent", lambda: kb.input("y", "fp32", [4]))  # was silently dropped
    raises(ValueError, "spent", lambda: kb.build())


@pytest.mark.parametrize("key, exc, match", [
    (0.5, TypeError, "an index is an integer"), ("a", TypeError, "an index is an integer"),
    ([0, 1], TypeError, "an index is an integer"), (None, TypeError, "newaxis"),
    (np.array([0, 1]), TypeError, "expected an integer"),
    ((0, 2**70), ValueError, "64-bit"), (slice(0, 2**70), ValueError, "64-bit"),
    ((slice(None), slice(0, 5.5)), TypeError, "slice stop"),
    ((Ellipsis, Ellipsis), ValueError, r"at most one '\.\.\.'"),
    ((0, -5), ValueError, "index -5 is out of range for size 4"),
])
def test_view_index_errors(kb, key, exc, match):
    t = kb.sbuf("t", "fp32", [128, 4])
    raises(exc, match, lambda: t[key])


def test_view_methods(kb):
    t = kb.sbuf("t", "fp32", [128, 4])
    raises(TypeError, "reshape: shape", lambda: t.reshape("ab"))
    raises(TypeError, r"pattern\[0\]", lambda: t.pattern([4, 128]))
    raises(TypeError, "bitcast: dtype", lambda: t.bitcast(None))
    assert t.bitcast(ml_dtypes.bfloat16).shape == [128, 8]  # numpy dtypes work too
    # Patterns and broadcasts past int64 wrapped around the view's bounds check.
    raises(ValueError, "2\\^63", lambda: t.pattern([[4, 128], [2**62, 4]]))
    raises(ValueError, "2\\^63", lambda: t.pattern([[4, 128], [1, 4]], 2**63 - 1))
    raises(ValueError, "2\\^63", lambda: t.broadcast(1, 2**62))
    raises(ValueError, "2\\^63", lambda: t.pattern([[4, 128], [0, 2**62], [0, 2**62]]))


def _copy_program():
    kb = kernel.KernelBuilder("trn2")
    x = kb.input("x", "fp32", [2, 2])
    y = kb.output("y", "fp32", [2, 2])
    t = kb.sbuf("t", "fp32", [2, 2])
    kb.dma_copy(t, x)
    kb.dma_copy(y, t)
    return kb.build()


@pytest.mark.parametrize("call, exc, match", [
    (lambda p: run.run(None), TypeError, "run: program"),
    (lambda p: run.run(p, {"x": None}), TypeError, "input 'x'"),
    (lambda p: run.run(p, [np.ones((2, 2))]), TypeError, "run: inputs"),
    (lambda p: run.run(p, mode=None), ValueError, "run: mode"),
    (lambda p: run.run(p, trace="yes"), TypeError, "run: trace"),
    (lambda p: run.run(p, chip=5), TypeError, "chip"),
    (lambda p: run.run(p, {"x": np.ones((4, 1))}), ValueError, "input 'x': array of shape"),
    (lambda p: run.run_spmd(None), TypeError, "run_spmd: programs"),
    (lambda p: run.run_spmd([None]), TypeError, r"programs\[0\]"),
    (lambda p: run.run_spmd(p), TypeError, "run_spmd: programs"),
    (lambda p: run.run_spmd(np.array(3)), TypeError, "run_spmd: programs"),
    (lambda p: core.run_spmd(kernel.load_chip("trn2"), [None], "functional", [], False),
     ValueError, r"programs\[0\]"),  # segfaulted
    (lambda p: run.from_bytes(b"\0\1", "fp32", [2]), ValueError, "from_bytes"),
])
def test_run_errors_name_the_argument(call, exc, match):
    raises(exc, match, lambda: call(_copy_program()))


def test_run_inputs_that_now_work():
    p = _copy_program()
    assert run.run(p, {"x": [[1, 2], [3, 4]]}).outputs["y"].tolist() == [[1, 2], [3, 4]]
    assert run.run(p, {"x": np.ones((2, 2), bool)}).outputs["y"].tolist() == [[1, 1], [1, 1]]


@pytest.mark.parametrize("call, exc, match", [
    (lambda tr: profile.summary(tr, -1), ValueError, "summary: top"),
    (lambda tr: profile.summary(None), TypeError, "summary: trace"),
    (lambda tr: profile.chrome_json(None), TypeError, "chrome_json: trace"),
    (lambda tr: profile.events("abc"), TypeError, "events: trace"),
    (lambda tr: profile.merge([tr], ["a"], ["a"]), TypeError, r"offsets_ps\[0\]"),
    (lambda tr: profile.merge([tr], [2**70], ["a"]), ValueError, r"offsets_ps\[0\]"),
    (lambda tr: profile.merge([None], [0], ["a"]), TypeError, r"traces\[0\]"),  # segfaulted
    (lambda tr: core.merge_traces([None], [0], ["a"]), ValueError, r"traces\[0\]"),
    (lambda tr: profile.merge([tr], [0], [3]), TypeError, r"processes\[0\]"),
    (lambda tr: profile.merge(tr, [0], ["a"]), TypeError, "merge: traces"),
])
def test_profile_errors_name_the_argument(call, exc, match):
    tr = run.run(_copy_program(), trace=True).trace
    raises(exc, match, lambda: call(tr))
    assert profile.summary(tr, 2**70)  # a count past the labels lists them all


# --- NKI ---

@nki.jit
def add(a, b):
    ta, tb = nl.load(a), nl.load(b)
    out = nl.ndarray(ta.shape, dtype=ta.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=ta + tb)
    return out


A = np.arange(8, dtype=np.float32).reshape(2, 4)


@pytest.mark.parametrize("grid", [0, -3, (2, 0), "a", "3", 2.5, True, None, [2, 2],
                                  slice(1, 2), 10**9, nl.nc(0)])
def test_bad_launch_grids_are_errors(grid):
    # 0, -3 and (2, 0) ran nothing and returned None; "3", 2.5 and True ran int() of them;
    # 10**9 listed a billion instances.
    raises(NkiError, "kernel\\[", lambda: add[grid](A, A))


def test_nki_run_grid_zero_is_an_error():
    raises(NkiError, "kernel\\[0\\]", lambda: nki.run(add, A, A, grid=0))  # ran once


@pytest.mark.parametrize("arg, match", [
    ([[1.0, 2.0]], "nl.load: src"), (None, "nl.load: src"), (3.0, "nl.load: src"),
    ("abc", "nl.load: src"), (np.array([[1, None]], dtype=object), "argument 'a'"),
    (np.ones((2, 4), np.int64), "argument 'a'.*int32"),
    (np.ones((2, 4), np.complex64), "argument 'a'"), (np.ones((0, 4), np.float32),
                                                      "argument 'a'.*no element"),
])
def test_bad_kernel_arguments_name_the_argument(arg, match):
    raises(NkiError, match, lambda: add(arg, A))


def test_kernel_arguments_that_now_work():
    @nki.jit
    def scale(a, s):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a) * s)
        return out

    # A numpy scalar is a number, as a Python one is (it became a [1] tensor).
    assert scale(A, np.float32(3.0)).tolist() == (A * 3).tolist()
    # bool arrays are uint8 (nl.bool_) tensors; big-endian arrays their native dtype.
    m = np.array([[True, False]])
    assert add(m, m).tolist() == [[2, 0]]
    assert add(A.astype(">f4"), A).tolist() == (A * 2).tolist()

    @nki.jit
    def kw(a, **more):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a) + nl.load(more["b"]))
        return out

    assert kw(A, b=A).tolist() == (A * 2).tolist()  # arrays in **kwargs were not tensors

    @nki.jit
    def named(a, a0):
        out = nl.ndarray(a0.shape, dtype=a0.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a[0]) + nl.load(a0))
        return out

    assert named([A], A).tolist() == (A * 2).tolist()  # 'a0' was declared twice


def test_kernel_writing_a_read_only_argument_is_an_error():
    @nki.jit
    def inc(a):
        nl.store(a, value=nl.load(a) + 1.0)

    ro = A.copy()
    ro.flags.writeable = False
    raises(NkiError, "read-only", lambda: inc(ro))  # the writes were dropped


def _in_kernel(body):
    """Runs body(t, a) inside a kernel (t: a [4, 8] fp32 tile, a: its HBM tensor)."""
    def k(a):
        body(nl.load(a), a)

    return lambda: nki.jit(k)(np.zeros((4, 8), np.float32))


@pytest.mark.parametrize("body, exc, match", [
    (lambda t, a: nl.ndarray("ab", nl.float32), NkiError, "nl.ndarray: shape"),
    (lambda t, a: nl.ndarray(4, nl.float32), NkiError, "nl.ndarray: shape"),
    (lambda t, a: nl.ndarray((4, 2.5), nl.float32), NkiError, "dim 1 must be an integer"),
    (lambda t, a: nl.ndarray((4, 4), None), TypeError, "nl.ndarray: dtype"),
    (lambda t, a: nl.ndarray((4, 4), nl.float32, nl.shared_hbm, name=5), NkiError, "name"),
    (lambda t, a: t[1.5], NkiError, "an index is an integer"),
    (lambda t, a: a[None], NkiError, "newaxis"),
    # A tile as an index is an indirect DMA, whose row numbers are a [P, 1] tile.
    (lambda t, a: a[t], NkiError, r"row numbers are an SBUF \[P, 1\]"),
    (lambda t, a: a[nl.ds(0, -2)], NkiError, "nl.ds: size"),
    (lambda t, a: a[nl.ds("a", 2)], NkiError, "nl.ds: start"),
    (lambda t, a: nl.mgrid[0:, 0:4], NkiError, "nl.mgrid"),
    (lambda t, a: nl.mgrid[4, 4], NkiError, "nl.mgrid"),
    (lambda t, a: t + 10**400, NkiError, "too large"),
    (lambda t, a: nl.exp(3.0), NkiError, "nl.exp: x"),
    (lambda t, a: nl.sum(t, axis=5), NkiError, "axis 5 is out of range"),
    (lambda t, a: nl.sum(t, axis="x"), NkiError, "axis must be"),
    (lambda t, a: nl.softmax(t.reshape((4, 2, 4))), NotImplementedError, "3-dim"),
    (lambda t, a: nl.program_id("x"), NkiError, "nl.program_id: axis"),
    (lambda t, a: t.reshape("ab"), NkiError, "reshape: shape"),
    (lambda t, a: t.ap([[1, 2, 3]]), NkiError, "ap: pattern"),
    (lambda t, a: t.ap(), NkiError, "pattern"),
    (lambda t, a: t.ap("ab"), NkiError, "ap: pattern"),
    (lambda t, a: t.ap(np.array(3.0)), NkiError, "ap: pattern"),  # campaign 3
    (lambda t, a: nl.sum(t, axis=np.array(1)), NkiError, "axis must be"),
    (lambda t, a: t.select(5, 0), NkiError, "dim 5 is out of range"),
    (lambda t, a: t.squeeze_dim(7), NkiError, "dim 7 is out of range"),
    (lambda t, a: t.permute(0, 5), NkiError, "dim 5 is out of range"),
    (lambda t, a: t.permute(0, 0), NkiError, "not a permutation"),
    (lambda t, a: nisa.memset(t, "x"), NkiError, "nisa.memset: value"),
    (lambda t, a: nisa.memset(t, None), NkiError, "nisa.memset: value"),
    (lambda t, a: nisa.iota(t, [[1]], 0), NkiError, "pattern"),
    (lambda t, a: nisa.iota(t, [[1, 8]], 2**70), NkiError, "nisa.iota: offset"),
    (lambda t, a: nisa.iota(t, [[1, 8]], "x"), NkiError, "nisa.iota: offset"),
    (lambda t, a: nisa.iota(None, [[1, 8]], 0), NkiError, "nisa.iota: dst"),
    (lambda t, a: nisa.dma_copy(dst=t, src=a, engine="banana"), NkiError, "engine"),
    (lambda t, a: nisa.tensor_tensor(t, t, t, nl.add, engine="banana"), NkiError, "engine"),
    (lambda t, a: nki.set_dma_policy(["banana"], "apple"), NkiError, "engine"),
    (lambda t, a: nisa.tensor_reduce(t[:, 0:1], nl.add, t, axis="x"), NkiError, "axis"),
    (lambda t, a: nisa.nc_matmul(nl.ndarray((8, 8), nl.float32, nl.psum), t, t,
                                 tile_position=(1,)), NkiError, "tile_position"),
    (lambda t, a: nisa.nc_matmul(nl.ndarray((8, 8), nl.float32, nl.psum), t, t,
                                 tile_position=1), NkiError, "tile_position"),
    (lambda t, a: nisa.select(None, t, t, 0.0), NkiError, "nisa.select: dst"),
    (lambda t, a: list(t), NkiError, "no values at trace time"),
    (lambda t, a: np.asarray(t), NkiError, "no values at trace time"),
    (lambda t, a: float(t[0, 0]), NkiError, "no values at trace time"),
    (lambda t, a: nl.full((4, 4), "x"), NkiError, "nl.full: fill_value"),
    (lambda t, a: nl.shared_constant(np.array([None])), TypeError, "shared_constant"),
    (lambda t, a: nl.shared_constant(np.arange(4)), NkiError, "dtype="),
    (lambda t, a: nl.shared_identity_matrix(0), NkiError, "shared_identity_matrix: n"),
    (lambda t, a: nl.matmul(t[:, 0], t[:, 0]), NkiError, "2-dim tile"),
    (lambda t, a: list(nl.affine_range("x")), NkiError, "nl.affine_range"),
    (lambda t, a: nl.zeros_like(len), NkiError, "nl.zeros_like: x"),
    (lambda t, a: nl.nc("a"), NkiError, "nl.nc"),
    # Found by the Hypothesis campaigns.
    (lambda t, a: legacy_isa.memset(":", t, t), NkiError, "nisa.memset: shape"),
    (lambda t, a: legacy_isa.tensor_copy(nl.add), NkiError, "nisa.tensor_copy: src"),
])
def test_nki_call_errors_name_the_call(body, exc, match):
    raises(exc, match, _in_kernel(body))


def test_nki_entry_points_check_their_kernel_and_chip():
    raises(TypeError, "must be a function", lambda: nki.jit(3))  # was a decorator of 3
    raises(TypeError, "must be a function", lambda: nki.simulate(None, A))
    raises(NkiError, "chip=2", lambda: nki.jit(add.fn, chip=2)(A, A))


def test_num_programs_past_the_grid_is_one():
    @nki.jit
    def k(a):
        assert nl.num_programs((0, 7)) == 3 and nl.num_programs(7) == 1  # was IndexError
        assert nl.program_id(5) == 0

    k[3](A)
