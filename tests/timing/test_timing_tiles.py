"""Per-tile raster cycles and energy of the screen's passes (tilesim.timing.tiles): orientation,
the identities that tie them to the frame's estimate, and `tilesim estimate --per-tile` /
`--plot`'s heat map."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tilesim.cli import main
from tilesim.render.pipeline.counters import (
    FRAME_COUNTERS,
    TILE_COUNTERS,
    FrameCounters,
    PassCounters,
)
from tilesim.timing.config import load_energy_config, load_gpu_config
from tilesim.timing.counter_batch import batch_from_frames
from tilesim.timing.model import estimate_batch
from tilesim.timing.techniques import TECHNIQUE_TILE_COUNTERS
from tilesim.timing.tiles import frame_tiles, mean_screen_cycles, screen_tiles, tile_energy

CFG = load_gpu_config()
ECFG = load_energy_config()


def random_frame(rng, index=0, passes=(("fbo1", 3, 2), ("default", 4, 3), ("default", 4, 3)),
                 scalars=True, techniques=True) -> FrameCounters:
    """Random counters (every tile counter, the techniques' too), one pass per (target, tiles_x,
    tiles_y); some tiles without primitives, some skipped by RE (raster counters cleared)."""
    f = FrameCounters(index)
    if scalars:
        f.scalars.update({k: int(v) for k, v in zip(FRAME_COUNTERS,
                                                    rng.integers(0, 5000, len(FRAME_COUNTERS)),
                                                    strict=True)})
    names = [*TILE_COUNTERS, *(TECHNIQUE_TILE_COUNTERS if techniques else ())]
    for target, tx, ty in passes:
        n = tx * ty
        p = PassCounters(target, 16 * tx, 16 * ty, 16, tx, ty, np.arange(n))
        for name in names:
            p.tiles[name] = rng.integers(0, 3000, n)
        p.tiles["prims_binned"][rng.random(n) < 0.2] = 0
        if techniques:
            p.tiles["memo_hits"] = np.minimum(p.tiles["memo_hits"], p.tiles["fragments_shaded"])
            p.tiles["dsr_rate"] = rng.integers(0, 5, n)
            skip = rng.random(n) < 0.3
            p.tiles["re_tiles_skipped"] = skip.astype(np.int64)
            for name in TILE_COUNTERS:
                if name not in ("prims_binned", "pb_list_bytes_written"):
                    p.tiles[name][skip] = 0
        f.passes.append(p)
    return f


def frame_level_energy(frame: FrameCounters, est, i: int) -> float:
    """What no tile owns: the frame counters' dynamic energy (the same frame with every tile
    counter zero, less its time-driven energy) and the time-driven power over the geometry
    phase."""
    bare = FrameCounters(frame.frame, dict(frame.scalars))
    bare.passes = [PassCounters(p.target, p.width, p.height, 16, p.tiles_x, p.tiles_y,
                                p.traversal) for p in frame.passes]
    zero = estimate_batch(batch_from_frames([bare]), CFG, ECFG)
    timed = lambda e, k: (sum(float(v[k]) for v in e.gpu_static.values())  # noqa: E731
                          + float(e.memory["background"][k] + e.memory["refresh"][k]))
    dynamic = (sum(float(v[0]) for v in zero.gpu_dynamic.values())
               + sum(float(zero.memory[k][0]) for k in ("act_pre", "read", "write")))
    watts = timed(est, i) / float(est.seconds[i])
    return dynamic + watts * float(est.geometry_cycles[i]) / CFG["tech.clock"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tiles_add_up_to_the_frame(seed):
    """Per frame: the tiles' cycles over every pass are the raster cycles; the tiles' energy
    plus what no tile owns is the frame's energy (GPU + memory), techniques and memoization
    hits included; the screen maps hold the default framebuffer's passes only."""
    rng = np.random.default_rng(seed)
    frames = [random_frame(rng, i) for i in range(3)]
    est = estimate_batch(batch_from_frames(frames), CFG, ECFG)
    joules = tile_energy(est, CFG, ECFG)
    assert np.all(joules > 0)
    for i, frame in enumerate(frames):
        mine = est.batch.tile_frame == i
        assert est.tile_cycles[mine].sum() == pytest.approx(est.raster_cycles[i], rel=1e-12)
        total = est.frame(i).energy
        assert joules[mine].sum() + frame_level_energy(frame, est, i) == pytest.approx(
            total, rel=1e-9)
    maps = screen_tiles(est, CFG, ECFG)
    assert [[(p.frame, p.pass_index, p.cycles.shape) for p in m] for m in maps] == [
        [(i, 1, (3, 4)), (i, 2, (3, 4))] for i in range(3)]
    # the screen's tiles are the batch's tiles of those passes, reshaped row by row
    first = est.batch.tile_pass == 1
    assert np.array_equal(maps[0][0].cycles.ravel(), est.tile_cycles[first])
    assert np.array_equal(maps[0][0].energy_j.ravel(), joules[first])
    # one frame alone gives the same maps
    alone = frame_tiles(frames[2], CFG, ECFG)
    for a, b in zip(alone, maps[2], strict=True):
        assert a.cycles == pytest.approx(b.cycles) and a.energy_j == pytest.approx(b.energy_j)


def test_without_frame_work_the_tiles_own_all_but_the_geometry_phases_leakage():
    rng = np.random.default_rng(5)
    frame = random_frame(rng, passes=(("default", 5, 2),), scalars=False, techniques=False)
    est = estimate_batch(batch_from_frames([frame]), CFG, ECFG)
    timed = (sum(float(v[0]) for v in est.gpu_static.values())
             + float(est.memory["background"][0] + est.memory["refresh"][0]))
    geometry_share = timed * est.geometry_cycles[0] / (est.geometry_cycles[0]
                                                       + est.raster_cycles[0])
    assert tile_energy(est, CFG, ECFG).sum() == pytest.approx(
        est.frame(0).energy - geometry_share, rel=1e-9)


def test_row_zero_is_the_bottom_tile_row():
    """Only the bottom-left tile (tile 0 as the counters number it) has work: it is row 0,
    column 0 of the map; the heat map average flips nothing."""
    f = FrameCounters(0)
    p = PassCounters("default", 48, 32, 16, 3, 2, np.arange(6))
    p.tiles["prims_binned"][0] = 4
    p.tiles["fs_quad_alu"][0] = 4000
    f.passes.append(p)
    (tiles,) = frame_tiles(f, CFG, ECFG)
    assert tiles.cycles.shape == (2, 3)
    assert np.unravel_index(np.argmax(tiles.cycles), tiles.cycles.shape) == (0, 0)
    assert np.unravel_index(np.argmax(tiles.energy_j), tiles.energy_j.shape) == (0, 0)
    assert tiles.to_dict()["cycles"][0][0] == tiles.cycles[0, 0]
    both = mean_screen_cycles([[tiles], [], [tiles]])
    assert both == pytest.approx(tiles.cycles)
    assert mean_screen_cycles([[], []]) is None


@pytest.mark.slow
def test_estimate_per_tile_json_and_heat_map(tmp_path, capsys):
    rng = np.random.default_rng(7)
    out = tmp_path / "run"
    (out / "counters").mkdir(parents=True)
    frames = [random_frame(rng, i) for i in range(2)]
    for f in frames:
        f.save(out / "counters" / f"{f.frame:06d}.npz")
    assert main(["estimate", str(out), "--json", "--per-tile", "--plot",
                 str(tmp_path / "plots")]) == 0
    report = json.loads(capsys.readouterr().out)
    for frame in report["frames"]:
        tiles = frame["tiles"]
        assert [t["pass"] for t in tiles] == [1, 2]
        assert all(t["rows"] == "bottom first" and (t["tiles_x"], t["tiles_y"]) == (4, 3)
                   and np.shape(t["cycles"]) == (3, 4) == np.shape(t["energy_j"])
                   for t in tiles)
    # the fbo pass is not in the maps: the screen's tiles hold less than the raster cycles
    est = estimate_batch(batch_from_frames(frames), CFG, ECFG)
    screen = est.batch.pass_target[est.batch.tile_pass] == "default"
    for i, frame in enumerate(report["frames"]):
        got = sum(np.sum(t["cycles"]) for t in frame["tiles"])
        assert got == pytest.approx(est.tile_cycles[screen & (est.batch.tile_frame == i)].sum())
    assert (tmp_path / "plots" / "tiles-run.png").stat().st_size > 0
    # without --per-tile the JSON keeps its size; --per-tile alone is a usage error
    assert main(["estimate", str(out), "--json"]) == 0
    assert "tiles" not in json.loads(capsys.readouterr().out)["frames"][0]
    assert main(["estimate", str(out), "--per-tile"]) == 2
    assert "--json" in capsys.readouterr().err
