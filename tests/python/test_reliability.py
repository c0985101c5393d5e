"""Bad input, interrupts and output files from Python and through the `trnsim` command
(docs/reliability.md): clear errors and exit codes, no tracebacks, Ctrl-C honoured."""

import signal
import subprocess
import sys
import textwrap
import time

import pytest

LOOP = """.chip trn2
.engine sp
  reg_set rd=r0 imm=0
top:
  branch target=top ra=r0 op0=is_lt imm=4
"""


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "trnsim", *args], capture_output=True, **kw)


def test_non_utf8_argument_is_an_error_not_a_traceback(tmp_path):
    r = subprocess.run([sys.executable, "-m", "trnsim", "run", b"\xff\xfe.s"], capture_output=True,
                       cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert b"Traceback" not in r.stderr
    assert r.stderr.startswith(b"trnsim: error: ")


@pytest.mark.parametrize("args", [
    ["collective", "all-reduce", "--sizes", "18446744073709551615"],
    ["collective", "all-reduce", "--sizes", "1KiB:1GiB:nan"],
    ["collective", "all-reduce", "--servers", "-1"],
    ["run", "softmax", "--set", "core.dma.fixed_overhead_ns=1e300"],
    ["run", "softmax", "--set", "chip.hbm.bandwidth_gbps=0"],
    ["spec", "x" * 5000],
])
def test_bad_arguments_exit_2_with_one_line(args):
    r = cli(*args, text=True)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("trnsim: error: ") and len(r.stderr.splitlines()) == 1


def test_semaphores_negative_is_bad_input(tmp_path):
    p = tmp_path / "sems.s"
    p.write_text(".chip trn2\n.semaphores -1\n.engine sp\n  nop\n")
    r = cli("run", str(p), text=True)
    assert r.returncode == 2, r.stdout
    assert "Traceback" not in r.stderr and "semaphores" in r.stderr


def _interrupt_after(proc, seconds):
    time.sleep(seconds)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return time.monotonic() - sent, out, err


def test_ctrl_c_stops_a_run_from_the_command(tmp_path):
    p = tmp_path / "loop.s"
    p.write_text(LOOP)
    # 10^11 instructions: minutes of simulation unless Ctrl-C stops it.
    proc = subprocess.Popen([sys.executable, "-m", "trnsim", "run", str(p), "--mode", "timing",
                             "--max-instructions", "100000000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    took, _, err = _interrupt_after(proc, 2.0)
    assert proc.returncode == 130, err
    assert "trnsim: interrupted" in err and "Traceback" not in err
    # The stop itself is within 100 ms; a loaded CI host gets slack.
    assert took < 2.0, took


def test_ctrl_c_reaches_python_as_keyboard_interrupt():
    # A Python program running a long simulation: SIGINT raises KeyboardInterrupt promptly, and
    # Python's own handler is back afterwards.
    script = textwrap.dedent("""
        import os, signal, threading, time
        from trnsim import _core
        from trnsim.kernel import load_chip
        chip = load_chip("trn2")
        # The fully optimised tutorial matmul, timing only, over and over.
        prog = _core.build_example("matmul_fully_optimized", chip, [])
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        try:
            while time.monotonic() - start < 60:
                _core.run_program(chip, prog, "timing", [], False)
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted", time.monotonic() - start)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("interrupted"), r.stdout


def test_trace_files_are_replaced_whole(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text("previous")
    r = cli("run", "softmax", "256", "512", "--trace", str(trace), "--set",
            "chip.hbm.bandwidth_gbps=0", text=True)
    assert r.returncode == 2
    assert trace.read_text() == "previous"
    r = cli("run", "softmax", "256", "512", "--trace", str(trace), text=True)
    assert r.returncode == 0, r.stderr
    assert trace.read_text().startswith("{")
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]
