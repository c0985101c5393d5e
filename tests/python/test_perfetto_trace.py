"""Perfetto protobuf traces (profile/perfetto_trace.h) checked against Perfetto's published
schema (the `perfetto` package's compiled trace protos): every field written is a field of the
message it is in, with its wire type; names resolve through the interned data; slices pair up;
counters and flows are there. Where a trace_processor_shell binary is at hand
(TRNSIM_TRACE_PROCESSOR or on PATH; the perfetto package would download one, which this
machine cannot), the trace processor loads the trace and is queried too."""

import os
import shutil
import subprocess
import sys

import pytest

from trnsim import kernel, profile, run
from trnsim.kernel import ActFunc

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
unknown_fields = pytest.importorskip("google.protobuf.unknown_fields")

TRNSIM = [sys.executable, "-m", "trnsim"]


def small_kernel():
    kb = kernel.KernelBuilder("trn2")
    x = kb.input("x", "fp32", [128, 512])
    y = kb.output("y", "fp32", [128, 512])
    t = kb.sbuf("t", "fp32", [128, 512])
    u = kb.sbuf("u", "fp32", [128, 512])
    kb.dma_copy(t, x)
    kb.activation(u, t, ActFunc.exp, scale=0.5, bias=1.0)
    kb.dma_copy(y, u)
    return kb.build()


@pytest.fixture(scope="module")
def traced():
    return run.run(small_kernel(), mode="timing", trace=True)


def unknown(msg):
    """Fields of `msg` and its sub-messages that the schema does not know."""
    n = len(unknown_fields.UnknownFieldSet(msg))
    for fd, v in msg.ListFields():
        if fd.message_type is not None:
            for m in (v if fd.is_repeated else [v]):
                n += unknown(m)
    return n


def parse(data):
    t = pb.Trace()
    t.ParseFromString(data)
    return t


def test_every_field_is_in_the_schema(traced, tmp_path):
    path = tmp_path / "t.perfetto-trace"
    traced.write_trace(path)
    data = path.read_bytes()
    assert data == profile.perfetto_trace(traced.trace)  # the file is the bytes
    t = parse(data)
    assert len(t.packet) > 10
    assert unknown(t) == 0
    assert all(p.trusted_packet_sequence_id == 1 for p in t.packet)
    assert t.packet[0].sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED


def test_tracks_names_slices_counters_and_flows(traced):
    t = parse(profile.perfetto_trace(traced.trace))
    names, cats, args, strings = {}, {}, {}, {}
    threads, counters = {}, {}
    begins, ends, flow_out, flow_in = {}, {}, set(), set()
    values = {}
    for p in t.packet:
        d = p.interned_data
        names.update({e.iid: e.name for e in d.event_names})
        cats.update({e.iid: e.name for e in d.event_categories})
        args.update({e.iid: e.name for e in d.debug_annotation_names})
        strings.update({e.iid: e.str.decode() for e in d.debug_annotation_string_values})
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.HasField("thread"):
                threads[td.uuid] = td.thread.thread_name
            elif td.HasField("counter"):
                counters[td.uuid] = td.name
        if p.HasField("track_event"):
            e = p.track_event
            if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                assert e.name_iid in names and all(c in cats for c in e.category_iids)
                for a in e.debug_annotations:
                    assert a.name_iid in args
                    assert a.HasField("int_value") or a.string_value_iid in strings
                begins[e.track_uuid] = begins.get(e.track_uuid, 0) + 1
                flow_out.update(e.flow_ids)
                flow_in.update(e.terminating_flow_ids)
            elif e.type == pb.TrackEvent.TYPE_SLICE_END:
                ends[e.track_uuid] = ends.get(e.track_uuid, 0) + 1
            elif e.type == pb.TrackEvent.TYPE_COUNTER:
                double = e.HasField("double_counter_value")
                v = e.double_counter_value if double else e.counter_value
                values.setdefault(counters[e.track_uuid], []).append(v)
    assert begins == ends
    assert {"act", "sp"} <= set(threads.values())
    assert any(n.startswith("dma") for n in threads.values())
    assert "activation" in " ".join(names.values())
    assert {"operands", "index"} <= set(args.values())
    assert {"sbuf bytes", "psum bytes", "hbm GB/s"} <= set(counters.values())
    assert {"sbuf bytes", "hbm GB/s"} <= set(values)  # the kernel uses no PSUM
    assert any(n.startswith("dma q") and n.endswith(" depth") for n in values)
    assert max(values["sbuf bytes"]) >= 128 * 512 * 4  # the input tile, at least
    assert values["sbuf bytes"][-1] == 0
    assert flow_out and flow_out == flow_in  # every flow starts and ends


def test_trace_files_by_name(traced, tmp_path):
    traced.write_trace(tmp_path / "t.pftrace")
    traced.write_trace(tmp_path / "t.json")
    assert (tmp_path / "t.pftrace").read_bytes()[:1] == b"\x0a"  # Trace.packet, a message
    assert (tmp_path / "t.json").read_text().startswith("{")
    with pytest.raises(ValueError, match="perfetto-trace"):
        traced.write_trace(tmp_path / "t.ntff")
    with pytest.raises(ValueError, match=r"\.json"):
        profile.write_trace(traced.trace, tmp_path / "t.txt")
    profile.write_trace(traced.trace, tmp_path / "u.perfetto-trace")
    assert (tmp_path / "u.perfetto-trace").read_bytes() == (tmp_path / "t.pftrace").read_bytes()


def test_window_keeps_part_of_the_run(traced):
    whole = traced.trace
    total_ns = traced.total_ps / 1000
    first = profile.window(whole, 0, total_ns / 4)
    assert 0 < first.num_spans < whole.num_spans
    assert profile.window(whole, 0).num_spans == whole.num_spans
    assert unknown(parse(profile.perfetto_trace(first))) == 0
    with pytest.raises(ValueError, match="start_ns < end_ns"):
        profile.window(whole, 10, 5)


def test_cli_writes_protobuf_and_refuses_other_names(tmp_path):
    out = tmp_path / "t.perfetto-trace"
    r = subprocess.run([*TRNSIM, "run", "softmax", "128", "512", "--mode", "timing", "--trace",
                        str(out), "--trace-window", "0:2us"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert unknown(parse(out.read_bytes())) == 0
    r = subprocess.run([*TRNSIM, "run", "softmax", "128", "512", "--mode", "timing", "--trace",
                        str(tmp_path / "t.ntff")], capture_output=True, text=True)
    assert r.returncode != 0
    assert ".perfetto-trace" in r.stderr and ".json" in r.stderr


def _trace_processor_shell():
    path = os.environ.get("TRNSIM_TRACE_PROCESSOR") or shutil.which("trace_processor_shell")
    return path if path and os.access(path, os.X_OK) else None


@pytest.mark.skipif(_trace_processor_shell() is None,
                    reason="no trace_processor_shell here (set TRNSIM_TRACE_PROCESSOR): the "
                    "perfetto package downloads it, and this machine reaches no download host")
def test_trace_processor_loads_the_trace(traced, tmp_path):
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    path = tmp_path / "t.perfetto-trace"
    traced.write_trace(path)
    config = TraceProcessorConfig(bin_path=_trace_processor_shell())
    with TraceProcessor(trace=str(path), config=config) as tp:
        slices = tp.query("select count(*) as n from slice").as_pandas_dataframe()
        assert int(slices["n"][0]) == sum(1 for _ in _begins(path.read_bytes()))
        names = {r.name for r in tp.query("select name from counter_track")}
        assert {"sbuf bytes", "psum bytes", "hbm GB/s"} <= names
        assert next(iter(tp.query("select count(*) as n from flow"))).n > 0
        args = tp.query("select key from args where key like 'debug.%'")
        assert "debug.operands" in {r.key for r in args}


def _begins(data):
    for p in parse(data).packet:
        if p.HasField("track_event") and p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            yield p
