"""`tilesim run`: the study of every technique on a small trace, its results.json, its report,
resuming, refusing mixed settings, bad input, and tilesim.open_results."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from trace_helpers import sphere_trace

import tilesim
from tilesim.cli import main
from tilesim.errors import InputError
from tilesim.studies.coherence import DEFAULT_TECHNIQUES, LOSSLESS

TECHNIQUES = ["baseline", *DEFAULT_TECHNIQUES]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A study of a turning sphere on a static background, 4 frames, every technique."""
    root = tmp_path_factory.mktemp("study")
    trace = sphere_trace(root / "sphere.tsim", 4, size=(160, 120), clear_step=0.0)
    out = root / "out"
    code = main(["run", "--trace", str(trace), "--out", str(out), "--workers", "1"])
    return trace, out, code


@pytest.mark.slow
def test_a_study_checks_every_technique_and_writes_results_and_report(study):
    _, out, code = study
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["format"] == "tilesim study 1"
    assert results["settings"]["techniques"] == TECHNIQUES
    [workload] = results["workloads"]
    assert workload["name"] == "sphere" and workload["frames"] == [0, 4]
    assert list(workload["runs"]) == TECHNIQUES
    assert results["checks"]["failed"] == []
    for technique in LOSSLESS:
        if technique in workload["runs"]:
            quality = workload["runs"][technique]["quality"]
            assert quality["frames_bit_identical"] == quality["frames"] == 4
    re_run = workload["runs"]["re"]
    # The background is static and the sphere small: RE skips tiles from frame 1 on, and
    # the model charges less raster work for them.
    assert re_run["quality"]["tiles_skipped"] > 0.3
    assert re_run["normalized"]["raster_cycles"] < 1.0
    assert len(re_run["frames"]) == 4
    assert {"frame", "mssim", "bit_identical", "seconds", "energy_j"} <= set(re_run["frames"][0])
    assert workload["characterization"]["draw_calls_per_frame"] == pytest.approx(1.0)
    assert set(results["summary"]) == set(TECHNIQUES)
    assert results["summary"]["baseline"]["time"] == pytest.approx(1.0)
    assert "re_skipped" in re_run["overlays"]["3"]
    assert results["seconds"]["total"] > 0
    # what bounds the workload: shares of its baseline's frame time, and the regime
    assert sum(workload["bound_shares"].values()) == pytest.approx(1.0)
    assert set(workload["regime"]) == {"fragment_bound", "fragment_share", "largest"}
    assert workload["runs"]["re"]["total"]["bound_shares"]
    assert 'id="regime"' in (out / "index.html").read_text()


def test_the_report_is_offline_and_every_image_it_shows_exists(study):
    _, out, _ = study
    page = (out / "index.html").read_text()
    sources = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert len(sources) >= 2 * len(TECHNIQUES)
    for src in sources:
        with Image.open(out / src) as image:
            assert image.width > 0
    # Nothing from the network: no absolute URLs in src/href.
    assert not re.search(r'(src|href)="(https?:)?//', page)
    rows = re.findall(r'<tr data-workload="sphere" data-technique="([^"]+)"', page)
    assert rows == TECHNIQUES


def test_open_results_gives_data_frames_and_per_tile_arrays(study):
    pytest.importorskip("pandas")
    pytest.importorskip("xarray")
    _, out, _ = study
    results = tilesim.open_results(out)
    assert results.workloads == ["sphere"] and results.techniques == TECHNIQUES
    frames = results.frames
    assert len(frames) == 4 * len(TECHNIQUES)
    assert frames.loc[("sphere", "re", 2), "bit_identical"]
    assert set(results.summary.index) == set(TECHNIQUES)
    assert results.runs.loc[("sphere", "baseline"), "time"] == pytest.approx(1.0)
    assert results.runs.loc[("sphere", "re"), "mj_dram"] > 0 < results.runs.loc[
        ("sphere", "re"), "ms"]
    assert results.characterization.loc["sphere", "draw_calls_per_frame"] == pytest.approx(1.0)
    tiles = results.tiles("sphere", "re")
    assert tiles["re_tiles_skipped"].dims == ("frame", "tile_y", "tile_x")
    assert tiles.sizes == {"frame": 4, "tile_y": 8, "tile_x": 10}
    # Frame 0 has no previous frame to match; later frames skip the static background.
    assert int(tiles["re_tiles_skipped"].sel(frame=0).sum()) == 0
    assert int(tiles["re_tiles_skipped"].sel(frame=3).sum()) > 30
    # The model's raster cycles per tile add up to the frame's raster cycles (one pass).
    frames = results.frames
    for index in range(4):
        assert float(tiles["raster_cycles"].sel(frame=index).sum()) == pytest.approx(
            frames.loc[("sphere", "re", index), "cycles"]
            - _geometry_cycles(out, "re", index))
    skipped = tiles["re_tiles_skipped"].sel(frame=3) > 0
    busy = tiles["raster_cycles"].sel(frame=3)
    assert float(busy.where(skipped).max()) < float(busy.where(~skipped).max())
    # Per-tile energy: positive, and less than the frame's (the geometry phase is no tile's).
    energy = tiles["energy_j"].sel(frame=3)
    assert float(energy.min()) > 0
    assert float(energy.sum()) < frames.loc[("sphere", "re", 3), "energy_j"]
    with pytest.raises(InputError, match="unknown technique"):
        results.tiles("sphere", "nope")


def _geometry_cycles(out, technique: str, frame: int) -> float:
    import tilesim.api

    [estimate] = [e for e in tilesim.api.estimate(out / "runs" / "sphere" / technique)
                  if e.frame == frame]
    return estimate.geometry_cycles


@pytest.mark.slow
def test_a_rerun_resumes_what_is_missing_and_changes_nothing_else(study, tmp_path):
    trace, out, _ = study
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    before = json.loads((copy / "results.json").read_text())
    # One unit lost its finished mark and a frame, another only a frame.
    (copy / "runs" / "sphere" / "dsr" / "quality.json").unlink()
    (copy / "runs" / "sphere" / "dsr" / "frames" / "000002.png").unlink()
    kept = copy / "runs" / "sphere" / "te" / "frames" / "000001.png"
    stamp = kept.stat().st_mtime_ns
    assert main(["run", "--trace", str(trace), "--out", str(copy), "--workers", "1"]) == 0
    after = json.loads((copy / "results.json").read_text())
    assert kept.stat().st_mtime_ns == stamp      # finished units are not rendered again
    for technique in TECHNIQUES:
        assert (after["workloads"][0]["runs"][technique]["quality"]
                == before["workloads"][0]["runs"][technique]["quality"])


@pytest.mark.slow
def test_the_report_gives_absolute_figures_a_glossary_and_the_modelled_gpu(study):
    _, out, _ = study
    results = json.loads((out / "results.json").read_text())
    run = results["workloads"][0]["runs"]["re"]
    total, frame = run["total"], run["per_frame"]
    # per frame, in a paper's units, beside the ratios
    assert frame["ms"] == pytest.approx(1e3 * total["seconds"] / 4)
    assert frame["fps"] == pytest.approx(1e3 / frame["ms"])
    assert frame["mj"]["gpu"] + frame["mj"]["dram"] == pytest.approx(frame["mj"]["total"])
    assert frame["mj"]["screen"] > 0
    assert set(results["units"]) == {"ms", "fps", "cycles", "mj"}
    page = (out / "index.html").read_text()
    for text in ("ms / frame", "fps", "mJ GPU", "mJ DRAM", "mJ screen", "400 MHz", "32 nm",
                 "16x16 pixels", "256 KB, 8-way", "bytes/cycle", 'id="glossary"',
                 "Rendering Elimination", 'id="pivot-time"', 'id="pivot-energy"',
                 'id="regime-note"', 'href="#w-sphere"', 'id="absolute-sphere"'):
        assert text in page, text
    # lossless runs show "identical", not a black difference image
    assert re.search(r'class="identical-line"><strong>identical</strong> to the baseline in '
                     r'every\s+pixel: te, re,', page)
    assert "img/sphere/re-diff.png" not in page
    assert not (out / "img" / "sphere" / "re-diff.png").exists()


def test_per_frame_figures_and_the_gpu_summary_follow_the_configuration():
    from tilesim.studies.report.page import _gpu_summary
    from tilesim.studies.study_results import per_frame
    from tilesim.timing.config import effective_config

    total = {"frames": 4, "seconds": 0.04, "cycles": {"total": 16e6},
             "energy_j": {"gpu": 0.004, "memory": 0.008, "screen": None, "total": 0.012}}
    assert per_frame(total) == {"ms": pytest.approx(10.0), "fps": pytest.approx(100.0),
                                "cycles": 4e6, "mj": {"gpu": pytest.approx(1.0),
                                                      "dram": pytest.approx(2.0),
                                                      "screen": None,
                                                      "total": pytest.approx(3.0)}}
    config = effective_config(sets=[("tech.clock", 800e6), ("memory.bandwidth", 8.0),
                                    ("gpu.shader.lane_op", 12.5)], tile_size=32)
    summary = _gpu_summary(config.record())
    rows = dict(summary["rows"])
    assert rows["clock"] == "800 MHz" and rows["tile size"] == "32x32 pixels"
    assert "8 bytes/cycle (6.4 GB/s)" in rows["main memory"]
    # the energy model beside the GPU: the value the study ran with, not the shipped one
    assert rows["energy: shader"].startswith("12.5 pJ per lane-instruction")
    assert "pJ per byte read" in rows["energy: DRAM"] and "mW" in rows["energy: leakage"]
    assert "tech.clock=800000000" in summary["changed"]
    assert summary["digest"] == config.sha256[:12]
    # an older results.json names the files only: the shipped ones are read
    assert dict(_gpu_summary({})["rows"])["clock"] == "400 MHz"


@pytest.mark.slow
def test_a_changed_frame_fails_the_lossless_check_with_exit_1(study, tmp_path, capsys):
    trace, out, _ = study
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / "runs" / "sphere" / "re" / "quality.json").unlink()
    png = copy / "runs" / "sphere" / "re" / "frames" / "000003.png"
    pixels = np.asarray(Image.open(png)).copy()
    pixels[5, 5, 0] ^= 0x40
    Image.fromarray(pixels).save(png)
    # As a renderer that drew it so would have left it: frames.json records its digest (a
    # frame that does not match frames.json is rendered again, test_render_folder_integrity).
    manifest = json.loads((png.parents[1] / "frames.json").read_text())
    manifest["frames"][3]["png_sha256"] = hashlib.sha256(png.read_bytes()).hexdigest()
    (png.parents[1] / "frames.json").write_text(json.dumps(manifest))
    assert main(["run", "--trace", str(trace), "--out", str(copy), "--workers", "1"]) == 1
    captured = capsys.readouterr()
    assert "quality check failed: sphere: re" in captured.err
    # the terminal summary: where results.json is, what its numbers are relative to; and
    # without a terminal, progress as lines (the run of re again, then the estimates)
    assert f"results: {copy / 'results.json'}" in captured.out
    assert "ratios to the baseline" in captured.out
    assert re.search(r"^study: 9/9 runs \(100%\), \d+ s", captured.out, re.M)
    assert re.search(r"^estimate: 9/9 runs", captured.out, re.M)
    page = (copy / "index.html").read_text()
    assert 'data-technique="re" class="fail"' in page


def test_a_folder_holding_another_render_is_refused(study, tmp_path, capsys):
    _, out, _ = study
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    other = sphere_trace(tmp_path / "sphere.tsim", 4, size=(160, 120), clear_step=0.05)
    assert main(["run", "--trace", str(other), "--out", str(copy), "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trace content" in err[0] and "runs/sphere/baseline" in err[0]


@pytest.mark.parametrize("argv, message", [
    (["--trace", "no/such.tsim"], "no such trace"),
    (["--techniques", "re,bogus"], "bogus"),
    (["--frames", "5:9"], "the trace has frames 0..1"),
    (["--techniques", " , "], "no technique given"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 2, size=(32, 32))
    base = ["run", "--out", str(tmp_path / "o")]
    if "--trace" not in argv:
        base += ["--trace", str(trace)]
    assert main(base + argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_open_results_names_a_folder_that_is_not_a_study(tmp_path):
    with pytest.raises(InputError, match="results.json"):
        tilesim.open_results(tmp_path)
    (tmp_path / "results.json").write_text("{\"format\": \"other\"}")
    with pytest.raises(InputError, match="not a tilesim study"):
        tilesim.open_results(tmp_path)


def test_capture_names_are_short_and_say_what_was_captured():
    from tilesim.studies.study import capture_name

    assert capture_name("glmark2-es2:shading:shading=phong") == "glmark2-shading-phong"
    assert capture_name("glmark2-es2:texture:texture-filter=mipmap") == "glmark2-texture-mipmap"
    assert capture_name("glmark2-es2:effect2d") == "glmark2-effect2d"
    assert capture_name("es2gears") == "es2gears"


@pytest.mark.slow
@pytest.mark.mesa
def test_the_default_suite_captures_real_programs_and_reports_those_it_cannot(tmp_path):
    from conftest import require_mesa, require_tools

    from tilesim.studies.study import captured_workloads

    require_tools("xvfb-run", "apitrace", "glmark2-es2")
    require_mesa()
    made, skipped = captured_workloads(tmp_path, 2, specs=("glmark2-es2:effect2d",
                                                           "glmark2-es2:no-such-scene"))
    assert [(w.name, w.frames, w.origin) for w in made] == [
        ("glmark2-effect2d", (0, 2), "glmark2-es2:effect2d")]
    assert [s["spec"] for s in skipped] == ["glmark2-es2:no-such-scene"]
    assert skipped[0]["reason"]


@pytest.mark.slow
def test_the_all_sections_turn_each_command_into_tables_and_figures(study):
    from tilesim.studies.report.page import _extra_section
    from tilesim.studies.study_sections import (
        core_section,
        prediction_section,
        scheduling_section,
    )

    trace, out, _ = study
    sections = {"core": core_section(out, str(trace), 1),
                "prediction": prediction_section(out, [str(trace)], 4),
                "scheduling": scheduling_section(out)}
    for name, section in sections.items():
        assert "failed" not in section["text"], section["text"]
        assert section["tables"] and all(t["rows"] for t in section["tables"]), name
        for image in section["images"]:
            assert (out / image["src"]).is_file()
        assert f'id="{name}"' in _extra_section(name, section)
    policies = {row[0] for row in sections["scheduling"]["tables"][1]["rows"]}
    assert {"none", "frrs", "hpf", "edf"} <= policies
    assert sections["core"]["images"] and sections["scheduling"]["images"]


def test_a_section_whose_command_fails_says_so(tmp_path):
    from tilesim.studies.study_sections import core_section

    section = core_section(tmp_path, str(tmp_path / "missing.tsim"), 0)
    assert "failed (exit 2)" in section["text"] and "missing.tsim" in section["text"]


@pytest.mark.slow
def test_force_starts_the_units_over(study, tmp_path):
    trace, out, _ = study
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    frame = copy / "runs" / "sphere" / "re" / "frames" / "000003.png"
    stamp = frame.stat().st_mtime_ns
    argv = ["run", "--trace", str(trace), "--out", str(copy), "--workers", "1",
            "--techniques", "re"]
    assert main(argv) == 0
    assert frame.stat().st_mtime_ns == stamp
    assert main([*argv, "--force"]) == 0
    assert frame.stat().st_mtime_ns != stamp
    results = json.loads((copy / "results.json").read_text())
    assert list(results["workloads"][0]["runs"]) == ["baseline", "re"]
    assert results["workloads"][0]["characterization"] is not None


def test_another_frame_range_counts_the_characterization_again(study, tmp_path):
    trace, out, _ = study
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    argv = ["run", "--trace", f"{trace}@0:3", "--out", str(copy), "--workers", "1",
            "--techniques", "re"]
    assert main(argv) == 0
    results = json.loads((copy / "results.json").read_text())
    characterization = json.loads(
        (copy / "runs" / "sphere" / "characterization.json").read_text())
    assert characterization["frames"] == [0, 2]
    assert results["workloads"][0]["frames"] == [0, 3]
    assert len(results["workloads"][0]["runs"]["re"]["frames"]) == 3


def test_the_runs_that_only_watch_the_pipeline_share_their_workloads_baseline_render(tmp_path):
    from tilesim.studies.study import Settings, Workload, plan_renders, plan_units

    workloads = [Workload("a", "a.tsim", (0, 4)), Workload("b", "b.tsim", (0, 4))]
    units = plan_units(Settings(workloads, tuple(TECHNIQUES)), tmp_path)
    renders = plan_renders(units)
    shared = ["baseline", "te", "re", "re/xor", "memo", "memo/32"]
    # The two shared renders first (the longest), then each workload's EVR with RE+EVR (RE
    # watching EVR's render), then DSR alone.
    assert [[u.key for u in group] for group in renders[:4]] == [
        [f"{w}/{t}" for t in shared] for w in ("a", "b")] + [
        [f"{w}/evr", f"{w}/re+evr"] for w in ("a", "b")]
    assert [[u.key for u in group] for group in renders[4:]] == [["a/dsr"], ["b/dsr"]]
    assert sorted(u.key for group in renders for u in group) == sorted(u.key for u in units)


def test_a_baseline_rendered_alone_comes_before_the_renders_compared_with_it(tmp_path):
    """``--techniques evr,re+evr``: EVR's render (with RE+EVR) has two units, the baseline
    alone one; ordered by size, a serial study compared EVR's frames with baseline frames
    not yet rendered (FileNotFoundError after the first render)."""
    from tilesim.studies.study import Settings, Workload, plan_renders, plan_units

    units = plan_units(Settings([Workload("a", "a.tsim", (0, 4))],
                                ("baseline", "evr", "re+evr")), tmp_path)
    assert [[u.key for u in group] for group in plan_renders(units)] == [
        ["a/baseline"], ["a/evr", "a/re+evr"]]


@pytest.mark.slow
def test_evr_runs_alone_in_a_serial_study(tmp_path):
    trace = sphere_trace(tmp_path / "sphere.tsim", 2, size=(64, 48))
    out = tmp_path / "study"
    assert main(["run", "--trace", str(trace), "--techniques", "evr,re+evr", "--workers", "1",
                 "--no-captures", "--out", str(out)]) == 0
    runs = json.loads((out / "results.json").read_text())["workloads"][0]["runs"]
    assert {"evr", "re+evr"} <= set(runs)

@pytest.mark.slow
def test_two_workers_compare_each_run_in_parts_and_record_what_one_worker_records(
        study, tmp_path, monkeypatch):
    """With two workers every run's frames are compared in parts (a frame at a time as the
    render writes them, the rest in a part per worker); the joined tallies equal those of
    one worker comparing all the frames."""
    from tilesim.studies import study as study_module
    from tilesim.studies.coherence import Tally
    from tilesim.studies.study import (
        Settings,
        compare_frames,
        comparison_parts,
        given_workloads,
        plan_units,
    )

    trace, out, code = study
    assert code == 0
    monkeypatch.setattr(study_module, "STREAM_FRAMES", 1)
    assert main(["run", "--trace", str(trace), "--out", str(tmp_path / "two"),
                 "--workers", "2"]) == 0
    units = plan_units(Settings(given_workloads([str(trace)], None), tuple(TECHNIQUES)), out)
    for unit in units:
        one = json.loads((Path(unit.folder) / "quality.json").read_text())["tally"]
        two_folder = tmp_path / "two" / Path(unit.folder).relative_to(out)
        two = json.loads((two_folder / "quality.json").read_text())["tally"]
        assert two == one, unit.key
        parts = comparison_parts(unit, 3)
        assert [list(p) for p in parts] == [[0], [1], [2, 3]]
        joined = Tally.joined([Tally.from_dict(compare_frames(unit, p)["tally"])
                               for p in parts])
        assert joined.to_dict() == one, unit.key


def test_a_run_is_compared_in_runs_of_frames_it_and_its_baseline_finished(study, tmp_path,
                                                                            monkeypatch):
    """While renders run, the frames a run and its baseline have both finished are handed on
    in runs of STREAM_FRAMES consecutive frames, each frame once, a run only when whole."""
    import shutil

    from tilesim.studies import study as study_module
    from tilesim.studies.batch import Job
    from tilesim.studies.study import Settings, given_workloads, plan_units

    trace, out, code = study
    assert code == 0
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    unit = next(u for u in plan_units(Settings(given_workloads([str(trace)], None),
                                               tuple(TECHNIQUES)), copy)
                if u.technique == "re")
    baseline = Job(unit.workload.trace, unit.workload.frames, unit.baseline_folder)
    monkeypatch.setattr(study_module, "STREAM_FRAMES", 2)
    unit.job.frame_files(2)[0].unlink()            # re: frames 0, 1, 3 finished
    baseline.frame_files(1)[1].unlink()            # baseline: frames 0, 2, 3 finished
    comparison = study_module._Comparison(unit, baseline)
    assert comparison.written() == []              # frame 1 lacks its baseline's counters
    shutil.copy(out / Path(baseline.frame_files(1)[1]).relative_to(copy),
                baseline.frame_files(1)[1])
    assert comparison.written() == [range(0, 2)]
    assert comparison.written() == []              # frame 2 not finished yet
    shutil.copy(out / Path(unit.job.frame_files(2)[0]).relative_to(copy),
                unit.job.frame_files(2)[0])
    assert comparison.written() == [range(2, 4)]
    assert comparison.next == 4
    assert study_module.comparison_parts(unit, 2, comparison.next) == []


def test_progress_without_a_terminal_is_lines_at_most_every_interval():
    import io

    from tilesim.studies.progress import LineProgress

    out = io.StringIO()
    with LineProgress(4, desc="study", unit="run", file=out, interval=3600) as bar:
        for _ in range(4):
            bar.update(1)
    lines = out.getvalue().splitlines()
    # the first update, then nothing within the interval, then the end
    assert [line.split(",")[0] for line in lines] == ["study: 1/4 runs (25%)",
                                                       "study: 4/4 runs (100%)"]


def test_the_terminal_summary_says_what_bounds_each_workload():
    from tilesim.studies.study import regime_lines

    workloads = [
        {"name": "a", "bound_shares": {"bus": 0.6, "shading": 0.3, "geometry": 0.1},
         "regime": {"fragment_bound": False}},
        {"name": "b", "bound_shares": {"shading": 0.5, "texturing": 0.3, "bus": 0.2},
         "regime": {"fragment_bound": True}},
        {"name": "old", "bound_shares": None, "regime": None}]
    lines = regime_lines(workloads).splitlines()
    assert lines[1].split() == ["a", "bound", "by:", "bus", "60%,", "shading", "30%,",
                                "geometry", "10%"]
    assert lines[2].endswith("[fragment-bound]") and "old" not in lines[3]
    assert lines[3].endswith("1/2 workloads")
    assert regime_lines([]) == ""
