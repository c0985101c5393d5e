"""The random generators in both dialects: nl.rand, nl.random_seed, nl.dropout, nisa.dropout,
nisa.rand_set_state, nisa.set_rng_seed. trnsim's values are not the hardware's (docs/nki.md):
checked are what NKI promises — values uniform in [0, 1), the same seed the same sequence,
dropout's probabilities — on every generation."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa

CHIPS = ["trn1", "trn2", "trn3"]


@pytest.mark.parametrize("chip", CHIPS)
def test_rand_is_uniform_and_a_seed_repeats_its_sequence(chip):
    @nki.jit(chip=chip)
    def kernel():
        out = nl.ndarray((4, 128, 512), nl.float32, buffer=nl.shared_hbm)
        nl.random_seed(42)
        nl.store(out[0], nl.rand((128, 512)))
        nl.store(out[1], nl.rand((128, 512)))  # the sequence goes on
        seed = nl.full((1, 1), 42, dtype=nl.int32, buffer=nl.sbuf)
        nl.random_seed(seed)  # as a [1, 1] tile, as the NKI docs' example does
        nl.store(out[2], nl.rand((128, 512)))
        nl.random_seed(7)
        nl.store(out[3], nl.rand((128, 512)))
        return out

    a, b, again, other = kernel()
    assert a.min() >= 0 and a.max() < 1
    assert abs(a.mean() - 0.5) < 0.01 and abs(a.std() - np.sqrt(1 / 12)) < 0.01
    np.testing.assert_array_equal(a, again)
    assert not np.array_equal(a, b) and not np.array_equal(a, other)
    assert len(np.unique(a[:, 0])) == 128  # every partition its own stream


def test_rand_in_a_narrow_dtype_and_the_runs_repeat():
    @nki.jit(chip="trn2")
    def kernel():
        out = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, nl.rand((128, 64), dtype=nl.bfloat16))
        return out

    a = kernel()
    assert a.dtype.name == "bfloat16" and float(a.min()) >= 0 and float(a.max()) <= 1
    np.testing.assert_array_equal(a, kernel())  # deterministic: the run's seed


@pytest.mark.parametrize("chip", CHIPS)
def test_dropout_current_dialect(chip, rng):
    x = rng.uniform(1, 2, (128, 1024)).astype(np.float32)  # never 0: 0 means dropped
    probs = np.where(np.arange(128) % 2 == 0, 1.0, 0.0).astype(np.float32)[:, None]

    @nki.jit(chip=chip)
    def kernel(x, probs):
        t, p = nl.load(x), nl.load(probs)
        out = nl.ndarray((3, 128, 1024), nl.float32, buffer=nl.shared_hbm)
        d = nl.ndarray((128, 1024), nl.float32)
        nisa.dropout(dst=d, data=t, prob=0.25)
        nl.store(out[0], d)
        nisa.dropout(dst=d, data=t, prob=p)  # per partition: even rows all, odd rows none
        nl.store(out[1], d)
        nl.store(out[2], nl.dropout(t, rate=0.75))
        return out

    quarter, by_row, three_q = kernel(x, probs)
    for out, rate in ((quarter, 0.25), (three_q, 0.75)):
        kept = out != 0
        np.testing.assert_array_equal(out[kept], x[kept])
        assert abs((~kept).mean() - rate) < 0.01
    np.testing.assert_array_equal(by_row[0::2], 0)
    np.testing.assert_array_equal(by_row[1::2], x[1::2])


def test_dropout_and_rand_legacy_dialect(rng):
    x = rng.uniform(1, 2, (64, 512)).astype(np.float32)

    @legacy.jit(chip="trn1")
    def kernel(x, dropped, r):
        t = nl.load(x)
        nl.store(dropped, lisa.dropout(t, 0.5))
        nl.store(r, nl.rand((64, 512)))

    dropped, r = np.zeros_like(x), np.zeros_like(x)
    kernel(x, dropped, r)
    kept = dropped != 0
    np.testing.assert_array_equal(dropped[kept], x[kept])
    assert abs(kept.mean() - 0.5) < 0.02
    assert r.min() >= 0 and r.max() < 1 and abs(r.mean() - 0.5) < 0.02


def test_rand_set_state_seeds_lanes_and_engines_apart():
    seeds = np.arange(128 * 6, dtype=np.uint32).reshape(128, 6)

    @nki.jit(chip="trn3")
    def kernel(seeds):
        s = nl.load(seeds)
        out = nl.ndarray((3, 128, 32), nl.float32, buffer=nl.shared_hbm)
        x = nl.ones((128, 32), nl.float32)
        for i in range(2):
            nisa.rand_set_state(s, engine=nisa.vector_engine)
            d = nl.ndarray((128, 32), nl.float32)
            nisa.dropout(dst=d, data=x, prob=0.5)  # VectorE draws
            nl.store(out[i], d)
        nisa.set_rng_seed(s[0:1, 0:1])
        d = nl.ndarray((128, 32), nl.float32)
        nisa.dropout(dst=d, data=x, prob=0.5)
        nl.store(out[2], d)
        return out

    first, again, other = kernel(seeds)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_bad_arguments_are_errors_naming_them():
    @nki.jit(chip="trn2")
    def psum_rand():
        return nl.rand((128, 64), buffer=nl.psum)

    with pytest.raises(nki.NkiError, match="nl.rand.*SBUF"):
        psum_rand()

    @nki.jit(chip="trn2")
    def float_seed():
        nl.random_seed(1.5)

    with pytest.raises(nki.NkiError, match="nl.random_seed"):
        float_seed()

    @nki.jit(chip="trn2")
    def scalar_engine_seed(x):
        t = nl.load(x)
        nisa.rand_set_state(t, engine=nisa.scalar_engine)

    with pytest.raises(nki.NkiError, match="only GpSimd and VectorE"):
        scalar_engine_seed(np.zeros((1, 6), np.uint32))

    @nki.jit(chip="trn2")
    def masked():
        return nl.rand((4, 4), mask=True)

    with pytest.raises(NotImplementedError, match="nl.rand"):
        masked()


@pytest.mark.parametrize("chip", CHIPS)
def test_rng_words_are_rands_bits_and_a_saved_state_replays(chip):
    @nki.jit(chip=chip)
    def kernel():
        words = nl.ndarray((128, 64), nl.uint32, buffer=nl.sbuf)
        halves = nl.ndarray((128, 64), nl.uint16, buffer=nl.sbuf)
        state = nl.ndarray((128, 6), nl.uint32, buffer=nl.sbuf)
        nl.random_seed(5)
        nisa.rng(dst=words)
        nl.random_seed(5)
        nisa.rng(dst=halves)
        nisa.rand_get_state(dst=state)
        first = nl.rand((128, 32))
        nisa.rand_set_state(src_seeds=state)
        again = nl.rand((128, 32))
        outs = [nl.ndarray(t.shape, t.dtype, buffer=nl.shared_hbm)
                for t in (words, halves, first, again)]
        for o, t in zip(outs, (words, halves, first, again)):
            nl.store(o, t)
        return tuple(outs)

    words, halves, first, again = kernel()
    np.testing.assert_array_equal(halves, (words & 0xFFFF).astype(np.uint16))
    assert len(np.unique(words)) > words.size - 4
    np.testing.assert_array_equal(first, again)


def test_rand2_in_range_on_trn3_only():
    @nki.jit(chip="trn3")
    def kernel():
        t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.rand2(dst=t, min=-2.0, max=6.0)
        out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out

    v = kernel()
    assert v.min() >= -2 and v.max() <= 6
    assert abs(v.mean() - 2.0) < 0.05

    @nki.jit(chip="trn2")
    def old():
        t = nl.ndarray((128, 8), nl.float32, buffer=nl.sbuf)
        nisa.rand2(dst=t, min=0.0, max=1.0)
        return t

    with pytest.raises(ValueError, match="rand2"):
        old()


def test_masked_dropout_writes_the_masked_region(rng):
    x = rng.standard_normal((64, 32)).astype(np.float32) + 5

    @nki.jit
    def kernel(x):
        ip = nl.arange(64)[:, None]
        t = nl.load(x)
        out = nl.ndarray((64, 32), nl.float32, buffer=nl.shared_hbm)
        gone = nl.dropout(t, 1.0, mask=(ip < 32))  # an engine access starts at 0 or 32
        kept = nl.dropout(t, 0.0, mask=(ip >= 32))
        nl.store(out[0:32, :], gone[0:32, :])
        nl.store(out[32:64, :], kept[32:64, :])
        return out

    got = kernel(x)
    assert (got[:32] == 0).all()
    np.testing.assert_array_equal(got[32:], x[32:])
