"""Golden frames: every golden re-renders bit for bit; a changed frame is reported; each
frame-coherence technique keeps the goldens (bit for bit, or above DSR's MSSIM floor)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from repo_paths import ROOT

from tilesim.cli import main
from tilesim.images import png_bytes, read_png
from tilesim.studies import goldens
from tilesim.studies.coherence import DEFAULT_TECHNIQUES
from tilesim.thresholds import DSR_MIN_MSSIM

pytestmark = pytest.mark.slow


def test_every_golden_re_renders_identically():
    entries = goldens.load_manifest()
    assert entries, "goldens/manifest.json lists no goldens"
    for g in entries:
        assert g.accepted(), g
    assert goldens.check(entries) == []


def test_a_changed_frame_is_reported(tmp_path, monkeypatch):
    entries = goldens.load_manifest()[:1]
    folder = tmp_path / "goldens"
    shutil.copytree(goldens.GOLDENS, folder)
    image = read_png(folder / entries[0].png, "RGBA").copy()
    image[10:12, 20:23] = [255, 0, 255, 255]
    (folder / entries[0].png).write_bytes(png_bytes(image))
    monkeypatch.setattr(goldens, "GOLDENS", folder)
    failures = goldens.check(entries)
    assert [(g.name, n) for g, n in failures] == [(entries[0].name, 6)]
    assert np.array_equal(read_png(folder / entries[0].png, "RGBA")[10, 20], [255, 0, 255, 255])


@pytest.mark.mesa
def test_a_golden_below_the_ssim_window_is_accepted_as_a_probe(tmp_path, monkeypatch):
    """Issue 31 item 3: a 5x3 frame has no MSSIM; goldens update accepts it against Mesa within
    the probe tolerance, records its largest difference, and techniques are judged the same
    way."""
    from conftest import require_mesa

    from tilesim.render.gl.commands import Recorder
    from tilesim.render.traces.trace_file import write_trace
    from tilesim.render.workloads.bunny import build_program

    require_mesa()
    program = build_program()
    gl = Recorder(5, 3, name="small")
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    gl.bindBuffer("ARRAY_BUFFER", gl.createBuffer())
    gl.bufferData("ARRAY_BUFFER", np.array([[-1, -1, 0, 0, 0, 1], [3, -1, 0, 0, 0, 1],
                                            [-1, 3, 0, 0, 0, 1]], np.float32))
    for index, offset in ((0, 0), (1, 12)):
        gl.vertexAttribPointer(index, 3, "FLOAT", False, 24, offset)
        gl.enableVertexAttribArray(index)
    identity = np.eye(4, dtype=np.float32).ravel()
    for name in ("ModelViewProjectionMatrix", "NormalMatrix"):
        gl.uniformMatrix4fv(gl.getUniformLocation(prog, name), False, identity)
    gl.clearColor(0.2, 0.3, 0.4, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.drawArrays("TRIANGLES", 0, 3)
    gl.endFrame()
    trace = write_trace(tmp_path / "small.tsim", gl.recorded_frames(), width=5, height=3,
                        name="small")
    monkeypatch.setattr(goldens, "GOLDENS", tmp_path)
    entry = goldens.Golden("small-0000", str(trace), 0, "small-0000.png")
    out = io.StringIO()
    [made], refused = goldens.update([entry], out=out)
    assert refused == [] and "new small-0000 (max difference from Mesa" in out.getvalue()
    assert made.mssim_vs_mesa is None and made.max_diff_vs_mesa <= 2 and made.accepted()
    assert made.to_dict()["max_diff_vs_mesa"] == made.max_diff_vs_mesa
    assert read_png(tmp_path / "small-0000.png").shape == (3, 5, 3)
    assert goldens.check([made]) == []
    [row] = goldens.check_techniques([made], ["dsr"])
    assert row["criterion"] == "every channel within 2/255" and row["mssim"] is None
    assert row["passed"], row


def test_goldens_commands_work_on_a_trace_and_manifest_anywhere(tmp_path, capsys,
                                                                monkeypatch):
    """Issue 33: add, update --manifest (--no-mesa: no Mesa needed) and check on a trace and a
    manifest outside the repository, run from a third folder; a check that fails writes
    obtained and difference images."""
    from trace_helpers import sphere_trace

    sphere_trace(tmp_path / "traces" / "ball.tsim", 2, size=(32, 24))
    manifest = tmp_path / "project" / "goldens" / "manifest.json"
    monkeypatch.chdir(tmp_path / "traces")
    assert main(["goldens", "add", "--manifest", str(manifest), "ball.tsim:0,1"]) == 0
    assert f"2 goldens registered in {manifest}" in capsys.readouterr().out
    data = json.loads(manifest.read_text())
    assert data["root"] == "." and [g["trace"] for g in data["goldens"]] == [
        "../../traces/ball.tsim"] * 2
    assert main(["goldens", "update", "--manifest", str(manifest), "--no-mesa"]) == 0
    out = capsys.readouterr().out
    assert "new ball-0000 (not compared with Mesa)" in out and "new ball-0001" in out
    made = goldens.open_manifest(manifest).goldens
    assert all(g.made_with["reference"] is None and not g.accepted() for g in made)
    assert main(["goldens", "check", "--manifest", str(manifest)]) == 0
    assert capsys.readouterr().out == "2 of 2 goldens identical\n"
    png = manifest.parent / "ball-0001.png"
    image = read_png(png, "RGBA").copy()
    image[3, 4, 3] = 7      # only alpha
    png.write_bytes(png_bytes(image))
    assert main(["goldens", "check", "--manifest", str(manifest), "--results", "out"]) == 1
    captured = capsys.readouterr()
    assert f"FAILED ball-0001: 1 pixels differ from {png}" in captured.err
    diff = read_png(tmp_path / "traces" / "out" / "baseline" / "ball-0001.diff.png")
    assert np.array_equal(diff[3, 4], [255, 0, 255]) and diff.any(axis=2).sum() == 1
    # update remakes a PNG changed by hand even though the manifest's digest still matches
    assert main(["goldens", "update", "--manifest", str(manifest), "--no-mesa"]) == 0
    assert "changed ball-0001 (1 pixels differ; not compared with Mesa)" in capsys.readouterr().out
    assert main(["goldens", "check", "--manifest", str(manifest)]) == 0


def test_goldens_update_without_mesa_says_what_to_do(tmp_path, capsys, monkeypatch):
    from trace_helpers import sphere_trace

    from tilesim.render.reference.replay_gl import MesaUnavailable

    def no_mesa(*args):
        raise MesaUnavailable("Mesa GLES2 unusable: no EGL")

    monkeypatch.setattr(goldens, "mesa_frames", no_mesa)
    sphere_trace(tmp_path / "ball.tsim", 1, size=(32, 24))
    manifest = tmp_path / "manifest.json"
    assert main(["goldens", "add", "--manifest", str(manifest), f"{tmp_path}/ball.tsim:0"]) == 0
    before = manifest.read_bytes()
    capsys.readouterr()
    assert main(["goldens", "update", "--manifest", str(manifest)]) == 2
    assert capsys.readouterr().err == (
        "tilesim: error: Mesa GLES2 unusable: no EGL (--no-mesa makes the goldens without "
        "Mesa's acceptance)\n")
    assert manifest.read_bytes() == before and not (tmp_path / "ball-0000.png").exists()


def test_zero_goldens_is_an_error_not_a_pass(tmp_path, capsys, monkeypatch):
    """A check of nothing (an installed tilesim has no goldens of its own) must not pass."""
    empty = tmp_path / "manifest.json"
    goldens.save_manifest([], empty)
    for argv in (["check"], ["check", "--technique", "re"], ["update", "--no-mesa"]):
        assert main(["goldens", *argv, "--manifest", str(empty)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err == (
            f"tilesim: error: {empty}: the manifest lists no goldens (add some with 'tilesim "
            "goldens add')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(goldens, "MANIFEST", tmp_path / "installed" / "manifest.json")
    assert main(["goldens", "check"]) == 2
    assert capsys.readouterr().err == (
        "tilesim: error: goldens/manifest.json: no golden manifest here, nor in a tilesim "
        "source checkout (give --manifest FILE)\n")
    assert main(["goldens", "check", "--manifest", "nowhere.json"]) == 2
    assert capsys.readouterr().err == "tilesim: error: nowhere.json: no such golden manifest\n"


@pytest.mark.parametrize("spec, message", [
    ("traces/bunny.tsim:abc", "frame 'abc' is not a number"),
    ("traces/bunny.tsim:99", "the trace has frames 0..2"),
    ("traces/missing.tsim:1", "no such trace file"),
])
def test_goldens_add_refuses_bad_frames_in_one_line(spec, message):
    """A bad frame list is one line naming the spec, exit 2, the manifest untouched (it was a
    ValueError traceback)."""
    manifest = (ROOT / "goldens" / "manifest.json").read_bytes()
    done = subprocess.run([sys.executable, "-m", "tilesim.cli", "goldens", "add", spec],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert (ROOT / "goldens" / "manifest.json").read_bytes() == manifest


# -- techniques (issue 19, item 3) --------------------------------------------------------------

def _bunny() -> list:
    # bunny's two goldens render fastest (3 frames, ~1 s per technique here), and DSR changes
    # frame 2, so its MSSIM path is exercised too.
    return [g for g in goldens.load_manifest() if g.trace == "traces/bunny.tsim"]


def test_a_lossless_technique_and_dsr_pass_on_the_bunny():
    entries = _bunny()
    rows = goldens.check_techniques(entries, ["RE", "dsr", "re"])
    assert [(r["technique"], r["golden"]) for r in rows] == [
        (t, g.name) for t in ("re", "dsr") for g in entries]
    for r in rows:
        assert r["passed"], r
        assert r["mssim"] >= DSR_MIN_MSSIM and 0 <= r["max_diff"] <= 255
    re_rows, dsr_rows = rows[:len(entries)], rows[len(entries):]
    assert all(r["criterion"] == "bit-identical" and r["bit_identical"] for r in re_rows)
    assert all(r["mssim"] == 1.0 and r["max_diff"] == 0 for r in re_rows)
    assert all(r["criterion"] == f"MSSIM >= {DSR_MIN_MSSIM}" for r in dsr_rows)
    # DSR lowers the sampling rate of tiles after the first frame: frame 2 is not the golden.
    last = max(dsr_rows, key=lambda r: r["frame"])
    assert last["frame"] > 0 and not last["bit_identical"] and last["mssim"] < 1.0


def test_lossless_and_quality_techniques_are_told_apart():
    for name in ("baseline", "te", "re", "evr", "re+evr", "te+re+evr", "memo", "re/crc32",
                 "memo/64"):
        assert goldens.is_lossless(name), name
    for name in ("dsr", "memo/32", "re/xor", "re+evr/xor"):
        assert not goldens.is_lossless(name), name


def test_a_changed_golden_fails_a_lossless_technique_with_exit_1(tmp_path, capsys):
    entries = _bunny()[:1]
    image = read_png(goldens.GOLDENS / entries[0].png, "RGBA").copy()
    image[10, 20, 0] ^= 1   # one channel of one pixel, off by one
    (tmp_path / entries[0].png).write_bytes(png_bytes(image))
    goldens.save_manifest(entries, tmp_path / "manifest.json", root=ROOT)
    code = main(["goldens", "check", "--manifest", str(tmp_path / "manifest.json"),
                 "--technique", "te", "--json", "--results", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    report = json.loads(captured.out)
    [row] = report["rows"]
    assert (row["technique"], row["golden"], row["passed"]) == ("te", entries[0].name, False)
    assert not row["bit_identical"] and row["max_diff"] == 1 and row["mssim"] > 0.999
    assert report["summary"]["failed"] == 1 and row["pixels"] == 1
    assert f"te {entries[0].name}" in captured.err
    # the obtained frame, the golden and their difference, with a summary
    assert row["images"] == {kind: f"te/{entries[0].name}.{kind}.png"
                             for kind in ("obtained", "expected", "diff", "zoom")}
    diff = read_png(tmp_path / "out" / row["images"]["diff"])
    assert diff.any(axis=2).sum() == 1 and np.array_equal(diff[10, 20], [255, 0, 0])
    # the pixel's 17x17 neighbourhood in expected, obtained and difference, 11 times enlarged
    zoom = read_png(tmp_path / "out" / row["images"]["zoom"])
    assert zoom.shape == (187, 3 * 187 + 2 * 4, 3)
    diff_crop = zoom[:, 2 * (187 + 4):]
    assert np.array_equal(np.argwhere(diff_crop.any(axis=2))[[0, -1]], [[88, 88], [98, 98]])
    assert np.array_equal(read_png(tmp_path / "out" / row["images"]["expected"], "RGBA"), image)
    assert f"obtained and difference images: {tmp_path / 'out' / 'index.html'}" in captured.err
    assert "1 of 1 checks failed" in (tmp_path / "out" / "index.html").read_text()


@pytest.mark.parametrize("argv, message", [
    (["--technique", "rx"], "unknown technique 'rx'"),
    (["--technique", "re/foo"], "unknown variant 'foo'"),
    (["--technique", "re", "--all-techniques"], "not allowed with argument"),
])
def test_goldens_check_refuses_a_bad_technique_with_exit_2(argv, message):
    done = subprocess.run([sys.executable, "-m", "tilesim.cli", "goldens", "check", *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and done.stdout == ""
    assert len([line for line in done.stderr.splitlines() if "error" in line]) == 1


def test_every_golden_passes_every_technique(capsys):
    """CI's regression check of the frame-coherence techniques: 9 renders (baseline and
    coherence's techniques) of every golden trace, side by side on the CPUs (about 3 min on
    2 busy cores)."""
    workers = str(min(os.cpu_count() or 1, 8))
    code = main(["goldens", "check", "--all-techniques", "--workers", workers, "--json"])
    report = json.loads(capsys.readouterr().out)
    failed = [(r["technique"], r["golden"], r["mssim"]) for r in report["rows"]
              if not r["passed"]]
    assert code == 0 and not failed, failed
    entries = goldens.load_manifest()
    assert report["summary"]["checks"] == len(entries) * (1 + len(DEFAULT_TECHNIQUES))
    assert {r["technique"] for r in report["rows"]} == {"baseline", *DEFAULT_TECHNIQUES}
