"""Set-associative LRU (tilesim.render.pipeline.set_associative) and fragment memoization with
parallel frame rendering (tilesim.render.techniques.fragment_memoization)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from tilesim.render.pipeline.set_associative import SetAssociativeLRU
from tilesim.render.pipeline.texture_sampler import TextureCacheConfig, TextureSampler
from tilesim.render.techniques.fragment_memoization import (
    FragmentMemoizer,
    MemoLUT,
    context_signature,
    crc32_words,
    fragment_keys,
    pack_rgba8,
    unpack_rgba8,
)


def reference_lru(keys, tags, ways, state, payload=None):
    """Plain Python LRU per set; ``state`` {key: [(tag, value)], oldest first} is updated.
    Returns hits and the value each access used (stored on a hit, its own on a miss)."""
    payload = [None] * len(keys) if payload is None else payload.tolist()
    hits, values = [], []
    for key, tag, value in zip(keys.tolist(), tags.tolist(), payload, strict=True):
        entries = state.setdefault(key, [])
        match = [i for i, (t, _) in enumerate(entries) if t == tag]
        if match:
            value = entries.pop(match[0])[1]
        elif len(entries) == ways:
            entries.pop(0)
        entries.append((tag, value))
        hits.append(bool(match))
        values.append(value)
    return np.array(hits, dtype=bool), np.array(values)


def random_stream(rng, groups, m):
    # Few tags, repeats and alternations (copies of the access 1 or 2 back, in order): hits,
    # evictions, merged repeats and dropped alternations all happen.
    keys = rng.integers(0, groups, m)
    tags = rng.integers(0, 7, m)
    back = rng.choice([0, 1, 2], m, p=[0.4, 0.2, 0.4])
    for i in range(2, m):           # in order: a copy may copy a copy
        if back[i]:
            keys[i], tags[i] = keys[i - back[i]], tags[i - back[i]]
    return keys.astype(np.int64), tags.astype(np.int64)


# ------------------------------------------------------------------------------------------
# The LRU


@pytest.mark.parametrize("ways", [1, 2, 3, 4, 8])
def test_lru_matches_reference_across_batches(ways):
    rng = np.random.default_rng(10 + ways)
    lru, state = SetAssociativeLRU(5, ways), {}
    for m in (0, 1, 300, 700):          # the state carries over between batches
        keys, tags = random_stream(rng, 5, m)
        want, _ = reference_lru(keys, tags, ways, state)
        np.testing.assert_array_equal(lru.access(keys, tags), want)


@pytest.mark.parametrize("ways", [1, 2, 4])
def test_texture_sampler_uses_the_same_lru(ways):
    cfg = TextureCacheConfig(caches=2, size_bytes=ways * 64 * 4, ways=ways)
    sampler = TextureSampler({}, cache=cfg)
    rng = np.random.default_rng(ways)
    state = {}
    for _ in range(3):
        keys, tags = random_stream(rng, cfg.caches * cfg.sets, 400)
        want, _ = reference_lru(keys, tags, ways, state)
        np.testing.assert_array_equal(sampler._lru(np, keys, tags), want)
    sampler.reset_cache()
    keys, tags = random_stream(rng, cfg.caches * cfg.sets, 50)
    np.testing.assert_array_equal(sampler._lru(np, keys, tags),
                                  reference_lru(keys, tags, ways, {})[0])


@pytest.mark.parametrize("ways", [1, 2, 4])
def test_lru_payload_returns_the_stored_value(ways):
    rng = np.random.default_rng(20 + ways)
    lru, state = SetAssociativeLRU(3, ways, payload_dtype=np.uint32), {}
    for m in (200, 500):
        keys, tags = random_stream(rng, 3, m)
        payload = rng.integers(0, 1 << 32, m, dtype=np.uint32)
        want_hit, want_value = reference_lru(keys, tags, ways, state, payload)
        hit, value = lru.access_with_payload(keys, tags, payload)
        np.testing.assert_array_equal(hit, want_hit)
        np.testing.assert_array_equal(value, want_value.astype(np.uint32))


def test_lru_payload_api_is_explicit():
    with pytest.raises(ValueError):
        SetAssociativeLRU(2, 2, payload_dtype=np.uint32).access(np.zeros(1, int), np.zeros(1, int))
    with pytest.raises(ValueError):
        SetAssociativeLRU(2, 2).access_with_payload(np.zeros(1, int), np.zeros(1, int),
                                                    np.zeros(1, np.uint32))


# ------------------------------------------------------------------------------------------
# Keys


def test_keys_are_zlib_crc32_of_the_lane_inputs():
    rng = np.random.default_rng(1)
    inputs = rng.standard_normal((3, 4, 8)).astype(np.float32)
    context = context_signature("program", np.arange(4, dtype=np.float32), 7)
    keys = fragment_keys(inputs, context)
    assert keys.dtype == np.uint64 and (keys >> np.uint64(32) == 0).all()  # zero-extended
    for lane in range(8):
        assert keys[lane] == zlib.crc32(inputs[:, :, lane].tobytes(), context)
    words = rng.integers(0, 1 << 32, (5, 3), dtype=np.uint32)
    assert crc32_words(words)[1] == zlib.crc32(words[:, 1].tobytes())
    # Another draw context, another key; same inputs, same key.
    assert (fragment_keys(inputs, context ^ 1) != keys).all()
    np.testing.assert_array_equal(fragment_keys(inputs.copy(), context), keys)


def test_quad_inputs_key_on_the_whole_quad_and_the_position():
    rng = np.random.default_rng(2)
    inputs = rng.standard_normal((2, 4, 8)).astype(np.float32)
    keys = fragment_keys(inputs, 5, quad_inputs=True)
    lane = 6                                    # quad 1, position 2
    message = inputs[:, :, 4:8].transpose(2, 0, 1).tobytes() + np.uint32(2).tobytes()
    assert keys[lane] == zlib.crc32(message, 5)
    # A neighbour lane's inputs change the key of every lane of that quad (and only those).
    changed = inputs.copy()
    changed[1, 3, 5] += 1.0
    lane_keys = fragment_keys(changed, 5)
    quad_keys = fragment_keys(changed, 5, quad_inputs=True)
    np.testing.assert_array_equal(lane_keys[[4, 6, 7]], fragment_keys(inputs, 5)[[4, 6, 7]])
    assert (quad_keys[4:] != keys[4:]).all()
    np.testing.assert_array_equal(quad_keys[:4], keys[:4])
    # Equal quad inputs, different positions: different keys.
    same = np.ones((1, 4, 4), dtype=np.float32)
    assert len(set(fragment_keys(same, quad_inputs=True).tolist())) == 4
    assert len(set(fragment_keys(same).tolist())) == 1


def test_colors_pack_round_trip():
    rgba = np.array([[1, 2, 3, 4], [255, 0, 128, 7]], dtype=np.uint8)
    assert pack_rgba8(rgba)[0] == 0x04030201
    np.testing.assert_array_equal(unpack_rgba8(pack_rgba8(rgba)), rgba)


# ------------------------------------------------------------------------------------------
# The LUT


def test_one_set_lut_hits_and_evicts_lru():
    lut = MemoLUT(sets=1, ways=2)
    # 10 hits and becomes MRU, so 12 evicts 11 (LRU): 11 misses again and evicts 10; 12 hits.
    keys = np.array([10, 11, 10, 12, 11, 12], dtype=np.uint64)
    colors = np.arange(6, dtype=np.uint32) + 100
    hit, got = lut.lookup_insert(keys, colors)
    np.testing.assert_array_equal(hit, [False, False, True, False, False, True])
    # A hit returns the color the inserting fragment stored.
    np.testing.assert_array_equal(got, [100, 101, 100, 103, 104, 103])
    hit, _ = lut.lookup_insert(np.array([11, 10], dtype=np.uint64), np.zeros(2, np.uint32))
    np.testing.assert_array_equal(hit, [True, False])          # the state carries over


def test_lut_set_index_is_the_low_key_bits():
    lut = MemoLUT(sets=4, ways=1)
    # Keys 1 and 5 share set 1 (1-way: they evict each other); key 2 has a set of its own.
    keys = np.array([1, 2, 5, 2, 1], dtype=np.uint64)
    hit, _ = lut.lookup_insert(keys, np.zeros(5, np.uint32))
    np.testing.assert_array_equal(hit, [False, False, False, True, False])


def test_collision_returns_the_stored_color():
    # Two different fragments forced onto one key: the second reuses the first one's color.
    lut = MemoLUT()
    keys = np.full(2, 0xDEADBEEF, dtype=np.uint64)
    colors = np.array([[255, 0, 0, 255], [0, 255, 0, 255]], dtype=np.uint8)
    hit, got = lut.lookup_insert(keys, colors)
    np.testing.assert_array_equal(hit, [False, True])
    np.testing.assert_array_equal(got, colors[[0, 0]])


def test_the_compiled_lut_in_slices_is_the_lut_in_one_call():
    """The compiled LUT runs over the fragments in slices (Python hears Ctrl-C between them;
    a 4K frame's lookups were 1.6 s in one call): hits, returned colors and the LUT's tags
    and colors are the one call's, with hits, misses and evictions across slice bounds."""
    from tilesim.render.techniques.fragment_memoization import memo_lookup_compiled

    rng = np.random.default_rng(7)
    n, sets, ways, width, index_bits = 5000, 8, 2, 3, 3
    keys = rng.integers(0, 64, n).astype(np.uint64)      # 8 tags a set: hits and evictions
    colors = rng.integers(0, 2**32, (n, width), dtype=np.uint64).astype(np.uint32)
    order = rng.permutation(n)[: n - 100].astype(np.int64)  # some lanes not looked up

    def run(slice_lanes):
        state = np.full((sets, ways), -1, dtype=np.int64)
        stored = np.zeros((sets, ways, width), dtype=np.uint32)
        rows = colors.copy()
        hit = memo_lookup_compiled(order, keys, index_bits, state, stored, rows,
                                   slice_lanes=slice_lanes)
        return hit, rows, state, stored

    whole = run(n)
    assert 0 < whole[0].sum() < order.size
    for slice_lanes in (1, 7, 1000):
        for got, want in zip(run(slice_lanes), whole, strict=True):
            np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------------
# Parallel frame rendering


def test_pair_interleaves_tiles_and_counts():
    # 2 tiles, traversal 1 then 0. The LUT is 1 set x 1 way, so only the entry of the last
    # fragment survives: frame 1 can hit frame 0's only if its tile's fragments follow frame
    # 0's of the same tile, before the next tile.
    memo = FragmentMemoizer(tiles=2, traversal=np.array([1, 0]), sets=1, ways=1)
    tile = np.array([0, 1])
    keys0 = np.array([7, 9], dtype=np.uint64)
    colors = np.array([1, 2], dtype=np.uint32)
    assert memo.add_frame(0, tile, keys0, colors) == []
    f0, f1 = memo.add_frame(1, tile, keys0, colors)
    np.testing.assert_array_equal(f0.hit, [False, False])
    np.testing.assert_array_equal(f1.hit, [True, True])
    np.testing.assert_array_equal(f1.memo_hits, [1, 1])
    np.testing.assert_array_equal(f1.memo_lookups, [1, 1])
    np.testing.assert_array_equal(f0.memo_table_writes, [1, 1])
    np.testing.assert_array_equal(f1.memo_table_writes, [0, 0])
    assert f0.memo_collisions == f1.memo_collisions == 0
    assert set(f1.counters()) == {"memo_lookups", "memo_hits", "memo_table_writes",
                                  "memo_collisions"}


def test_second_frame_reuses_the_first_and_only_shaded_fragments_look_up():
    rng = np.random.default_rng(3)
    n, tiles = 64, 4
    inputs = rng.standard_normal((2, 4, n)).astype(np.float32)
    keys = fragment_keys(inputs, 99)
    colors = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    tile = rng.integers(0, tiles, n)
    shaded = rng.random(n) < 0.75
    memo = FragmentMemoizer(tiles=tiles)
    memo.add_frame(0, tile, keys, colors, shaded)
    # Frame 1: same scene except a few fragments; a changed fragment's color is shown true.
    keys1, colors1 = keys.copy(), colors.copy()
    keys1[:8] ^= 0x55555555
    colors1[:8] = 0
    f0, f1 = memo.add_frame(1, tile, keys1, colors1, shaded)
    assert not f0.hit.any() and not f0.hit[~shaded].any()
    np.testing.assert_array_equal(f1.hit, shaded & (np.arange(n) >= 8))
    np.testing.assert_array_equal(f1.memo_lookups, np.bincount(tile[shaded], minlength=tiles))
    np.testing.assert_array_equal(f1.memo_hits + f1.memo_table_writes, f1.memo_lookups)
    np.testing.assert_array_equal(f1.colors, colors1)
    assert f1.colors.dtype == np.uint8


def test_collisions_are_counted_and_shown():
    memo = FragmentMemoizer(tiles=1)
    keys = np.array([42], dtype=np.uint64)
    memo.add_frame(0, [0], keys, np.array([[10, 20, 30, 255]], np.uint8))
    _, f1 = memo.add_frame(1, [0], keys, np.array([[11, 20, 30, 255]], np.uint8))
    assert f1.memo_collisions == 1 and f1.hit.all()
    np.testing.assert_array_equal(f1.colors, [[10, 20, 30, 255]])


def test_odd_trailing_frame_and_lut_carry_over():
    memo = FragmentMemoizer(tiles=1)
    keys, colors, tile = np.array([3], np.uint64), np.array([5], np.uint32), np.array([0])
    memo.add_frame(0, tile, keys, colors)
    memo.add_frame(1, tile, keys, colors)
    assert memo.add_frame(2, tile, keys, colors) == []     # waits for frame 3
    (f2,) = memo.finish()
    assert f2.frame_index == 2 and f2.hit.all()              # the LUT carried over
    assert memo.finish() == []
    # A frame of the next group flushes an incomplete one.
    memo.add_frame(4, tile, keys, colors)
    (f4,) = memo.add_frame(6, tile, keys, colors)
    assert f4.frame_index == 4


def test_64_bit_keys_extend_the_32_bit_ones_with_an_independent_crc():
    from tilesim.render.techniques.fragment_memoization import fragment_keys

    rng = np.random.default_rng(9)
    inputs = rng.random((3, 4, 64)).astype(np.float32)
    for quad in (False, True):
        k32 = fragment_keys(inputs, 7, quad)
        k64 = fragment_keys(inputs, 7, quad, bits=64)
        assert k64.dtype == np.uint64
        assert np.array_equal(k64 & np.uint64(0xFFFFFFFF), k32)
        assert len(np.unique(k64 >> np.uint64(32))) == len(np.unique(k32))


# ------------------------------------------------------------------------------------------
# The key dtype is a checked contract (issue 11: float keys made wrong-color hits)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint32, np.int32, np.float32])
def test_lut_and_memoizer_refuse_keys_of_another_dtype(dtype):
    keys = np.array([1, 2, 3], dtype=dtype)
    with pytest.raises(TypeError, match="uint64"):
        MemoLUT().lookup_insert(keys, np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match="frame 0"):
        FragmentMemoizer(tiles=1).add_frame(0, np.zeros(3, int), keys, np.zeros(3, np.uint32))


def test_a_frame_with_no_fragments_beside_64_bit_keys_makes_no_collision():
    """The float-key path: a frame that shaded nothing on screen, paired with one that did.
    Its empty keys used to be int64; concatenated with the other frame's uint64 keys they
    became float64 (keys above 2^53 rounded, those above 2^63 cast to INT64_MIN), so distinct
    fragments met on one tag. Keys from the top of the 64-bit range, all distinct, must all
    miss."""
    rng = np.random.default_rng(11)
    n = 4096
    keys = rng.integers(0, 1 << 64, n, dtype=np.uint64) | np.uint64(1 << 63)
    colors = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    memo = FragmentMemoizer(tiles=1)
    memo.add_frame(0, np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros((0, 4), np.uint8))
    f0, f1 = memo.add_frame(1, np.zeros(n, np.int64), keys, colors)
    assert f0.hit.size == 0 and not f1.hit.any()
    assert f1.memo_collisions == 0
    np.testing.assert_array_equal(f1.colors, colors)
    # Two frames with no fragments at all (glmark2's clear scene) make an empty pair.
    memo = FragmentMemoizer(tiles=1)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros((0, 4), np.float32))
    memo.add_frame(0, *empty)
    f0, f1 = memo.add_frame(1, *empty)
    assert f0.memo_collisions == f1.memo_collisions == 0 and f1.colors.shape == (0, 4)
    # The old placeholder is refused at the boundary instead of being promoted.
    memo = FragmentMemoizer(tiles=1)
    with pytest.raises(TypeError):
        memo.add_frame(0, np.zeros(0, np.int64), np.zeros(0, np.int64),
                       np.zeros((0, 4), np.uint8))


# ------------------------------------------------------------------------------------------
# The frames shown (ScreenMemo): stored colors on hits


def _screen_frame(memo, index, target, keys, colors, pixels, clear=None, blend=False):
    """Log one frame on ``memo``: an optional clear, then one batch writing ``colors`` (n, 4)
    float32 to ``pixels`` under ``keys``; ``target.color`` is updated as the pipeline would
    (true colors), and the frame closed."""
    from tilesim.render.gl.state import FragmentState
    from tilesim.render.pipeline.output_merger import rank_groups, write_colors

    state = FragmentState(blend=blend, blend_src_rgb="SRC_ALPHA",
                          blend_dst_rgb="ONE_MINUS_SRC_ALPHA")
    if clear is not None:
        memo.cleared((0, 0, target.width, target.height), clear, (True,) * 4)
        target.clear(clear)
    n = len(keys)
    memo.shaded(np.asarray(keys, np.uint64), colors, np.zeros(n, np.int64), np.ones(n, bool))
    pixels = np.asarray(pixels, np.int64)
    memo.written(pixels, np.arange(n), state, True)
    write_colors(pixels, colors, target.color.reshape(-1, 4), state, True, rank_groups(pixels))
    return memo.end_frame(index, target.image())


def test_screen_memo_shows_stored_colors_and_carries_them_to_a_frame_without_clear():
    from tilesim.render.pipeline.framebuffer import RenderTarget
    from tilesim.render.techniques.fragment_memoization import ScreenMemo

    target = RenderTarget(4, 2, tile_size=2)
    memo = ScreenMemo(target)
    red, green = np.array([[1, 0, 0, 1]], np.float32), np.array([[0, 1, 0, 1]], np.float32)
    # Frame 0 writes red at pixel 0; frame 1 writes green at pixel 1 under the same key: a
    # collision, frame 1 shows red there.
    assert _screen_frame(memo, 0, target, [7], red, [0], clear=(0, 0, 0, 1)) == []
    f0, f1 = _screen_frame(memo, 1, target, [7], green, [1])
    assert (f0.memo_collisions, f1.memo_collisions) == (0, 1)
    assert memo.show(f0) is None
    rendered, shown = memo.show(f1)
    np.testing.assert_array_equal(rendered, target.image())
    flat = shown[::-1].reshape(-1, 4)                   # row 0 at the bottom
    np.testing.assert_array_equal(flat[:2], [[255, 0, 0, 255], [255, 0, 0, 255]])
    # Frame 2 neither clears nor collides (a new key), but begins on frame 1 as shown.
    blue = np.array([[0, 0, 1, 1]], np.float32)
    assert _screen_frame(memo, 2, target, [8], blue, [2]) == []
    (f2,) = memo.finish()
    assert f2.memo_collisions == 0
    rendered, shown = memo.show(f2)
    flat = shown[::-1].reshape(-1, 4)
    np.testing.assert_array_equal(flat[:3], [[255, 0, 0, 255], [255, 0, 0, 255],
                                             [0, 0, 255, 255]])
    assert memo.frames_redrawn == 2


def test_screen_memo_blends_the_stored_color():
    from tilesim.render.pipeline.framebuffer import RenderTarget
    from tilesim.render.techniques.fragment_memoization import ScreenMemo

    target = RenderTarget(2, 1, tile_size=2)
    memo = ScreenMemo(target)
    half_red = np.array([[1, 0, 0, 0.5]], np.float32)
    half_blue = np.array([[0, 0, 1, 0.5]], np.float32)
    _screen_frame(memo, 0, target, [3], half_red, [0], clear=(0, 0, 0, 1), blend=True)
    _, f1 = _screen_frame(memo, 1, target, [3], half_blue, [0], clear=(0, 0, 0, 1), blend=True)
    _, shown = memo.show(f1)
    # Red at alpha 0.5 over black, where the true color was blue.
    np.testing.assert_array_equal(shown[0, 0], [128, 0, 0, 128])
