"""trnsim.profile.plot and `trnsim profile --plot`: the engine times, the critical path and the
roofline of a profile drawn with matplotlib (docs/profile.md)."""

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("matplotlib")

import trnsim.profile  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def profile():
    return trnsim.profile.run("matmul_fully_optimized", chip="trn2")


def is_svg(data: bytes) -> bool:
    import xml.etree.ElementTree as ET

    return ET.fromstring(data).tag == "{http://www.w3.org/2000/svg}svg"


def test_png_and_svg_of_fully_optimized_matmul(profile, tmp_path):
    png, svg = tmp_path / "p.png", tmp_path / "p.svg"
    trnsim.profile.plot(profile, png)
    trnsim.profile.plot(profile, str(svg))
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 20_000  # three panels of bars, lines and text
    text = svg.read_bytes()
    assert is_svg(text)
    assert len(text) > 50_000
    # The figures' own labels: the engines, the roofs and the kernel's point.
    s = text.decode()
    for label in ("wait semaphore", "idle", "compute roof", "HBM roof", "kernel:"):
        assert label in s
    # The same profile gives the same file (no dates in it).
    again = tmp_path / "q.svg"
    trnsim.profile.plot(profile.figures, again)
    assert again.read_bytes() == text


@pytest.mark.parametrize("name", ["p.pdf", "p", "p.png.txt"])
def test_other_suffixes_are_refused(profile, tmp_path, name):
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        trnsim.profile.plot(profile, tmp_path / name)
    assert not (tmp_path / name).exists()


def test_not_a_profile_is_refused(tmp_path):
    with pytest.raises(TypeError, match="Profile"):
        trnsim.profile.plot({"chip": "trn2"}, tmp_path / "p.png")


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "trnsim", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_cli_profile_plot_writes_the_file_and_prints_the_summary(tmp_path):
    r = run("profile", "matmul_fully_optimized", "--chip", "trn2", "--plot", "x.png",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "matmul_fully_optimized on trn2 (timing profile)" in r.stdout
    assert (tmp_path / "x.png").read_bytes().startswith(PNG_MAGIC)
    # With --json the JSON is printed as without --plot; --plot=FILE is the same option.
    r = run("profile", "matmul_fully_optimized", "--chip", "trn2", "--json", "--plot=y.svg",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["bound"]["verdict"] == "pe"
    assert is_svg((tmp_path / "y.svg").read_bytes())


def test_cli_profile_plot_bad_suffix_is_bad_input(tmp_path):
    r = run("profile", "matmul_fully_optimized", "--chip", "trn2", "--plot", "x.pdf",
            cwd=tmp_path)
    assert r.returncode == 2
    assert "--plot x.pdf" in r.stderr and ".png or .svg" in r.stderr
    assert r.stdout == ""
    r = run("profile", "matmul_fully_optimized", "--plot", cwd=tmp_path)
    assert r.returncode == 2 and "--plot" in r.stderr


def test_cli_profile_plot_of_an_nki_kernel_file(tmp_path):
    # No matmul: no FLOPs, so the roofline has its roofs and no point.
    (tmp_path / "k.py").write_text(textwrap.dedent("""
        import nki
        import nki.isa as nisa
        import nki.language as nl


        @nki.jit
        def add(a, b):
            out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
            ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=ta, src=a)
            nisa.dma_copy(dst=tb, src=b)
            nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
            nisa.dma_copy(dst=out, src=ta)
            return out
        """))
    r = run("profile", "k.py", "128x512:bfloat16", "128x512:bfloat16", "--plot", "k.svg",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "add on trn2 (timing profile)" in r.stdout
    assert is_svg((tmp_path / "k.svg").read_bytes())
