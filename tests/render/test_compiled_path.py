"""The compiled CPU path of the renderer (:mod:`tilesim.jit`: the Numba kernels beside each
stage and technique, for rasterization, interpolation, the depth test and color write in
submission order, the per-tile counters, texture sampling, RE's signatures, EVR and
memoization) against the NumPy path it replaces.

The kernels do the NumPy code's arithmetic in the NumPy code's order, so a render must be
bit-identical both ways: every frame, and every per-tile counter of every pass (not only the
totals). The same renders run on a machine without Numba (or with ``TILESIM_JIT=0``), where
both sides take the NumPy path.
"""

from __future__ import annotations

import contextlib
import zlib

import numpy as np
import pytest
from repo_paths import TRACES

from tilesim.jit import (
    AVAILABLE,
    disabled,
    enabled,
    nondecreasing,
    spans,
    stable_order_compiled,
    threads_pinned,
    usable,
)
from tilesim.render.pipeline import output_merger
from tilesim.render.pipeline.output_merger import BLEND_EQUATIONS, BLEND_FACTORS, DEPTH_FUNCS
from tilesim.render.replay import render_frames
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.early_visibility import maximum_at_compiled
from tilesim.render.workloads.conformance_scenes import SCENES, record_scene


def _render(frames, width, height, techniques=None, **options):
    images, counters = [], []
    hooks = None if techniques is None else Techniques.from_name(techniques)
    for result in render_frames(frames, width, height, technique=hooks, **options):
        images.append(result.image)
        counters.append((result.counters.scalars,
                         [(p.target, {**{k: np.asarray(v) for k, v in p.tiles.items()},
                                      **{f"fs_program.{d}": np.asarray(v)
                                         for d, v in p.fs_programs.items()}})
                          for p in result.counters.passes]))
    return images, counters


def _assert_same(expected, actual):
    images, counters = expected
    images2, counters2 = actual
    assert len(images) == len(images2)
    for frame, (a, b) in enumerate(zip(images, images2, strict=True)):
        np.testing.assert_array_equal(b, a, f"frame {frame}")
    for frame, ((scalars, passes), (scalars2, passes2)) in enumerate(
            zip(counters, counters2, strict=True)):
        assert scalars2 == scalars, f"frame {frame}"
        assert [t for t, _ in passes2] == [t for t, _ in passes], f"frame {frame}"
        for k, ((_, tiles), (_, tiles2)) in enumerate(zip(passes, passes2, strict=True)):
            assert tiles2.keys() == tiles.keys(), f"frame {frame} pass {k}"
            for name in tiles:
                np.testing.assert_array_equal(tiles2[name], tiles[name],
                                              f"frame {frame} pass {k} counter {name}")


def _both(frames, width, height, techniques=None, **options):
    with disabled():
        reference = _render(frames, width, height, techniques, **options)
    return reference, _render(frames, width, height, techniques, **options)


def test_the_kernels_are_compiled_where_numba_is_installed():
    pytest.importorskip("numba")
    assert AVAILABLE
    with disabled():
        assert not usable(np.zeros(1))
    assert usable(np.zeros(1)) == enabled()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCENES))
def test_every_conformance_scene_renders_identically_on_the_compiled_path(name):
    frames, width, height = record_scene(name)
    _assert_same(*_both(frames, width, height))


# Scenes that exercise what each technique reacts to (several frames and render targets, depth
# tests, blending, textures); DSR renders superfragments through the same kernels.
TECHNIQUE_SCENES = ("overlap_order", "depth_funcs", "render_to_texture", "tex_min_filters")


@pytest.mark.slow
@pytest.mark.parametrize("techniques", ["te+re+evr", "dsr", "memo"])
@pytest.mark.parametrize("name", TECHNIQUE_SCENES)
def test_techniques_run_identically_on_the_compiled_path(name, techniques):
    frames, width, height = record_scene(name)
    _assert_same(*_both(frames, width, height, techniques))


@pytest.mark.parametrize("rate", [1, 2])
def test_fixed_sampling_rates_render_identically_on_the_compiled_path(rate):
    frames, width, height = record_scene("blend_factors")
    _assert_same(*_both(frames, width, height, tile_rates=rate))


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["runner", "match3", "sidescroller", "render_to_texture"])
def test_bundled_workloads_render_identically_on_the_compiled_path(workload):
    from tilesim.render.traces.trace_file import read_frames

    frames = read_frames(TRACES / f"{workload}-1196x768.tsim")[:2]
    _assert_same(*_both(frames, 1196, 768))


def test_blending_in_submission_order_matches_the_rank_groups():
    """Every blend factor and equation, with overlapping fragments, several per pixel."""
    rng = np.random.default_rng(7)
    pixel = rng.integers(0, 40, 400)
    color = rng.uniform(-0.2, 1.2, (400, 4)).astype(np.float32)
    color[5] = np.nan
    factors = list(BLEND_FACTORS)
    equations = list(BLEND_EQUATIONS)

    class State:
        blend = True
        blend_color = (0.25, 0.5, 0.75, 0.125)
        color_mask = (True, True, False, True)

    for k in range(len(factors)):
        state = State()
        state.blend_src_rgb = factors[k]
        state.blend_dst_rgb = factors[(k + 3) % len(factors)]
        state.blend_src_alpha = factors[(k + 7) % len(factors)]
        state.blend_dst_alpha = factors[(k + 11) % len(factors)]
        state.blend_eq_rgb = equations[k % 3]
        state.blend_eq_alpha = equations[(k + 1) % 3]
        for has_alpha in (True, False):
            keep = rng.random(400) < 0.8
            start = rng.integers(0, 256, (40, 4), dtype=np.uint8)
            buffers = [start.copy(), start.copy()]
            with disabled(), np.errstate(invalid="ignore"):   # the NaN color
                numpy_ops = output_merger.write_colors(pixel, color, buffers[0], state,
                                                       has_alpha, keep=keep)
            compiled_ops = output_merger.write_colors(pixel, color, buffers[1], state,
                                                      has_alpha, keep=keep)
            np.testing.assert_array_equal(buffers[1], buffers[0], str(vars(state)))
            assert compiled_ops == numpy_ops


@pytest.mark.parametrize("func", list(DEPTH_FUNCS))
def test_depth_test_in_submission_order_matches_the_rank_groups(func):
    rng = np.random.default_rng(3)
    pixel = rng.integers(0, 50, 500)
    depth = rng.integers(0, 1 << 24, 500)
    start = rng.integers(0, 1 << 24, 50).astype(np.uint32)
    for write in (True, False):
        buffers = [start.copy(), start.copy()]
        with disabled():
            expected = output_merger.depth_test(pixel, depth, buffers[0], func, write)
        passed = output_merger.depth_test(pixel, depth, buffers[1], func, write)
        np.testing.assert_array_equal(passed, expected)
        np.testing.assert_array_equal(buffers[1], buffers[0])


@pytest.mark.parametrize("ways", [1, 2, 4])
def test_the_compiled_lru_matches_the_vectorized_one(ways):
    from tilesim.render.pipeline.set_associative import SetAssociativeLRU

    rng = np.random.default_rng(ways)
    tables = [SetAssociativeLRU(16, ways), SetAssociativeLRU(16, ways)]
    for batch in range(4):   # the contents carry over between batches
        key = rng.integers(0, 16, 3000)
        tag = rng.integers(0, 6, 3000)
        with disabled():
            expected = tables[0].access(key, tag)
        hit = tables[1].access(key, tag)
        np.testing.assert_array_equal(hit, expected, f"batch {batch}")
        np.testing.assert_array_equal(tables[1].state, tables[0].state, f"batch {batch}")


@pytest.mark.parametrize("ways", [1, 2, 4])
def test_the_compiled_lru_with_a_payload_matches_the_vectorized_one(ways):
    from tilesim.render.pipeline.set_associative import SetAssociativeLRU

    rng = np.random.default_rng(10 + ways)
    tables = [SetAssociativeLRU(8, ways, payload_dtype=np.int64) for _ in range(2)]
    for batch in range(4):   # the contents and payloads carry over between batches
        key = rng.integers(0, 8, 3000)
        tag = rng.integers(0, 5, 3000)
        # Alternating tags in one set too (the vectorized path drops their inner accesses).
        key[:200], tag[:200] = 3, np.arange(200) % 2
        payload = rng.integers(0, 1 << 40, 3000)
        with disabled():
            expected = tables[0].access_with_payload(key, tag, payload.copy())
        hit, value = tables[1].access_with_payload(key, tag, payload.copy())
        np.testing.assert_array_equal(hit, expected[0], f"batch {batch}")
        np.testing.assert_array_equal(value, expected[1], f"batch {batch}")
        np.testing.assert_array_equal(tables[1].state, tables[0].state, f"batch {batch}")
        np.testing.assert_array_equal(tables[1].payload, tables[0].payload, f"batch {batch}")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tex_min_filters", "tex_mip_explicit", "tex_wrap_modes",
                                  "cubemap", "render_to_texture"])
def test_texture_sampling_in_chunks_renders_identically(name, monkeypatch):
    """Full-screen draws sample their textures SAMPLE_CHUNK_LANES lanes at a time (to bound
    memory); chunks of 64 lanes give the same frames and counters as one pass."""
    from tilesim.render.pipeline import texture_sampler

    frames, width, height = record_scene(name)
    whole = _render(frames, width, height)
    monkeypatch.setattr(texture_sampler, "SAMPLE_CHUNK_LANES", 64)
    _assert_same(whole, _render(frames, width, height))


def test_the_compiled_signature_unit_matches_the_vectorized_one():
    from tilesim.render.techniques.signature_unit import compute_crc

    rng = np.random.default_rng(11)
    subblocks = rng.integers(0, 1 << 63, (300, 9), dtype=np.uint64) * np.uint64(2) + \
        rng.integers(0, 2, (300, 9), dtype=np.uint64)
    lengths = rng.integers(0, 10, 300)
    with disabled():
        expected = compute_crc(subblocks, lengths)
        expected_full = compute_crc(subblocks)
    np.testing.assert_array_equal(compute_crc(subblocks, lengths), expected)
    np.testing.assert_array_equal(compute_crc(subblocks), expected_full)


def test_counters_added_in_one_pass_equal_one_pass_each_on_both_paths():
    """PassCounters.add_each (one compiled pass for several counters of the same entries)
    adds what add adds per counter: integer (contiguous or not), bool, constant (Python and
    NumPy integers, broadcast views of one value as DynamicStats gives uniform counts, zero
    among them) and no weights; tile numbers out of range are refused, nothing added."""
    from tilesim.render.pipeline.counters import PassCounters

    rng = np.random.default_rng(13)
    tile = rng.integers(0, 12, 5000)
    weights = {"fs_alu": rng.integers(0, 40, 5000).astype(np.int32),
               "fragments_shaded": rng.random(5000) < 0.3, "quads_shaded": None,
               "tex_cache_misses": rng.integers(0, 9, 10000)[::2], "prims_binned": 3,
               "pb_bytes_read": np.int64(70),
               "fs_tex": np.broadcast_to(np.int32(2), (5000,)),
               "fs_flow": np.broadcast_to(np.zeros((3, 1), np.int32), (3, 5000))[1],
               "fragments_discarded": np.broadcast_to(True, (5000,))}

    def counted(add_each: bool, jit: bool) -> dict:
        counters = PassCounters("default", 64, 48, 16, 4, 3, np.arange(12))
        with contextlib.nullcontext() if jit else disabled():
            for _ in range(2):           # adds onto what is there
                if add_each:
                    counters.add_each(tile, weights)
                else:
                    for name, w in weights.items():
                        counters.add(name, tile, np.full(tile.size, w)
                                     if isinstance(w, (int, np.integer)) else
                                     None if w is None else np.array(w))   # materialized
        return {name: counters.tiles[name].copy() for name in weights}

    expected = counted(False, False)
    for add_each, jit in [(True, True), (True, False), (False, True)]:
        got = counted(add_each, jit)
        for name in weights:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    assert expected["quads_shaded"].sum() == 2 * tile.size
    assert expected["prims_binned"].sum() == 6 * tile.size
    assert expected["fs_tex"].sum() == 4 * tile.size and not expected["fs_flow"].any()
    refused = PassCounters("default", 64, 48, 16, 4, 3, np.arange(12))
    with pytest.raises(ValueError, match="outside"):
        refused.add_each(np.array([0, 12]), {"fs_alu": np.array([1, 1]), "prims_binned": 2})
    assert not refused.tiles["fs_alu"].any() and not refused.tiles["prims_binned"].any()
    # each kernel checks as it counts: what it added before the tile number outside is taken
    # back, for every kind of weight
    for weights_ in (None, 3, np.array([2, 5, 1]), np.array([True, False, True]),
                     np.array([0.5, 2.0, 1.0])):
        refused.add("pixels_written", np.array([1, 2, 0]), weights_)
        before = refused.tiles["pixels_written"].copy()
        with pytest.raises(ValueError, match="outside"):
            refused.add("pixels_written", np.array([1, 2, -1]), weights_)
        np.testing.assert_array_equal(refused.tiles["pixels_written"], before)
    # weights that do not match the tile numbers are refused too (the kernels read the
    # weights unchecked, as NumPy's bincount refuses them)
    with pytest.raises(ValueError, match="2 weights for 3 tile numbers"):
        refused.add_each(np.array([0, 1, 2]), {"fs_alu": np.array([1, 1])})


@pytest.mark.parametrize("count", [1, 2, 3])
def test_kept_quads_are_numpys_selection_on_any_thread_count(count):
    """keep_quads: the quads' and their lanes' rows where the mask keeps them, in order, as
    NumPy's boolean indexing gives them, whatever the spans; arrays of other lengths
    refused."""
    from tilesim.jit import keep_quads

    rng = np.random.default_rng(count)
    for quads, share in ((70_001, 0.5), (50_000, 0.0), (50_000, 1.0), (3, 0.5)):
        keep = rng.random(quads) < share
        quad_arrays = (rng.integers(0, 9, quads), rng.random(quads))
        lane_arrays = (rng.integers(-5, 5, 4 * quads), rng.random(4 * quads),
                       rng.random(4 * quads) < 0.5, rng.integers(0, 9, 4 * quads, np.int32))
        with threads_pinned(count):
            kept_quads, kept_lanes = keep_quads(keep, quad_arrays, lane_arrays)
        lanes = np.repeat(keep, 4)
        for got, a in zip(kept_quads, quad_arrays, strict=True):
            assert got.dtype == a.dtype
            np.testing.assert_array_equal(got, a[keep])
        for got, a in zip(kept_lanes, lane_arrays, strict=True):
            assert got.dtype == a.dtype
            np.testing.assert_array_equal(got, a[lanes])
    with pytest.raises(ValueError, match="keep_quads"):
        keep_quads(np.ones(4, dtype=bool), (np.zeros(4),), (np.zeros(15),))


def test_counts_in_spans_on_threads_are_the_counts_of_one_call():
    """Integer counts of many entries run in spans on the kernel threads, each into its own
    array: the same sums as one call, and nothing added where a later span refuses."""
    from tilesim.render.pipeline import counters as counters_module

    rng = np.random.default_rng(7)
    n = 3 * counters_module.COUNT_SPLIT_MIN + 5
    tile = rng.integers(0, 50, n)
    for weights in (None, 3, rng.integers(-4, 9, n), rng.random(n) < 0.5):
        one = np.zeros(50, dtype=np.int64)
        with threads_pinned(1):
            counters_module.add_counts_compiled(one, tile, weights, scale=2)
        for count in (2, 3):
            split = np.zeros(50, dtype=np.int64)
            with threads_pinned(count):
                assert len(spans(n)) == count
                counters_module.add_counts_compiled(split, tile, weights, scale=2)
            np.testing.assert_array_equal(split, one)
        bad = tile.copy()
        bad[-1] = 50                 # in the last span only
        with threads_pinned(2), pytest.raises(ValueError, match="outside"):
            counters_module.add_counts_compiled(split, bad, weights, scale=2)
        np.testing.assert_array_equal(split, one)


def test_scaled_counts_are_the_counts_of_scaled_weights_on_both_paths():
    """PassCounters.add with ``scale``: the counts of the weights times the scale, exactly,
    for integer, bool, constant and absent weights, compiled and with NumPy's bincount (the
    texel counters by filter are counted so, from the samples of each kind)."""
    from tilesim.render.pipeline.counters import PassCounters

    rng = np.random.default_rng(15)
    tile = rng.integers(0, 12, 4000)
    cases = {"texels_bilinear": rng.integers(0, 5, 4000), "fs_alu": rng.random(4000) < 0.4,
             "prims_binned": 3, "quads_shaded": None}
    for jit in (True, False):
        scaled = PassCounters("default", 64, 48, 16, 4, 3, np.arange(12))
        plain = PassCounters("default", 64, 48, 16, 4, 3, np.arange(12))
        with contextlib.nullcontext() if jit else disabled():
            for name, w in cases.items():
                scaled.add(name, tile, w, scale=8)
                weights = np.ones(tile.size, np.int64) if w is None else np.full(
                    tile.size, w) if isinstance(w, int) else np.asarray(w, np.int64)
                plain.add(name, tile, weights * 8)
        for name in cases:
            np.testing.assert_array_equal(scaled.tiles[name], plain.tiles[name], name)
            assert scaled.tiles[name].sum() > 0


def test_the_compiled_maximum_at_is_numpys():
    rng = np.random.default_rng(14)
    table = rng.integers(0, 50, 300)
    index = rng.integers(0, 300, 20000)
    values = rng.integers(0, 100, 20000)
    expected = table.copy()
    np.maximum.at(expected, index, values)
    selected = table.copy()
    maximum_at_compiled(table, index, values)
    np.testing.assert_array_equal(table, expected)
    where = rng.random(20000) < 0.3
    expected = selected.copy()
    np.maximum.at(expected, index[where], values[where])
    maximum_at_compiled(selected, index, values, where)
    np.testing.assert_array_equal(selected, expected)
    with pytest.raises(IndexError, match="outside"):
        maximum_at_compiled(table, np.array([300]), np.array([1]))


def test_the_compiled_signature_fold_matches_the_vectorized_one():
    """Entries folded one by one in submission order (repeated tiles, empty and long blocks)
    give the linearity-based vectorized fold's signatures."""
    from tilesim.render.techniques.signature_unit import fold_crc32

    rng = np.random.default_rng(12)
    signatures = rng.integers(0, 1 << 32, 40, dtype=np.uint64).astype(np.uint32)
    tiles = rng.integers(0, 40, 2000)
    crc = rng.integers(0, 1 << 32, 2000, dtype=np.uint64).astype(np.uint32)
    lengths = rng.integers(0, 70, 2000)
    lengths[::97] = 1 << 40           # advances far past one period of the CRC's shift map
    with disabled():
        expected = fold_crc32(signatures, tiles, crc, lengths)
    folded = fold_crc32(signatures, tiles, crc, lengths)
    np.testing.assert_array_equal(folded, expected)
    assert folded is not signatures and not np.array_equal(folded, signatures)

@pytest.mark.parametrize("quad", [False, True])
@pytest.mark.parametrize("bits", [32, 64])
def test_the_compiled_memoization_keys_match_the_vectorized_ones(quad, bits):
    import zlib

    from tilesim.render.techniques.fragment_memoization import crc32_words, fragment_keys

    rng = np.random.default_rng(5)
    inputs = rng.standard_normal((3, 4, 4000)).astype(np.float32)
    inputs[0, 0, :8] = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45]
    with disabled():
        expected = fragment_keys(inputs, 0xDEADBEEF, quad, bits)
    np.testing.assert_array_equal(fragment_keys(inputs, 0xDEADBEEF, quad, bits), expected)
    # And both are zlib's CRC-32 of each message, continuing from the running value.
    words = rng.integers(0, 1 << 32, (7, 50), dtype=np.uint32)
    assert crc32_words(words, 99).tolist() == [zlib.crc32(words[:, j].tobytes(), 99)
                                               for j in range(50)]


def test_the_compiled_stable_order_is_the_stable_argsort():
    rng = np.random.default_rng(3)
    for n, bins in ((0, 5), (1, 1), (5000, 7), (20000, 3588)):
        keys = rng.integers(0, bins, n).astype(np.int64)
        np.testing.assert_array_equal(stable_order_compiled(keys, bins),
                                      np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("tile_size", [1, 2, 6, 16, 32, 48])
@pytest.mark.parametrize("scale", [1, 2, 3])
def test_the_compiled_tiles_of_lanes_and_quads_are_the_framebuffers(tile_size, scale):
    """The kernels' tiles (a shift for power-of-two sizes, a division else) against
    ``Framebuffer.tile_of``, negative coordinates included (a shift floors them too)."""
    from tilesim.render.pipeline.framebuffer import RenderTarget
    from tilesim.render.pipeline.quad_stages import pixel_tile_compiled, quad_tiles_compiled

    target = RenderTarget(97, 61, tile_size=tile_size)
    rng = np.random.default_rng(tile_size * 10 + scale)
    x = rng.integers(-40, 60, 3000)
    y = rng.integers(-40, 40, 3000)
    px, py = x * scale, y * scale
    if scale > 1:
        px, py = np.minimum(px, target.width - 1), np.minimum(py, target.height - 1)
    pixel, tile = pixel_tile_compiled(x, y, scale, target.width, target.height, tile_size,
                                      target.tiles_x)
    np.testing.assert_array_equal(tile, target.tile_of(px, py))
    np.testing.assert_array_equal(pixel, py * target.width + px)
    qx, qy = x.astype(np.int32) // 2, y.astype(np.int32) // 2
    step_x, step_y = 2 * scale * qx.astype(np.int64), 2 * scale * qy.astype(np.int64)
    if scale > 1:
        step_x, step_y = (np.minimum(step_x, target.width - 1),
                          np.minimum(step_y, target.height - 1))
    expected = target.tile_of(step_x, step_y)
    for order in (np.arange(qx.size), np.argsort(expected, kind="stable")):
        tiles = quad_tiles_compiled(qx[order], qy[order], scale, target.width,
                                    target.height, tile_size, target.tiles_x)
        np.testing.assert_array_equal(tiles, expected[order])
        assert nondecreasing(tiles) == bool((np.diff(expected[order]) >= 0).all())


# -- texture sampling: the fused per-lane kernel against the NumPy sampler -----------------------

WRAPS = ("REPEAT", "CLAMP_TO_EDGE", "MIRRORED_REPEAT")
MIN_FILTERS = ("NEAREST", "LINEAR", "NEAREST_MIPMAP_NEAREST", "LINEAR_MIPMAP_NEAREST",
               "NEAREST_MIPMAP_LINEAR", "LINEAR_MIPMAP_LINEAR")
# Coordinates that sample like no texel in range: NaN, infinities, beyond 2^24, exact integers
# and halves, negative zero.
HOSTILE = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e7, -3e7, 0.0, -0.0, 1.0, -1.0,
                    0.5, -2.5, 7.0, 1 - 2 ** -24, 2 ** -30], dtype=np.float32)


def _sweep_lanes(quads: int, rng):
    """Quads whose texel footprint sweeps from magnification past the smallest level, centred
    on random (also negative) coordinates, with hostile values in some lanes."""
    scale = np.geomspace(1 / 64, 64, quads).astype(np.float32)          # texels per pixel
    dx = np.tile([0, 1, 0, 1], quads).astype(np.float32)
    dy = np.tile([0, 0, 1, 1], quads).astype(np.float32)
    step = np.repeat(scale / 64, 4)
    s = (np.repeat(rng.uniform(-3, 3, quads), 4) + dx * step).astype(np.float32)
    t = (np.repeat(rng.uniform(-3, 3, quads), 4) + dy * step * 0.7).astype(np.float32)
    for v in (s, t):
        picks = rng.choice(v.size, 64, replace=False)
        v[picks] = rng.choice(HOSTILE, 64)
    return s, t


def _sample_both(textures, requests, lane_tile=None, **sampler_options):
    """Sample ``requests`` (one after another: the cache carries over) on the NumPy path and
    on the compiled one; (colors, stats, cache state) of each."""
    from tilesim.render.pipeline.texture_sampler import TextureSampler, TextureStats

    results = []
    for numpy_path in (True, False):
        sampler = TextureSampler(dict(enumerate(textures)), **sampler_options)
        sampler.begin(lane_tile)
        with disabled() if numpy_path else contextlib.nullcontext(), \
                np.errstate(all="ignore"):
            colors = [sampler.sample(r) for r in requests]
        if sampler.stats is None:       # counters off
            results.append((colors, {}, None))
            continue
        stats = {name: getattr(sampler.stats, name).copy() for name in TextureStats.FIELDS}
        results.append((colors, stats, sampler._cache_lru.state.copy()))
    return results


def _assert_same_sampling(expected, actual):
    for k, (a, b) in enumerate(zip(expected[0], actual[0], strict=True)):
        np.testing.assert_array_equal(b.view(np.uint32), a.view(np.uint32), f"request {k}")
    for name, value in expected[1].items():
        np.testing.assert_array_equal(actual[1][name], value, name)
    if expected[2] is not None:
        np.testing.assert_array_equal(actual[2], expected[2], "cache contents")


@pytest.mark.slow
@pytest.mark.parametrize("options", ["default", "exact"])   # 8.8 fixed point / float filters
@pytest.mark.parametrize("mag_filter", ["NEAREST", "LINEAR"])
@pytest.mark.parametrize("min_filter", MIN_FILTERS)
@pytest.mark.parametrize("size", [(64, 32), (48, 20)])      # POT, NPOT
def test_the_compiled_texture_sampler_matches_the_numpy_one(size, min_filter, mag_filter,
                                                             options):
    """Every filter on both axes' wrap modes, implicit / biased / explicit LOD (clamped at both
    ends of the mip chain), hostile coordinates; colors to the bit, every counter, and the
    cache model's contents after two instructions."""
    from texture_helpers import request, rgba8_texture

    from tilesim.render.pipeline.texture_sampler import SamplerOptions

    rng = np.random.default_rng(zlib.crc32(repr((size, min_filter, mag_filter,
                                                            options)).encode()))
    w, h = size
    pixels = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    options = SamplerOptions() if options == "default" else SamplerOptions.exact()
    s, t = _sweep_lanes(256, rng)
    lane_tile = rng.integers(0, 9, s.size)
    for wrap_s, wrap_t in zip(WRAPS, WRAPS[1:] + WRAPS[:1], strict=True):
        tex = rgba8_texture(pixels, min_filter=min_filter, mag_filter=mag_filter,
                            wrap=(wrap_s, wrap_t), mipmaps=True, npot=True)
        lod = rng.uniform(-3, 12, s.size).astype(np.float32)
        lod[::37] = np.nan
        requests = [request(s, t), request(s, t, mode="bias", lod=lod),
                    request(s[::-1], t, mode="explicit", lod=lod)]
        requests[1].active = rng.random(s.size) < 0.9
        _assert_same_sampling(*_sample_both([tex], requests, lane_tile, options=options))


@pytest.mark.slow
@pytest.mark.parametrize("options", ["default", "exact", "flat"])
@pytest.mark.parametrize("filters", [("NEAREST_MIPMAP_NEAREST", "NEAREST"),
                                     ("LINEAR_MIPMAP_LINEAR", "LINEAR")])
def test_the_compiled_sampler_matches_on_cube_maps(filters, options):
    """Cube maps: NEAREST everywhere, LINEAR on faces (not seamless), and seamless LINEAR
    (which keeps the NumPy path) in one frame's cache."""
    from texture_helpers import cube_texture, request

    from tilesim.render.pipeline.texture_sampler import SamplerOptions

    rng = np.random.default_rng(len(options))
    options = {"default": SamplerOptions(), "exact": SamplerOptions.exact(),
               "flat": SamplerOptions.llvmpipe(cube_seamless=False)}[options]
    tex = cube_texture(8, rng.integers(0, 256, (6, 8, 8, 4), dtype=np.uint8),
                       TEXTURE_MIN_FILTER=filters[0], TEXTURE_MAG_FILTER=filters[1])
    tex.generate_mipmap()
    s, t = _sweep_lanes(128, rng)
    r = rng.uniform(-1, 1, s.size).astype(np.float32)
    requests = [request(s, t, r=r, target="CUBE"), request(t, r, r=s, target="CUBE")]
    _assert_same_sampling(*_sample_both([tex], requests, None, options=options))


@pytest.mark.slow
def test_the_compiled_sampler_matches_in_chunks_without_counters(monkeypatch):
    """Requests over several chunks, counters off, and no tile map (quads pick the caches)."""
    from texture_helpers import request, rgba8_texture

    from tilesim.render.pipeline import texture_sampler

    rng = np.random.default_rng(3)
    tex = rgba8_texture(rng.integers(0, 256, (32, 32, 4), dtype=np.uint8),
                        min_filter="LINEAR_MIPMAP_LINEAR", mag_filter="LINEAR", mipmaps=True)
    s, t = _sweep_lanes(200, rng)
    monkeypatch.setattr(texture_sampler, "SAMPLE_CHUNK_LANES", 96)
    _assert_same_sampling(*_sample_both([tex], [request(s, t), request(t, s)]))
    _assert_same_sampling(*_sample_both([tex], [request(s, t)], counters=False))


@pytest.mark.parametrize("geometry", [dict(ways=1), dict(ways=4), dict(block=8, line_bytes=32),
                                      dict(caches=3, size_bytes=3 * 2 * 64)])  # 3 sets
def test_the_compiled_cache_model_matches_for_every_geometry(geometry):
    """Other cache geometries: 1 or 4 ways, other blocks and lines, caches and sets not powers
    of two (the kernel's modulo and set index without masks)."""
    from texture_helpers import request, rgba8_texture

    from tilesim.render.pipeline.texture_sampler import TextureCacheConfig

    rng = np.random.default_rng(5)
    tex = rgba8_texture(rng.integers(0, 256, (40, 24, 4), dtype=np.uint8),
                        min_filter="LINEAR_MIPMAP_LINEAR", mag_filter="LINEAR", mipmaps=True,
                        npot=True)
    s, t = _sweep_lanes(300, rng)
    lane_tile = rng.integers(0, 7, s.size)
    _assert_same_sampling(*_sample_both([tex], [request(s, t), request(t, s)], lane_tile,
                                        cache=TextureCacheConfig(**geometry)))


def test_the_compiled_memoization_keys_take_empty_and_lane_batches():
    from tilesim.render.techniques.fragment_memoization import fragment_keys

    rng = np.random.default_rng(8)
    for shape in ((2, 4, 0), (1, 4, 7), (4, 4, 12)):
        inputs = rng.standard_normal(shape).astype(np.float32)
        for quad in (False, True) if shape[2] % 4 == 0 else (False,):
            for bits in (32, 64):
                with disabled():
                    expected = fragment_keys(inputs, 12345, quad, bits)
                keys = fragment_keys(inputs, 12345, quad, bits)
                assert keys.dtype == expected.dtype == np.uint64
                np.testing.assert_array_equal(keys, expected, f"{shape} {quad} {bits}")


@pytest.mark.parametrize("layout", ["float32", "rgba8", "packed"])
def test_the_compiled_memoization_lut_matches_the_vectorized_one(layout):
    """Batches in a given order (some fragments left out) against a small LUT: the same hits,
    colors, tags and entry colors after every batch; collisions happen (few tags)."""
    from tilesim.render.techniques.fragment_memoization import MemoLUT

    rng = np.random.default_rng(21)
    n = 3000
    make_colors = {"float32": lambda: rng.standard_normal((n, 4)).astype(np.float32),
                   "rgba8": lambda: rng.integers(0, 256, (n, 4)).astype(np.uint8),
                   "packed": lambda: rng.integers(0, 1 << 32, n).astype(np.uint32)}[layout]
    luts = [MemoLUT(sets=8, ways=4), MemoLUT(sets=8, ways=4)]
    for batch in range(4):
        keys = rng.integers(0, 8 * 6, n).astype(np.uint64)
        colors = make_colors()
        order = rng.permutation(n)[: n - 100] if batch % 2 else None
        with disabled():
            expected = luts[0].lookup_insert(keys, colors, order=order)
        hit, stored = luts[1].lookup_insert(keys, colors, order=order)
        assert 0 < hit.sum() < n - 100
        np.testing.assert_array_equal(hit, expected[0], f"batch {batch}")
        assert stored.dtype == expected[1].dtype
        np.testing.assert_array_equal(stored.view(np.uint8), expected[1].view(np.uint8))
        np.testing.assert_array_equal(luts[1].table.state, luts[0].table.state)
        np.testing.assert_array_equal(luts[1].table.payload, luts[0].table.payload)
        np.testing.assert_array_equal(luts[1].colors.view(np.uint8),
                                      luts[0].colors.view(np.uint8))


def test_the_compiled_memoizer_matches_the_vectorized_one():
    """Frames in pairs (and a trailing one), unshaded fragments among them: the same counters,
    hits, collisions and colors on both paths."""
    from tilesim.render.techniques.fragment_memoization import FragmentMemoizer, rows_differ

    rng = np.random.default_rng(4)
    tiles = 30
    traversal = rng.permutation(tiles)
    memoizers = [FragmentMemoizer(tiles, traversal=traversal, sets=4, ways=2)
                 for _ in range(2)]
    outcomes = [[], []]
    for frame in range(5):
        n = 4000 if frame != 2 else 0
        tile = rng.integers(0, tiles, n)
        keys = rng.integers(0, 40, n).astype(np.uint64)
        colors = rng.standard_normal((n, 4)).astype(np.float32)
        colors[:10] = -0.0
        shaded = rng.random(n) < 0.8
        with disabled():
            outcomes[0] += memoizers[0].add_frame(frame, tile, keys, colors, shaded)
        outcomes[1] += memoizers[1].add_frame(frame, tile, keys, colors, shaded)
    with disabled():
        outcomes[0] += memoizers[0].finish()
    outcomes[1] += memoizers[1].finish()
    assert [f.frame_index for f in outcomes[1]] == [f.frame_index for f in outcomes[0]] == \
        list(range(5))
    assert sum(f.memo_collisions for f in outcomes[1]) > 0
    for a, b in zip(outcomes[0], outcomes[1], strict=True):
        assert b.memo_collisions == a.memo_collisions
        for name in ("memo_lookups", "memo_hits", "memo_table_writes", "hit"):
            np.testing.assert_array_equal(getattr(b, name), getattr(a, name), name)
            assert getattr(b, name).dtype == getattr(a, name).dtype, name
        assert not rows_differ(b.colors, a.colors).any()


def test_the_compiled_rows_differ_compares_bits():
    from tilesim.render.techniques.fragment_memoization import rows_differ

    a = np.array([[0.0, 1.0], [np.nan, 2.0], [-0.0, 3.0], [4.0, 5.0]], dtype=np.float32)
    b = np.array([[0.0, 1.0], [np.nan, 2.0], [0.0, 3.0], [4.0, 6.0]], dtype=np.float32)
    with disabled():
        expected = rows_differ(a, b)
    assert expected.tolist() == [False, False, True, True]
    np.testing.assert_array_equal(rows_differ(a, b), expected)
    np.testing.assert_array_equal(rows_differ(a[:0], b[:0]), expected[:0])
    packed = np.array([1, 2, 3], dtype=np.uint32)
    np.testing.assert_array_equal(rows_differ(packed, packed[::-1]), [True, False, True])


def test_the_compiled_memoization_order_is_the_stable_sort_of_shaded_lanes():
    from tilesim.render.techniques.fragment_memoization import _lookup_order

    rng = np.random.default_rng(9)
    rank = rng.permutation(50)
    tile = rng.integers(0, 50, 6000)
    shaded = rng.random(6000) < 0.7
    with disabled():
        expected = _lookup_order(tile, shaded, rank)
    np.testing.assert_array_equal(_lookup_order(tile, shaded, rank), expected)
    lanes = np.flatnonzero(shaded)
    np.testing.assert_array_equal(expected, lanes[np.argsort(rank[tile[lanes]], kind="stable")])


def test_the_compiled_rows_differ_reads_only_the_rows_selected():
    from tilesim.render.techniques.fragment_memoization import rows_differ

    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, (500, 4)).astype(np.uint8)
    b = rng.integers(0, 3, (500, 4)).astype(np.uint8)
    where = rng.random(500) < 0.3
    with disabled():
        expected = rows_differ(a, b, where=where)
    np.testing.assert_array_equal(expected, where & (a != b).any(axis=1))
    np.testing.assert_array_equal(rows_differ(a, b, where=where), expected)


def _clipped_both_ways(vertices, triangles):
    from tilesim.render.pipeline import clipping

    compiled = clipping.clip_triangles(vertices, triangles)
    with disabled():
        plain = clipping.clip_triangles(vertices, triangles)
    return compiled, plain


def _assert_clipped_same(compiled, plain):
    assert compiled.vertices.shape == plain.vertices.shape
    # bit for bit, NaN payloads and signed zeros included
    np.testing.assert_array_equal(compiled.vertices.view(np.uint64),
                                  plain.vertices.view(np.uint64))
    np.testing.assert_array_equal(compiled.triangles, plain.triangles)
    np.testing.assert_array_equal(compiled.source, plain.source)
    assert (compiled.rejected, compiled.split) == (plain.rejected, plain.split)


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_clipper_matches_the_vectorized_passes(seed):
    """Triangles across the near, far, w and guard-band planes (many cut by several), with
    w near the epsilon, integer coordinates on the planes, and NaN / infinite attributes: the
    compiled Sutherland-Hodgman gives the vectorized passes' vertices bit for bit."""
    rng = np.random.default_rng(seed)
    split = 0
    for trial in range(200):
        count, width = int(rng.integers(3, 40)), int(rng.integers(5, 12))
        vertices = rng.normal(0, 3, (count, width)) * rng.choice([1, 10, 100], (count, 1))
        vertices[:, 3] = rng.normal(0.5, 2, count)
        if trial % 5 == 0:
            vertices[rng.integers(0, count, 3), rng.integers(4, width)] = rng.choice(
                [np.inf, -np.inf, np.nan, -0.0])
        if trial % 7 == 0:
            vertices[:, 3] = np.abs(vertices[:, 3]) * 1e-7
        if trial % 11 == 0:
            vertices[:, :4] = np.round(vertices[:, :4])
        triangles = rng.integers(0, count, (int(rng.integers(1, 30)), 3))
        with np.errstate(all="ignore"):
            compiled, plain = _clipped_both_ways(vertices, triangles)
        _assert_clipped_same(compiled, plain)
        split += compiled.split
    assert split > 500   # the passes ran, not only the all-inside shortcut


def test_the_clipper_leaves_a_pass_it_cannot_hold_to_the_vectorized_passes(monkeypatch):
    """Where a pass would need more vertices than the vectorized pass holds (only a polygon
    rounding made non-convex could), the compiled clipper answers None and the vectorized
    passes clip: the kernel's bound checked with one vertex fewer held, and the fallback."""
    from tilesim.render.pipeline import clipping

    vertices = np.array([[0, 0, -2, 1, 5], [1, 0, 0.5, 1, 6], [0, 1, 0.5, 1, 7.0]])
    polygons = vertices[None]
    out = np.empty((1, 3 + len(clipping.PLANES), 5))
    counts = np.empty(1, dtype=np.int64)
    kernel = clipping._clip_polygons_kernel
    assert kernel(polygons, clipping.PLANES, clipping.W_EPSILON, clipping.PASS_HOLDS, out, counts)
    assert counts[0] == 4          # the near plane cut a corner off: a quad
    assert not kernel(polygons, clipping.PLANES, clipping.W_EPSILON, clipping.PASS_HOLDS - 1,
                      out, counts)
    calls = []
    passes = clipping._clip_polygons

    def counted(*args):
        calls.append(1)
        return passes(*args)

    monkeypatch.setattr(clipping, "_clip_polygons", counted)
    expected = clipping.clip_triangles(vertices, np.array([[0, 1, 2]]))
    assert calls == []
    monkeypatch.setattr(clipping, "PASS_HOLDS", clipping.PASS_HOLDS - 1)
    assert clipping.clip_polygons_compiled(polygons) is None
    fallback = clipping.clip_triangles(vertices, np.array([[0, 1, 2]]))
    assert len(calls) == len(clipping.PLANES)
    _assert_clipped_same(fallback, expected)


@pytest.mark.parametrize("seed", range(6))
def test_evr_tables_of_color_writes_match_on_both_paths(seed):
    """EVR's Layer Buffer, ZR, depth and color taints after batches of color writes (pixels
    written several times, excluded entries, blending, partial color masks, depth writes on
    and off): the compiled pass equals the vectorized assignments, order included (an
    excluded write wins a pixel a covering write of the same batch cleared)."""
    from types import SimpleNamespace

    from tilesim.render.gl.state import FragmentState
    from tilesim.render.pipeline.counters import PassCounters
    from tilesim.render.pipeline.framebuffer import RenderTarget
    from tilesim.render.techniques.early_visibility import EarlyVisibility

    rng = np.random.default_rng(seed)
    target = RenderTarget(70, 45, tile_size=16)

    def run(compiled: bool):
        evr = EarlyVisibility(target)
        evr.layer_buffer[:] = rng_tables.integers(0, 6, evr.layer_buffer.size)
        evr.zr[:] = rng_tables.integers(-1, 6, evr.zr.size)
        counters = PassCounters("default", 70, 45, 16, target.tiles_x, target.tiles_y,
                                np.arange(target.tile_count))
        for draw in draws:
            with (contextlib.nullcontext() if compiled else disabled()):
                evr.written(draw["draw"], counters, draw["pixel"], draw["tile"],
                            draw["color"], draw["entry"])
        return (evr.layer_buffer.copy(), evr.zr.copy(), evr.excluded_depth.copy(),
                evr.excluded_color.copy(), counters.tiles["evr_layer_buffer_writes"].copy())

    draws = []
    for _ in range(8):
        entries = int(rng.integers(1, 12))
        n = int(rng.integers(1, 400))
        pixel = rng.integers(0, 70 * 45, n) if rng.random() < 0.7 else \
            rng.integers(0, 30, n)                       # many writes to few pixels
        ys, xs = pixel // 70, pixel % 70
        fragment = FragmentState(depth_test=bool(rng.random() < 0.7),
                                 depth_mask=bool(rng.random() < 0.7),
                                 blend=bool(rng.random() < 0.4),
                                 color_mask=tuple(bool(v) for v in rng.random(4) < 0.85))
        fragment.blend_src_rgb = "SRC_ALPHA"
        fragment.blend_dst_rgb = str(rng.choice(["ZERO", "ONE_MINUS_SRC_ALPHA", "ONE"]))
        draw = SimpleNamespace(
            fragment=fragment, target=target,
            layers=rng.integers(0, 8, entries).astype(np.int64),
            excluded=(rng.random(entries) < 0.4) if rng.random() < 0.8 else None)
        draws.append({"draw": draw, "pixel": pixel.astype(np.int64),
                      "tile": (ys // 16 * target.tiles_x + xs // 16).astype(np.int64),
                      "color": rng.choice([0.5, 1.0], (n, 4)).astype(np.float32),
                      "entry": rng.integers(0, entries, n).astype(np.int64)})
    rng_tables = np.random.default_rng(seed + 100)
    compiled = run(True)
    rng_tables = np.random.default_rng(seed + 100)
    plain = run(False)
    for a, b in zip(compiled, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    assert compiled[3].any() and compiled[2].any()


@pytest.mark.parametrize("size", [(70, 45), (64, 32), (17, 1)])
@pytest.mark.parametrize("has_depth", [True, False])
def test_evr_tile_extrema_match_the_tile_blocks(size, has_depth):
    """The farthest depth and nearest layer of every tile, partial edge tiles included and
    without a depth buffer: one compiled pass over the pixels equals the padded tile blocks'
    maximum and minimum."""
    from tilesim.render.pipeline.framebuffer import RenderTarget
    from tilesim.render.techniques.early_visibility import tile_extrema_compiled

    rng = np.random.default_rng(size[0])
    target = RenderTarget(*size, has_depth=has_depth, tile_size=16)
    if has_depth:
        target.depth[:] = rng.integers(0, 2**24, target.depth.shape, dtype=np.uint32)
    layers = rng.integers(0, 1 << 40, size[0] * size[1]).astype(np.int64)
    t = target.tile_count
    depth = target.tile_blocks(target.depth if has_depth else
                               np.zeros((target.height, target.width), np.uint32))
    inside = target.tile_blocks(np.ones((target.height, target.width), dtype=bool))
    z_far = np.where(inside, depth, 0).reshape(t, -1).max(axis=1).astype(np.int64)
    blocks = target.tile_blocks(layers.reshape(target.height, target.width))
    l_far = np.where(inside, blocks, np.iinfo(np.int64).max).reshape(t, -1).min(axis=1)
    z, lo = tile_extrema_compiled(target, layers)
    np.testing.assert_array_equal(z, z_far)
    np.testing.assert_array_equal(lo, l_far)


def test_restoring_tiles_copies_their_pixels_whole():
    """RE's skipped tiles get last frame's colors back: every channel of every pixel of
    those tiles (as one 32-bit word for RGBA8), the others untouched, and the same through
    the channel-wise assignment of another layout."""
    from tilesim.render.pipeline.framebuffer import RenderTarget

    rng = np.random.default_rng(3)
    target = RenderTarget(70, 45, tile_size=16)
    target.color[:] = rng.integers(0, 256, target.color.shape, dtype=np.uint8)
    now, before = target.color.copy(), rng.integers(0, 256, target.color.shape, np.uint8)
    tiles = rng.random(target.tile_count) < 0.4
    target.restore_tiles(before, tiles)
    pixels = tiles[target.pixel_tiles()]
    expected = now.copy()
    expected[pixels] = before[pixels]
    np.testing.assert_array_equal(target.color, expected)
    target.color[:] = now
    target.restore_tiles(before[:, :, :4].copy(order="F"), tiles)   # not C-contiguous
    np.testing.assert_array_equal(target.color, expected)


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_planes_are_the_vectorized_ones(seed):
    """Attribute planes set up in one compiled pass (gathered from the vertex rows, divided
    by w where perspective) equal plane_coefficients' NumPy expressions bit for bit, with
    triangles degenerate before snapping (constant planes), integer coordinates, -0.0 and
    NaN / infinite attributes."""
    from tilesim.render.pipeline import fragment_shading
    from tilesim.render.pipeline.triangle_setup import Triangles

    rng = np.random.default_rng(seed)
    for trial in range(60):
        count, width = int(rng.integers(3, 30)), int(rng.integers(5, 14))
        rows = rng.normal(0, 3, (count, width)) * rng.choice([1, 1e-3, 1e5], (count, 1))
        if trial % 3 == 0:
            rows[rng.integers(0, count, 3), rng.integers(4, width)] = rng.choice(
                [np.inf, -np.inf, np.nan, -0.0])
        t = int(rng.integers(1, 40))
        vertex = rng.integers(0, count, (t, 3))
        fx, fy = rng.uniform(-50, 2000, (t, 3)), rng.uniform(-50, 2000, (t, 3))
        if trial % 4 == 0:
            fx, fy = np.round(fx), np.round(fy)
        fx[::5, 2], fy[::5, 2] = fx[::5, 0], fy[::5, 0]        # zero determinants
        inv_w = rng.uniform(0.01, 3, (t, 3))
        tris = Triangles(np.zeros((t, 3), np.int64), np.zeros((t, 3), np.int64), fx, fy,
                         rng.uniform(0, 1, (t, 3)), inv_w, vertex, np.ones(t, bool),
                         np.ones(t, np.int64), np.arange(t))
        col = int(rng.integers(0, width - 1))
        k = rows[:, col:col + 4].shape[1]
        for perspective in (False, True):
            values = rows[:, col:col + 4][vertex]
            if perspective:
                values = values * inv_w[:, :, None]
            with np.errstate(all="ignore"):
                with disabled():
                    expected = fragment_shading.plane_coefficients(tris, values)
                compiled = fragment_shading.plane_coefficients(tris, values)
                gathered = fragment_shading.attribute_planes_compiled(tris, rows, col, k,
                                                                      perspective)
            for plain, *others in zip(expected, compiled, gathered, strict=True):
                for other in others:
                    np.testing.assert_array_equal(other.view(np.int64), plain.view(np.int64))


@pytest.mark.parametrize("seed", range(4))
def test_walking_the_display_lists_gives_the_sorted_quads_of_the_chosen_entries(seed):
    """The raster phase walking the draw's display lists tile by tile
    (``rasterizer.rasterize_entries``) against rasterizing the chosen entries' triangles,
    sorting the quads by tile and dropping those whose tile's entry is not chosen (the
    vectorized path): the same fragments in the same order, the same entries and depths,
    for every DSR scale whose superquads fit a tile, with scissor rectangles, targets not a
    whole number of tiles, a few big and many small triangles, and every entry or a part."""
    from types import SimpleNamespace

    from tilesim.render.pipeline import binning, triangle_setup
    from tilesim.render.pipeline.framebuffer import RenderTarget
    from tilesim.render.pipeline.quad_stages import raster_fragments
    from tilesim.render.pipeline.rasterizer import walks_display_lists
    from tilesim.render.pipeline.renderer import DrawContext

    rng = np.random.default_rng(seed)
    walked = 0
    for trial in range(8):
        tile_size = int(rng.choice([8, 16, 32]))
        target = RenderTarget(int(rng.integers(40, 300)), int(rng.integers(30, 200)),
                              tile_size=tile_size)
        count = int(rng.integers(1, 400))
        spread = rng.choice([0.05, 0.4, 2.0], count)[:, None]
        centers = rng.uniform(-1.1, 1.1, (count, 1, 2))
        corners = centers + rng.normal(0, 1, (count, 3, 2)) * spread[:, :, None]
        vertices = np.zeros((count * 3, 4))
        vertices[:, :2] = corners.reshape(-1, 2)
        vertices[:, 2] = rng.uniform(-1, 1, count * 3)
        vertices[:, 3] = 1.0
        setup = triangle_setup.setup(vertices, np.arange(count * 3).reshape(-1, 3),
                                     np.arange(count), viewport=(0, 0, target.width,
                                                                 target.height),
                                     depth_range=(0.0, 1.0), cull=None, front_face="CCW")
        tris = setup.triangles
        if len(tris) == 0:
            continue
        rect = (0, 0, target.width, target.height)
        if trial % 3 == 1:
            rect = (int(rng.integers(0, 20)), int(rng.integers(0, 20)),
                    int(rng.integers(target.width // 2, target.width + 1)),
                    int(rng.integers(target.height // 2, target.height + 1)))
        bins = binning.bin_triangles(tris, rect, tile_size, target.tiles_x, 0)
        draw = SimpleNamespace(tris=tris, bins=bins, rect=rect, target=target)
        draw.entry_of = DrawContext.entry_of.__get__(draw)
        for scale in (1, 2, 4, 8):
            if not walks_display_lists(scale, tile_size):
                continue
            shrunk = tris if scale == 1 else tris.shrunk(scale)
            for entries in (None, rng.random(bins.tile.shape[0]) < 0.6):
                if scale > 1 and entries is None:
                    entries = np.ones(bins.tile.shape[0], dtype=bool)
                for with_entries in (False, True):
                    with disabled():
                        expected = raster_fragments(draw, shrunk, scale, entries, "bottom_left",
                                                    with_entries)
                    actual = raster_fragments(draw, shrunk, scale, entries, "bottom_left",
                                              with_entries)
                    if expected is None:
                        assert actual is None
                        continue
                    walked += 1
                    np.testing.assert_array_equal(actual.draw_triangle(),
                                                  expected.draw_triangle())
                    for name in ("covered", "pixel", "tile", "depth", "entry",
                                 "covered_index"):
                        a, b = getattr(actual, name), getattr(expected, name)
                        assert (a is None) == (b is None), name
                        if a is not None:
                            np.testing.assert_array_equal(a, b, name)
                    for name in ("qx", "qy", "x", "y", "z"):
                        np.testing.assert_array_equal(getattr(actual.lanes, name),
                                                      getattr(expected.lanes, name), name)
    assert walked > 25


@pytest.mark.parametrize("size", [(1196, 768, 16), (97, 61, 16), (100, 50, 7), (64, 64, 32)])
def test_the_compiled_count_per_tile_is_numpys(size):
    """Pixels per tile of a mask, compiled, against NumPy's block sums: targets not a whole
    number of tiles, odd tile sizes, empty and full masks, flat and 2-D."""
    from tilesim.render.pipeline.framebuffer import RenderTarget

    width, height, tile_size = size
    target = RenderTarget(width, height, tile_size=tile_size)
    rng = np.random.default_rng(width)
    for share in (0.0, 0.3, 1.0):
        mask = rng.random((height, width)) < share
        with disabled():
            expected = target.count_per_tile(mask)
        for shaped in (mask, mask.ravel()):
            counts = target.count_per_tile(shaped)
            assert counts.dtype == expected.dtype
            np.testing.assert_array_equal(counts, expected)


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_binning_writes_the_vectorized_lists(seed):
    """Display lists by a compiled counting sort against the vectorized stable sort: the
    same (tile, triangle) entries in the same order, with scissor rectangles, empty boxes,
    odd tile sizes and targets not a whole number of tiles."""
    from tilesim.render.pipeline import binning
    from tilesim.render.pipeline.triangle_setup import Triangles

    rng = np.random.default_rng(seed)
    for trial in range(40):
        width, height = int(rng.integers(1, 400)), int(rng.integers(1, 300))
        tile_size = int(rng.choice([4, 7, 16, 32]))
        tiles_x = -(-width // tile_size)
        count = int(rng.integers(0, 200))
        x = rng.integers(-40 * 256, (width + 40) * 256, (count, 3))
        y = rng.integers(-40 * 256, (height + 40) * 256, (count, 3))
        y[::3] = y[::3, :1]                               # flat boxes, empty after rounding
        tris = Triangles(x, y, x / 256, y / 256, np.zeros((count, 3)), np.ones((count, 3)),
                         np.zeros((count, 3), np.int64), np.ones(count, bool),
                         np.ones(count, np.int64), np.arange(count))
        rect = (0, 0, width, height) if trial % 2 else (
            int(rng.integers(0, width)), int(rng.integers(0, height)), width, height)
        with disabled():
            expected = binning.bin_triangles(tris, rect, tile_size, tiles_x, 4)
        got = binning.bin_triangles(tris, rect, tile_size, tiles_x, 4)
        np.testing.assert_array_equal(got.tile, expected.tile)
        np.testing.assert_array_equal(got.triangle, expected.triangle)
        assert got.record_bytes == expected.record_bytes
        assert got.tile.dtype == expected.tile.dtype and got.triangle.dtype == np.int64


def test_a_float_divided_by_zero_in_a_kernel_is_what_numpy_gives():
    """The kernels divide floats as NumPy does (an infinity or NaN, no exception): a helper
    lane whose interpolated 1/w is exactly 0 (or -0.0) is divided through, as the vectorized
    interpolation divides it (under Python's error model it raised ZeroDivisionError and the
    render stopped with a traceback)."""
    from tilesim.render.pipeline import fragment_shading

    planes = (np.array([[1.0, 0.0, -1.0]]), np.zeros((1, 3)), np.zeros((1, 3)))
    triangle, quad = np.zeros(1, np.int64), np.zeros(1, np.int64)
    inv_w = np.array([0.0, -0.0, 2.0, np.nan])
    out = np.empty((3, 4), dtype=np.float32)
    with np.errstate(all="ignore"):
        fragment_shading.evaluate_into_compiled(planes, triangle, quad, quad, inv_w, out)
        expected = (np.array([1.0, 0.0, -1.0])[:, None] / inv_w[None, :]).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_triangle_setup_is_the_vectorized_one(seed):
    """Triangle set-up in compiled passes against the vectorized set-up: the same window
    coordinates, snapped positions (halves rounding to even, coordinates beyond int64 cast
    as NumPy casts them), facing, culling counts and kept triangles, for every cull mode and
    winding, w of either sign, zero and tiny, and unused vertices."""
    from tilesim.render.pipeline import triangle_setup

    rng = np.random.default_rng(seed)
    for trial in range(40):
        count = int(rng.integers(3, 60))
        vertices = rng.normal(0, 1, (count, int(rng.integers(4, 9))))
        vertices[:, 3] = rng.choice([1.0, 0.5, 2.0, -1.0, 1e-300, 0.0, -0.0], count)
        viewport = (3, -2, 97, 61)
        if trial % 4 == 0:
            # window coordinates on half subpixels: a 2x2 viewport maps x to x + 1, exactly
            viewport = (0, 0, 2, 2)
            vertices[:, :2] = (rng.integers(-300, 300, (count, 2)) + 0.5) / 256 - 1
            vertices[:, 3] = 1.0
        if trial % 5 == 0:
            vertices[: count // 2, :3] *= 1e300
        triangles = rng.integers(0, count, (int(rng.integers(0, 50)), 3))
        source = np.arange(triangles.shape[0]) * 3
        for cull in (None, "BACK", "FRONT", "FRONT_AND_BACK"):
            for front_face in ("CCW", "CW"):
                options = dict(viewport=viewport, depth_range=(0.25, 0.9), cull=cull,
                               front_face=front_face)
                with np.errstate(all="ignore"), warnings_ignored():
                    with disabled():
                        expected = triangle_setup.setup(vertices, triangles, source, **options)
                    got = triangle_setup.setup(vertices, triangles, source, **options)
                assert (got.culled, got.degenerate) == (expected.culled, expected.degenerate)
                for name in ("x", "y", "fx", "fy", "z", "inv_w", "vertex", "front", "area2",
                             "source"):
                    a, b = getattr(got.triangles, name), getattr(expected.triangles, name)
                    assert a.dtype == b.dtype, name
                    np.testing.assert_array_equal(a, b, name)


@contextlib.contextmanager
def warnings_ignored():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
