"""A draw's fragment program run in parts (``quad_stages.SHADE_CHUNK_LANES``, which bounds the
memory of a full-screen draw at 4K) against one run over all its lanes: every frame, every
per-tile counter (present or absent alike) and what the techniques see are identical.

The scenes are small, so the tests lower the part size to 64 lanes (16 quads): every draw with
more runs in parts, several of them mid-triangle and mid-tile."""

from __future__ import annotations

import numpy as np
import pytest
from render_snapshots import assert_same_renders, render_snapshot
from repo_paths import TRACES

from tilesim.render.pipeline import quad_stages
from tilesim.render.workloads.conformance_scenes import record_scene


@pytest.fixture
def small_parts(monkeypatch):
    """Parts of 64 lanes; counts the draws that ran in more than one."""
    runs = []
    real = quad_stages._run_program

    def counting(program, tris, lanes_, *args):
        runs.append(lanes_.triangle.shape[0] * 4)
        return real(program, tris, lanes_, *args)

    monkeypatch.setattr(quad_stages, "_run_program", counting)

    def parts(on: bool):
        monkeypatch.setattr(quad_stages, "SHADE_CHUNK_LANES", 64 if on else 1 << 20)
    return parts, runs


@pytest.mark.parametrize("scene", ["tex_min_filters", "discard", "fragcoord_facing",
                                   "render_to_texture", "frag_depth", "blend_func_extended",
                                   "shader_texture_lod"])
def test_a_scene_renders_identically_in_parts(scene, small_parts):
    parts, runs = small_parts
    frames, width, height = record_scene(scene)
    parts(False)
    whole = render_snapshot(frames, width, height)
    parts(True)
    assert_same_renders(whole, render_snapshot(frames, width, height))
    assert max(runs) > 64                 # some draw did run in parts


@pytest.mark.parametrize("techniques", ["memo", "dsr", "te+re+evr"])
def test_techniques_see_the_same_fragments_in_parts(techniques, small_parts):
    parts, _ = small_parts
    frames, width, height = record_scene("tex_min_filters")
    parts(False)
    whole = render_snapshot(frames, width, height, techniques)
    parts(True)
    assert_same_renders(whole, render_snapshot(frames, width, height, techniques))


@pytest.mark.slow
def test_a_program_sampling_several_times_counts_its_cache_the_same_in_parts(small_parts):
    parts, runs = small_parts
    frames, width, height = record_scene("rtt_post_chain")
    parts(False)
    whole = render_snapshot(frames, width, height)
    parts(True)
    assert max(runs) > 64
    assert_same_renders(whole, render_snapshot(frames, width, height))


@pytest.mark.slow
def test_a_bundled_trace_renders_identically_in_parts(monkeypatch):
    from tilesim.render.traces.trace_file import read_frames

    frames = read_frames(TRACES / "runner-1196x768.tsim")[:2]
    whole = render_snapshot(frames, 1196, 768)
    monkeypatch.setattr(quad_stages, "SHADE_CHUNK_LANES", 4096)
    assert_same_renders(whole, render_snapshot(frames, 1196, 768))


def test_a_part_that_samples_nothing_leaves_the_batch_uncounted_as_one_run_would():
    """Per-tile texture counters exist for a draw only where it sampled: a part with no
    sample leaves :attr:`TextureSampler.stats` None, a later part that samples counts into
    its own slice of the whole batch."""
    from texture_helpers import request, rgba8_texture

    from tilesim.render.pipeline.texture_sampler import TextureSampler

    pixels = np.arange(4 * 4 * 4, dtype=np.uint8).reshape(4, 4, 4)
    sampler = TextureSampler({0: rgba8_texture(pixels)})
    sampler.begin(np.zeros(8, dtype=np.int64))
    with sampler.lanes(0, 4, 8):
        pass
    assert sampler.stats is None
    with sampler.lanes(4, 8, 8):
        sampler.sample(request([0.1, 0.4, 0.1, 0.4], [0.1, 0.1, 0.4, 0.4]))
    assert sampler.stats.lanes == 8
    assert sampler.stats.samples.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    with sampler.lanes(0, 4, 8):
        pass
    assert sampler.stats.samples.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]   # kept
