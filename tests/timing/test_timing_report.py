"""OLED screen energy, counter loading, suites, normalization to a baseline and the plots of
`tilesim estimate`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tilesim.cli import main
from tilesim.errors import InputError
from tilesim.render.pipeline.counters import FrameCounters, PassCounters
from tilesim.timing.config import load_energy_config, load_gpu_config
from tilesim.timing.counter_batch import batch_from_frames, load_batch
from tilesim.timing.model import estimate_batch, estimate_frame
from tilesim.timing.plots import PLOTS, plot_units, write_plots
from tilesim.timing.report import find_renders, match_baselines, normalize, totals
from tilesim.timing.screen import histogram, png_histograms, screen_energy, screen_power

CFG = load_gpu_config()
ECFG = load_energy_config()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def solid(value, size=(4, 6)):
    return np.full((*size, 4), value, dtype=np.uint8)


def test_oled_black_frame_costs_the_panel_only():
    power = screen_power(histogram(solid(0))[None], ECFG)[0]
    assert power == pytest.approx(50e-3)
    energy = screen_energy(histogram(solid(0))[None], CFG, ECFG)[0]
    assert energy == pytest.approx(50e-3 / 60)  # one 60 Hz refresh period


def test_oled_power_per_subpixel_by_hand():
    image = np.zeros((1, 2, 4), dtype=np.uint8)
    image[0, 0] = (255, 0, 0, 255)     # full red: 130 nW
    image[0, 1] = (0, 128, 255, 0)     # half-code green (gamma 2.2) + full blue; alpha ignored
    expected = 50e-3 + (130 + 125 * (128 / 255) ** 2.2 + 227) * 1e-9
    assert screen_power(histogram(image)[None], ECFG)[0] == pytest.approx(expected)


def test_oled_white_costs_more_than_grey_more_than_black():
    black, grey, white = (screen_power(histogram(solid(v))[None], ECFG)[0]
                          for v in (0, 128, 255))
    assert white > grey > black
    # a 1920x1080 white frame: ~1 W of emission over the panel's constant
    full = np.zeros((1, 3, 256))
    full[0, :, 255] = 1920 * 1080
    assert screen_power(full, ECFG)[0] == pytest.approx(50e-3 + 2073600 * 482e-9)


def test_png_histograms_match_the_pixels(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, (9, 7, 4), dtype=np.uint8)
    Image.fromarray(image, mode="RGBA").save(tmp_path / "a.png")
    Image.fromarray(image[..., :3], mode="RGB").save(tmp_path / "b.png")
    Image.fromarray(image[..., 0], mode="L").save(tmp_path / "c.png")
    hists = png_histograms([tmp_path / "a.png", tmp_path / "b.png", None, tmp_path / "c.png"])
    assert np.array_equal(hists[0], histogram(image)) and np.array_equal(hists[1], hists[0])
    assert np.isnan(hists[2]).all()
    grey = np.repeat(image[..., :1], 3, axis=2)  # L expands to R = G = B
    assert np.array_equal(hists[3], histogram(grey))



def test_png_histograms_decode_each_content_once(tmp_path, monkeypatch):
    """A study's lossless frames are byte-identical to the baseline's: decoded once per
    process. The cache is keyed by content, so a file rewritten with other pixels is read
    again, never served the old histogram."""
    import shutil

    from PIL import Image

    rng = np.random.default_rng(5)
    first, second = (rng.integers(0, 256, (8, 6, 4), dtype=np.uint8) for _ in range(2))
    Image.fromarray(first, mode="RGBA").save(tmp_path / "a.png")
    shutil.copy(tmp_path / "a.png", tmp_path / "copy.png")
    opened = []
    real_open = Image.open
    monkeypatch.setattr(Image, "open", lambda fp, *a, **k: opened.append(fp) or real_open(fp))
    hists = png_histograms([tmp_path / "a.png", tmp_path / "copy.png"], workers=1)
    assert len(opened) == 1 and np.array_equal(hists[1], histogram(first))
    Image.fromarray(second, mode="RGBA").save(tmp_path / "a.png")
    assert np.array_equal(png_histograms([tmp_path / "a.png"])[0], histogram(second))

def counters(frame_no, ntiles=4, scale=1, technique=None):
    f = FrameCounters(frame_no)
    f.scalars.update(vertex_cache_accesses=100 * scale, vertex_cache_misses=10 * scale,
                     index_bytes=200 * scale, vs_alu=1000 * scale, prims_assembled=20 * scale,
                     prims_rasterized=20 * scale, pb_record_bytes_written=2000 * scale)
    p = PassCounters("default", 16 * ntiles, 16, 16, ntiles, 1, np.arange(ntiles))
    for name, value in {"prims_binned": 5, "pb_bytes_read": 500, "fragments_rasterized": 256,
                        "early_z_tested": 256, "fragments_shaded": 200, "fs_alu": 2000,
                        "fs_tex": 200, "fs_quad_alu": 600, "fs_quad_tex": 60,
                        "texels_fetched": 800, "tex_cache_accesses": 200,
                        "tex_cache_misses": 20, "color_writes": 200,
                        "color_flush_bytes": 1024}.items():
        p.tiles[name] = np.full(ntiles, value * scale, dtype=np.int64)
    for name, values in (technique or {}).items():
        p.tiles[name] = np.asarray(values, dtype=np.int64)
    f.passes.append(p)
    return f


def write_render(folder, frames, color=0):
    from PIL import Image

    for f in frames:
        f.save(folder / "counters" / f"{f.frame:06d}.npz")
        (folder / "frames").mkdir(parents=True, exist_ok=True)
        Image.fromarray(solid(color, (16, 64)), mode="RGBA").save(
            folder / "frames" / f"{f.frame:06d}.png")


def test_load_batch_reads_what_frame_counters_save(tmp_path):
    frames = [counters(0), counters(1, scale=2, technique={"re_tiles_skipped": [0, 1, 0, 0],
                                                           "re_shifts": [5, 5, 5, 5]})]
    for f in frames:
        f.save(tmp_path / f"{f.frame:06d}.npz")
    loaded = load_batch(sorted(tmp_path.glob("*.npz")))
    built = batch_from_frames(frames)
    assert list(loaded.frame_ids) == [0, 1]
    for name, values in built.tiles.items():
        assert np.array_equal(loaded.tiles[name], values), name
    for name, values in built.scalars.items():
        assert np.array_equal(loaded.scalars[name], values), name
    assert list(loaded.present["re"]) == [False, True]
    assert list(loaded.present["dsr"]) == [False, False]
    assert list(loaded.pass_target) == list(built.pass_target) == [
        p.target for f in frames for p in f.passes]


@pytest.mark.slow
def test_suite_with_baseline_json_and_plots(tmp_path, capsys):
    # a suite of two workloads and its baseline suite; the run skips half the work
    for name, scale in (("alpha", 2), ("beta", 4)):
        write_render(tmp_path / "base" / name, [counters(i, scale=scale) for i in range(2)])
        run = [counters(i, scale=scale, technique={
            "re_tiles_skipped": [0, 0, 1, 1], "re_shifts": [50] * 4,
            "re_subblocks_signed": [50] * 4, "re_signature_accesses": [4] * 4})
            for i in range(2)]
        for f in run:  # the renderer removed the skipped tiles' raster work
            for key, values in f.passes[0].tiles.items():
                if key not in ("prims_binned",) and not key.startswith("re_"):
                    values[2:] = 0
        write_render(tmp_path / "re" / name, run, color=255)
    plots = tmp_path / "plots"
    assert main(["estimate", str(tmp_path / "re"), "--baseline", str(tmp_path / "base"),
                 "--plot", str(plots), "--json"]) == 0
    report = json.loads(capsys.readouterr().out, parse_constant=pytest.fail)  # valid JSON
    names = [w["name"] for w in report["workloads"]]
    assert names == ["alpha", "beta"]
    for w in report["workloads"]:
        assert w["baseline"]["name"] == w["name"]
        assert w["normalized"]["time"] < 1 and w["normalized"]["energy"] < 1
        assert w["normalized"]["fs_instructions"] == pytest.approx(0.5)
        assert w["total"]["techniques"] == ["re"]
        assert w["total"]["energy_j"]["technique_overhead"]["gpu"] > 0
        # white frames cost the screen more than the baseline's black ones
        assert w["normalized"]["screen_energy"] > 1
    avg = report["average_normalized"]
    assert avg["time"] == pytest.approx(np.mean([w["normalized"]["time"]
                                                 for w in report["workloads"]]))
    for plot in PLOTS:
        data = (plots / f"{plot}.png").read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000
    # text report: a table per workload and the normalized table
    assert main(["estimate", str(tmp_path / "re"), "--baseline", str(tmp_path / "base")]) == 0
    text = capsys.readouterr().out
    assert "== alpha" in text and "== beta" in text and "average" in text


@pytest.mark.slow
def test_plots_without_baseline(tmp_path):
    ests = [estimate_frame(counters(0, scale=s), CFG, ECFG) for s in (1, 3)]
    runs = [totals(estimate_batch(batch_from_frames([counters(0, scale=s)]), CFG, ECFG))
            for s in (1, 3)]
    assert runs[1]["energy_j"]["total"] == pytest.approx(ests[1].energy)
    written = write_plots(tmp_path, ["one", "three"], runs)
    assert [p.name for p in written] == [f"{p}.png" for p in PLOTS]
    for path in written:
        assert path.read_bytes().startswith(PNG_MAGIC)
    assert len(plot_units(["one"], runs[:1])) > 5000
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporaries


def test_workload_discovery_and_baseline_matching(tmp_path):
    with pytest.raises(InputError, match="no counters"):
        find_renders([tmp_path])
    (tmp_path / "a" / "counters").mkdir(parents=True)
    (tmp_path / "b" / "counters").mkdir(parents=True)
    found = find_renders([tmp_path])
    assert [n for n, _ in found] == ["a", "b"]
    assert find_renders([tmp_path / "a"]) == [("a", tmp_path / "a")]
    bases = [("b", tmp_path / "B"), ("a", tmp_path / "A")]
    assert match_baselines(found, bases) == [("a", tmp_path / "A"), ("b", tmp_path / "B")]
    assert match_baselines(found, [("x", 1), ("y", 2)]) == [("x", 1), ("y", 2)]
    with pytest.raises(InputError, match="match neither"):
        match_baselines(found, [("x", 1)])
    base = totals(estimate_batch(batch_from_frames([counters(0)]), CFG, ECFG))
    assert normalize(base, base)["energy"] == pytest.approx(1.0)
    assert normalize(base, base)["screen_energy"] is None  # no PNG, no screen figure
