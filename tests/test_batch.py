"""Batch rendering: several traces in parallel, and resuming after the process is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from trace_helpers import sphere_trace

from tilesim.cli import main

pytestmark = pytest.mark.slow


def outputs(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.glob("*/0*.*"))}


def test_several_traces_render_in_parallel_and_rerun_skips_everything(tmp_path, capsys):
    a = sphere_trace(tmp_path / "a.tsim", 3)
    b = sphere_trace(tmp_path / "b.tsim", 4, size=(96, 64))
    out = tmp_path / "out"
    assert main(["render", str(a), f"{b}@1:3", "--out", str(out), "--workers", "2"]) == 0
    assert len(list((out / "a" / "frames").glob("*.png"))) == 3
    assert sorted(p.name for p in (out / "b" / "frames").glob("*.png")) == ["000001.png",
                                                                          "000002.png"]
    summary = json.loads((out / "summary.json").read_text())
    assert [j["written"] for j in summary["jobs"]] == [3, 2]
    before = {p: p.stat().st_mtime_ns for p in out.glob("*/*/*")}
    assert main(["render", str(a), f"{b}@1:3", "--out", str(out)]) == 0
    assert "0 frames written, 3 already done" in capsys.readouterr().out
    assert before == {p: p.stat().st_mtime_ns for p in out.glob("*/*/*")}


def test_killed_batch_resumes_without_redoing_or_corrupting(tmp_path):
    trace = sphere_trace(tmp_path / "s.tsim", 24)
    reference = tmp_path / "reference"
    assert main(["render", str(trace), "--out", str(reference)]) == 0

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "tilesim.cli", "render", str(trace),
                             "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if len(list((out / "frames").glob("*.png"))) >= 4 or proc.poll() is not None:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted((out / "frames").glob("*.png"))
    assert 0 < len(done) < 24, "the batch should have been killed midway"
    partial = outputs(out)
    expected = outputs(reference)
    for name, data in partial.items():          # whatever exists is complete and right
        assert data == expected[name], name
    stamps = {p: p.stat().st_mtime_ns for p in done}

    assert main(["render", str(trace), "--out", str(out)]) == 0
    assert outputs(out) == expected
    assert stamps == {p: p.stat().st_mtime_ns for p in done}   # finished frames not redone
    assert not list(out.glob("**/.*.tmp"))
