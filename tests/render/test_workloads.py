"""The game-like synthetic workloads: deterministic builds, tilesim renders them, Mesa
llvmpipe agrees (MSSIM), and ``tilesim characterize`` prints sane Table 3.3 / 3.4 numbers."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import require_mesa
from repo_paths import ROOT

from tilesim.render.workloads import (
    CATEGORIES,
    GAME_LIKE,
    SIZES,
    THESIS_SUITE,
    WORKLOADS,
    trace_name,
    write_workload,
)

WIDTH, HEIGHT = 320, 205          # small, the 1196x768 aspect
BUILT = 10                        # frames built for the longer tests
COMPARED = (0, 5, 9)              # frames compared with llvmpipe


@functools.cache
def built(name: str, frames: int, seed: int = 0, width: int = WIDTH, height: int = HEIGHT):
    """A workload's frames, built once per test session (compiling needs Mesa)."""
    require_mesa()
    return WORKLOADS[name](width, height, frames, seed)


def trace_bytes(tmp_path: Path, frames, label: str) -> bytes:
    from tilesim.render.traces.trace_file import write_trace

    path = write_trace(tmp_path / f"{label}.tsim", frames, width=WIDTH, height=HEIGHT,
                       name="workload")
    return path.read_bytes()


def test_registry_names_categories_and_sizes():
    assert GAME_LIKE == ("match3", "sidescroller", "runner", "render_to_texture")
    # the hand-written four, then a program per row of the thesis's suite (test_thesis_games)
    assert set(WORKLOADS) == set(GAME_LIKE) | {f"like_{key}" for key in THESIS_SUITE}
    assert set(CATEGORIES) == set(WORKLOADS)
    assert all("Table 3.2" in text for text in CATEGORIES.values())
    assert SIZES == ((1196, 768), (1920, 1080))
    assert trace_name("runner", 1196, 768) == "runner-1196x768.tsim"


@pytest.mark.slow
@pytest.mark.parametrize("name", GAME_LIKE)
def test_same_seed_same_trace_bytes_and_frames_do_not_depend_on_the_count(name, tmp_path):
    three = built(name, BUILT)[:3]
    again = WORKLOADS[name](WIDTH, HEIGHT, 3, 0)  # a separate, shorter build
    assert len(three) == 3 and all(f[-1].op == "endFrame" for f in three)
    assert trace_bytes(tmp_path, three, "a") == trace_bytes(tmp_path, again, "b")
    other = WORKLOADS[name](WIDTH, HEIGHT, 3, 1)
    assert trace_bytes(tmp_path, other, "c") != trace_bytes(tmp_path, three, "a")


@pytest.mark.parametrize("name", GAME_LIKE)
def test_static_data_is_uploaded_once(name):
    """Programs, textures and buffer storage are made in frame 0 only; later frames upload
    only small dynamic data (bufferSubData)."""
    frames = built(name, BUILT)
    setup_ops = {"createProgram", "texImage2D", "bufferData", "generateMipmap",
                 "createTexture", "createBuffer"}
    for frame in frames[1:]:
        assert not setup_ops & {c.op for c in frame}
        uploaded = sum(c.args["data"].nbytes for c in frame if c.op == "bufferSubData")
        assert uploaded < 64 * 1024
    draws = [sum(c.op in ("drawArrays", "drawElements") for c in f) for f in frames]
    uniforms = [sum(c.op == "uniform" for c in f) for f in frames]
    assert min(draws) >= 8 and min(uniforms) >= min(draws)


@pytest.mark.parametrize("name", GAME_LIKE)
def test_tilesim_renders_a_few_frames(name):
    from tilesim.render.pipeline.renderer import Renderer

    frames = built(name, BUILT)[:3]
    results = list(Renderer(WIDTH, HEIGHT).render(frames))
    assert [r.index for r in results] == [0, 1, 2]
    for result in results:
        image = result.image
        assert image.shape == (HEIGHT, WIDTH, 4)
        assert image[..., :3].std() > 10  # a picture, not a cleared screen
        summary = result.counters.summary()
        assert summary["draw_calls"] >= 8
        assert summary["fragments_shaded"] > WIDTH * HEIGHT
        assert summary["tex_samples"] > 0
        assert summary["overshading"] >= 1.0
    if name == "render_to_texture":
        assert results[0].counters.scalars["passes"] == 2
        assert {p.target for p in results[0].counters.passes} == {"fbo1", "default"}


@pytest.mark.slow
@pytest.mark.mesa
@pytest.mark.parametrize("name", GAME_LIKE)
def test_matches_mesa_llvmpipe(name):
    from skimage.metrics import structural_similarity

    from tilesim.render.pipeline.renderer import Renderer
    from tilesim.render.reference.replay_gl import reference_frames

    frames = built(name, BUILT)
    ours = {r.index: r.image for r in Renderer(WIDTH, HEIGHT).render(frames, keep=COMPARED)}
    references = reference_frames(frames, width=WIDTH, height=HEIGHT, frames=COMPARED)
    assert len(references) == len(COMPARED)
    for index, reference in zip(COMPARED, references, strict=True):
        mssim = structural_similarity(ours[index][..., :3], reference[..., :3],
                                      gaussian_weights=True, sigma=1.5,
                                      use_sample_covariance=False, data_range=255,
                                      channel_axis=2)
        assert mssim >= 0.99, f"{name} frame {index}: MSSIM {mssim:.4f} against llvmpipe"


def test_write_workload_records_the_seed(tmp_path):
    require_mesa()
    from tilesim.render.traces.trace_file import open_trace

    path = write_workload("match3", tmp_path / "m.tsim", 64, 48, frames=2, seed=7)
    with open_trace(path) as trace:
        assert (trace.width, trace.height, trace.frame_count, trace.name) == (64, 48, 2,
                                                                             "match3")
        assert trace.source["seed"] == 7
        assert trace.source["generator"] == "tilesim.render.workloads.match3"
    with pytest.raises(KeyError, match="unknown workload"):
        write_workload("tetris", tmp_path / "t.tsim", 64, 48)


@pytest.mark.slow
def test_make_workloads_script(tmp_path):
    script = ROOT / "scripts" / "make_workloads.py"
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                           text=True, check=True)
    assert "--workloads" in shown.stdout and "--seed" in shown.stdout
    bad = subprocess.run([sys.executable, str(script), "--workloads", "tetris"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown workload" in bad.stderr
    require_mesa()
    done = subprocess.run([sys.executable, str(script), "--workloads", "sidescroller",
                           "--sizes", "96x64", "--frames", "2", "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, check=True)
    assert (tmp_path / "sidescroller-96x64.tsim").stat().st_size > 0
    assert "total" in done.stdout


@pytest.mark.slow
def test_characterize_prints_sane_numbers(tmp_path, capsys):
    from tilesim.cli import main
    from tilesim.render.traces.trace_file import write_trace
    from tilesim.studies.characterize import characterize

    path = write_trace(tmp_path / "runner.tsim", built("runner", BUILT)[:2], width=WIDTH,
                       height=HEIGHT, name="runner")
    report = characterize(path, range(0, 2))
    cols = report["columns"]
    assert report["frames"] == [0, 1] and len(report["per_frame"]) == 2
    assert 30 <= cols["draw_calls_per_frame"] <= 200
    assert cols["vertices_per_draw"] > 4 and cols["primitives_per_draw"] > 2
    assert cols["attributes_per_vertex"] == pytest.approx(3.0)  # position, normal, uv
    assert cols["vs_instructions_static"] > 5
    assert cols["vs_instructions_per_vertex"] > 5
    assert 1 <= cols["texels_per_fragment"] <= 8
    assert cols["alu_tex_ratio"] > 1 and cols["fs_instructions_static"] > 3
    assert cols["overshading"] >= 1 and cols["primitives_per_tile"] > 0
    assert cols["fragments_per_primitive"] > 1
    assert 0 <= cols["helper_lane_fraction"] < 1

    assert main(["characterize", str(path), "--frames", "0:1"]) == 0
    text = capsys.readouterr().out
    for label in ("draw calls per frame", "vertices per draw call", "attributes per vertex",
                  "primitives per tile", "fragments per primitive", "ALU:TEX ratio",
                  "texels per fragment", "overshading", "Table 3.3", "Table 3.4"):
        assert label in text
    assert main(["characterize", str(path), "--json", "--frames", "1:2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["frames"] == [1, 1]
    assert np.isclose(data["columns"]["draw_calls_per_frame"],
                      report["per_frame"][1]["draw_calls_per_frame"])
    assert main(["characterize", str(path), "--frames", "5:9"]) == 2
    assert "--frames" in capsys.readouterr().err
