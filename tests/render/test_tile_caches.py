"""The texture caches of a pass, tile by tile (tilesim.render.pipeline.tile_caches): the hits
the renderer counts are those of a tile-based GPU's processors, each taking its tiles one after
the other in traversal order, a tile's draws in submission order, with one cache it never
empties.

The oracle is that GPU, simulated here access by access with a dictionary LRU per set: first
on generated access streams (every way count, traversal, skipped tiles), then on the accesses
a real render made (its samplers recorded every one), against the pass's ``tex_cache_misses``.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from texture_helpers import lru_touch

from tilesim.jit import disabled
from tilesim.render.pipeline import renderer as renderer_module
from tilesim.render.pipeline import texture_sampler
from tilesim.render.pipeline.texture_sampler import TextureCacheConfig
from tilesim.render.pipeline.tile_caches import TileCaches


def _gpu_misses(streams, tiles, cache, traversal, rendered):
    """Per tile, the misses of the GPU: ``streams[t]`` tile t's lines in order."""
    misses = np.zeros(tiles, dtype=np.int64)
    for p in range(cache.caches):
        sets = {}                                   # the processor's cache: set -> tags
        for t in traversal:
            if t % cache.caches != p or not rendered[t]:
                continue
            for line in streams[t]:
                tags = sets.setdefault(line % cache.sets, [])
                misses[t] += not lru_touch(tags, line // cache.sets, cache.ways)
    return misses


def _pass_misses(streams, tiles, cache, traversal, rendered, draws, compiled):
    """Per tile, what the pass counts: the streams' accesses draw by draw over all tiles
    (each draw takes its part of every tile's stream) through TileCaches, then the
    inherited hits taken off."""
    caches = TileCaches(tiles, cache)
    cold = np.zeros(tiles, dtype=np.int64)
    misses = []
    parts = [np.array_split(np.asarray(s, dtype=np.int64), draws) for s in streams]
    for d in range(draws):
        visit = np.random.default_rng(d).permutation(tiles)    # any order across tiles
        tile = np.concatenate([np.full(len(parts[t][d]), t) for t in visit]).astype(np.int64)
        line = np.concatenate([parts[t][d] for t in visit]).astype(np.int64)
        key = tile * cache.sets + line % cache.sets
        owner = (d << 20) + np.arange(tile.shape[0])
        with contextlib.nullcontext() if compiled else disabled():
            hit = caches.table.access(key, line // cache.sets, owner)
        cold += np.bincount(tile[~hit], minlength=tiles)
        misses.append((owner[~hit], tile[~hit]))
    with contextlib.nullcontext() if compiled else disabled():
        inherited, owners = caches.inherited_hits(traversal, rendered)
    # the owners name the accesses that hit instead: as many per tile as the count
    missed_owner = np.concatenate([m[0] for m in misses])
    missed_tile = np.concatenate([m[1] for m in misses])
    assert np.isin(owners, missed_owner).all() and len(set(owners.tolist())) == owners.size
    np.testing.assert_array_equal(
        np.bincount(missed_tile[np.isin(missed_owner, owners)], minlength=tiles), inherited)
    return cold - inherited


@pytest.mark.parametrize("ways", [1, 2, 4])
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_pass_counts_the_misses_of_processors_taking_tile_after_tile(ways, compiled, seed):
    rng = np.random.default_rng(seed)
    cache = TextureCacheConfig(caches=3, size_bytes=4 * ways * 64, ways=ways, line_bytes=64)
    tiles = 17
    # lines near each other, so that tiles share some and sets fill and overflow
    streams = [list(rng.integers(0, 40, rng.integers(0, 30))) for _ in range(tiles)]
    streams[5] = []                                     # a tile that samples nothing
    traversal = rng.permutation(tiles)
    rendered = rng.random(tiles) < 0.8                  # Rendering Elimination's skips
    expected = _gpu_misses(streams, tiles, cache, traversal, rendered)
    got = _pass_misses(streams, tiles, cache, traversal, rendered, draws=3, compiled=compiled)
    np.testing.assert_array_equal(got[rendered], expected[rendered])
    # and the correction matters: empty caches at every tile would count more
    cold = _pass_misses(streams, tiles, cache, traversal, np.zeros(tiles, bool), draws=3,
                        compiled=compiled)
    assert int(cold[rendered].sum()) > int(expected[rendered].sum())


# ------------------------------------------------------------------------------------------
# A real render


def _record_samplers(monkeypatch):
    """Make the renderer's samplers record their accesses; returns the samplers made."""
    made = []
    real = texture_sampler.TextureSampler

    def recording(units, **options):
        sampler = real(units, record_accesses=True, **options)
        made.append(sampler)
        return sampler

    monkeypatch.setattr(texture_sampler, "TextureSampler", recording)
    return made


def _capture_passes(monkeypatch, made):
    """Per pass that sampled, as it ends: (its TileCaches, its PassCounters, the samplers its
    draws made, the hits its tiles inherited)."""
    ended = []
    real = renderer_module.Renderer._end_pass

    def end_pass(self):
        counters, first = self._pass, len(made)
        caches = None if counters is None else counters.texture_caches
        made_before = sum(len(e[2]) for e in ended)
        real(self)
        if caches is not None:
            skipped = counters.tiles.get("re_tiles_skipped")
            rendered = None if skipped is None else np.asarray(skipped) == 0
            inherited = int(caches.inherited_hits(counters.traversal, rendered)[0].sum())
            ended.append((caches, counters, made[made_before:first], inherited))

    monkeypatch.setattr(renderer_module.Renderer, "_end_pass", end_pass)
    return ended


def _render_oracle(samplers, caches: TileCaches, counters):
    """Per tile, the GPU's misses over the accesses the pass's samplers recorded."""
    tiles = counters.tiles_x * counters.tiles_y
    streams = [[] for _ in range(tiles)]
    for sampler in samplers:
        if sampler._cache_lru is not caches.table:
            continue                                    # the vertex stage's
        lane_tile = np.asarray(sampler._lane_tile)
        for _, lanes, addresses in sampler.accesses:
            for tile, address in zip(lane_tile[lanes].tolist(), addresses.tolist(), strict=True):
                streams[tile].append(address // caches.cache.line_bytes)
    skipped = counters.tiles.get("re_tiles_skipped")
    rendered = np.ones(tiles, bool) if skipped is None else np.asarray(skipped) == 0
    return _gpu_misses(streams, tiles, caches.cache, counters.traversal, rendered), rendered


@pytest.mark.parametrize("scene", ["tex_min_filters", "render_to_texture"])
def test_a_render_counts_the_misses_of_the_gpu(scene, monkeypatch):
    from tilesim.render.replay import render_frames
    from tilesim.render.workloads.conformance_scenes import record_scene

    frames, width, height = record_scene(scene)
    _check_render(monkeypatch, lambda: list(render_frames(frames, width, height)), None)


def test_a_trace_with_rendering_elimination_counts_the_misses_of_the_gpu(monkeypatch):
    # like_candy_crush repeats its frames: RE skips tiles, which pass their processor's
    # lines on untouched.
    from repo_paths import TRACES

    from tilesim.render.replay import render_trace

    _check_render(monkeypatch, lambda: list(render_trace(
        TRACES / "like_candy_crush-1196x768.tsim", frames=[0, 1, 2], size=(398, 256),
        technique="re")), "re")


def _check_render(monkeypatch, render, technique):
    made = _record_samplers(monkeypatch)
    ended = _capture_passes(monkeypatch, made)
    render()
    assert ended
    inherited = skipped = 0
    for caches, counters, samplers, hits in ended:
        expected, rendered = _render_oracle(samplers, caches, counters)
        got = np.asarray(counters.tiles["tex_cache_misses"])
        np.testing.assert_array_equal(got[rendered], expected[rendered])
        inherited += hits
        skipped += int((~rendered).sum())
    assert inherited > 0                    # tiles did start from their processor's lines
    assert skipped > 0 or technique != "re"
