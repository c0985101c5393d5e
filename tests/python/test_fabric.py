"""trnsim.fabric: collectives on data against numpy references, timing records against the
rows `trnsim collective --json` prints for the same request, and argument errors."""

import dataclasses
import json
import pathlib
import subprocess
import sys
import typing

import ml_dtypes
import numpy as np
import pytest

from trnsim import fabric

# (system, ranks, keyword arguments): core and chip ranks, one and two servers.
PLACEMENTS = {
    2: [("trn1.32xlarge", {}), ("trn2.48xlarge", {"rank_unit": "chip"})],
    4: [("trn2.48xlarge", {}), ("trn1.32xlarge", {"servers": 2, "ranks_per_server": 2})],
    8: [("trn1.32xlarge", {"rank_unit": "chip"}), ("trn2.48xlarge", {"lnc": 1}),
        ("trn1.32xlarge", {"servers": 2, "ranks_per_server": 4})],
}
CASES = [(n, s, kw) for n, placements in PLACEMENTS.items() for s, kw in placements]
IDS = [f"{n}-{s}-{'-'.join(f'{k}{v}' for k, v in kw.items()) or 'fill'}" for n, s, kw in CASES]


def inputs(n, shape, seed=0):
    """Small integers: every sum is exact in fp32, whatever the order of additions."""
    g = np.random.default_rng(seed)
    return [g.integers(-50, 50, size=shape).astype(np.float32) for _ in range(n)]


@pytest.fixture(scope="module")
def fabrics():
    return {i: fabric.Fabric(s, n, **kw) for i, (n, s, kw) in zip(IDS, CASES)}


@pytest.mark.parametrize("case", IDS)
def test_all_reduce_every_algorithm_that_applies(fabrics, case):
    f = fabrics[case]
    n = f.ranks
    for shape in [(n * 3 + 5,), (4, 6), ()]:
        x = inputs(n, shape)
        want = np.sum(x, axis=0)
        for algo in ["auto", *fabric.algorithms()]:
            try:
                out = f.all_reduce(arrays=x, algorithm=algo)
            except ValueError as e:
                assert "algorithm" in str(e)  # it does not apply here, and says so
                continue
            assert len(out) == n and out.op == "all-reduce"
            for r in range(n):
                assert out[r].dtype == np.float32 and out[r].shape == shape
                np.testing.assert_array_equal(out[r], want, err_msg=f"{algo} rank {r}")


@pytest.mark.parametrize("case", IDS)
def test_reduce_scatter_leaves_block_r_on_rank_r(fabrics, case):
    f = fabrics[case]
    n = f.ranks
    x = inputs(n, (n * 3, 5), seed=1)
    want = np.sum(x, axis=0)
    out = f.reduce_scatter(arrays=x)
    for r in range(n):  # the leading axis divides: blocks keep the trailing shape
        np.testing.assert_array_equal(out[r], want[r * 3:(r + 1) * 3])
    # An uneven split: the flattened tensor's blocks, the first ones one element larger.
    x = inputs(n, (n * 2 + 3,), seed=2)
    out = f.reduce_scatter(arrays=x)
    for r, blk in enumerate(np.array_split(np.sum(x, axis=0), n)):
        np.testing.assert_array_equal(out[r], blk)


@pytest.mark.parametrize("case", IDS)
def test_all_gather_concatenates_the_blocks(fabrics, case):
    f = fabrics[case]
    n = f.ranks
    x = inputs(n, (3, 4), seed=3)
    want = np.concatenate(x)
    out = f.all_gather(arrays=x)
    for r in range(n):
        np.testing.assert_array_equal(out[r], want)


@pytest.mark.parametrize("case", IDS)
def test_all_to_all_broadcast_permute(fabrics, case):
    f = fabrics[case]
    n = f.ranks
    x = inputs(n, (n * 2, 3), seed=4)
    out = f.all_to_all(arrays=x)
    assert out.algorithm == "mesh"
    for j in range(n):
        want = np.concatenate([np.split(x[i], n)[j] for i in range(n)])
        np.testing.assert_array_equal(out[j], want)
    for root in (0, n - 1):
        out = f.broadcast(arrays=x, root=root)
        for r in range(n):
            np.testing.assert_array_equal(out[r], x[root])
    for perm in (None, list(reversed(range(n)))):
        out = f.permute(arrays=x, perm=perm)
        dest = perm or [(i + 1) % n for i in range(n)]
        for i in range(n):
            np.testing.assert_array_equal(out[dest[i]], x[i])


def test_all_to_all_v_moves_uneven_counts():
    f = fabric.Fabric("trn1.32xlarge", 3, rank_unit="chip")
    counts = [[1, 2, 3], [0, 4, 1], [2, 2, 2]]
    x = [np.arange(sum(row), dtype=np.float32) + 10 * i for i, row in enumerate(counts)]
    out = f.all_to_all_v(arrays=x, counts=counts)
    for j in range(3):
        want = []
        for i in range(3):
            start = sum(counts[i][:j])
            want.extend(x[i][start:start + counts[i][j]])
        np.testing.assert_array_equal(out[j], np.array(want, np.float32))


def test_other_formats_keep_their_dtype():
    f = fabric.Fabric("trn2.48xlarge", 4)
    x = [np.arange(16).astype(ml_dtypes.bfloat16) * (r + 1) for r in range(4)]  # exact in bf16
    out = f.all_reduce(arrays=x)
    assert out.dtype == "bf16" and out[0].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out[2].astype(np.float32), np.arange(16) * 10)
    # The same as raw codes: uint16 arrays with the format named.
    codes = f.all_reduce(arrays=[a.view(np.uint16) for a in x], dtype="bf16")
    assert codes[0].dtype == np.uint16
    np.testing.assert_array_equal(codes[1], out[1].view(np.uint16))
    ints = [np.array([-3, 5, 20], np.int8) * np.int8(r - 1) for r in range(4)]  # negative codes too
    got = f.all_reduce(arrays=ints)
    assert got[0].dtype == np.int8
    np.testing.assert_array_equal(got[3], np.sum(ints, axis=0, dtype=np.int64).astype(np.int8))


# --- timing: the same rows as the command -----------------------------------------------------

def cli_json(*args):
    r = subprocess.run([sys.executable, "-m", "trnsim", "collective", *args, "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# (command arguments, Fabric arguments, collective arguments)
TIMING = [
    (["all-reduce", "--system", "trn1.32xlarge", "--ranks", "2", "--sizes", "1KiB:1GiB:16"],
     dict(system="trn1.32xlarge", ranks=2), dict(op="all-reduce", sizes="1KiB:1GiB:16")),
    (["all-reduce", "--system", "trn2.48xlarge", "--ranks", "64", "--sizes", "64MiB",
      "--algorithm", "kangaring"],
     dict(system="trn2.48xlarge", ranks=64), dict(op="all-reduce", sizes=["64MiB"],
                                                  algorithm="kangaring")),
    (["reduce-scatter", "--system", "trn2.48xlarge", "--servers", "4", "--ranks", "256",
      "--sizes", "64KiB,256MiB", "--inter", "rdh", "--intra", "kangaring"],
     dict(system="trn2.48xlarge", servers=4, ranks=256),
     dict(op="reduce-scatter", sizes=[65536, "256MiB"], inter="rdh", intra="kangaring")),
    (["all-gather", "--system", "trn2-ultraserver", "--rank-unit", "chip", "--ranks", "64",
      "--sizes", "1MiB:64MiB:8", "--dtype", "bf16"],
     dict(system="trn2-ultraserver", rank_unit="chip", ranks=64),
     dict(op="all-gather", sizes="1MiB:64MiB:8", dtype="bf16")),
    (["all-to-all", "--system", "trn3-ultraserver-144", "--ranks", "32", "--sizes", "4MiB",
      "--lnc", "1", "--set", "launch.launch_us=100", "--set", "server.link_latency_ns=200"],
     dict(system="trn3-ultraserver-144", ranks=32, lnc=1,
          set=["launch.launch_us=100", "server.link_latency_ns=200"]),
     dict(op="all-to-all", sizes=["4MiB"])),
    (["broadcast", "--system", "trn1.32xlarge", "--ranks", "8", "--root", "3", "--sizes",
      "1MiB", "--ranks-per-server", "4", "--servers", "2"],
     dict(system="trn1.32xlarge", ranks=8, ranks_per_server=4, servers=2),
     dict(op="broadcast", sizes=["1MiB"], root=3)),
    (["permute", "--system", "trn2.48xlarge", "--ranks", "16", "--sizes", "8MiB", "--per-rank"],
     dict(system="trn2.48xlarge", ranks=16), dict(op="permute", sizes=["8MiB"], per_rank=True)),
]


@pytest.mark.parametrize("cli,fab,call", TIMING, ids=[t[0][0] + "-" + t[0][2] for t in TIMING])
def test_timing_rows_equal_the_commands(cli, fab, call):
    want = cli_json(*cli)
    f = fabric.Fabric(**fab)
    got = f.collective(**call)
    assert [r.to_dict() for r in got] == want["rows"]
    # The command's header, field by field, from the same fabric.
    for k, v in want.items():
        if k != "rows":
            assert f.info[k] == v, k
    # And its table, from the records.
    table = subprocess.run([sys.executable, "-m", "trnsim", "collective", *cli],
                           capture_output=True, text=True).stdout
    assert f.table(got) == table


def test_records_are_typed_dataclasses():
    f = fabric.Fabric("trn2.48xlarge", 32)
    r = f.all_reduce(bytes=1 << 20)
    row = cli_json("all-reduce", "--system", "trn2.48xlarge", "--ranks", "32", "--sizes",
                   "1MiB")["rows"][0]
    assert isinstance(r, fabric.CollectiveResult) and dataclasses.is_dataclass(r)
    assert [fl.name for fl in dataclasses.fields(r)] == list(row)  # the row's fields, all
    hints = typing.get_type_hints(type(r))
    for name, value in row.items():
        got = getattr(r, name)
        if isinstance(value, list):
            assert isinstance(got, tuple) and typing.get_origin(hints[name]) is tuple
            assert all(isinstance(p, fabric.Record) for p in got)
            assert [p.to_dict() for p in got] == value
        else:
            assert type(got) is hints[name] is type(value), name
    assert isinstance(r.time_us, float) and isinstance(r.size_bytes, int)
    assert isinstance(r.algorithm, str) and r.phases[0].steps >= 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.time_us = 0.0
    # One size, a sweep, a list: the same records.
    sweep = f.all_reduce(sizes="512KiB:2MiB")
    assert isinstance(sweep, list) and len(sweep) == 3 and sweep[1] == r
    assert f.all_reduce(size="1MiB") == r == f.all_reduce([1 << 20])[0]


def test_systems_and_listings():
    assert {"trn1.32xlarge", "trn2.48xlarge", "trn2-ultraserver"} <= set(fabric.systems())
    assert "neuron-2023" in fabric.runtimes()
    assert {"ring", "kangaring", "mesh", "rdh", "hierarchical"} <= set(fabric.algorithms())
    assert "all-to-all-v" in fabric.collectives()
    s = fabric.System("trn2.48xlarge", servers=2)
    assert (s.name, s.chip, s.servers, s.chips, s.chips_per_server) == (
        "trn2.48xlarge", "trn2", 2, 32, 16)
    assert s.cores_per_chip == 8 and s.lnc == 2
    topo = s.topology
    assert topo["server"]["topology"] == "torus" and topo["server"]["torus_dims"] == [4, 4]
    kinds = {lk["kind"]: lk["count"] for lk in topo["links"]}
    assert kinds["efa-up"] == kinds["efa-down"] == 32
    assert sum(kinds.values()) == topo["num_links"]
    assert s.provenance["cluster.servers"]["kind"] == "override"
    sw = fabric.System("trn3-ultraserver-64")
    assert sw.topology["server"]["topology"] == "switch"
    f = s.fabric(ranks=128)
    assert (f.ranks, f.ranks_per_chip, f.servers_used, f.lnc) == (128, 4, 2, 2)
    assert f.chip_of(0) < 16 <= f.chip_of(127) < 32 and f.system is s
    # A what-if file and overrides reach the loader.
    w = fabric.System(pathlib.Path(__file__).parents[1] / "cpp/data/fabric/ring16.toml")
    assert w.status == "what-if" and w.topology["server"]["torus_dims"] == [16]
    more = fabric.Fabric(s, 8, set={"server.link_gbps": 100, "launch.launch_us": 500})
    assert more.system.topology["server"]["link_gbps"] == 100
    assert more.info["launch_us"] == 500 and more.runtime_info["launch"]["launch_us"] == 500


def test_all_reduce_spelling_of_ops():
    f = fabric.Fabric("trn1.32xlarge", 2)
    a = f.collective("all_reduce", bytes=4096)
    assert a == f.collective("allreduce", bytes=4096) == f.all_reduce(4096)


# --- concurrent groups: several communicators at once -------------------------------------------

RING16 = pathlib.Path(__file__).parents[1] / "cpp/data/fabric/ring16.toml"


@pytest.mark.parametrize("system,ranks,kw,op,size", [
    ("trn1.32xlarge", 32, {}, "all-reduce", "64MiB"),
    ("trn1.32xlarge", 32, {}, "all-gather", "64KiB"),
    ("trn2.48xlarge", 32, {"rank_unit": "chip", "servers": 2}, "all-reduce", "8MiB"),
])
def test_one_group_of_all_ranks_is_the_collective_alone(system, ranks, kw, op, size):
    comm = fabric.Fabric(system, ranks, **kw)
    alone = comm.collective(op, bytes=size)
    res = comm.concurrent([fabric.Group(op, range(ranks), bytes=size)])
    assert isinstance(res, fabric.ConcurrentResult) and len(res) == 1
    r = res[0]
    assert isinstance(r, fabric.CollectiveResult) and type(r) is type(alone)  # the same record
    assert r.algorithm == alone.algorithm and r.size_bytes == alone.size_bytes
    # Equal up to the rounding of each step to whole picoseconds.
    assert r.device_us == pytest.approx(alone.device_us, abs=1e-3)
    assert r.time_us == pytest.approx(alone.time_us, abs=1e-3)
    assert (r.sync_us, r.link_bytes, r.efa_bytes, r.hbm_read_bytes, r.hbm_write_bytes) == (
        alone.sync_us, alone.link_bytes, alone.efa_bytes, alone.hbm_read_bytes,
        alone.hbm_write_bytes)
    assert [p.name for p in r.phases] == [p.name for p in alone.phases]
    assert res.makespan_us == r.time_us and res.slowest is r
    assert res.ranks == (tuple(range(ranks)),)


def test_groups_on_separate_servers_do_not_interfere():
    comm = fabric.Fabric("trn2.48xlarge", 32, rank_unit="chip", servers=2)
    halves = comm.split(2)
    assert halves == [list(range(16)), list(range(16, 32))]
    groups = [fabric.Group("all-reduce", g, bytes="64MiB") for g in halves]
    both = comm.concurrent(groups)
    # One server's group runs the plan a 16-chip communicator runs alone.
    server = fabric.Fabric("trn2.48xlarge", 16, rank_unit="chip").all_reduce(bytes="64MiB")
    for g, r in zip(groups, both):
        alone = comm.concurrent([g])[0]
        assert r.device_us == pytest.approx(alone.device_us, abs=1e-3)
        assert r.device_us == pytest.approx(server.device_us, abs=1e-3)
        assert r.algorithm == server.algorithm
    assert both.makespan_us == max(r.time_us for r in both)


def test_groups_that_share_links_share_their_bandwidth():
    comm = fabric.Fabric(RING16, 16, rank_unit="chip")  # a what-if 16-chip ring
    strided = comm.split(2, layout="strided")
    assert strided[1] == list(range(1, 16, 2))
    size = "256MiB"
    groups = [fabric.Group("all-reduce", g, bytes=size, algorithm="ring") for g in strided]
    alone = comm.concurrent(groups[:1])[0]
    both = comm.concurrent(groups)
    data_alone = alone.device_us - alone.sync_us
    for r in both:  # each ring crosses links the other uses
        assert r.time_us > alone.time_us
        assert 1.1 * data_alone < r.device_us - r.sync_us <= 2.0 * data_alone * 1.001
    # A different collective at once: the all-gather moves half the all-reduce's bytes.
    mixed = comm.concurrent([groups[0], fabric.Group("all-gather", strided[1], bytes=size,
                                                     algorithm="ring")])
    assert mixed[1].op == "all-gather" and mixed[1].device_us < mixed[0].device_us
    assert mixed[0].device_us >= alone.device_us
    assert mixed.slowest is mixed[0] and mixed.makespan_us == mixed[0].time_us


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_concurrent_rows_equal_the_commands(layout):
    want = cli_json("all-reduce", "--system", "trn2.48xlarge", "--ranks", "64", "--sizes",
                    "16MiB", "--groups", "4", "--group-layout", layout)
    assert (want["groups"], want["group_layout"]) == (4, layout)
    comm = fabric.Fabric("trn2.48xlarge", 64)
    res = comm.concurrent([fabric.Group("all-reduce", g, bytes="16MiB")
                           for g in comm.split(4, layout)])
    row = dict(want["rows"][0])
    every = row.pop("groups")
    assert row == res.slowest.to_dict()  # the command's row is the slowest group's
    assert every == [r.to_dict() for r in res]
    assert res.to_dict()["groups"] == every


def test_concurrent_errors_name_the_argument():
    comm = fabric.Fabric("trn2.48xlarge", 32, rank_unit="chip", servers=2)
    G = fabric.Group
    ok = G("all-reduce", range(16), bytes=1024)
    with pytest.raises(ValueError, match="^Fabric.concurrent: groups: an empty list"):
        comm.concurrent([])
    with pytest.raises(TypeError, match="^Fabric.concurrent: groups: expected a list"):
        comm.concurrent(ok)
    with pytest.raises(TypeError, match="groups\\[1\\]: expected a fabric.Group, got list"):
        comm.concurrent([ok, [0, 1]])
    with pytest.raises(ValueError, match="groups\\[1\\]: op: unknown collective 'all-sum'"):
        comm.concurrent([ok, G("all-sum", [0, 1], bytes=1024)])
    with pytest.raises(TypeError, match="groups\\[0\\]: ranks\\[1\\]: expected an integer"):
        comm.concurrent([G("all-reduce", [0, "1"], bytes=1024)])
    with pytest.raises(TypeError, match="groups\\[0\\]: ranks: expected a list"):
        comm.concurrent([G("all-reduce", 4, bytes=1024)])
    with pytest.raises(ValueError, match="groups\\[0\\]: ranks: an empty list"):
        comm.concurrent([G("all-reduce", [], bytes=1024)])
    with pytest.raises(ValueError, match="groups\\[0\\]: ranks\\[1\\]: 32 is out of range"):
        comm.concurrent([G("all-reduce", [0, 32], bytes=1024)])
    with pytest.raises(ValueError, match="groups\\[0\\]: ranks: rank 1 is listed twice"):
        comm.concurrent([G("all-reduce", [0, 1, 1], bytes=1024)])
    # Two ranks on server 0, one on server 1: the core's check, under Python's index.
    with pytest.raises(ValueError, match="^Fabric.concurrent: groups\\[1\\]: ranks: needs the "
                                         "same number of ranks on every server"):
        comm.concurrent([ok, G("all-reduce", [0, 1, 16], bytes=1024)])
    with pytest.raises(ValueError, match="groups\\[0\\]: bytes: give the group's tensor size"):
        comm.concurrent([G("all-reduce", [0, 1])])
    with pytest.raises(ValueError, match="groups\\[0\\]: bytes: one size per group"):
        comm.concurrent([G("all-reduce", [0, 1], bytes="1KiB:1MiB")])
    with pytest.raises(ValueError, match="groups\\[0\\]: dtype: .*fp77"):
        comm.concurrent([G("all-reduce", [0, 1], bytes=1024, dtype="fp77")])
    with pytest.raises(ValueError, match="groups\\[0\\]: algorithm: unknown algorithm 'tree'"):
        comm.concurrent([G("all-reduce", [0, 1], bytes=1024, algorithm="tree")])
    # root, perm and counts are the group's: a group of 2 has ranks 0 and 1.
    with pytest.raises(ValueError, match="groups\\[0\\]: root: 2 is out of range"):
        comm.concurrent([G("broadcast", [5, 6], bytes=1024, root=2)])
    with pytest.raises(ValueError, match="groups\\[0\\]: perm: needs one destination per rank "
                                         "\\(2\\), got 3"):
        comm.concurrent([G("permute", [5, 6], bytes=1024, perm=[1, 0, 0])])
    with pytest.raises(ValueError, match="groups\\[0\\]: counts: needs 2 rows"):
        comm.concurrent([G("all-to-all-v", [5, 6], bytes=1024, counts=[[1, 1]])])
    # A forced algorithm that does not apply to the group: the core's error, as Python names it.
    with pytest.raises(ValueError,
                       match=r"^Fabric.concurrent: groups\[0\]: algorithm: 'kangaring'"):
        comm.concurrent([G("all-reduce", [0, 1, 2], bytes=1024, algorithm="kangaring")])
    # Unfolded: more than 65,536 flows in flight at once are refused.
    big = fabric.Fabric("trn2.48xlarge", 512, servers=8)
    with pytest.raises(ValueError, match="^Fabric.concurrent: groups: more than 65536 transfers"):
        big.concurrent([G("all-to-all", g, bytes="64MiB", algorithm="mesh")
                        for g in big.split(2)])
    with pytest.raises(ValueError, match="^Fabric.split: groups: 3 groups do not split the 32 "
                                         "ranks evenly"):
        comm.split(3)
    with pytest.raises(ValueError, match="^Fabric.split: groups: 0 is out of range"):
        comm.split(0)
    with pytest.raises(ValueError, match="^Fabric.split: layout: expected 'contiguous' or "
                                         "'strided', got 'diagonal'"):
        comm.split(2, "diagonal")
    assert comm.split(4, "strided")[3] == list(range(3, 32, 4))


# --- errors: ValueError naming what is wrong ---------------------------------------------------

def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="^System: 'trn9': unknown system"):
        fabric.System("trn9")
    with pytest.raises(ValueError, match="^Fabric: system: 'trn9': unknown system"):
        fabric.Fabric("trn9", 2)
    with pytest.raises(ValueError, match="no_such"):
        fabric.System("trn2.48xlarge", set=["server.no_such=1"])
    with pytest.raises(ValueError, match="runtime key"):
        fabric.System("trn2.48xlarge", set=["launch.launch_us=1"])
    with pytest.raises(ValueError, match="rank_unit"):
        fabric.Fabric("trn2.48xlarge", 4, rank_unit="die")
    with pytest.raises(ValueError, match="^Fabric: ranks: .*need 2 servers"):
        fabric.Fabric("trn1.32xlarge", 64)
    with pytest.raises(ValueError, match="^Fabric: lnc"):
        fabric.Fabric("trn2.48xlarge", 4, lnc=3)
    f = fabric.Fabric("trn1.32xlarge", 4)
    x = inputs(4, (8,))
    with pytest.raises(ValueError, match="all_reduce: arrays: needs one array per rank \\(4\\), got 3"):
        f.all_reduce(arrays=x[:3])
    with pytest.raises(ValueError, match="arrays\\[2\\]: shape \\(7,\\) differs"):
        f.all_reduce(arrays=x[:2] + [np.zeros(7, np.float32)] + x[3:])
    with pytest.raises(ValueError, match="arrays\\[1\\]: dtype float16 differs"):
        f.all_reduce(arrays=[x[0], x[1].astype(np.float16), x[2], x[3]])
    with pytest.raises(ValueError, match="all_reduce: arrays: dtype int64 has no trnsim format"):
        f.all_reduce(arrays=[np.arange(8) for _ in range(4)])
    with pytest.raises(ValueError, match="arrays: dtype float32 does not hold format bf16"):
        f.all_reduce(arrays=x, dtype="bf16")
    with pytest.raises(ValueError, match="dtype: .*fp77"):
        f.all_reduce(bytes=1024, dtype="fp77")
    with pytest.raises(ValueError, match="op: unknown collective 'all-sum'"):
        f.collective("all-sum", bytes=1024)
    with pytest.raises(ValueError, match="algorithm: unknown algorithm 'tree'"):
        f.all_reduce(bytes=1024, algorithm="tree")
    with pytest.raises(ValueError, match="algorithm: 'kangaring'"):
        fabric.Fabric("trn1.32xlarge", 3).all_reduce(bytes=1024, algorithm="kangaring")
    with pytest.raises(ValueError, match="bytes= \\(timing mode\\) or arrays="):
        f.all_reduce()
    with pytest.raises(ValueError, match="not both"):
        f.all_reduce(bytes=64, arrays=x)
    with pytest.raises(ValueError, match="bytes: '1 KiB'"):
        f.all_reduce(bytes="1 KiB")
    with pytest.raises(ValueError, match="sizes\\[1\\]"):
        f.all_reduce(sizes=[1024, -1])
    with pytest.raises(ValueError, match="perm: not a permutation"):
        f.permute(arrays=x, perm=[1, 1, 2, 3])
    with pytest.raises(ValueError, match="root: .*out of range"):
        f.broadcast(bytes=1024, root=4)
    with pytest.raises(ValueError, match="root: only broadcast"):
        f.all_reduce(bytes=1024, root=1)
    with pytest.raises(ValueError, match="do not split into 4 equal blocks"):
        f.all_to_all(arrays=inputs(4, (6,)))
    with pytest.raises(ValueError, match="counts: all-to-all-v on data needs"):
        f.all_to_all_v(arrays=x)


def test_ring_directions_one_way_is_slower_and_checked():
    comm = fabric.Fabric("trn2.48xlarge", 16, rank_unit="chip")
    both = comm.all_reduce(bytes="1GiB", algorithm="torus-ring")
    one = comm.all_reduce(bytes="1GiB", algorithm="torus-ring", ring_directions=1)
    assert one.algorithm == both.algorithm == "torus-ring"
    assert one.device_us > both.device_us
    grp = comm.concurrent([fabric.Group("all-reduce", list(range(16)), "1GiB",
                                        algorithm="torus-ring", ring_directions=1)])
    assert abs(grp.groups[0].device_us - one.device_us) < 1e-3
    with pytest.raises(ValueError, match="ring_directions"):
        comm.all_reduce(bytes="1MiB", ring_directions=3)


def test_concurrent_request_errors_name_the_group():
    comm = fabric.Fabric("trn2.48xlarge", 32, rank_unit="chip", servers=2)
    halves = comm.split(2)
    with pytest.raises(ValueError, match=r"groups\[1\]: .*pairwise"):
        comm.concurrent([fabric.Group("all-reduce", halves[0], "1MiB"),
                         fabric.Group("all-reduce", halves[1], "1MiB", algorithm="pairwise")])
