"""Trainium systems and collectives: NeuronLink fabrics, in timing and in functional mode.

All of the model is C++ (src/fabric, docs/fabric.md); this module builds its objects, marshals
numpy arrays and presents the results.

    import numpy as np
    from trnsim import fabric

    s = fabric.System("trn2.48xlarge", servers=2)         # 32 Trn2 chips, 2 servers over EFA
    comm = s.fabric(ranks=128)                             # one rank per logical core
    r = comm.all_reduce(bytes="64MiB")                     # timing: a CollectiveResult
    r.time_us, r.busbw_gib_s, r.algorithm, r.phases[0].name
    comm.all_reduce(sizes="1KiB:1GiB:4")                   # a sweep: one record per size

    tp = [fabric.Group("all-reduce", g, bytes="64MiB") for g in comm.split(8)]
    res = comm.concurrent(tp)                              # 8 groups at once, sharing the system
    res.makespan_us, res.groups[0].time_us, res.slowest    # a ConcurrentResult

    small = fabric.Fabric("trn1.32xlarge", ranks=4)
    out = small.all_reduce(arrays=[np.full(8, r, np.float32) for r in range(4)])
    out[0], out.algorithm                                  # functional: arrays per rank

Timing records (``CollectiveResult``) have exactly the fields of the rows
``trnsim collective --json`` prints, typed from the JSON (ints, floats, strings, tuples of
``Phase`` records); ``to_dict()`` gives the row back. Functional mode takes one array per rank
(any trnsim format: float32, ml_dtypes.bfloat16, int8, ...) and returns one per rank:

    all-reduce      every rank's array -> the reduction, on every rank (same shape)
    reduce-scatter  every rank's array -> block r of the reduction on rank r (the leading axis
                    split in ranks when it divides, else the flattened tensor's block)
    all-gather      rank r's block -> the blocks concatenated along the leading axis
    all-to-all      block j of rank i -> block i of rank j (same shape; the size must divide)
    all-to-all-v    rank i sends counts[i][j] elements to j, packed in rank order
    broadcast       the root's array -> every rank
    permute         rank i's array -> rank perm[i] (default i+1 mod ranks)
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import numbers
import re
from typing import Any, Sequence

import numpy as np

from trnsim import _check, _core, numerics
from trnsim._paths import export_spec_dir

__all__ = [
    "System", "Fabric", "Communicator", "Record", "CollectiveResult", "CollectiveOutput",
    "Group", "ConcurrentResult",
    "systems", "runtimes", "collectives", "algorithms", "system_keys", "runtime_keys",
    "DEFAULT_RUNTIME",
]

DEFAULT_RUNTIME = "neuron-2023"

# The C++ errors name the command's options; Python callers know the arguments by these names.
_OPTION_NAMES = (
    ("--ranks-per-server", "ranks_per_server"), ("--rank-unit", "rank_unit"),
    ("--ranks", "ranks"), ("--lnc", "lnc"), ("--root", "root"), ("--perm", "perm"),
    ("--algorithm", "algorithm"), ("--intra/--inter", "intra/inter"), ("--servers", "servers"),
    ("--set", "set"), ("--group-layout", "layout"), ("--groups", "groups"),
)


def _python_message(msg: str) -> str:
    for opt, name in _OPTION_NAMES:
        if msg.startswith(opt + ":") or msg.startswith(opt + " "):
            return name + msg[len(opt):]
    return msg


def _core_call(where: str, fn, *args, **kwargs):
    """A core call whose ValueError says where it came from and names Python's arguments."""
    try:
        return _check.call(fn, where, *args, **kwargs)
    except ValueError as e:
        raise ValueError(f"{where}: {_python_message(str(e))}") from None


def _ready() -> None:
    export_spec_dir()  # the core finds spec/systems and spec/runtime through it


# --- listings --------------------------------------------------------------------------------

def systems() -> list[str]:
    """Names of the systems in spec/systems (a .toml path works wherever a name does)."""
    _ready()
    return list(_core.fabric_systems())


def runtimes() -> list[str]:
    """Names of the collective runtimes in spec/runtime."""
    _ready()
    return list(_core.fabric_runtimes())


def collectives() -> list[str]:
    """The collectives, as the command names them ("all-reduce", ...)."""
    return list(_core.fabric_ops())


def algorithms() -> dict[str, str]:
    """Every collective algorithm: {name: description} ("auto" picks one by the documented
    rule, docs/fabric.md)."""
    return dict(_core.fabric_algorithms())


def system_keys() -> str:
    """Every system key with its unit and meaning (``trnsim collective --keys``)."""
    return _core.fabric_system_keys()


def runtime_keys() -> str:
    """Every runtime key with its unit and meaning."""
    return _core.fabric_runtime_keys()


def _overrides(set, what: str) -> list[str]:
    from trnsim import spec  # the same forms as spec.load(set=...): dict, list, one string

    return spec._overrides(set, what)


# --- systems ---------------------------------------------------------------------------------

class System:
    """A system of Trainium chips (spec/systems/<name>.toml, or a what-if .toml file).

    ``servers`` makes it a cluster of that many servers over EFA (``--servers``); ``set``
    overrides system keys as ``--set`` does: a dict ``{"cluster.servers": 4}`` or a list of
    ``"key=value"`` strings (``trnsim.fabric.system_keys()`` lists them).
    """

    def __init__(self, name="trn1.32xlarge", *, servers: int | None = None, set=None,
                 _where: str = "System"):
        w = _where  # a Fabric building its system names itself in the errors
        self._name = _check.name_or_path(name, f"{w}: name")
        sets = _overrides(set, f"{w}: set")
        if servers is not None:
            servers = _check.integer(servers, f"{w}: servers", 1, 2**30)
            sets.append(f"cluster.servers={servers}")
        _ready()
        system_sets, runtime_sets = _core_call(f"{w}: set", _core.fabric_split_sets, sets)
        if runtime_sets:
            raise ValueError(f"{w}: set: {runtime_sets[0]!r} is a runtime key; give it to "
                             "Fabric(set=...)")
        self._sets = list(system_sets)
        self._spec = _core_call(w, _core.fabric_load_system, self._name, self._sets)
        self._info = json.loads(self._spec.json())

    @property
    def info(self) -> dict:
        """Everything known about the system: spec values, topology, provenance of every key."""
        return self._info

    name = property(lambda self: self._info["name"], doc="The system's name.")
    title = property(lambda self: self._info["title"])
    description = property(lambda self: self._info["description"])
    status = property(lambda self: self._info["status"], doc='"shipped", "projected", "what-if"')
    chip = property(lambda self: self._info["chip"], doc="The chip generation (spec/chips).")
    chips = property(lambda self: self._info["chips"], doc="Chips in the whole system.")
    servers = property(lambda self: self._info["servers"], doc="Servers (NeuronLink domains).")
    chips_per_server = property(lambda self: self._info["chips_per_server"])
    cores_per_chip = property(lambda self: self._info["cores_per_chip"],
                              doc="Physical NeuronCores per chip.")
    lnc = property(lambda self: self._info["lnc"],
                   doc="Physical cores per logical core (a core rank) by default.")
    links = property(lambda self: self._info["links"],
                     doc="Every kind of link: kind, count, gbps (per direction), latency_us.")
    provenance = property(lambda self: self._info["provenance"],
                          doc="Where every key's value comes from: {key: provenance}.")
    sets = property(lambda self: list(self._sets), doc="The overrides applied.")

    @property
    def topology(self) -> dict:
        """The server's topology (torus dims or switch, link rates), the cluster's EFA, and
        the links of the whole system by kind."""
        return {"server": self._info["server"], "cluster": self._info["cluster"],
                "links": self._info["links"], "num_links": self._info["num_links"]}

    def fabric(self, ranks: int, **kwargs) -> Fabric:
        """Ranks placed on this system (see Fabric for the keyword arguments)."""
        return Fabric(self, ranks, **kwargs)

    def __repr__(self) -> str:
        srv = self._info["server"]
        shape = ("x".join(str(d) for d in srv["torus_dims"]) + " torus"
                 if srv["topology"] == "torus" else "NeuronSwitch")
        return (f"<System {self.name}: {self.servers} x {self.chips_per_server} {self.chip} "
                f"({shape}), {self.cores_per_chip} cores per chip>")


# --- records ---------------------------------------------------------------------------------

class Record:
    """A typed record made from a JSON object of the core; its fields are the object's keys,
    whatever they are (the rows may gain fields: nothing here lists them)."""

    _json_keys: dict = {}  # field -> JSON key, where a key is not a usable field name

    def to_dict(self) -> dict:
        """The JSON object this record was made from."""
        absent = getattr(self, "_absent", frozenset())
        return {self._json_keys.get(f.name, f.name): _plain(getattr(self, f.name))
                for f in dataclasses.fields(self) if f.name not in absent}

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]


class CollectiveResult(Record):
    """One collective in timing mode: the fields of a ``trnsim collective --json`` row (op,
    algorithm, size_bytes, count, dtype, time_us, device_us, algbw_gib_s, busbw_gib_s,
    link/EFA/HBM bytes, phases, ... as the core produces them)."""


def _plain(v):
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


_CLASSES: dict = {}


def _class_name(key: str) -> str:
    word = key[:-1] if key.endswith("s") and len(key) > 1 else key
    return "".join(p[:1].upper() + p[1:] for p in word.replace("-", "_").split("_")) or "Item"


def _field_name(key: str) -> str:
    """A JSON key as a dataclass field name (the row's keys are snake_case already; anything
    else still gives a record)."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in key) or "_"
    if name[0].isdigit() or keyword.iskeyword(name) or hasattr(Record, name):
        name += "_"
    return name


def _kind(values: list) -> tuple:
    """(type, converter) for a field from its values in every object that has it."""
    present = [v for v in values if v is not None]
    if not present:
        return Any, lambda v: v
    if all(isinstance(v, bool) for v in present):
        return bool, lambda v: v
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return int, lambda v: v
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return float, lambda v: None if v is None else float(v)
    if all(isinstance(v, str) for v in present):
        return str, lambda v: v
    return None, None


def _record_type(name: str, base: type, objects: list[dict]):
    """A frozen dataclass (cached, so equal rows give equal records) for these objects, and a
    function making one record of one object."""
    keys: list[str] = []
    for o in objects:
        for k in o:
            if k not in keys:
                keys.append(k)
    fields, makers = [], {}
    for k in keys:
        vals = [o.get(k) for o in objects]
        optional = any(k not in o or o[k] is None for o in objects)
        t, make = _kind(vals)
        if t is None:
            present = [v for v in vals if v is not None]
            if all(isinstance(v, list) for v in present):
                items = [x for v in present for x in v]
                if items and all(isinstance(x, dict) for x in items):
                    sub, sub_make = _record_type(_class_name(k), Record, items)
                    t = tuple[sub, ...]
                    make = (lambda m: lambda v: None if v is None else tuple(m(x) for x in v))(
                        sub_make)
                else:
                    et, emake = _kind(items)
                    et = Any if et is None else et
                    emake = emake or (lambda x: x)
                    t = tuple[et, ...]
                    make = (lambda m: lambda v: None if v is None else tuple(m(x) for x in v))(
                        emake)
            elif all(isinstance(v, dict) for v in present):
                sub, sub_make = _record_type(_class_name(k), Record, present)
                t = sub
                make = (lambda m: lambda v: None if v is None else m(v))(sub_make)
            else:
                t, make = Any, (lambda v: v)
        if optional and t is not Any:
            t = t | None
        fields.append((_field_name(k), t))
        makers[k] = make
    key = (name, base, tuple(fields), tuple(keys))
    cls = _CLASSES.get(key)
    if cls is None:
        cls = dataclasses.make_dataclass(name, fields, bases=(base,), frozen=True)
        cls.__module__ = __name__
        cls.__doc__ = base.__doc__
        cls._json_keys = {f: k for (f, _), k in zip(fields, keys) if f != k}
        _CLASSES[key] = cls

    def make_one(o: dict):
        rec = cls(**{_field_name(k): makers[k](o.get(k)) for k in keys})
        absent = frozenset(_field_name(k) for k in keys if k not in o)
        if absent:
            object.__setattr__(rec, "_absent", absent)
        return rec

    return cls, make_one


def _records(rows: list[dict]) -> list[CollectiveResult]:
    if not rows:
        return []
    _, make = _record_type("CollectiveResult", CollectiveResult, rows)
    return [make(r) for r in rows]


@dataclasses.dataclass
class CollectiveOutput:
    """One collective in functional mode: the output array of every rank (indexable as a
    list: ``out[r]``) and the algorithm that moved the data (hierarchical ones name their
    stages, as the command prints them)."""

    arrays: list
    algorithm: str
    op: str
    dtype: str

    def __len__(self) -> int:
        return len(self.arrays)

    def __getitem__(self, rank):
        return self.arrays[rank]

    def __iter__(self):
        return iter(self.arrays)


@dataclasses.dataclass
class Group:
    """One communicator of a concurrent run (``Fabric.concurrent``): a collective in timing
    mode on some of the fabric's ranks.

    ``ranks`` lists the fabric's (global) rank of each group rank, in group order
    (``Fabric.split`` gives equal groups); ``bytes`` is the group's full tensor (an int or
    ``"64MiB"``; one size). The rest are the arguments of ``Fabric.collective``, in the
    group's own ranks: ``root`` is a group rank, ``perm`` and ``counts`` have one entry per
    group rank.
    """

    op: str
    ranks: Sequence[int]
    bytes: Any = None
    _: dataclasses.KW_ONLY
    dtype: Any = None
    algorithm: str = "auto"
    intra: str | None = None
    inter: str | None = None
    root: int = 0
    perm: Any = None
    counts: Any = None
    ring_directions: int = 2


@dataclasses.dataclass(frozen=True)
class ConcurrentResult:
    """Groups that ran at once (``Fabric.concurrent``): ``groups`` one CollectiveResult per
    group, in the order given (each the group's time, device time, phases and traffic with
    the others running; the fields of a ``trnsim collective --json`` row), ``ranks`` each
    group's global ranks, and ``makespan_us`` the slowest group's time (launch included).
    Indexable as the list of group results: ``res[g]``."""

    groups: tuple[CollectiveResult, ...]
    makespan_us: float
    ranks: tuple[tuple[int, ...], ...]

    @property
    def slowest(self) -> CollectiveResult:
        """The slowest group's result (the first of equals): the row ``trnsim collective
        --groups K`` prints."""
        return max(self.groups, key=lambda r: r.time_us)

    def to_dict(self) -> dict:
        return {"groups": [g.to_dict() for g in self.groups], "makespan_us": self.makespan_us,
                "ranks": [list(r) for r in self.ranks]}

    def __len__(self) -> int:
        return len(self.groups)

    def __getitem__(self, g):
        return self.groups[g]

    def __iter__(self):
        return iter(self.groups)


# --- fabrics ---------------------------------------------------------------------------------

def _op_name(op, where: str) -> str:
    _check.string(op, f"{where}: op")
    name = op.strip().lower().replace("_", "-")
    known = collectives()
    if name not in known:
        squashed = {k.replace("-", ""): k for k in known}  # "allreduce", as NCCL spells it
        name = squashed.get(name.replace("-", ""), name)
    if name not in known:
        raise ValueError(f"{where}: op: unknown collective {op!r}; known: {', '.join(known)}")
    return name


def _is_sweep_text(s: str) -> bool:
    return ":" in s or "," in s


class Fabric:
    """Ranks placed on a system, with a collective runtime: what a communicator holds.

    Args:
        system: a System, or a system name / .toml path (built with ``servers`` and the
            system keys of ``set``).
        ranks: number of ranks.
        rank_unit: ``"core"`` (a logical core of ``lnc`` physical cores) or ``"chip"``.
        lnc: physical cores per logical core (default: the system's).
        servers: servers in the cluster (``cluster.servers``).
        ranks_per_server: ranks placed on each server (default: fill each server).
        runtime: the collective runtime's name or .toml path (spec/runtime).
        set: overrides, as ``trnsim collective --set``: launch.*, sync.* and select.* keys go to the
            runtime, the rest to the system.

    As on the command line, ranks fill a chip's cores, then chips in ring order, then servers.
    """

    def __init__(self, system="trn1.32xlarge", ranks: int = 2, *, rank_unit: str = "core",
                 lnc: int | None = None, servers: int | None = None,
                 ranks_per_server: int | None = None, runtime=DEFAULT_RUNTIME, set=None):
        w = "Fabric"
        ranks = _check.integer(ranks, f"{w}: ranks", 1, 2**40)
        _check.string(rank_unit, f"{w}: rank_unit")
        if rank_unit not in ("core", "chip"):
            raise ValueError(f"{w}: rank_unit: expected 'core' or 'chip', got {rank_unit!r}")
        lnc = 0 if lnc is None else _check.integer(lnc, f"{w}: lnc", 1, 64)
        rps = (0 if ranks_per_server is None
               else _check.integer(ranks_per_server, f"{w}: ranks_per_server", 1, 2**30))
        if servers is not None:
            servers = _check.integer(servers, f"{w}: servers", 1, 2**30)
        runtime = _check.name_or_path(runtime, f"{w}: runtime")
        _ready()
        system_sets, runtime_sets = _core_call(f"{w}: set", _core.fabric_split_sets,
                                               _overrides(set, f"{w}: set"))
        system_sets = list(system_sets)
        if servers is not None:
            system_sets.append(f"cluster.servers={servers}")
        if isinstance(system, System):
            if system_sets:  # the System's own overrides first, then these
                system = System(system._name, set=system._sets + system_sets, _where=w)
        else:
            name = _check.name_or_path(system, f"{w}: system")
            system = System(name, set=system_sets, _where=f"{w}: system")
        self._system = system
        rt = _core_call(f"{w}: runtime", _core.fabric_load_runtime, runtime, list(runtime_sets))
        self._core = _core_call(w, _core.Fabric, system._spec, rt, rank_unit, ranks, lnc, rps)
        self._runtime = json.loads(rt.json())
        self._info = json.loads(self._core.info_json())
        self._unit = rank_unit
        self._lnc = lnc if lnc else system.lnc

    # -- what it is --
    system = property(lambda self: self._system, doc="The System the ranks are placed on.")
    ranks = property(lambda self: self._info["ranks"])
    rank_unit = property(lambda self: self._unit)
    lnc = property(lambda self: self._lnc, doc="Physical cores per logical core (core ranks).")
    ranks_per_chip = property(lambda self: self._info["ranks_per_chip"])
    ranks_per_server = property(lambda self: self._info["ranks_per_server"])
    servers_used = property(lambda self: self._info["servers_used"])
    runtime = property(lambda self: self._info["runtime"], doc="The runtime's name.")
    runtime_info = property(lambda self: self._runtime,
                            doc="The runtime's launch cost, thresholds and provenance.")

    @property
    def info(self) -> dict:
        """The header of ``trnsim collective --json`` (system, chip, runtime, chips, ranks,
        ranks_per_chip, launch_us, overlap_us) and the placement's ranks_per_server and
        servers_used."""
        return dict(self._info)

    def chip_of(self, rank: int) -> int:
        """The chip (system-wide number) rank ``rank`` is on."""
        rank = _check.integer(rank, "Fabric.chip_of: rank", 0, self.ranks - 1)
        return _core_call("Fabric.chip_of", self._core.chip_of, rank)

    def table(self, results) -> str:
        """Results of this fabric as ``trnsim collective`` prints them (nccom-test's table)."""
        recs = [results] if isinstance(results, CollectiveResult) else _check.items(
            results, "Fabric.table: results", "a CollectiveResult or a list of them")
        for i, r in enumerate(recs):
            if not isinstance(r, CollectiveResult):
                raise TypeError(f"Fabric.table: results[{i}]: expected a CollectiveResult, "
                                f"got {type(r).__name__}")
        doc = dict(self._info, rows=[r.to_dict() for r in recs])
        return _core.fabric_format_sweep(json.dumps(doc))

    def __repr__(self) -> str:
        return (f"<Fabric {self.ranks} {self._unit} ranks on {self._system.name} "
                f"({self.ranks_per_chip} per chip, {self.servers_used} server(s)), runtime "
                f"{self.runtime}>")

    # -- collectives --
    def collective(self, op: str, bytes=None, *, size=None, sizes=None, arrays=None,
                   dtype=None, algorithm: str = "auto", intra: str | None = None,
                   inter: str | None = None, root: int = 0, perm=None, counts=None,
                   per_rank: bool = False, ring_directions: int = 2):
        """One collective, timed or on data.

        Timing mode: ``bytes`` (or ``size`` / ``sizes``, the same thing) is the full tensor's
        size: an int, a string such as ``"64MiB"``, a sweep ``"8B:1GiB[:FACTOR]"`` /
        ``"1KiB,1MiB"``, or a list of sizes. One size gives a CollectiveResult, a sweep or a
        list gives a list of them. ``dtype`` defaults to fp32; ``per_rank`` simulates every
        rank and step (no folding, the command's ``--per-rank``).

        Functional mode: ``arrays`` is one numpy array per rank (see the module's docstring
        for what each collective takes and gives); the result is a CollectiveOutput. ``dtype``
        is taken from the arrays; given, it must name their format, or the arrays hold its
        raw codes in unsigned integers (formats numpy lacks).

        Common: ``algorithm`` ("auto" or a name of algorithms()), ``intra`` / ``inter`` (the
        hierarchical stages), ``root`` (broadcast), ``perm`` (permute: rank i sends to
        perm[i]), ``counts`` (all-to-all-v: counts[i][j] elements from i to j),
        ``ring_directions`` (ring and torus-ring: 2 runs every cycle both ways, 1 one way;
        the command's ``--ring-directions``).
        """
        w = f"Fabric.{op.replace('-', '_')}" if isinstance(op, str) else "Fabric.collective"
        op = _op_name(op, w)
        w = f"Fabric.{op.replace('-', '_')}"
        given = [(n, v) for n, v in (("bytes", bytes), ("size", size), ("sizes", sizes))
                 if v is not None]
        if len(given) > 1:
            raise ValueError(f"{w}: give one of bytes, size and sizes (got "
                             f"{', '.join(n for n, _ in given)})")
        if given and arrays is not None:
            raise ValueError(f"{w}: give {given[0][0]}= (timing) or arrays= (functional), "
                             "not both")
        if not given and arrays is None:
            raise ValueError(f"{w}: give bytes= (timing mode) or arrays= (functional mode)")
        common = self._common(op, w, self.ranks, algorithm, intra, inter, root, perm, counts,
                              ring_directions)
        if arrays is not None:
            if per_rank:
                raise ValueError(f"{w}: per_rank: applies to timing mode (bytes=)")
            return self._run(op, arrays, dtype, w, common)
        name, value = given[0]
        fmt = numerics.format_name("fp32" if dtype is None else dtype, f"{w}: dtype")
        per_rank = _check.boolean(per_rank, f"{w}: per_rank")
        sizes_list, single = self._sizes(value, name, w)
        texts = _core_call(w, self._core.simulate, sizes_list, op, fmt, folded=not per_rank,
                           **common)
        recs = _records([json.loads(t) for t in texts])
        return recs[0] if single else recs

    def all_reduce(self, bytes=None, **kwargs):
        """All-reduce (sum): see collective()."""
        return self.collective("all-reduce", bytes, **kwargs)

    def reduce_scatter(self, bytes=None, **kwargs):
        """Reduce-scatter (sum; rank r keeps block r): see collective()."""
        return self.collective("reduce-scatter", bytes, **kwargs)

    def all_gather(self, bytes=None, **kwargs):
        """All-gather (rank r gives block r): see collective(). ``bytes`` is the gathered
        tensor's size, as nccom-test counts it."""
        return self.collective("all-gather", bytes, **kwargs)

    def all_to_all(self, bytes=None, **kwargs):
        """All-to-all (block j of rank i to block i of rank j): see collective()."""
        return self.collective("all-to-all", bytes, **kwargs)

    def all_to_all_v(self, bytes=None, **kwargs):
        """All-to-all-v (``counts[i][j]`` elements from rank i to rank j): see collective()."""
        return self.collective("all-to-all-v", bytes, **kwargs)

    def broadcast(self, bytes=None, **kwargs):
        """Broadcast from ``root``: see collective()."""
        return self.collective("broadcast", bytes, **kwargs)

    def permute(self, bytes=None, **kwargs):
        """Permute (rank i to rank ``perm[i]``, default i+1 mod ranks): see collective()."""
        return self.collective("permute", bytes, **kwargs)

    # -- concurrent groups --
    def split(self, groups: int, layout: str = "contiguous") -> list[list[int]]:
        """The ranks split in ``groups`` equal groups, as ``--groups K --group-layout``
        splits them: ``"contiguous"`` (group g holds ranks g*n/K .. (g+1)*n/K-1, e.g. one
        server each) or ``"strided"`` (group g holds g, g+K, g+2K, ...: one rank of every
        block of K)."""
        w = "Fabric.split"
        n = self.ranks
        k = _check.integer(groups, f"{w}: groups", 1, n)
        _check.string(layout, f"{w}: layout")
        if layout not in ("contiguous", "strided"):
            raise ValueError(f"{w}: layout: expected 'contiguous' or 'strided', got {layout!r}")
        if n % k:
            raise ValueError(f"{w}: groups: {k} groups do not split the {n} ranks evenly")
        return [list(g) for g in _core_call(w, _core.fabric_split_ranks, n, k, layout)]

    def concurrent(self, groups) -> ConcurrentResult:
        """Several collectives at once on this fabric (timing mode): ``groups`` a list of
        ``fabric.Group``, each a collective on some of the ranks (TP groups in every server
        while DP groups cross servers; nccom-test's multi-stream mode).

        Each group runs its own plan, step by step as alone (its plan is the one a
        communicator of its size and ranks per server would run), while its flows share
        links, collective DMA, HBM and NICs max-min fairly with whatever flows of the other
        groups run at that moment. Not folded: every flow is simulated (at most 65,536 in
        flight at once). Returns a ConcurrentResult. A group's ranks must be distinct
        ranks of this fabric with the same number on every server the group uses; groups
        may share ranks.
        """
        w = "Fabric.concurrent"
        items = _check.items(groups, f"{w}: groups", "a list of fabric.Group")
        if not items:
            raise ValueError(f"{w}: groups: an empty list (give at least one fabric.Group)")
        args, rank_lists = [], []
        for i, g in enumerate(items):
            gw = f"{w}: groups[{i}]"
            if not isinstance(g, Group):
                raise TypeError(f"{gw}: expected a fabric.Group, got {type(g).__name__}")
            op = _op_name(g.op, gw)
            ranks = self._group_ranks(g.ranks, gw)
            if g.bytes is None:
                raise ValueError(f"{gw}: bytes: give the group's tensor size (an int or "
                                 "'64MiB')")
            sizes, single = self._sizes(g.bytes, "bytes", gw)
            if not single:
                raise ValueError(f"{gw}: bytes: one size per group, not a sweep or a list")
            fmt = numerics.format_name("fp32" if g.dtype is None else g.dtype, f"{gw}: dtype")
            c = self._common(op, gw, len(ranks), g.algorithm, g.intra, g.inter, g.root, g.perm,
                             g.counts, g.ring_directions)
            args.append((op, sizes[0], fmt, c["algorithm"], c["intra"], c["inter"], c["root"],
                         c["perm"], c["a2av"], ranks, c["ring_directions"]))
            rank_lists.append(tuple(ranks))
        try:
            texts, makespan = _check.call(self._core.concurrent, w, args)
        except ValueError as e:
            # The core names a group "groups: group 3: ..."; Python's index is groups[3].
            msg = _python_message(str(e))
            m = re.fullmatch(r"groups: '?group (\d+)'?: (.*)", msg, re.S)
            if m:
                # The group's ranks (placement) or its request (algorithm, ...), as the core says.
                about_ranks = re.match(r"(has no ranks|lists a rank|ranks must|needs the same)",
                                       m[2])
                inner = m[2] if about_ranks else _python_message(m[2])
                msg = f"groups[{m[1]}]: {'ranks: ' if about_ranks else ''}{inner}"
            raise ValueError(f"{w}: {msg}") from None
        recs = _records([json.loads(t) for t in texts])
        return ConcurrentResult(groups=tuple(recs), makespan_us=float(makespan),
                                ranks=tuple(rank_lists))

    # -- argument marshalling --
    def _common(self, op: str, w: str, n: int, algorithm, intra, inter, root, perm,
                counts, ring_directions=2) -> dict:
        """The arguments every collective takes, checked for a communicator of n ranks."""
        algorithm = _check.string(algorithm, f"{w}: algorithm")
        known = ["auto", *algorithms()]
        if algorithm not in known:
            raise ValueError(f"{w}: algorithm: unknown algorithm {algorithm!r}; known: "
                             f"{', '.join(known)}")
        intra = "" if intra is None else _check.string(intra, f"{w}: intra")
        inter = "" if inter is None else _check.string(inter, f"{w}: inter")
        root = _check.integer(root, f"{w}: root", 0, n - 1)
        if root and op != "broadcast":
            raise ValueError(f"{w}: root: only broadcast has a root")
        ring_directions = _check.integer(ring_directions, f"{w}: ring_directions", 1, 2)
        return dict(algorithm=algorithm, intra=intra, inter=inter, root=root,
                    perm=self._perm(perm, op, w, n), a2av=self._counts(counts, op, w, n),
                    ring_directions=ring_directions)

    def _group_ranks(self, ranks, w: str) -> list[int]:
        n = self.ranks
        items = _check.items(ranks, f"{w}: ranks", "a list of the fabric's ranks")
        if not items:
            raise ValueError(f"{w}: ranks: an empty list (a group needs at least one rank)")
        out = [_check.integer(r, f"{w}: ranks[{j}]", 0, n - 1) for j, r in enumerate(items)]
        if len(set(out)) != len(out):
            dup = next(r for r in out if out.count(r) > 1)
            raise ValueError(f"{w}: ranks: rank {dup} is listed twice")
        return out

    def _perm(self, perm, op: str, w: str, n: int) -> list[int]:
        if perm is None:
            return []
        if op != "permute":
            raise ValueError(f"{w}: perm: only permute takes a permutation")
        items = _check.items(perm, f"{w}: perm", "a list of ranks, one destination per rank")
        dests = [_check.integer(d, f"{w}: perm[{i}]", 0, n - 1) for i, d in enumerate(items)]
        if len(dests) != n:
            raise ValueError(f"{w}: perm: needs one destination per rank ({n}), got "
                             f"{len(dests)}")
        if len(set(dests)) != n:
            dup = next(d for d in dests if dests.count(d) > 1)
            raise ValueError(f"{w}: perm: not a permutation (rank {dup} receives twice)")
        return dests

    def _counts(self, counts, op: str, w: str, n: int) -> list[list[int]]:
        if counts is None:
            return []
        if op != "all-to-all-v":
            raise ValueError(f"{w}: counts: only all-to-all-v takes a count matrix")
        rows = _check.items(counts, f"{w}: counts", f"a {n} x {n} matrix of element counts")
        if len(rows) != n:
            raise ValueError(f"{w}: counts: needs {n} rows (one per sending rank), got "
                             f"{len(rows)}")
        out = []
        for i, row in enumerate(rows):
            row = _check.items(row, f"{w}: counts[{i}]", f"a row of {n} element counts")
            if len(row) != n:
                raise ValueError(f"{w}: counts[{i}]: needs {n} counts, got {len(row)}")
            out.append([_check.integer(c, f"{w}: counts[{i}][{j}]", 0) for j, c in
                        enumerate(row)])
        return out

    def _sizes(self, value, name: str, w: str) -> tuple[list[int], bool]:
        def parse(text: str, what: str) -> list[int]:
            # The command's size rules (units, sweeps, the largest size), for ints too.
            try:
                return list(_core.fabric_parse_sizes(text))
            except ValueError as e:
                msg = str(e).removeprefix("--sizes: ")
                raise ValueError(f"{w}: {what}: {msg}") from None

        def one(v, what):
            if isinstance(v, str):
                if _is_sweep_text(v):
                    raise ValueError(f"{w}: {what}: {v!r} is a sweep; give one size here")
                return parse(v, what)[0]
            return parse(str(_check.integer(v, f"{w}: {what}", 0)), what)[0]

        if isinstance(value, str):
            if _is_sweep_text(value):
                return parse(value, name), False
            return [one(value, name)], True
        if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
            return [one(value, name)], True
        items = _check.items(value, f"{w}: {name}",
                             "a size (int or '64MiB'), a sweep '8B:1GiB' or a list of sizes")
        if not items:
            raise ValueError(f"{w}: {name}: an empty list of sizes")
        return [one(v, f"{name}[{i}]") for i, v in enumerate(items)], False

    def _run(self, op: str, arrays, dtype, w: str, common: dict) -> CollectiveOutput:
        n = self.ranks
        items = _check.items(arrays, f"{w}: arrays", f"a list of {n} arrays, one per rank")
        if len(items) != n:
            raise ValueError(f"{w}: arrays: needs one array per rank ({n}), got {len(items)}")
        arrs = [_check.array(a, f"{w}: arrays[{i}]") for i, a in enumerate(items)]
        dt = arrs[0].dtype
        for i, a in enumerate(arrs[1:], 1):
            if a.dtype != dt:
                raise ValueError(f"{w}: arrays[{i}]: dtype {a.dtype} differs from arrays[0]'s "
                                 f"{dt}")
        if dtype is None:
            fmt = numerics.format_name(dt, f"{w}: arrays")
        else:
            fmt = numerics.format_name(dtype, f"{w}: dtype")
        info = _core.format_info(fmt)
        container = numerics._container(info)
        held = numerics.numpy_dtype(fmt)
        # The arrays hold the format's values (their numpy / ml_dtypes dtype), or its raw codes
        # in the storage container (a format numpy lacks).
        if dt != held and not (dtype is not None and dt == container and dt.kind == "u"):
            want = f"{held}" if held is not None else f"raw codes in {container}"
            raise ValueError(f"{w}: arrays: dtype {dt} does not hold format {fmt} (expected "
                             f"{want})")
        if op != "all-to-all-v":
            shape = arrs[0].shape
            for i, a in enumerate(arrs[1:], 1):
                if a.shape != shape:
                    raise ValueError(f"{w}: arrays[{i}]: shape {a.shape} differs from "
                                     f"arrays[0]'s {shape}")
        flat = [np.ascontiguousarray(a).reshape(-1).view(container) for a in arrs]
        out_sizes = None
        if op == "all-gather":
            # Rank r gives block r: each is placed at its block of the full tensor (even
            # blocks: every rank gives the same shape).
            m = flat[0].size
            full = []
            for r, f in enumerate(flat):
                buf = np.zeros(n * m, dtype=container)
                buf[r * m:(r + 1) * m] = f
                full.append(buf)
            flat = full
        elif op == "all-to-all":
            if flat[0].size % n:
                raise ValueError(f"{w}: arrays: {flat[0].size} elements per rank do not split "
                                 f"into {n} equal blocks")
        elif op == "all-to-all-v":
            counts = common["a2av"]
            if not counts:
                raise ValueError(f"{w}: counts: all-to-all-v on data needs the count matrix "
                                 "(counts[i][j] elements from rank i to rank j)")
            for i, f in enumerate(flat):
                if arrs[i].ndim != 1 or f.size != sum(counts[i]):
                    raise ValueError(f"{w}: arrays[{i}]: expected a 1-d array of "
                                     f"sum(counts[{i}]) = {sum(counts[i])} elements, got "
                                     f"shape {arrs[i].shape}")
            out_sizes = [sum(counts[i][j] for i in range(n)) for j in range(n)]
        algo, data, out = _core_call(w, self._core.run, flat, op, fmt, out_sizes=out_sizes,
                                     **common)
        view = dt  # outputs in the dtype the inputs came in

        def shaped(codes, shape):
            return codes.view(view).reshape(shape)

        shape = arrs[0].shape
        if op in ("all-reduce", "broadcast"):
            res = [shaped(d, shape) for d in data]
        elif op in ("all-to-all", "permute"):
            res = [shaped(o, shape) for o in out]
        elif op == "all-to-all-v":
            res = [o.view(view) for o in out]
        elif op == "all-gather":
            gshape = (n * shape[0], *shape[1:]) if shape else (n,)
            res = [shaped(d, gshape) for d in data]
        else:  # reduce-scatter: rank r's block of the reduction
            count = flat[0].size
            res = []
            for r, d in enumerate(data):
                off, length = _core.fabric_block_range(count, n, r)
                blk = d[off:off + length].view(view).copy()  # not the whole buffer
                if shape and shape[0] % n == 0:
                    blk = blk.reshape((shape[0] // n, *shape[1:]))
                res.append(blk)
        return CollectiveOutput(arrays=res, algorithm=algo, op=op, dtype=fmt)


Communicator = Fabric  # the name collective libraries use for ranks that talk together
