"""Rendering Elimination's compiled ``binned`` (one Numba pass over a draw's entries) against
its NumPy code: the same tile signatures, Signature Unit work, counters, constant bitmap and
depth state, draw by draw, and the same frames and counters on bundled traces."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from repo_paths import TRACES

from tilesim.jit import AVAILABLE, disabled
from tilesim.render.pipeline.counters import PassCounters
from tilesim.render.replay import render_trace
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.rendering_elimination import RenderingElimination
from tilesim.render.techniques.signature_unit import TileSignatures, crc32_sign_bytes

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="the kernels need Numba")

TILES_X, TILES_Y = 9, 7


def _state(re: RenderingElimination, counters: PassCounters) -> dict:
    sig = re.signatures
    return {"current": sig.current.copy(), "shifts": sig.shifts.copy(),
            "accesses": sig.accesses.copy(), "signed": sig.signed_subblocks,
            "bitmap": re.bitmap.copy(), "old_depth_read": re.old_depth_read.copy(),
            "constants": re.constants,
            "constants_crc": None if re.constants_crc is None
            else [np.asarray(a).copy() for a in re.constants_crc],
            **{f"counter {k}": v.copy() for k, v in counters.tiles.items()}}


def _assert_same(expected: dict, actual: dict, where: str) -> None:
    assert actual.keys() == expected.keys(), where
    for key, value in expected.items():
        if isinstance(value, np.ndarray):
            assert actual[key].dtype == value.dtype, f"{where}: {key}"
            np.testing.assert_array_equal(actual[key], value, f"{where}: {key}")
        elif isinstance(value, list):
            for a, b in zip(actual[key], value, strict=True):
                assert a.dtype == b.dtype, f"{where}: {key}"
                np.testing.assert_array_equal(a, b, f"{where}: {key}")
        else:
            assert actual[key] == value, f"{where}: {key}"


def _random_draw(rng, tiles: int, constants: bytes):
    """A draw as ``binned`` reads it: display lists sorted by tile, each tile's entries in
    submission order; clipped vertices of an odd or even width with NaNs (payloads, signs),
    infinities and float64 values float32 rounds."""
    triangles = int(rng.integers(1, 12))
    width = int(rng.choice([3, 4, 5, 8, 12, 16]))
    vertices = rng.normal(0, 1e3, (triangles * 3 + 2, width))
    special = rng.random(vertices.shape)
    vertices[special < 0.03] = np.nan
    vertices[(special >= 0.03) & (special < 0.04)] = -np.inf
    payload = np.array([0x7FF0_0000_0000_1234, 0xFFF8_0000_0000_00FF], np.uint64).view(np.float64)
    vertices.reshape(-1)[:2] = payload
    if rng.random() < 0.5:
        vertices = np.asfortranarray(vertices)
    vertex = rng.integers(0, vertices.shape[0], (triangles, 3))
    entries = []
    for t in range(triangles):
        if rng.random() < 0.2:
            continue                                   # binned nowhere
        many = rng.random() < 0.2                      # a primitive in many tiles
        count = int(rng.integers(1, tiles if many else 6))
        entries += [(int(tile), t) for tile in rng.choice(tiles, count, replace=False)]
    entries.sort()                                     # by tile, then submission order
    pairs = np.array(entries, dtype=np.int64).reshape(-1, 2)
    bins = SimpleNamespace(tile=pairs[:, 0].copy(), triangle=pairs[:, 1].copy())
    bins.touched = np.unique(bins.tile)
    return SimpleNamespace(
        bins=bins, clipped=SimpleNamespace(vertices=vertices),
        tris=SimpleNamespace(vertex=vertex), constants=constants,
        fragment=SimpleNamespace(depth_test=bool(rng.random() < 0.7)),
        target=SimpleNamespace(depth=object() if rng.random() < 0.8 else None))


def _included(rng, draw):
    n = draw.bins.tile.shape[0]
    choice = rng.random()
    if choice < 0.4:
        return None
    if choice < 0.5:
        return np.zeros(n, dtype=bool)
    if choice < 0.6:
        return np.ones(n, dtype=bool)
    return rng.random(n) < 0.6


@pytest.mark.parametrize("kind", ["crc32", "xor"])
@pytest.mark.parametrize("seed", range(4))
def test_binned_compiled_matches_numpy_draw_by_draw(kind, seed):
    """Random draws through two RE units, one on each path, compared after every draw:
    no entries, ``included`` masks (none, all, some), primitives in many tiles and over a
    small Overlapped Tiles Queue, constants blocks repeated, changed, of lengths that are not
    whole sub-blocks or empty, cleared depth in some tiles, and frames ending."""
    rng = np.random.default_rng(seed)
    tiles = TILES_X * TILES_Y
    units = []
    for _ in range(2):
        re = RenderingElimination(SimpleNamespace(tile_count=tiles), kind=kind)
        re.block_of = lambda draw: draw.constants
        re.otq_entries = 3
        units.append(re)
    blocks = [b"", bytes(rng.integers(0, 256, 13, dtype=np.uint8)),
              bytes(rng.integers(0, 256, 40, dtype=np.uint8))]
    for frame in range(3):
        counters = [PassCounters("screen", 16 * TILES_X, 16 * TILES_Y, 16, TILES_X, TILES_Y,
                                 np.arange(tiles)) for _ in units]
        fresh = rng.random(tiles) < 0.3
        for re in units:
            re.fresh_depth[:] = fresh
        for k in range(25):
            draw = _random_draw(rng, tiles, blocks[int(rng.integers(0, len(blocks)))])
            included = _included(rng, draw)
            # (NumPy warns of the signaling NaN its cast quiets; the kernel's cast gives the
            # same bits without a word.)
            with disabled(), np.errstate(invalid="ignore"):
                units[0].binned(draw, counters[0], included)
            units[1].binned(draw, counters[1], included)
            _assert_same(_state(units[0], counters[0]), _state(units[1], counters[1]),
                         f"frame {frame} draw {k}")
        for re in units:
            re.end_frame(SimpleNamespace(scalars={}))


def test_binned_compiled_signs_a_primitive_once_in_entry_order():
    """A hand-made draw: the constants folded first into each tile, then the entries in
    order; each primitive signed once and charged to its first entry's tile."""
    tiles = 4
    draw = SimpleNamespace(
        bins=SimpleNamespace(tile=np.array([0, 0, 1, 3, 3]), triangle=np.array([1, 0, 1, 0, 1]),
                             touched=np.array([0, 1, 3])),
        clipped=SimpleNamespace(vertices=np.arange(15.0).reshape(5, 3)),
        tris=SimpleNamespace(vertex=np.array([[0, 1, 2], [2, 3, 4]])), constants=b"abc",
        fragment=SimpleNamespace(depth_test=False), target=SimpleNamespace(depth=None))
    results = []
    for compiled in (False, True):
        re = RenderingElimination(SimpleNamespace(tile_count=tiles))
        re.block_of = lambda draw: draw.constants
        counters = PassCounters("screen", 32, 32, 16, 2, 2, np.arange(tiles))
        if compiled:
            re.binned(draw, counters, None)
        else:
            with disabled():
                re.binned(draw, counters, None)
        results.append(_state(re, counters))
    _assert_same(*results, "hand-made draw")
    state = results[1]
    # Records of 3 x 3 float32 (36 bytes): 5 sub-blocks; the constants 1. Triangle 1 comes
    # first, in tile 0, and triangle 0 next, in tile 0 too.
    records = draw.clipped.vertices[draw.tris.vertex].astype(np.float32).reshape(2, -1)
    (p0, p1), _ = crc32_sign_bytes(records.view(np.uint8))
    (c,), _ = crc32_sign_bytes(np.frombuffer(b"abc", np.uint8)[None])
    reference = TileSignatures(tiles)
    reference.fold([0, 0, 0, 1, 1, 3, 3, 3], [c, p1, p0, c, p1, c, p0, p1],
                   [1, 5, 5, 1, 5, 1, 5, 5])
    np.testing.assert_array_equal(state["current"], reference.current)
    np.testing.assert_array_equal(state["shifts"], reference.shifts)
    assert state["signed"] == 1 + 2 * 5
    np.testing.assert_array_equal(state["counter re_subblocks_signed"], [1 + 2 * 5, 0, 0, 0])
    np.testing.assert_array_equal(state["counter re_bitmap_accesses"], [3, 2, 0, 3])
    np.testing.assert_array_equal(state["counter re_signature_accesses"], [6, 4, 0, 6])


def _render(trace, name: str, frames: int) -> list:
    techniques = Techniques.from_name(name, source=str(trace))
    out = []
    for result in render_trace(trace, frames=range(frames), technique=techniques):
        sig = techniques.unit("re").re.signatures
        out.append({
            "image": result.image.copy(), "scalars": dict(result.counters.scalars),
            "passes": [(p.target, {k: np.asarray(v).copy() for k, v in p.tiles.items()})
                       for p in result.counters.passes],
            "signatures": sig.previous.copy(), "shifts": sig.shifts.copy(),
            "accesses": sig.accesses.copy(), "signed": sig.signed_subblocks})
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["re", "re/xor", "re+evr", "re/uniforms"])
@pytest.mark.parametrize("trace", ["runner-1196x768", "like_hayday-1196x768"])
def test_re_renders_bundled_traces_identically_with_the_kernels_off(trace, name):
    path = TRACES / f"{trace}.tsim"
    with disabled():
        expected = _render(path, name, 2)
    actual = _render(path, name, 2)
    for frame, (a, b) in enumerate(zip(expected, actual, strict=True)):
        np.testing.assert_array_equal(b["image"], a["image"], f"frame {frame}")
        assert b["scalars"] == a["scalars"], f"frame {frame}"
        assert [t for t, _ in b["passes"]] == [t for t, _ in a["passes"]], f"frame {frame}"
        for k, ((_, p), (_, q)) in enumerate(zip(a["passes"], b["passes"], strict=True)):
            assert q.keys() == p.keys(), f"frame {frame} pass {k}"
            for counter in p:
                np.testing.assert_array_equal(q[counter], p[counter],
                                              f"frame {frame} pass {k} {counter}")
        for key in ("signatures", "shifts", "accesses"):
            np.testing.assert_array_equal(b[key], a[key], f"frame {frame} {key}")
        assert b["signed"] == a["signed"], f"frame {frame}"
