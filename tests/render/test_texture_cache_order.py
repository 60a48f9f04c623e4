"""The order in which the texture caches see a program's accesses when it reads texels more
than once per lane (``TextureSampler.warps_in_flight``, ``TextureCacheConfig``).

The oracle is written here from the model's text alone: the sampler's recorded accesses
(``record_accesses``: each instruction's lanes and byte addresses in issue order) are put in
the warps-in-flight order by plain loops (each cache's quads ``warps_in_flight`` at a time;
within that window every lane's first texel-reading instruction, then every lane's second)
and run through a dictionary LRU, one access at a time. The sampler must count the same
misses per lane, on the compiled and the plain path, whatever parts the lanes run in."""

from __future__ import annotations

import numpy as np
import pytest
from texture_helpers import lru_touch, request, rgba8_texture

from tilesim.jit import disabled
from tilesim.render.pipeline.texture_sampler import TextureCacheConfig, TextureSampler
from tilesim.render.pipeline.tile_caches import TileCaches
from tilesim.shaders.parser import parse

# 2 caches of 4 sets x 2 ways of 64-byte lines, 3 quads in flight: small enough that the
# order decides most hits.
CACHE = TextureCacheConfig(caches=2, size_bytes=512, ways=2, line_bytes=64, warps_in_flight=3)


# 3 caches of 3 sets (neither a power of two), 2 quads in flight.
ODD_CACHE = TextureCacheConfig(caches=3, size_bytes=384, ways=2, line_bytes=64,
                               warps_in_flight=2)


def _workload(seed: int = 5, quads: int = 23, divergent: bool = True):
    """A texture, the lanes' tiles and four requests; request 1 leaves some lanes out
    (``divergent`` control flow: their second read is request 2's) and request 3 samples an
    unbound unit (it reads nothing, but counts as a texel-reading instruction)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (64, 64, 4), dtype=np.uint8)
    texture = rgba8_texture(pixels, min_filter="LINEAR", mag_filter="LINEAR")
    n = 4 * quads
    lane_tile = np.repeat(rng.integers(0, 7, quads), 4)
    base = rng.random((2, quads)).astype(np.float32)
    requests = []
    for k in range(4):
        # quads cover 2 x 2 texels around a random spot, so implicit LODs stay at level 0
        offset = rng.random(2).astype(np.float32) * 0.5 * (k > 0)
        s = np.repeat(base[0], 4) + offset[0] + np.tile([0, 1, 0, 1], quads) / 64
        t = np.repeat(base[1], 4) + offset[1] + np.tile([0, 0, 1, 1], quads) / 64
        req = request(s, t, unit=1 if k == 3 else 0)
        if k == 1 and divergent:
            req.active = np.repeat(rng.random(quads) < 0.6, 4)
        requests.append(req)
    return texture, lane_tile, requests, n


def _oracle_misses(texture, lane_tile, requests, n, cache: TextureCacheConfig,
                   per_tile: bool = False):
    """``per_tile``: one cache per tile (the renderer's, TileCaches), else lane_tile % caches."""
    sampler = TextureSampler({0: texture}, lane_tile=lane_tile, cache=cache,
                             record_accesses=True)
    sampler.begin(lane_tile)
    reads = [[] for _ in range(n)]          # per lane: its reads, each a list of lines
    for req in requests:
        sampler.accesses = []
        sampler.sample(req)
        lines = [[] for _ in range(n)]
        for _, lanes, addresses in sampler.accesses:
            for lane, address in zip(lanes.tolist(), addresses.tolist(), strict=True):
                lines[lane].append(address // cache.line_bytes)
        active = np.ones(n, bool) if req.active is None else req.active
        for lane in range(n):
            if active[lane]:
                reads[lane].append(lines[lane])
    sets = {}                               # (cache, set) -> tags, least recent first
    misses = np.zeros(n, np.int64)
    groups = int(lane_tile.max()) + 1 if per_tile else cache.caches
    for c in range(groups):
        quads = [q for q in range(n // 4) if lane_tile[4 * q] % groups == c]
        for w in range(0, len(quads), cache.warps_in_flight):
            window = [4 * q + i for q in quads[w:w + cache.warps_in_flight] for i in range(4)]
            for k in range(max(len(reads[lane]) for lane in window)):
                for lane in window:
                    for line in (reads[lane][k] if k < len(reads[lane]) else []):
                        tags = sets.setdefault((c, line % cache.sets), [])
                        misses[lane] += not lru_touch(tags, line // cache.sets, cache.ways)
    return misses


def _held_stats(texture, lane_tile, requests, n, cache, part_quads=None, per_tile=False):
    tiles = TileCaches(int(lane_tile.max()) + 1, cache).table if per_tile else None
    sampler = TextureSampler({0: texture}, cache=cache, tile_caches=tiles)
    sampler.begin(lane_tile)
    with sampler.warps_in_flight(n):
        if part_quads is None:
            for req in requests:
                sampler.sample(req)
        else:
            for start in range(0, n, 4 * part_quads):
                stop = min(start + 4 * part_quads, n)
                with sampler.lanes(start, stop, n):
                    for req in requests:
                        sampler.sample(_part(req, start, stop))
                sampler.finished(stop)
    return sampler.stats


def _part(req, start, stop):
    from dataclasses import replace
    return replace(req, coords=req.coords[:, start:stop],
                   active=None if req.active is None else req.active[start:stop])


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("part_quads", [None, 1, 2, 5, 64])
@pytest.mark.parametrize("divergent", [True, False])
@pytest.mark.parametrize("cache", [CACHE, ODD_CACHE], ids=["cache", "odd_cache"])
@pytest.mark.parametrize("per_tile", [False, True], ids=["per_processor", "per_tile"])
def test_the_caches_see_the_warps_in_flight_order_in_any_parts(compiled, part_quads,
                                                               divergent, cache, per_tile):
    texture, lane_tile, requests, n = _workload(divergent=divergent)
    expected = _oracle_misses(texture, lane_tile, requests, n, cache, per_tile)
    if compiled:
        stats = _held_stats(texture, lane_tile, requests, n, cache, part_quads, per_tile)
    else:
        with disabled():
            stats = _held_stats(texture, lane_tile, requests, n, cache, part_quads, per_tile)
    np.testing.assert_array_equal(stats.cache_misses, expected)
    assert 0 < int(stats.cache_misses.sum()) < int(stats.cache_accesses.sum())


def test_the_order_is_not_one_instruction_over_every_lane():
    # The same accesses one instruction after the other over all lanes (no block) miss
    # differently: the test above can tell the orders apart.
    texture, lane_tile, requests, n = _workload()
    sampler = TextureSampler({0: texture}, cache=CACHE)
    sampler.begin(lane_tile)
    for req in requests:
        sampler.sample(req)
    held = _held_stats(texture, lane_tile, requests, n, CACHE)
    np.testing.assert_array_equal(sampler.stats.cache_accesses, held.cache_accesses)
    assert int(sampler.stats.cache_misses.sum()) != int(held.cache_misses.sum())


def test_one_read_per_lane_counts_as_without_the_block():
    texture, lane_tile, requests, n = _workload()
    plain = TextureSampler({0: texture}, cache=CACHE)
    plain.begin(lane_tile)
    plain.sample(requests[0])
    held = _held_stats(texture, lane_tile, requests[:1], n, CACHE, part_quads=2)
    for name in ("cache_accesses", "cache_misses", "texels", "samples"):
        np.testing.assert_array_equal(getattr(held, name), getattr(plain.stats, name))


def test_one_warp_in_flight_runs_each_quad_to_the_end():
    # warps_in_flight = 1: each quad's reads all go before the next quad's.
    texture, lane_tile, requests, n = _workload()
    cache = TextureCacheConfig(caches=2, size_bytes=512, ways=2, line_bytes=64,
                               warps_in_flight=1)
    np.testing.assert_array_equal(_held_stats(texture, lane_tile, requests, n, cache).cache_misses,
                                  _oracle_misses(texture, lane_tile, requests, n, cache))


def _program(body: str):
    lines = (body + "END\n").splitlines()
    numbered = "".join(f"{k:3d}: {line}\n" for k, line in enumerate(lines))
    return parse("FRAG\nDCL IN[0], GENERIC[0], PERSPECTIVE\nDCL OUT[0], COLOR\n"
                 "DCL SAMP[0]\nDCL TEMP[0..1]\n" + numbered)


@pytest.mark.parametrize("body, once", [
    ("MOV OUT[0], IN[0]\n", True),
    ("TEX OUT[0], IN[0], SAMP[0], 2D\n", True),
    ("TXQ TEMP[0], IN[0], SAMP[0], 2D\nTEX OUT[0], IN[0], SAMP[0], 2D\n", True),
    ("TEX TEMP[0], IN[0], SAMP[0], 2D\nTEX OUT[0], TEMP[0], SAMP[0], 2D\n", False),
    ("BGNLOOP\nTEX TEMP[0], IN[0], SAMP[0], 2D\nBRK\nENDLOOP\nMOV OUT[0], TEMP[0]\n", False),
    ("TXF TEMP[0], IN[0], SAMP[0], 2D\nTXB OUT[0], IN[0], SAMP[0], 2D\n", False),
])
def test_which_programs_read_texels_at_most_once(body, once):
    assert _program(body).reads_texels_at_most_once() is once


def test_the_warps_in_flight_are_the_shader_cores():
    # One number in two data files: the renderer's (baseline_gpu.toml) and the cycle-level
    # core's (shader_core.toml), both Shader Core Table 4.1.
    from tilesim.inputs import read_toml
    from tilesim.render.pipeline.gpu_config import GPU_CONFIG

    core = read_toml(GPU_CONFIG.parent / "shader_core" / "shader_core.toml", "configuration")
    assert TextureCacheConfig.from_gpu_config().warps_in_flight == \
        core["warps"]["max_warps"]["value"] == 32
