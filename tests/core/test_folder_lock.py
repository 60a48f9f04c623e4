"""One run at a time per output folder (issue 12): ``tilesim render`` holds an exclusive lock on
``OUT/.tilesim.lock`` from the moment its jobs are prepared until it ends; a second run into
the same folder fails at once with one line (exit 2) and changes nothing; a killed run's lock
goes with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from trace_helpers import sphere_trace

from tilesim.errors import InputError
from tilesim.folder_lock import LOCK_FILE, lock_folder, release_folder
from tilesim.studies.batch import HANG_ENV

# Another process trying the lock: prints "locked" or the error's one line.
TRY_LOCK = textwrap.dedent("""
    import sys
    from tilesim.errors import InputError
    from tilesim.folder_lock import lock_folder
    try:
        lock_folder(sys.argv[1], "test")
    except InputError as exc:
        print(exc)
    else:
        print("locked")
""")


def try_lock(folder: Path) -> str:
    return subprocess.run([sys.executable, "-c", TRY_LOCK, str(folder)], capture_output=True,
                          text=True, timeout=60, check=True).stdout.strip()


def listing(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_held_folder_is_refused_to_another_process_until_released(tmp_path):
    folder = tmp_path / "new" / "out"
    assert lock_folder(folder, "test") == folder / LOCK_FILE   # creates the folder
    try:
        assert (folder / LOCK_FILE).read_bytes() == b""
        assert lock_folder(folder, "test") == folder / LOCK_FILE  # held here: a no-op
        message = try_lock(folder)
        assert message == (f"{folder}: another test is writing into this folder (it holds "
                           f"{LOCK_FILE}); wait for it to end, or give another folder")
    finally:
        release_folder(folder)
    assert try_lock(folder) == "locked"          # and that process's lock went when it ended
    assert try_lock(folder) == "locked"
    release_folder(folder)                       # not held: nothing to do


def test_a_folder_that_cannot_hold_the_lock_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match=rf"^{tmp_path}/file/out: cannot create the lock file"):
        lock_folder(tmp_path / "file" / "out")


def wait_for_pngs(folder: Path, count: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300
    while len(list((folder / "frames").glob("*.png"))) < count:
        assert proc.poll() is None, f"the render ended early: {proc.stderr.read()!r}"
        assert time.monotonic() < deadline, "the render never wrote its first frame"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_second_render_into_the_same_folder_fails_at_once_and_a_killed_one_lets_go(tmp_path):
    trace = sphere_trace(tmp_path / "s.tsim", 3)
    out = tmp_path / "out"
    render = [sys.executable, "-m", "tilesim.cli", "render", str(trace), "--out", str(out)]
    # the first run stops after its first frame (the test hook) and holds the folder
    first = subprocess.Popen(render, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=dict(os.environ, **{HANG_ENV: "1"}), start_new_session=True)
    try:
        wait_for_pngs(out, 1, first)
        before = listing(out)
        started = time.monotonic()
        second = subprocess.run(render, capture_output=True, text=True, timeout=120,
                                check=False)
        assert second.returncode == 2, second.stderr
        assert second.stderr == (f"tilesim: error: {out}: another tilesim render is "
                                 f"writing into this folder (it holds {LOCK_FILE}); wait for "
                                 "it to end, or give another folder\n")
        assert time.monotonic() - started < 60      # at once, not after rendering
        assert listing(out) == before               # nothing written, nothing removed
        assert first.poll() is None                 # the first run goes on
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        first.stderr.close()
    # kill -9 released the lock: a new run resumes the folder
    third = subprocess.run(render, capture_output=True, text=True, timeout=300, check=False)
    assert third.returncode == 0, third.stderr
    assert sorted(p.name for p in (out / "frames").glob("*.png")) == [
        "000000.png", "000001.png", "000002.png"]
