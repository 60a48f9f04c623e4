"""Issue 35, ownership: tilesim writes only files it can tell are its own, --force removes
only what it wrote (never through a symlink), and a refused run leaves nothing behind."""

from __future__ import annotations

import json
import os

from trace_helpers import sphere_trace

from tilesim.cli import main
from tilesim.folder_lock import LOCK_FILE, lock_folder, release_folder


def _refused(capsys, name: str) -> None:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err, err


def test_render_refuses_foreign_summary_and_frames_json(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 2, size=(32, 24))
    for name in ("summary.json", "frames.json", "render.json"):
        out = tmp_path / f"mine-{name}"
        out.mkdir()
        (out / name).write_text('{"my": "own notes"}')
        for force in ([], ["--force"]):
            assert main(["render", str(trace), "--out", str(out), *force]) == 2
            _refused(capsys, name)
            assert (out / name).read_text() == '{"my": "own notes"}'
            assert sorted(p.name for p in out.iterdir()) == [name]   # no lock left


def test_refused_render_leaves_no_lock_or_folder(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 2, size=(32, 24))
    out = tmp_path / "theirs"
    (out / "frames").mkdir(parents=True)
    (out / "frames" / "000000.png").write_bytes(b"not ours")   # frames with no render.json
    assert main(["render", str(trace), "--out", str(out)]) == 2
    capsys.readouterr()
    assert not (out / LOCK_FILE).exists()


def test_release_undo_removes_only_what_the_lock_made(tmp_path):
    made = tmp_path / "a" / "b"
    lock_folder(made, "test")
    release_folder(made, undo=True)
    assert not (tmp_path / "a").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / LOCK_FILE).write_text("")
    lock_folder(kept, "test")
    release_folder(kept, undo=True)
    assert (kept / LOCK_FILE).exists()        # it was there before


def test_lock_refusal_wording(tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "busy"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from tilesim.folder_lock import lock_folder;"
         f"lock_folder({str(folder)!r}); print('ok', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        try:
            lock_folder(folder, "tilesim run")
        except Exception as exc:  # noqa: BLE001
            assert "another tilesim run is writing" in str(exc)
            assert "run run" not in str(exc)
        else:
            raise AssertionError("not refused")
    finally:
        holder.kill()
        holder.wait()


def test_force_does_not_follow_symlinked_frames_folder(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 2, size=(32, 24))
    out = tmp_path / "out"
    assert main(["render", str(trace), "--out", str(out)]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "000000.png").write_bytes(b"a foreign frame")
    frames = out / "frames"
    for png in frames.iterdir():
        png.unlink()
    frames.rmdir()
    frames.symlink_to(elsewhere, target_is_directory=True)
    main(["render", str(trace), "--out", str(out), "--force"])
    capsys.readouterr()
    assert (elsewhere / "000000.png").read_bytes() == b"a foreign frame"


def test_render_path_with_at_sign_is_a_path(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "x@y.tsim", 2, size=(32, 24))
    assert main(["render", str(trace), "--out", str(tmp_path / "o")]) == 0
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["jobs"][0]["frames"] == [0, 2]
    capsys.readouterr()


def test_remove_overlays_keeps_foreign_files(tmp_path):
    from tilesim.studies.study import remove_overlays

    folder = tmp_path / "overlays"
    (folder / "tiles").mkdir(parents=True)
    (folder / "000001.json").write_text("{}")
    (folder / "tiles" / "000001.png").write_bytes(b"png")
    (folder / "notes.txt").write_text("mine")
    (folder / "tiles" / "mine.png").write_bytes(b"mine")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "000002.png").write_bytes(b"foreign")
    os.symlink(outside, folder / "linked")
    assert remove_overlays(folder) == 2
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == [
        "linked", "notes.txt", "tiles", "tiles/mine.png"]
    assert (outside / "000002.png").exists()


def test_run_refuses_foreign_site_files(tmp_path, capsys):
    for name, content in (("index.html", "<html>mine"), ("results.json", '{"a": 1}'),
                          ("study.json", '{"mine": true}')):
        site = tmp_path / f"site-{name}"
        site.mkdir()
        (site / name).write_text(content)
        for force in ([], ["--force"]):
            assert main(["run", "--quick", "--out", str(site), *force]) == 2
            _refused(capsys, name)
        assert sorted(p.name for p in site.iterdir()) == [name]
    site = tmp_path / "site-img"
    (site / "img").mkdir(parents=True)
    (site / "img" / "suite.png").write_bytes(b"mine")
    assert main(["run", "--quick", "--out", str(site)]) == 2
    _refused(capsys, "img")
    assert (site / "img" / "suite.png").read_bytes() == b"mine"
