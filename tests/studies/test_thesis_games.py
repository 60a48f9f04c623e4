"""The thesis-regime workloads (render/workloads/thesis_games.py): each suite row's program does
the work of its row of Frame Coherence Tables 3.3 and 3.4, within 15% on draw calls per frame,
vertices per draw call, FS instructions per fragment, ALU:TEX, texels per texture instruction
and overshading."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tilesim.render.workloads import NATIVE_SIZES, WORKLOADS, thesis_games, trace_name
from tilesim.render.workloads.thesis_games import (
    FILTER_TEXELS,
    filter_mix,
    load_table,
    patch_shape,
    plan,
    program_mix,
)

ROWS, PROFILES, SUITE = load_table()
BAND = 0.15
BANDED = ("draw_calls_per_frame", "vertices_per_draw", "fs_instructions_per_fragment",
          "alu_tex_ratio", "texels_per_fragment", "overshading")
MEASURED = thesis_games.DATA.with_name("thesis_games_measured.json")


def _floor(tex: int) -> int:
    """ALU floor of the compiled programs (measured: MAD for t = 0, MOV/ADDs for t >= 1),
    so the plan needs no Mesa here."""
    return max(1, tex - 1)


def test_table_rows_are_the_thesis_tables():
    assert len(ROWS) == 30 and len(SUITE) >= 12
    assert {ROWS[k].chapters for k in SUITE} == {"4-5", "6"}
    assert {ROWS[k].type for k in SUITE} == {"2D", "3D"}
    # Spot checks against Tables 3.3 and 3.4 as printed.
    assert ROWS["angry_birds"].numbers["draw_calls_per_frame"] == 14.00
    assert ROWS["sonic_dash"].numbers["vertices_per_draw"] == 1019.16
    assert ROWS["dokkan_battle"].numbers["overshading"] == 9.1
    assert ROWS["hearthstone"].numbers["texels_per_fragment"] == 6.19


@pytest.mark.parametrize("key", sorted(ROWS))
def test_program_mix_gives_the_rows_instructions(key):
    n = ROWS[key].numbers
    mix = program_mix(n["fs_instructions_per_fragment"], n["alu_tex_ratio"], _floor)
    assert 1 <= len(mix) <= 3 and math.isclose(sum(s for *_, s in mix), 1.0)
    tex = sum(t * s for t, _a, s in mix)
    alu = sum(a * s for _t, a, s in mix)
    target_tex = n["fs_instructions_per_fragment"] / (1 + n["alu_tex_ratio"])
    assert tex == pytest.approx(target_tex, rel=1e-9)
    w = target_tex - math.floor(target_tex)
    fewest = (1 - w) * _floor(math.floor(target_tex)) + w * _floor(math.floor(target_tex) + 1)
    if n["fs_instructions_per_fragment"] - target_tex < fewest:   # e.g. Guns of Boom: 0.96
        assert alu == pytest.approx(fewest)                       # ALU, below any program
        return
    assert (alu + tex) / n["fs_instructions_per_fragment"] == pytest.approx(1, abs=0.02)
    assert (alu / tex) / n["alu_tex_ratio"] == pytest.approx(1, abs=0.03)


@pytest.mark.parametrize("key", sorted(ROWS))
def test_filter_mix_gives_the_rows_texels(key):
    texels = ROWS[key].numbers["texels_per_fragment"]
    if texels > max(FILTER_TEXELS.values()):
        with pytest.raises(ValueError, match="anisotropic"):
            filter_mix(texels)
        return
    mix = filter_mix(texels)
    assert sum(FILTER_TEXELS[f] * s for f, s in mix) == pytest.approx(texels)


def test_patch_shapes():
    assert patch_shape(24.31, 8.06).kind == "arrays"                 # 1/3: two triangles of 6
    assert patch_shape(99.2, 49.6) == thesis_games.Patch("indexed", 2)   # quads
    p = patch_shape(410.25, 757.04)                                    # Temple Run: grids
    assert p.kind == "indexed" and p.triangles / p.vertices == pytest.approx(1.85, rel=0.05)


@pytest.mark.parametrize("key", SUITE)
def test_plan_covers_the_screen_overshading_times(key):
    row = ROWS[key]
    width, height = row.size
    p = plan(row, PROFILES[row.profile], width, height, alu_floor=_floor)
    n = row.numbers
    assert len(p.draws) == math.ceil(n["draw_calls_per_frame"])
    area = sum(float((d.rects[:, 2] * d.rects[:, 3]).sum()) for d in p.draws)
    assert area / (width * height) == pytest.approx(n["overshading"], rel=1e-6)
    bands = [d for d in p.draws if d.role == "band"]
    band_area = sum(float((d.rects[:, 2] * d.rects[:, 3]).sum()) for d in bands)
    assert band_area == width * height           # the first layer covers the screen once
    for d in p.draws:                            # every sprite fully on screen
        assert (d.rects[:, :2] >= 0).all()
        assert (d.rects[:, 0] + d.rects[:, 2] <= width).all()
        assert (d.rects[:, 1] + d.rects[:, 3] <= height).all()
    vertices = np.mean([d.rects.shape[0] * p.patch.vertices for d in p.draws])
    assert vertices / n["vertices_per_draw"] == pytest.approx(1, abs=0.1)


def test_registry_and_sizes():
    for key in SUITE:
        name = ROWS[key].name
        assert name in WORKLOADS and NATIVE_SIZES[name] == (ROWS[key].size,)


def test_rows_beyond_the_sampler_are_refused():
    row = ROWS["brawl_stars"]                     # 13.61 texels: anisotropic filtering
    with pytest.raises(ValueError, match="anisotropic"):
        plan(row, PROFILES[row.profile], *row.size, alu_floor=_floor)


def test_stored_characterization_within_band():
    """render/workloads/thesis_games_measured.json (scripts/measure_thesis_games.py over the
    bundled traces) holds every suite row, each banded column within 15% of the table."""
    report = json.loads(MEASURED.read_text())
    assert report["band"] == BAND
    names = {ROWS[k].name for k in SUITE}
    assert set(report["workloads"]) == names
    for name, entry in report["workloads"].items():
        assert entry["frames"][1] - entry["frames"][0] + 1 >= 8
        for column in BANDED:
            c = entry["columns"][column]
            assert c["table"] == ROWS[entry["row"]].numbers[column]
            assert abs(c["measured"] / c["table"] - 1) <= BAND, (name, column, c)


@pytest.mark.slow
@pytest.mark.parametrize("key", SUITE)
def test_built_program_lands_in_its_band(key, tmp_path, mesa):
    """Build the row's program now (Mesa compiles its shaders), render frame 1 and
    characterize it: each banded column within 15% of the table row."""
    from tilesim.render.workloads import write_workload
    from tilesim.studies.characterize import characterize

    row = ROWS[key]
    path = write_workload(row.name, tmp_path / trace_name(row.name, *row.size), *row.size,
                          frames=2)
    columns = characterize(str(path), range(1, 2))["columns"]
    for column in BANDED:
        target = row.numbers[column]
        assert abs(columns[column] / target - 1) <= BAND, (key, column, columns[column], target)


def test_thesis_comparison_averages_each_technique_on_its_evaluated_set():
    """RE is averaged on the chapters 4-5 rows, DSR on the chapter 6 rows (Frame Coherence
    §4.3, §6.5); other workloads are left out; a study without like_* has none."""
    from tilesim.studies.thesis_comparison import compare

    def run(time, energy, **quality):
        return {"normalized": {"time": time, "energy": energy}, "quality": quality}

    workloads = [
        {"name": "like_candy_crush-1196x768", "bound_shares": {"bus": 0.6},
         "runs": {"re": run(0.4, 0.5, tiles_skipped=0.8), "dsr": run(0.9, 0.95)}},
        {"name": "like_temple_run-1196x768",
         "runs": {"re": run(0.8, 0.7, tiles_skipped=0.2), "dsr": run(0.7, 0.8)}},
        {"name": "like_sonic_dash-1920x1080",
         "runs": {"re": run(1.0, 1.0), "dsr": run(0.6, 0.65)}},
        {"name": "bunny", "runs": {"re": run(0.1, 0.1), "dsr": run(0.1, 0.1)}},
    ]
    c = compare(workloads)
    assert [w["name"] for w in c["workloads"]] == [w["name"] for w in workloads[:3]]
    assert c["groups"]["evaluated set"]["re"]["time"] == pytest.approx(0.6)    # 4-5 only
    assert c["groups"]["evaluated set"]["dsr"]["time"] == pytest.approx(0.6)   # 6 only
    assert c["groups"]["3D"]["dsr"]["n"] == 2 and c["groups"]["2D"]["re"]["n"] == 1
    assert c["groups"]["all"]["re"]["tiles_skipped"] == pytest.approx(0.5)
    assert compare([workloads[3]]) is None


@pytest.mark.slow
def test_same_seed_same_bytes_and_frames_do_not_depend_on_the_count(tmp_path, mesa):
    """The first frames of a row's program are the same bytes however many frames are built,
    another seed gives another program (as the hand-written workloads, test_workloads)."""
    from tilesim.render.traces.trace_file import write_trace

    name, (width, height) = ROWS["candy_crush"].name, ROWS["candy_crush"].size

    def trace_bytes(frames, label):
        return write_trace(tmp_path / f"{label}.tsim", frames, width=width, height=height,
                           name=name).read_bytes()

    three = trace_bytes(WORKLOADS[name](width, height, 3, 0), "a")
    assert trace_bytes(WORKLOADS[name](width, height, 5, 0)[:3], "b") == three
    assert trace_bytes(WORKLOADS[name](width, height, 3, 1), "c") != three
