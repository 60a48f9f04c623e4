"""Numbers traceable to the files they came from (tilesim.render_folder): a render folder's
manifest records each file's SHA-256, each counters file its render and frame; readers
refuse what does not match, a resume renders it again, and a byte flipped anywhere in a
finished folder is either caught or changes nothing."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from trace_helpers import sphere_trace

from tilesim.cli import main
from tilesim.render_folder import frame_files, read_provenance

SIZE = (64, 48)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Two traces rendered: s (4 frames, baseline and RE) and t (another trace, 4 frames)."""
    root = tmp_path_factory.mktemp("integrity")
    s = sphere_trace(root / "s.tsim", 4, size=SIZE)
    t = sphere_trace(root / "t.tsim", 4, size=SIZE, clear_step=0.05)
    for trace, out, extra in ((s, "base", []), (s, "re", ["--technique", "re"]),
                              (t, "other", []), (s, "tiles32", ["--tile-size", "32"])):
        assert main(["render", str(trace), "--out", str(root / out), *extra]) == 0
    return root


def copy(rendered: Path, name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    shutil.copytree(rendered / name, out, ignore=shutil.ignore_patterns(".tilesim.lock"))
    return out


def estimate(capsys, *argv) -> tuple[int, str, str]:
    code = main(["estimate", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_each_counters_file_records_its_render_and_frame(rendered):
    identity = json.loads((rendered / "base" / "render.json").read_text())
    held = read_provenance(frame_files(rendered / "base", 2)[1])
    assert held["frame"] == 2 and held["image_size"] == list(SIZE)
    assert held["trace_sha256"] == identity["trace_sha256"]
    assert held["tile_size"] == 16 and held["renderer_sha256"] == identity["renderer_sha256"]


def test_a_counters_file_copied_from_another_frame_is_refused_then_rendered_again(
        rendered, tmp_path, capsys):
    out = copy(rendered, "base", tmp_path)
    good = frame_files(out, 1)[1].read_bytes()
    shutil.copy(frame_files(out, 3)[1], frame_files(out, 1)[1])
    code, _, err = estimate(capsys, out)
    assert code == 2
    assert f"{frame_files(out, 1)[1]}: does not match the SHA-256" in one_line(err)
    assert main(["render", str(rendered / "s.tsim"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "rendering frame 1 again" in err
    assert frame_files(out, 1)[1].read_bytes() == good


def test_an_unlisted_counters_file_of_another_frame_is_not_taken(rendered, tmp_path, capsys):
    """A killed run leaves frames frames.json does not list: each is taken only when its
    counters record this render and this frame."""
    out = copy(rendered, "base", tmp_path)
    (out / "frames.json").unlink()
    good = frame_files(out, 2)[1].read_bytes()
    shutil.copy(frame_files(out, 0)[1], frame_files(out, 2)[1])
    assert main(["render", str(rendered / "s.tsim"), "--out", str(out)]) == 0
    assert "holds frame 0, not frame 2" in capsys.readouterr().err
    assert frame_files(out, 2)[1].read_bytes() == good


@pytest.mark.parametrize("image", [np.zeros((1, 1, 4), np.uint8),
                                   np.zeros((SIZE[1], SIZE[0]), np.uint8)],
                         ids=["1x1", "grayscale"])
def test_a_png_that_is_not_the_frame_is_refused_then_rendered_again(rendered, tmp_path,
                                                                     capsys, image):
    out = copy(rendered, "base", tmp_path)
    png = frame_files(out, 2)[0]
    good = png.read_bytes()
    Image.fromarray(image).save(png)
    code, _, err = estimate(capsys, out)
    assert code == 2 and str(png) in one_line(err)
    # Not listed either (frames.json lost too): the image is checked against its counters.
    (out / "frames.json").unlink()
    Image.fromarray(image).save(png)
    assert main(["render", str(rendered / "s.tsim"), "--out", str(out)]) == 0
    assert "rendering frame 2 again" in capsys.readouterr().err
    assert png.read_bytes() == good


def test_a_damaged_compressed_stream_is_one_line_not_a_traceback(rendered, tmp_path, capsys):
    """Legacy folders (no render.json) have no digests: the counters' own reading fails
    cleanly (zlib errors included)."""
    out = copy(rendered, "base", tmp_path)
    (out / "render.json").unlink()
    npz = frame_files(out, 1)[1]
    with zipfile.ZipFile(npz) as archive:
        info = archive.getinfo("frame.index.npy")
    data = bytearray(npz.read_bytes())
    local = info.header_offset          # the local header's own name and extra lengths
    start = local + 30 + int.from_bytes(data[local + 26:local + 28], "little") \
        + int.from_bytes(data[local + 28:local + 30], "little")
    for k in range(start, start + info.compress_size):
        data[k] ^= 0x5A
    npz.write_bytes(bytes(data))
    code, _, err = estimate(capsys, out)
    assert code == 2 and str(npz.name) in one_line(err)


def test_a_counters_file_renamed_in_a_folder_without_render_json_is_refused(
        rendered, tmp_path, capsys):
    out = copy(rendered, "base", tmp_path)
    (out / "render.json").unlink()
    (out / "frames.json").unlink()
    shutil.copy(frame_files(out, 0)[1], frame_files(out, 3)[1])
    code, _, err = estimate(capsys, out)
    assert code == 2 and "holds frame 0, not frame 3" in one_line(err)


@pytest.mark.parametrize("baseline, words", [
    ("other", "trace sha256"),
    ("tiles32", "tile size"),
    ("short", "frame 2 is not finished"),
])
def test_estimate_refuses_a_baseline_of_other_frames_trace_or_tile_size(
        rendered, tmp_path, capsys, baseline, words):
    if baseline == "short":
        assert main(["render", str(rendered / "s.tsim"), "--out", str(tmp_path / "short"),
                     "--frames", "0:2"]) == 0
        capsys.readouterr()
        base = tmp_path / "short"
    else:
        base = rendered / baseline
    code, out, err = estimate(capsys, rendered / "re", "--baseline", base, "--json")
    assert code == 2 and out == ""
    assert words in one_line(err).replace("_", " ") and str(base) in err


def test_a_baseline_holding_more_frames_is_estimated_over_the_runs_frames(
        rendered, tmp_path, capsys):
    run = tmp_path / "re2"
    assert main(["render", str(rendered / "s.tsim"), "--out", str(run), "--technique", "re",
                 "--frames", "0:2"]) == 0
    capsys.readouterr()
    code, out, _ = estimate(capsys, run, "--baseline", rendered / "base", "--json")
    assert code == 0
    report = json.loads(out)
    assert [f["frame"] for f in report["frames"]] == [0, 1]
    code, alone, _ = estimate(capsys, rendered / "base", "--json")
    base_two = sum(f["seconds"] for f in json.loads(alone)["frames"][:2])
    assert report["workloads"][0]["baseline"]["total"]["seconds"] == pytest.approx(base_two)


def test_a_trace_estimated_over_fewer_frames_counts_only_those(rendered, tmp_path, capsys):
    work = tmp_path / "work"
    code, out, _ = estimate(capsys, rendered / "s.tsim", "--work", work, "--json")
    assert code == 0 and len(json.loads(out)["frames"]) == 4
    code, out, _ = estimate(capsys, rendered / "s.tsim", "--work", work, "--frames", "1:3",
                            "--json")
    assert code == 0 and [f["frame"] for f in json.loads(out)["frames"]] == [1, 2]


def test_a_folder_being_written_is_refused(rendered, tmp_path, capsys):
    out = copy(rendered, "base", tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from tilesim.folder_lock import lock_folder; "
         f"lock_folder({str(out)!r}); print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        code, _, err = estimate(capsys, out)
        assert code == 2 and "is being written by a running tilesim" in one_line(err)
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    deadline = time.monotonic() + 10
    while estimate(capsys, out)[0] != 0:
        assert time.monotonic() < deadline


@pytest.mark.parametrize("edit, words", [
    ("strip", "frames.json: has no record_sha256 (written by a tilesim older than its record "
              "digests, or edited); rerun `tilesim render`"),
    ("change", "frames.json: does not match its own SHA-256 (damaged or edited); rerun")])
def test_a_manifest_without_or_against_its_digest_says_which(rendered, tmp_path, capsys,
                                                             edit, words):
    """A render folder of a tilesim before record digests was refused as "damaged or
    edited", which sent users looking for damage that was not there."""
    out = copy(rendered, "base", tmp_path)
    manifest = json.loads((out / "frames.json").read_text())
    if edit == "strip":
        del manifest["record_sha256"]
    else:
        manifest["frames"] = manifest["frames"][:-1]
    (out / "frames.json").write_text(json.dumps(manifest))
    code, _, err = estimate(capsys, out)
    assert code == 2 and words in one_line(err)


# -- a byte flipped anywhere ------------------------------------------------------------------


def _flip(path: Path, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    k = rng.randrange(len(data))
    data[k] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_a_byte_flipped_in_any_file_of_a_render_folder_is_caught_or_harmless(
        rendered, tmp_path, capsys):
    """Every file tilesim wrote, a bit flipped at a random place (seeded): `tilesim estimate`
    either reports the same numbers as before or refuses with one line naming the file, and
    a resume (`tilesim render`) brings the folder back to the bytes of a clean render or
    refuses with one line. Never a traceback, never other numbers."""
    clean = rendered / "base"
    code, expected, _ = estimate(capsys, clean, "--json")
    assert code == 0
    files = sorted(p.relative_to(clean) for p in clean.rglob("*")
                   if p.is_file() and p.name != ".tilesim.lock")
    rng = random.Random(35)
    counts = {"caught": 0, "harmless": 0}
    for rel in files:
        for _ in range(5):
            out = tmp_path / "flipped" / "base"      # the workload's name is the folder's
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(clean, out, ignore=shutil.ignore_patterns(".tilesim.lock"))
            _flip(out / rel, rng)
            code, got, err = estimate(capsys, out, "--json")
            if code == 0:
                # numbers unchanged (the folder name differs in "dir")
                assert got.replace(str(out), str(clean)) == expected, rel
                counts["harmless"] += 1
            else:
                assert code == 2 and one_line(err), rel
                counts["caught"] += 1
            code = main(["render", str(rendered / "s.tsim"), "--out", str(out)])
            err = capsys.readouterr().err
            if code == 2:
                one_line(err)
                assert rel.name == "render.json", (rel, err)
                continue
            assert code == 0, (rel, err)
            for name in files:
                if name.name not in ("render.json", "summary.json"):  # summary: the run's own
                    assert (out / name).read_bytes() == (clean / name).read_bytes(), (rel, name)
    print(f"render folder byte flips: {counts}")
    assert counts["caught"] > 0



# -- a study's folder -------------------------------------------------------------------------

STUDY_TECHNIQUES = "te,re,dsr"


def _numbers(out: Path) -> dict:
    """results.json less what differs between runs of one study (wall times, the digest of
    the record that holds them)."""
    results = json.loads((out / "results.json").read_text())

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if k not in ("seconds", "record_sha256", "created", "seconds_per_frame",
                                 "cpu_seconds_per_frame")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(results)


def run_study(trace: Path, out: Path, *extra) -> int:
    return main(["run", "--trace", str(trace), "--out", str(out), "--workers", "1",
                 "--techniques", STUDY_TECHNIQUES, *map(str, extra)])


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("integrity-study")
    trace = sphere_trace(root / "s.tsim", 4, size=SIZE, clear_step=0.0)
    assert run_study(trace, root / "out") == 0
    return trace, root / "out"


@pytest.mark.slow
def test_a_narrower_rerun_of_a_study_counts_exactly_its_frames(study, tmp_path):
    """`tilesim run` again into the same folder with fewer frames: its results are those of
    a fresh run of those frames, not of the frames an earlier run left there."""
    trace, out = study
    rerun, fresh = tmp_path / "rerun", tmp_path / "fresh"
    shutil.copytree(out, rerun)
    assert run_study(f"{trace}@0:2", rerun) == 0
    assert run_study(f"{trace}@0:2", fresh) == 0
    got, want = _numbers(rerun), _numbers(fresh)
    for results in (got, want):
        for workload in results["workloads"]:
            workload.pop("trace")
            for run in workload["runs"].values():
                run.pop("folder", None)
    assert got["workloads"] == want["workloads"]
    assert got["summary"] == want["summary"]


@pytest.mark.slow
def test_a_frame_changed_inside_a_finished_unit_is_rendered_again(study, tmp_path, capsys):
    trace, out = study
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    before = _numbers(copy)
    png = copy / "runs" / "s" / "te" / "frames" / "000002.png"
    good = png.read_bytes()
    pixels = np.asarray(Image.open(png)).copy()
    pixels[3, 3, 1] ^= 0x20
    Image.fromarray(pixels).save(png)
    capsys.readouterr()
    assert run_study(trace, copy) == 0
    assert f"{png}: does not match the SHA-256" in capsys.readouterr().err
    assert png.read_bytes() == good
    assert _numbers(copy) == before


@pytest.mark.slow
def test_a_byte_flipped_in_any_file_of_a_study_is_caught_or_harmless(study, tmp_path, capsys):
    """A bit flipped at a random place (seeded) in files of every kind a study writes: the
    resumed `tilesim run` gives the numbers of the clean study, or refuses with one line.
    Never a traceback, never other numbers."""
    trace, clean = study
    expected = _numbers(clean)
    files = sorted(p.relative_to(clean) for p in clean.rglob("*")
                   if p.is_file() and p.name != ".tilesim.lock")
    kinds: dict[str, list[Path]] = {}
    for rel in files:
        kind = rel.name if rel.suffix == ".json" and not rel.stem.isdigit() else rel.suffix
        kind = f"{rel.parent.name}/{kind}" if rel.parent.name in ("overlays", "img") else kind
        kinds.setdefault(kind, []).append(rel)
    rng = random.Random(3535)
    chosen = [rel for group in kinds.values() for rel in rng.sample(group, min(3, len(group)))]
    counts = {"caught": 0, "harmless": 0}
    for rel in chosen:
        out = tmp_path / "flipped"
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(clean, out, ignore=shutil.ignore_patterns(".tilesim.lock"))
        _flip(out / rel, rng)
        capsys.readouterr()
        code = run_study(trace, out)
        err = capsys.readouterr().err
        if code == 0:
            assert _numbers(out) == expected, rel
            counts["harmless" if "again" not in err else "caught"] += 1
        else:
            assert code == 2, (rel, err)
            one_line(err.replace("tilesim: warning", "").split("\n", 1)[-1]
                     if "warning" in err else err)
            counts["caught"] += 1
    print(f"study byte flips over {len(chosen)} files of {len(kinds)} kinds: {counts}")


@pytest.mark.slow
def test_open_results_refuses_an_edited_results_file_and_a_swapped_counters_file(study,
                                                                                tmp_path):
    import tilesim
    from tilesim.errors import InputError

    _, clean = study
    out = tmp_path / "out"
    shutil.copytree(clean, out, ignore=shutil.ignore_patterns(".tilesim.lock"))
    assert tilesim.open_results(out).tiles("s", "re").sizes["frame"] == 4
    counters = out / "runs" / "s" / "re" / "counters"
    shutil.copy(counters / "000000.npz", counters / "000002.npz")
    with pytest.raises(InputError, match="000002.npz: does not match the SHA-256"):
        tilesim.open_results(out).tiles("s", "re")
    results = json.loads((out / "results.json").read_text())
    results["summary"]["re"]["time"] *= 0.5
    (out / "results.json").write_text(json.dumps(results))
    with pytest.raises(InputError, match="results.json: does not match its own SHA-256"):
        tilesim.open_results(out)


def test_compare_takes_a_render_folders_frames_from_its_manifest(rendered, tmp_path, capsys):
    out = copy(rendered, "base", tmp_path)
    assert main(["compare", str(out), str(rendered / "base")]) == 0
    capsys.readouterr()
    Image.fromarray(np.zeros((SIZE[1], SIZE[0], 4), np.uint8)).save(frame_files(out, 1)[0])
    assert main(["compare", str(out), str(rendered / "base")]) == 2
    assert "000001.png: does not match the SHA-256" in one_line(capsys.readouterr().err)


@pytest.mark.slow
def test_frames_equal_to_the_baselines_are_stored_once(study):
    """TE's and RE's frames are the baseline's: hard links of its files, not copies."""
    _, out = study
    runs = out / "runs" / "s"
    for index in range(4):
        base = frame_files(runs / "baseline", index)[0].stat()
        for technique in ("te", "re"):
            linked = frame_files(runs / technique, index)[0].stat()
            assert (linked.st_ino, linked.st_dev) == (base.st_ino, base.st_dev)
        assert base.st_nlink == 3
