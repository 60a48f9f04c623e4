"""Batch rendering: several traces in parallel, resuming after kill -9, and a render folder
that knows what it holds (render.json refuses a resume with other settings; --force starts
over; frames.json lists every frame on disk; clean-up touches only tilesim's temporaries)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_paths import TRACES
from trace_helpers import sphere_trace

from tilesim.atomic import temporary_name
from tilesim.cli import main
from tilesim.studies.batch import HANG_ENV

pytestmark = pytest.mark.slow


def outputs(folder: Path) -> dict[str, bytes]:
    """Every frame, counters and JSON file tilesim wrote under ``folder``, by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes()
            for pattern in ("**/frames/" + "[0-9]" * 6 + ".png",
                            "**/counters/" + "[0-9]" * 6 + ".npz", "**/frames.json",
                            "**/render.json")
            for p in sorted(folder.glob(pattern))}


def listing(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``folder`` with its mtime and bytes (to show nothing changed)."""
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def listed_frames(folder: Path) -> list[int]:
    return [f["frame"] for f in json.loads((folder / "frames.json").read_text())["frames"]]


def render_until_hung(args: list[str], counts: dict[Path, int], hang_after: int) -> None:
    """Start ``tilesim render args`` in its own process group with the test hook that makes
    each worker stop after ``hang_after`` frames, wait until every folder of ``counts`` holds
    that many PNGs (no race: the render cannot get further), then kill -9 the whole group."""
    env = dict(os.environ, **{HANG_ENV: str(hang_after)})
    proc = subprocess.Popen([sys.executable, "-m", "tilesim.cli", "render", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            done = {f: len(list((f / "frames").glob("*.png"))) for f in counts}
            if done == counts:
                break
            assert proc.poll() is None, f"the render ended early: {proc.stderr.read()!r}"
            assert time.monotonic() < deadline, f"the render never reached {counts}: {done}"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    # the Dask nannies and workers were members of the group: none is left running
    deadline = time.monotonic() + 60
    while alive := [s for s in subprocess.run(["ps", "-o", "stat=", "-g", str(proc.pid)],
                                              capture_output=True, text=True).stdout.split()
                    if not s.startswith("Z")]:
        assert time.monotonic() < deadline, f"processes left in the render's group: {alive}"
        time.sleep(0.1)


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


def test_kill_9_during_multi_trace_multi_worker_render_then_resume_is_byte_identical(tmp_path):
    """kill -9 of the whole render (main process, Dask nannies and workers) while two workers
    each have two frames of their trace on disk, frames.json not yet listing them; the resume
    gives the bytes of an uninterrupted render: PNGs, counters, render.json and a frames.json
    listing every frame, and does not redo the finished frames."""
    a = sphere_trace(tmp_path / "a.tsim", 6)
    b = sphere_trace(tmp_path / "b.tsim", 5, size=(96, 64))
    reference = tmp_path / "reference"
    for trace in (a, b):
        assert main(["render", str(trace), "--out", str(reference / trace.stem)]) == 0

    out = tmp_path / "out"
    render_until_hung([str(a), str(b), "--out", str(out), "--workers", "2"],
                      {out / "a": 2, out / "b": 2}, hang_after=2)
    for job in ("a", "b"):
        assert sorted(p.name for p in (out / job / "frames").glob("*.png")) == [
            "000000.png", "000001.png"]
        # frames.json lags the files (the hook stops a worker before it lists its last frame)
        listed = listed_frames(out / job) if (out / job / "frames.json").exists() else []
        assert 1 not in listed
    partial = outputs(out)
    expected = outputs(tmp_path / "reference")
    for name, data in partial.items():   # whatever frame exists is complete and right
        if not name.endswith(".json"):
            assert data == expected[name], name
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("*/frames/*.png")}
    # a temporary a kill -9 mid-write would leave
    stale = out / "a" / "counters" / temporary_name("000002.npz")
    stale.write_bytes(b"half a file")

    assert main(["render", str(a), str(b), "--out", str(out), "--workers", "2"]) == 0
    assert outputs(out) == expected                     # byte-identical, frames.json included
    assert listed_frames(out / "a") == [0, 1, 2, 3, 4, 5]
    assert listed_frames(out / "b") == [0, 1, 2, 3, 4]
    assert stamps == {p: p.stat().st_mtime_ns for p in out.glob("*/frames/*.png")
                      if p in stamps}                     # finished frames not redone
    assert not stale.exists()
    assert not list(out.rglob("*.tmp"))


def test_interrupted_dsr_render_is_not_resumed_as_baseline(tmp_path, capsys):
    """The identity is on disk before the first frame: a DSR render killed after its first
    frame refuses to be resumed as baseline, and changes nothing; the refusal does not depend
    on frames.json (the old guard read it, and a killed run had not written it)."""
    trace = sphere_trace(tmp_path / "s.tsim", 4)
    out = tmp_path / "out"
    render_until_hung([str(trace), "--out", str(out), "--technique", "dsr"], {out: 1},
                      hang_after=1)
    assert listed_frames(out) == []    # written at the start; the frame not listed yet
    (out / "frames.json").unlink()
    before = listing(out)
    assert main(["render", str(trace), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tilesim: error: {out}: ")
    assert "technique 'dsr' there, 'baseline' asked" in err and "--force" in err
    assert listing(out) == before
    # the same settings resume it
    assert main(["render", str(trace), "--out", str(out), "--technique", "dsr"]) == 0
    assert listed_frames(out) == [0, 1, 2, 3]


@pytest.mark.parametrize("change, words", [
    (["--tile-size", "8"], "tile size 16 there, 8 asked"),
    (["--traversal", "zorder"], "traversal 'scanline' there, 'zorder' asked"),
    (["--technique", "re/xor"], "technique 're' there, 're/xor' asked"),
    (["--mediump", "fp16"], "mediump arithmetic none there, 'fp16' asked"),
    (["other trace"], "trace content (SHA-256)"),
    (["same path, new content"], "trace content (SHA-256)"),
    (["other renderer"], "renderer source (SHA-256)"),
])
def test_a_resume_with_another_identity_is_refused_and_changes_nothing(tmp_path, capsys,
                                                                       monkeypatch, change,
                                                                       words):
    trace = sphere_trace(tmp_path / "s.tsim", 3)
    out = tmp_path / "out"
    assert main(["render", str(trace), "--out", str(out), "--frames", "0:2",
                 "--technique", "re"]) == 0
    capsys.readouterr()
    args = ["render", str(trace), "--out", str(out)]
    if change == ["other trace"]:
        args[1] = str(sphere_trace(tmp_path / "t.tsim", 3, clear_step=0.05))
    elif change == ["same path, new content"]:
        sphere_trace(trace, 3, clear_step=0.05)
    elif change == ["other renderer"]:
        # renderer code changed since the folder was rendered (a counter added, a bug fixed)
        from tilesim.studies import batch
        monkeypatch.setattr(batch, "renderer_sha256", lambda: "0" * 64)
    args += change if change[0].startswith("--") else []
    args += [] if "--technique" in args else ["--technique", "re"]
    before = listing(out)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tilesim: error: {out}: holds a render made with other settings")
    assert words in err and "--force" in err
    assert listing(out) == before


def test_same_settings_differently_spelled_or_more_frames_extend_the_render(tmp_path):
    """The frame range is not part of the identity (frame N is the same whichever range is
    asked for), nor the spelling of a technique: such a run extends the render, and
    frames.json lists the frames of every run, as one uninterrupted run would."""
    trace = sphere_trace(tmp_path / "s.tsim", 5)
    out, reference = tmp_path / "out", tmp_path / "reference"
    assert main(["render", str(trace), "--out", str(reference), "--technique", "re+evr"]) == 0
    assert main(["render", str(trace), "--out", str(out), "--technique", "evr+re",
                 "--frames", "1:3"]) == 0
    assert listed_frames(out) == [1, 2]
    assert main(["render", str(trace), "--out", str(out), "--technique", "re+evr/crc32",
                 "--frames", "3:"]) == 0
    assert listed_frames(out) == [1, 2, 3, 4]
    assert main(["render", str(trace), "--out", str(out), "--technique", "re+evr"]) == 0
    assert outputs(out) == outputs(reference)


def test_frames_json_is_rebuilt_from_the_files_at_every_start(tmp_path):
    """frames.json is derived data: lost, damaged or listing a frame whose files are gone, it
    is made right by the next run, even one with nothing left to render."""
    trace = sphere_trace(tmp_path / "s.tsim", 3)
    out = tmp_path / "out"
    assert main(["render", str(trace), "--out", str(out)]) == 0
    good = (out / "frames.json").read_bytes()
    (out / "frames.json").unlink()
    assert main(["render", str(trace), "--out", str(out)]) == 0
    assert (out / "frames.json").read_bytes() == good
    (out / "frames.json").write_text("{not json")
    assert main(["render", str(trace), "--out", str(out), "--frames", "0:1"]) == 0
    assert (out / "frames.json").read_bytes() == good
    (out / "frames" / "000002.png").unlink()
    assert main(["render", str(trace), "--out", str(out), "--frames", "0:2"]) == 0
    assert listed_frames(out) == [0, 1]


def test_force_starts_over_and_removes_only_tilesims_files(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 3)
    other = sphere_trace(tmp_path / "t.tsim", 2, clear_step=0.05)
    out, reference = tmp_path / "out", tmp_path / "reference"
    assert main(["render", str(other), "--out", str(reference)]) == 0
    assert main(["render", str(trace), "--out", str(out), "--tile-size", "32"]) == 0
    foreign = {out / "notes.txt": b"mine", out / "frames" / "holiday.png": b"png",
               out / "frames" / "12.png": b"short name", out / "counters" / "a.npz": b"npz",
               out / "sub" / "frames.json": b"{}", out / ".notes.txt.tmp": b"editor",
               out / "frames" / ".holiday.png.0123abcd.tmp": b"someone else's temporary"}
    for path, data in foreign.items():
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
    assert main(["render", str(other), "--out", str(out)]) == 2
    capsys.readouterr()
    assert main(["render", str(other), "--out", str(out), "--force"]) == 0
    assert all(path.read_bytes() == data for path, data in foreign.items())
    assert {k: v for k, v in outputs(out).items()
            if not k.startswith("sub/")} == outputs(reference)   # s's third frame is gone too


def test_frames_without_render_json_are_refused(tmp_path, capsys):
    """A folder holding frames but no render.json (an older tilesim's, or not tilesim's): what
    they were rendered with is unknown, so they are not mixed with new frames."""
    trace = sphere_trace(tmp_path / "s.tsim", 2)
    out = tmp_path / "out"
    assert main(["render", str(trace), "--out", str(out), "--frames", "0:1"]) == 0
    (out / "render.json").unlink()
    assert main(["render", str(trace), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out}: holds rendered frames but no render.json" in err
    (out / "render.json").write_text("[1, 2]")
    assert main(["render", str(trace), "--out", str(out)]) == 2
    assert "render.json is not a tilesim render identity" in capsys.readouterr().err
    assert main(["render", str(trace), "--out", str(out), "--force"]) == 0
    assert listed_frames(out) == [0, 1]


def test_clean_up_removes_only_tilesims_temporaries_in_its_own_folders(tmp_path):
    """Stale temporaries of render.json, frames.json, summary.json, NNNNNN.png and NNNNNN.npz
    in the job folder, frames/ and counters/ go; any other '.*.tmp' (another program's name,
    another folder, deeper, a non-tilesim final name) stays."""
    trace = sphere_trace(tmp_path / "s.tsim", 1)
    out = tmp_path / "out"
    ours = [out / temporary_name("frames.json"), out / temporary_name("render.json"),
            out / temporary_name("summary.json"),
            out / "frames" / temporary_name("000000.png"),
            out / "counters" / temporary_name("000007.npz")]
    theirs = [out / ".bashrc.tmp", out / temporary_name("notes.txt"),
              out / ".frames.json.XXXXXXXX.tmp",
              out / "frames" / temporary_name("000000.npz"),
              out / "counters" / temporary_name("000000.png"),
              out / "sub" / temporary_name("frames.json"),
              out / "frames" / "deeper" / temporary_name("000000.png"),
              out / "other" / temporary_name("000000.png")]
    for path in ours + theirs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    assert main(["render", str(trace), "--out", str(out)]) == 0
    assert [p for p in ours if p.exists()] == []
    assert [p for p in theirs if not p.exists()] == []


# -- one trace's frames in parallel --------------------------------------------------------------


def test_one_trace_split_across_workers_writes_the_files_of_a_serial_render(tmp_path, capsys,
                                                                            monkeypatch):
    """A trace whose frames each clear the window renders in parallel parts (each replaying
    the frames before it for their GL state only): the same bytes as one process rendering
    every frame, frames.json included; a resume renders from a fresh start, not frame 0."""
    from tilesim.studies import batch

    trace = str(sphere_trace(tmp_path / "s.tsim", 12, size=(96, 64)))
    assert main(["render", trace, "--out", str(tmp_path / "serial"), "--workers", "1"]) == 0
    split = batch.frame_segments(batch.Job(trace, (0, 12), str(tmp_path / "x")), 3)
    assert [j.frames for j in split] == [(0, 4), (4, 8), (8, 12)]
    assert main(["render", trace, "--out", str(tmp_path / "parallel"), "--workers", "3"]) == 0
    assert outputs(tmp_path / "parallel") == outputs(tmp_path / "serial")
    capsys.readouterr()

    for index in (7, 9):
        for path in (tmp_path / "parallel").glob(f"*/{index:06d}.*"):
            path.unlink()
    starts = []
    original = batch.render_trace
    monkeypatch.setattr(batch, "render_trace", lambda *a, **k: starts.append(
        k["replay_from"]) or original(*a, **k))
    assert main(["render", trace, "--out", str(tmp_path / "parallel"), "--workers", "1"]) == 0
    assert starts == [7]
    assert outputs(tmp_path / "parallel") == outputs(tmp_path / "serial")


def test_frames_are_cut_only_where_nothing_earlier_shows_through(tmp_path):
    """A frame that keeps the depth buffer while depth-testing, clears under a scissor or a
    color mask, or comes after a frame that drew into a texture is no place to start: a render
    starting there would not be the full render's."""
    from tilesim.render.pipeline.renderer import FramesDepend
    from tilesim.render.replay import fresh_starts, render_trace
    from tilesim.render.traces.trace_file import open_trace

    def setup(gl, f):
        if f == 3:
            gl.enable("SCISSOR_TEST")
            gl.scissor(0, 0, 8, 8)
        if f == 4:
            gl.disable("SCISSOR_TEST")
            gl.colorMask(True, False, True, True)
        if f == 5:
            gl.colorMask(True, True, True, True)

    trace = sphere_trace(tmp_path / "s.tsim", 8, size=(64, 48), before_clear=setup,
                         clear_mask=lambda f: ("COLOR_BUFFER_BIT",) if f == 6 else
                         ("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT"))
    with open_trace(trace) as t:
        assert fresh_starts(t, 8) == [0, 1, 2, 5, 7]
    # Without a depth test anywhere, a color clear is enough.
    flat = sphere_trace(tmp_path / "flat.tsim", 4, size=(64, 48),
                        before_clear=lambda gl, f: gl.disable("DEPTH_TEST"),
                        clear_mask=lambda f: ("COLOR_BUFFER_BIT",))
    with open_trace(flat) as t:
        assert fresh_starts(t, 4) == [0, 1, 2, 3]
    with pytest.raises(FramesDepend):
        next(render_trace(trace, frames=[3], replay_from=3))
    with pytest.raises(ValueError, match="may not skip"):
        next(render_trace(trace, frames=[2], replay_from=2, technique="re"))


def test_a_frame_after_render_to_texture_is_no_place_to_start():
    from tilesim.render.replay import fresh_starts
    from tilesim.render.traces.trace_file import open_trace

    traces = TRACES
    with open_trace(traces / "render_to_texture-1196x768.tsim") as t:
        assert fresh_starts(t, 4) == [0]
