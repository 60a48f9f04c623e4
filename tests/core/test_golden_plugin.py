"""The pytest plugin (tilesim.pytest_plugin) in a user's own project: a trace of their own, a
test file with the fixture and the marker, goldens made with --tilesim-golden-generate, a
changed golden failing with obtained and difference images written, regenerated to pass."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
from repo_paths import ROOT

from tilesim.images import png_bytes, read_png

USER_TEST = '''
import pytest


@pytest.mark.tilesim_golden("traces/spin.tsim", frames=[0, 1], techniques=["baseline", "re"])
def test_spin_frames():
    pass


def test_spin_with_dsr(tilesim_golden):
    [row] = tilesim_golden.check("traces/spin.tsim", frames=[1], techniques=["dsr"])
    assert row["criterion"].startswith("MSSIM >=") and row["passed"]
'''

BAD_INPUT_TEST = '''
import pytest


@pytest.mark.tilesim_golden("traces/spin.tsim", frames=[2])
def test_a_frame_the_trace_lacks():
    pass


def test_a_missing_trace(tilesim_golden):
    tilesim_golden.check("traces/none.tsim")


def test_no_frames(tilesim_golden):
    tilesim_golden.check("traces/spin.tsim", frames=[])
'''


def write_user_trace(path: Path) -> Path:
    """A 64x64 trace of two frames, recorded with the recorder API: a triangle with the
    bunny's lighting program (no Mesa needed), moved between the frames."""
    from tilesim.render.gl.commands import Recorder
    from tilesim.render.traces.trace_file import write_trace
    from tilesim.render.workloads.bunny import build_program

    program = build_program()
    gl = Recorder(64, 64, name="spin")
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    gl.bindBuffer("ARRAY_BUFFER", gl.createBuffer())
    gl.bufferData("ARRAY_BUFFER", np.array([[-0.8, -0.7, 0, 0.3, 0.2, 1],
                                            [0.7, -0.8, 0, 0.1, 0.9, 1],
                                            [-0.1, 0.8, 0, 0.8, 0.1, 1]], np.float32))
    for index, offset in ((0, 0), (1, 12)):
        gl.vertexAttribPointer(index, 3, "FLOAT", False, 24, offset)
        gl.enableVertexAttribArray(index)
    normal = gl.getUniformLocation(prog, "NormalMatrix")
    gl.uniformMatrix4fv(normal, False, np.eye(4, dtype=np.float32).ravel())
    mvp = gl.getUniformLocation(prog, "ModelViewProjectionMatrix")
    for frame in range(2):
        matrix = np.eye(4, dtype=np.float32)
        matrix[3, 0] = 0.15 * frame      # column-major: a shift along x
        gl.uniformMatrix4fv(mvp, False, matrix.ravel())
        gl.clearColor(0.1, 0.2, 0.3, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.drawArrays("TRIANGLES", 0, 3)
        gl.endFrame()
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_trace(path, gl.recorded_frames(), width=64, height=64, name="spin")


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess:
    # -p loads the plugin whether or not this environment's tilesim was installed with its
    # entry point (the entry point has the module's name, so both load it once).
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tilesim.pytest_plugin",
                           "-p", "no:cacheprovider", "-q", *args], cwd=project,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_goldens_in_a_user_project(tmp_path):
    project = tmp_path / "my-renderer"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "--strict-markers"\n')
    write_user_trace(project / "traces" / "spin.tsim")
    (project / "tests" / "test_frames.py").write_text(textwrap.dedent(USER_TEST))
    (project / "tests" / "test_bad_input.py").write_text(textwrap.dedent(BAD_INPUT_TEST))
    goldens = project / "tests" / "goldens"
    results = project / "tilesim-golden-results"

    # No goldens yet: the tests fail and say how to make them; bad input fails in one line.
    done = run_pytest(project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "5 failed" in done.stdout
    assert "no golden spin-0000, spin-0001 in" in done.stdout
    assert "--tilesim-golden-generate" in done.stdout
    traces = project / "traces"
    assert (f"{traces / 'spin.tsim'}: frame 2 is not in the trace: the trace has frames 0..1"
            in done.stdout)
    assert f"{traces / 'none.tsim'}: no such trace file" in done.stdout
    assert (f"{traces / 'spin.tsim'}: tilesim_golden needs at least one frame and one "
            "technique (got frames=[], techniques=['baseline'])") in done.stdout
    assert "Traceback" not in done.stdout and "During handling" not in done.stdout
    assert not goldens.exists()
    (project / "tests" / "test_bad_input.py").unlink()

    done = run_pytest(project, "--tilesim-golden-generate")
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("wrote tests/test_frames.py::test_spin_frames: new spin-0000 (not compared with "
            "Mesa)") in done.stdout
    manifest = json.loads((goldens / "manifest.json").read_text())
    assert manifest["root"] == "../.."
    assert [(g["name"], g["trace"], g["frame"]) for g in manifest["goldens"]] == [
        ("spin-0000", "traces/spin.tsim", 0), ("spin-0001", "traces/spin.tsim", 1)]
    frames = [read_png(goldens / f"spin-000{i}.png", "RGBA") for i in range(2)]
    assert frames[0].shape == (64, 64, 4) and not np.array_equal(frames[0], frames[1])
    assert len(np.unique(frames[1].reshape(-1, 4), axis=0)) > 2   # lit, not flat

    done = run_pytest(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout

    # A renderer whose output changed, simulated by a golden that no longer matches it.
    changed = frames[1].copy()
    changed[5:7, 9:12, 1] ^= 8
    (goldens / "spin-0001.png").write_bytes(png_bytes(changed))
    done = run_pytest(project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "re spin-0001 (frame 1): bit-identical failed (MSSIM" in done.stdout
    assert "baseline spin-0001 (frame 1): bit-identical failed" in done.stdout
    assert "6 pixels differ, by up to 8/255" in done.stdout
    out = results / "tests_test_frames.py_test_spin_frames"
    assert f"obtained and difference images: {out / 'index.html'}" in done.stdout
    for technique in ("baseline", "re"):
        obtained = read_png(out / technique / "spin-0001.obtained.png", "RGBA")
        assert np.array_equal(obtained, frames[1])
        assert np.array_equal(read_png(out / technique / "spin-0001.expected.png", "RGBA"),
                              changed)
        diff = read_png(out / technique / "spin-0001.diff.png")
        assert (diff.any(axis=2)).sum() == 6 and diff.max() == 255
        assert not (out / technique / "spin-0000.obtained.png").exists()   # it passed
    html = (out / "index.html").read_text()
    assert "2 of 4 checks failed" in html and 'src="re/spin-0001.diff.png"' in html
    # DSR keeps MSSIM >= 0.95 against a golden 6 pixels off by 8/255: that test passes.
    assert not (results / "tests_test_frames.py_test_spin_with_dsr").exists()

    done = run_pytest(project, "--tilesim-golden-generate")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "changed spin-0001 (6 pixels differ; not compared with Mesa)" in done.stdout
    assert "spin-0000" not in done.stdout   # unchanged: not rewritten, not listed
    assert np.array_equal(read_png(goldens / "spin-0001.png", "RGBA"), frames[1])
    done = run_pytest(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (out / "index.html").exists()   # the earlier failure's images are gone

    # The same manifest from the command line, from anywhere.
    cli = subprocess.run([sys.executable, "-m", "tilesim.cli", "goldens", "check", "--manifest",
                          str(goldens / "manifest.json")], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.strip() == "2 of 2 goldens identical"


def test_the_plugin_is_a_pytest11_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {
        "tilesim.pytest_plugin": "tilesim.pytest_plugin"}
    import tilesim.pytest_plugin as plugin

    for hook in ("pytest_addoption", "pytest_configure", "pytest_runtest_call"):
        assert callable(getattr(plugin, hook))


@pytest.mark.mesa
def test_the_documented_recorder_example_makes_a_trace(tmp_path, monkeypatch):
    """docs/goldens-in-your-project.md's recorder snippet runs as written (GLSL compiled
    through Mesa) and makes the 2-frame trace its layout uses."""
    import re

    from conftest import require_mesa

    from tilesim.render.traces.trace_file import open_trace

    require_mesa()
    text = (ROOT / "docs" / "goldens-in-your-project.md").read_text(encoding="utf-8")
    [snippet] = [code for code in re.findall(r"```python\n(.*?)```", text, re.S)
                 if "Recorder(" in code]
    (tmp_path / "traces").mkdir()
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "goldens-in-your-project.md", "exec"), {})
    with open_trace(tmp_path / "traces" / "spin.tsim") as trace:
        assert (trace.width, trace.height, trace.frame_count) == (64, 64, 2)


class _Config:
    """What GoldenChecker reads of pytest's Config."""

    def __init__(self, rootpath: Path, ini: str = "", results: str | None = None):
        self.rootpath, self._ini, self._results = rootpath, ini, results

    def getini(self, name: str) -> str:
        assert name == "tilesim_golden_dir"
        return self._ini

    def getoption(self, name: str):
        assert name == "--tilesim-golden-results"
        return self._results


def test_where_the_plugin_keeps_goldens_and_results(tmp_path):
    from tilesim.pytest_plugin import GoldenChecker

    test_file = tmp_path / "tests" / "render" / "test_x.py"
    nodeid = "tests/render/test_x.py::test_a[big-1]"
    checker = GoldenChecker(_Config(tmp_path), test_file, nodeid)
    assert checker.manifest_path == tmp_path / "tests" / "render" / "goldens" / "manifest.json"
    assert checker.results == (tmp_path / "tilesim-golden-results"
                               / "tests_render_test_x.py_test_a_big-1")
    checker = GoldenChecker(_Config(tmp_path, "golden-frames", str(tmp_path / "out")),
                            test_file, nodeid)
    assert checker.manifest_path == tmp_path / "golden-frames" / "manifest.json"
    assert checker.results == tmp_path / "out" / "tests_render_test_x.py_test_a_big-1"
