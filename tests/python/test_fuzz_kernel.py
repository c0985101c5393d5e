"""Property tests of the kernel API (trnsim.kernel, trnsim.run, trnsim.spec, trnsim.profile)
with Hypothesis: declarations and view indexing against a model of their rules, small random
programs against numpy, and random wrong arguments to every builder and view method, run
and the spec / profile functions, whose every outcome must be a result or a clean error
(fuzz_helpers.outcome). Profiles: conftest.py."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz_helpers import expected_index, index_items, junk, junk_keys, outcome
from trnsim import kernel, numerics, profile, run, spec
from trnsim.kernel import ActFunc, AluOp, Engine

DTYPES = ["fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8", "int32", "uint16"]
chips = st.sampled_from(["trn1", "trn2", "trn3"])


# --- declarations ---

@given(chip=chips, kind=st.sampled_from(["input", "output", "inout", "scratch", "sbuf", "psum"]),
       name=st.one_of(st.sampled_from(["x", "t", "a_1"]), junk()),
       dtype=st.one_of(st.sampled_from(DTYPES), junk()),
       shape=st.one_of(st.lists(st.integers(-2, 300), max_size=4),
                       st.lists(st.integers(-2**70, 2**70), max_size=3), junk()))
def test_declarations_give_the_shape_or_a_clean_error(chip, kind, name, dtype, shape):
    kb = kernel.KernelBuilder(chip)
    res = outcome(getattr(kb, kind), name, dtype, shape)
    if res[0] == "ok":
        assert res[1].shape == list(shape)
        assert res[1].dtype == numerics.format_name(dtype)


# --- indexing against fuzz_helpers.expected_index, a model of the rules ---

@given(shape=st.lists(st.integers(1, 8), min_size=1, max_size=3), on_chip=st.booleans(),
       key=st.one_of(index_items, st.lists(index_items, max_size=4).map(tuple)))
def test_indexing_follows_the_rules(shape, on_chip, key):
    kb = kernel.KernelBuilder("trn2")
    v = kb.sbuf("t", "fp32", shape + [1] if len(shape) == 1 else shape) if on_chip else \
        kb.input("x", "fp32", shape)
    want = expected_index(v.shape, key, on_chip)
    kind, got = outcome(lambda: v[key])
    if want is None:
        assert kind == "error", f"{v.shape}[{key!r}] gave {got!r}, expected an error"
    else:
        assert kind == "ok", f"{v.shape}[{key!r}] failed: {got}"
        assert got.shape == want


# --- small random programs against numpy ---

ops = st.lists(st.tuples(st.sampled_from(["tt", "ts", "act", "copy"]),
                         st.sampled_from([AluOp.add, AluOp.subtract, AluOp.mult, AluOp.max,
                                          AluOp.min]),
                         st.integers(0, 2), st.integers(0, 2),
                         st.integers(-64, 64).map(lambda k: k / 16)), min_size=1, max_size=4)
NP = {AluOp.add: np.add, AluOp.subtract: np.subtract, AluOp.mult: np.multiply,
      AluOp.max: np.maximum, AluOp.min: np.minimum}


@given(chip=chips, p=st.integers(1, 128), f=st.integers(1, 48), n_in=st.integers(1, 3),
       program=ops, seed=st.integers(0, 2**32 - 1))
def test_random_programs_match_numpy(chip, p, f, n_in, program, seed):
    """dma in, Vector / Scalar instructions on fp32 tiles, dma out: bit-exact against numpy
    in float32 (one rounding per instruction, values on a 1/16 grid: no subnormals)."""
    rng = np.random.default_rng(seed)
    xs = [(rng.integers(-64, 65, (p, f)) / 16).astype(np.float32) for _ in range(n_in)]
    kb = kernel.KernelBuilder(chip)
    tiles, ref = [], []
    for i, x in enumerate(xs):
        h = kb.input(f"x{i}", "fp32", [p, f])
        t = kb.sbuf(f"t{i}", "fp32", [p, f])
        kb.dma_copy(t, h)
        tiles.append(t)
        ref.append(x)
    for j, (kind, op, a, b, c) in enumerate(program):
        a, b = a % len(tiles), b % len(tiles)
        d = kb.sbuf(f"r{j}", "fp32", [p, f])
        if kind == "tt":
            kb.tensor_tensor(d, tiles[a], tiles[b], op)
            r = NP[op](ref[a], ref[b])
        elif kind == "ts":
            kb.tensor_scalar(d, tiles[a], op, c)
            r = NP[op](ref[a], np.float32(c))
        elif kind == "act":
            kb.activation(d, tiles[a], ActFunc.relu)
            r = np.maximum(ref[a], np.float32(0))
        else:
            kb.tensor_copy(d, tiles[a], Engine.gpsimd)
            r = ref[a]
        tiles.append(d)
        ref.append(r.astype(np.float32))
    y = kb.output("y", "fp32", [p, f])
    kb.dma_copy(y, tiles[-1])
    res = run.run(kb.build(), {f"x{i}": x for i, x in enumerate(xs)}, mode="functional")
    assert res.ok
    np.testing.assert_array_equal(res.outputs["y"], ref[-1])


# --- wrong arguments everywhere ---

def _views(kb):
    return [kb.input("x", "fp32", [128, 64]), kb.sbuf("t", "fp32", [128, 64]),
            kb.sbuf("c", "fp32", [128, 1]), kb.psum("ps", "fp32", [128, 64]),
            kb.sbuf("b", "bf16", [128, 128])]


METHODS = sorted(m for m in dir(kernel.KernelBuilder)
                 if not m.startswith("_") and callable(getattr(kernel.KernelBuilder, m))
                 and m not in ("build",))
enum_args = st.sampled_from([Engine.vector, Engine.gpsimd, Engine.tensor, AluOp.add,
                             AluOp.mult, ActFunc.exp, ActFunc.copy, 0.5, 1, 0, [0, 0]])


@given(chip=chips, method=st.sampled_from(METHODS), data=st.data())
def test_builder_methods_with_random_arguments_fail_cleanly(chip, method, data):
    kb = kernel.KernelBuilder(chip)
    views = _views(kb)
    pool = st.one_of(st.sampled_from(views), enum_args, junk())
    args = data.draw(st.lists(pool, max_size=7), label="args")
    outcome(getattr(kb, method), *args)
    outcome(kb.build)  # whatever was added must still build or fail cleanly


# View is the C++ class itself (no Python layer): its methods get the right number of
# arguments here, of any type (a wrong count is nanobind's message, with the signature).
VIEW_ARITY = {"reshape": 1, "broadcast": 2, "pattern": 2, "bitcast": 1, "index": 1,
              "same_region": 1, "__getitem__": 1}


@given(data=st.data(), method=st.sampled_from(sorted(VIEW_ARITY)))
def test_view_methods_with_random_arguments_fail_cleanly(data, method):
    kb = kernel.KernelBuilder("trn2")
    views = _views(kb)
    v = data.draw(st.sampled_from(views), label="view")
    pool = st.one_of(junk(), st.sampled_from(views), st.lists(st.integers(-3, 200), max_size=3),
                     st.lists(st.lists(st.integers(-3, 200), max_size=3), max_size=3))
    args = data.draw(st.lists(pool, min_size=VIEW_ARITY[method],
                              max_size=VIEW_ARITY[method]), label="args")
    outcome(getattr(v, method), *args)


def _program():
    kb = kernel.KernelBuilder("trn2")
    x = kb.input("x", "fp32", [4, 8])
    y = kb.output("y", "fp32", [4, 8])
    t = kb.sbuf("t", "fp32", [4, 8])
    kb.dma_copy(t, x)
    kb.tensor_scalar(t, t, AluOp.add, 1.0)
    kb.dma_copy(y, t)
    return kb.build()


input_values = st.one_of(
    st.just(np.arange(32, dtype=np.float32).reshape(4, 8)),
    st.just(np.arange(32).reshape(4, 8)), st.just([[1.0] * 8] * 4),
    st.just(np.ones((4, 8), bool)), st.just(np.ones((8, 4), np.float32)), junk())


@given(inputs=st.one_of(st.dictionaries(st.one_of(st.sampled_from(["x", "y", "z"]), junk_keys),
                                        input_values, max_size=3), junk()),
       mode=st.one_of(st.sampled_from(run.MODES), junk()),
       trace=st.one_of(st.booleans(), junk()), spmd=st.booleans())
def test_run_with_random_inputs(inputs, mode, trace, spmd):
    prog = _program()
    kind, res = (outcome(run.run_spmd, [prog], inputs, mode=mode, trace=trace) if spmd else
                 outcome(run.run, prog, inputs, mode=mode, trace=trace))
    if kind == "ok" and mode != "timing" and isinstance(inputs, dict) and "x" in inputs:
        x = np.asarray(inputs["x"]).astype(np.float32)
        np.testing.assert_array_equal(res.outputs["y"], x + 1)


@given(name=st.one_of(st.sampled_from(["trn1", "trn2", "trn3", "trn4-projected", "trn9", ""]),
                      junk()),
       sets=st.one_of(st.none(), junk(), st.dictionaries(
           st.one_of(st.sampled_from(["core.tensor.clock_ghz", "chip.cores", "core.nope"]),
                     junk_keys),
           st.one_of(st.floats(allow_nan=True), st.integers(-5, 2**70), st.booleans(),
                     st.text(max_size=3), st.none()), max_size=2)))
def test_spec_load_with_random_arguments(name, sets):
    outcome(spec.load, name, sets)
    outcome(kernel.load_chip, name, sets if sets is not None else ())


@given(names=st.lists(st.one_of(st.sampled_from(["trn1", "trn2", "trn3"]), junk()), max_size=3))
def test_spec_compare_with_random_arguments(names):
    outcome(spec.compare, *names)


@pytest.fixture(scope="module")
def trace():
    return run.run(_program(), trace=True).trace


@given(data=st.data(), fn=st.sampled_from(["chrome_json", "summary", "events", "merge",
                                           "write_chrome_trace"]))
def test_profile_functions_with_random_arguments(trace, tmp_path_factory, data, fn):
    pool = st.one_of(st.just(trace), junk(), st.lists(st.one_of(st.just(trace), junk()),
                                                       max_size=2))
    args = data.draw(st.lists(pool, max_size=3), label="args")
    if fn == "write_chrome_trace" and len(args) >= 2:
        args[1] = str(tmp_path_factory.mktemp("t") / "x.json")
    outcome(getattr(profile, fn), *args)
