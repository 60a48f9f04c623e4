"""Per-fragment operations: depth test and blending, with sequential semantics.

Fragments of one draw arrive in submission order. Where several land on the same pixel, GL
processes them one after another; here they are ranked per pixel (0 for the first fragment
at a pixel, 1 for the second, ...) and each rank is processed for all pixels at once, so the
result equals sequential processing while every step stays vectorized. A draw without
overlap (the common case for meshes after culling) is a single step.
"""

from __future__ import annotations

import operator

import numpy as np

from tilesim.backend import array_module, to_host
from tilesim.jit import in_threads, jit, nan_cast, nondecreasing, spans, spans_of_runs, usable
from tilesim.render.gl.commands import DUAL_SOURCE_FACTORS

COMPARE = {
    "NEVER": lambda a, b: array_module(a).zeros(a.shape, dtype=bool),
    "LESS": operator.lt, "EQUAL": operator.eq, "LEQUAL": operator.le, "GREATER": operator.gt,
    "NOTEQUAL": operator.ne, "GEQUAL": operator.ge,
    "ALWAYS": lambda a, b: array_module(a).ones(a.shape, dtype=bool),
}


def rank_groups(pixel: np.ndarray) -> list[np.ndarray]:
    """Fragment indices grouped by rank: group r holds each pixel's r-th fragment."""
    xp = array_module(pixel)
    if pixel.size == 0:
        return []
    order = xp.argsort(pixel, kind="stable")
    sorted_pixels = pixel[order]
    starts = xp.ones(pixel.size, dtype=bool)
    starts[1:] = sorted_pixels[1:] != sorted_pixels[:-1]
    # (A running maximum of start positions, built from ops CuPy has.)
    segment_start = xp.nonzero(starts)[0][xp.cumsum(starts) - 1]
    rank = xp.arange(pixel.size) - segment_start
    top = int(rank.max())
    if top == 0:
        return [xp.arange(pixel.size)]
    # Ranks are small: a 16-bit key lets NumPy use its radix sort.
    key = rank.astype(xp.uint16) if top < 1 << 16 else rank
    by_rank = xp.argsort(key, kind="stable")
    bounds = to_host(xp.searchsorted(rank[by_rank], xp.arange(top + 2))).tolist()
    # Within a group every pixel appears once, so the order inside it does not matter.
    return [order[by_rank[bounds[r]:bounds[r + 1]]] for r in range(top + 1)]


def _groups(groups, pixel):
    """Rank groups given as a list, a function that makes them, or None (made here)."""
    if groups is None:
        return rank_groups(pixel)
    return groups() if callable(groups) else groups


def depth_test(pixel: np.ndarray, depth: np.ndarray, buffer: np.ndarray, func: str,
               write: bool, groups=None) -> np.ndarray:
    """Test fragments (flat pixel index, integer depth) against ``buffer`` (flat, updated in
    place when ``write``), in order; returns the pass mask. ``groups``: ``rank_groups(pixel)``,
    or a function that makes them (called only by the vectorized path), or None.

    The compiled kernel tests the fragments one by one in submission order, which is what
    the rank groups reproduce."""
    if usable(pixel, depth, buffer):
        return depth_test_compiled(pixel, depth, np.arange(pixel.size), buffer, func, write)
    xp = array_module(pixel)
    compare = COMPARE[func]
    passed = xp.zeros(pixel.size, dtype=bool)
    for group in _groups(groups, pixel):
        p = pixel[group]
        ok = compare(depth[group], buffer[p])
        passed[group] = ok
        if write:
            buffer[p[ok]] = depth[group][ok]
    return passed


def _factor(name: str, src, dst, const, alpha: bool, src1=None):
    """Blend factor (N, 4) or (N, 1) for rgb (alpha=False) or alpha (alpha=True). ``src1``:
    the second source color, which the SRC1_* factors of EXT_blend_func_extended read
    (section "Changes to Chapter 4", Table 4.2's new rows)."""
    xp = array_module(src)
    one = xp.ones_like(src[:, :1])
    if name in DUAL_SOURCE_FACTORS:
        if src1 is None:
            # The extension leaves the second color undefined when the shader writes none.
            src1 = xp.zeros_like(src)
        if name == "SRC1_COLOR_EXT":
            return src1[:, 3:4] if alpha else src1[:, :3]
        if name == "ONE_MINUS_SRC1_COLOR_EXT":
            return 1 - (src1[:, 3:4] if alpha else src1[:, :3])
        if name == "SRC1_ALPHA_EXT":
            return src1[:, 3:4]
        return 1 - src1[:, 3:4]  # ONE_MINUS_SRC1_ALPHA_EXT
    if name == "ZERO":
        return 0 * one
    if name == "ONE":
        return one
    if name == "SRC_COLOR":
        return src[:, 3:4] if alpha else src[:, :3]
    if name == "ONE_MINUS_SRC_COLOR":
        return 1 - (src[:, 3:4] if alpha else src[:, :3])
    if name == "DST_COLOR":
        return dst[:, 3:4] if alpha else dst[:, :3]
    if name == "ONE_MINUS_DST_COLOR":
        return 1 - (dst[:, 3:4] if alpha else dst[:, :3])
    if name == "SRC_ALPHA":
        return src[:, 3:4]
    if name == "ONE_MINUS_SRC_ALPHA":
        return 1 - src[:, 3:4]
    if name == "DST_ALPHA":
        return dst[:, 3:4]
    if name == "ONE_MINUS_DST_ALPHA":
        return 1 - dst[:, 3:4]
    if name == "CONSTANT_COLOR":
        return const[3:4] * one if alpha else const[None, :3] * one
    if name == "ONE_MINUS_CONSTANT_COLOR":
        return 1 - (const[3:4] * one if alpha else const[None, :3] * one)
    if name == "CONSTANT_ALPHA":
        return const[3] * one
    if name == "ONE_MINUS_CONSTANT_ALPHA":
        return (1 - const[3]) * one
    if name == "SRC_ALPHA_SATURATE":
        return one if alpha else xp.minimum(src[:, 3:4], 1 - dst[:, 3:4])
    raise ValueError(f"unknown blend factor {name}")


def _equation(name: str, src, dst, src_factor, dst_factor):
    """One blend equation on source and destination components (ES 2.0 §4.1.6); MIN_EXT and
    MAX_EXT (EXT_blend_minmax) take the unweighted components and ignore the factors."""
    xp = array_module(src)
    if name == "MIN_EXT":
        return xp.minimum(src, dst)
    if name == "MAX_EXT":
        return xp.maximum(src, dst)
    s, d = src * src_factor(), dst * dst_factor()
    if name == "FUNC_ADD":
        return s + d
    if name == "FUNC_SUBTRACT":
        return s - d
    return d - s  # FUNC_REVERSE_SUBTRACT


def blend(src: np.ndarray, dst: np.ndarray, state, src1: np.ndarray | None = None
          ) -> np.ndarray:
    """GL blending of (N, 4) float colors in [0, 1]; result clamped to [0, 1]. ``src1``
    (N, 4): the second source color of dual-source blending (EXT_blend_func_extended)."""
    xp = array_module(src)
    const = xp.asarray(state.blend_color, dtype=xp.float64)
    rgb = _equation(state.blend_eq_rgb, src[:, :3], dst[:, :3],
                    lambda: _factor(state.blend_src_rgb, src, dst, const, False, src1),
                    lambda: _factor(state.blend_dst_rgb, src, dst, const, False, src1))
    a = _equation(state.blend_eq_alpha, src[:, 3:4], dst[:, 3:4],
                  lambda: _factor(state.blend_src_alpha, src, dst, const, True, src1),
                  lambda: _factor(state.blend_dst_alpha, src, dst, const, True, src1))
    return xp.clip(xp.concatenate([rgb, a], axis=1), 0.0, 1.0)


def to_unorm8(color: np.ndarray) -> np.ndarray:
    xp = array_module(color)
    return xp.floor(xp.clip(color, 0.0, 1.0) * 255.0 + 0.5).astype(xp.uint8)


def dual_source_factors(state) -> bool:
    """Whether a blend factor is a SRC1_* factor of EXT_blend_func_extended (one that reads
    the second source color when blending is on)."""
    return any(f in DUAL_SOURCE_FACTORS for f in (state.blend_src_rgb, state.blend_dst_rgb,
                                                  state.blend_src_alpha, state.blend_dst_alpha))


def write_colors(pixel: np.ndarray, color: np.ndarray, buffer: np.ndarray, state,
                 has_alpha: bool = True, groups=None, keep: np.ndarray | None = None,
                 color1: np.ndarray | None = None, tile: np.ndarray | None = None) -> int:
    """Blend (if enabled) and write (N, 4) float colors to a flat (P, 4) uint8 ``buffer``
    under the color mask, in submission order; returns the blend operations done.

    ``groups`` (from ``rank_groups``, possibly filtered; or a function that makes them,
    called only by the vectorized path) selects and orders the fragments to write; ``keep``
    ((N,) bool) selects them otherwise; without either every fragment is written.
    The compiled kernel writes the selected fragments one by one in submission order; it
    has no second source color, so dual-source blending (``color1``, the SRC1_* factors of
    EXT_blend_func_extended) takes the vectorized path. ``tile`` ((N,), optional): each
    fragment's tile; where the fragments written come tile by tile, the kernel writes runs
    of tiles (whose pixels are their own) side by side on the kernel threads."""
    xp = array_module(pixel)
    mask = np.array(state.color_mask, dtype=bool)
    if not has_alpha:
        mask[3] = False
    if not mask.any() or pixel.size == 0:
        return 0
    dual = dual_source_factors(state)
    if usable(pixel, color, buffer) and not dual:
        if keep is not None:
            order = np.nonzero(keep)[0]
        elif groups is not None and not callable(groups):
            order = np.concatenate(groups) if groups else np.zeros(0, dtype=np.int64)
        else:
            order = np.arange(pixel.size)
        write_colors_compiled(pixel, color, order, buffer, mask, has_alpha, state, tile)
        return int(order.size) if state.blend else 0
    if callable(groups):
        groups = groups()
    elif groups is None and keep is not None:
        subset = xp.nonzero(keep)[0]
        groups = [subset[g] for g in rank_groups(pixel[subset])]
    channels = xp.asarray(np.nonzero(mask)[0])
    src = xp.clip(color.astype(xp.float64), 0.0, 1.0)
    src1 = None
    if dual and state.blend and color1 is not None:
        src1 = xp.clip(color1.astype(xp.float64), 0.0, 1.0)
    if not state.blend and groups is not None:
        # Ranks in order: a later fragment at a pixel overwrites an earlier one.
        for group in groups:
            out = to_unorm8(src[group])
            buffer[pixel[group][:, None], channels[None, :]] = out[:, channels]
        return 0
    if not state.blend:
        # The last fragment at each pixel wins.
        order = xp.argsort(pixel, kind="stable")
        last = xp.ones(pixel.size, dtype=bool)
        last[:-1] = pixel[order][1:] != pixel[order][:-1]
        keep = order[last]
        out = to_unorm8(src[keep])
        rows = pixel[keep]
        buffer[rows[:, None], channels[None, :]] = out[:, channels]
        return 0
    blended = 0
    for group in groups if groups is not None else rank_groups(pixel):
        p = pixel[group]
        dst = buffer[p].astype(xp.float64) / 255.0
        if not has_alpha:
            dst[:, 3] = 1.0
        out = to_unorm8(blend(src[group], dst, state, None if src1 is None else src1[group]))
        buffer[p[:, None], channels[None, :]] = out[:, channels]
        blended += group.size
    return blended


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

NAN_BYTE = nan_cast(np.uint8)

# Depth functions and blend factors / equations as kernel codes.
DEPTH_FUNCS = {"NEVER": 0, "LESS": 1, "EQUAL": 2, "LEQUAL": 3, "GREATER": 4, "NOTEQUAL": 5,
               "GEQUAL": 6, "ALWAYS": 7}


BLEND_FACTORS = {name: k for k, name in enumerate((
    "ZERO", "ONE", "SRC_COLOR", "ONE_MINUS_SRC_COLOR", "DST_COLOR", "ONE_MINUS_DST_COLOR",
    "SRC_ALPHA", "ONE_MINUS_SRC_ALPHA", "DST_ALPHA", "ONE_MINUS_DST_ALPHA", "CONSTANT_COLOR",
    "ONE_MINUS_CONSTANT_COLOR", "CONSTANT_ALPHA", "ONE_MINUS_CONSTANT_ALPHA",
    "SRC_ALPHA_SATURATE"))}


BLEND_EQUATIONS = {"FUNC_ADD": 0, "FUNC_SUBTRACT": 1, "FUNC_REVERSE_SUBTRACT": 2,
                   "MIN_EXT": 3, "MAX_EXT": 4}


@jit
def _depth_test(pixel, depth, order, buffer, func, write, passed):  # pragma: no cover
    for i in order:
        p = pixel[i]
        d = depth[i]
        stored = np.int64(buffer[p])
        if func == 0:
            ok = False
        elif func == 1:
            ok = d < stored
        elif func == 2:
            ok = d == stored
        elif func == 3:
            ok = d <= stored
        elif func == 4:
            ok = d > stored
        elif func == 5:
            ok = d != stored
        elif func == 6:
            ok = d >= stored
        else:
            ok = True
        passed[i] = ok
        if ok and write:
            buffer[p] = d


def depth_test_compiled(pixel, depth, order, buffer, func: str, write: bool,
                        tile=None) -> np.ndarray:
    """The pass mask of fragments tested one after another in ``order`` (indices; each pixel's
    fragments in submission order), updating ``buffer`` as ``output_merger.depth_test``.
    Where the fragments in ``order`` come tile by tile (``tile`` (N,): each fragment's),
    spans of whole tiles run on the kernel threads, as :func:`write_colors_compiled`'s."""
    passed = np.zeros(pixel.size, dtype=bool)
    code = DEPTH_FUNCS[func]
    in_threads(lambda span: _depth_test(pixel, depth, order[span[0]:span[1]], buffer, code,
                                        write, passed), _tile_runs(order, tile))
    return passed


def _tile_runs(order, tile) -> list[tuple[int, int]]:
    """Spans of ``order`` for the kernel threads that never split a tile's fragments (one
    span where the fragments do not come tile by tile, or ``tile`` is None): a pixel's
    fragments then stay in one span, in their order."""
    parts = [(0, int(order.size))]
    if tile is not None and spans(order.size) != parts:
        order_tile = tile[order]
        if nondecreasing(order_tile):
            parts = spans_of_runs(order_tile)
    return parts


@jit
def _unorm8(value, nan_byte):  # pragma: no cover - compiled
    if value != value:
        return nan_byte
    if value < 0.0:
        value = 0.0
    elif value > 1.0:
        value = 1.0
    return np.uint8(np.floor(value * 255.0 + 0.5))


@jit
def _clip01(value):  # pragma: no cover - compiled
    # np.clip: NaN stays NaN.
    if value < 0.0:
        return 0.0
    if value > 1.0:
        return 1.0
    return value


@jit
def _minimum(a, b):  # pragma: no cover - compiled
    # np.minimum: NaN wins.
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b


@jit
def _factor_kernel(code, value_s, alpha_s, value_d, alpha_d, value_c, alpha_c,
                   alpha):  # pragma: no cover - compiled
    """output_merger._factor for one channel of one fragment: the source's, destination's
    and constant color's values of the channel and their alphas (scalars, so that LLVM
    inlines the call; ``alpha``: the channel is alpha)."""
    if code == 0:
        return 0.0
    if code == 1:
        return 1.0
    if code == 2:
        return value_s
    if code == 3:
        return 1 - value_s
    if code == 4:
        return value_d
    if code == 5:
        return 1 - value_d
    if code == 6:
        return alpha_s
    if code == 7:
        return 1 - alpha_s
    if code == 8:
        return alpha_d
    if code == 9:
        return 1 - alpha_d
    if code == 10:
        return value_c * 1.0
    if code == 11:
        return 1 - value_c * 1.0
    if code == 12:
        return alpha_c * 1.0
    if code == 13:
        return (1 - alpha_c) * 1.0
    # SRC_ALPHA_SATURATE
    return 1.0 if alpha else _minimum(alpha_s, 1 - alpha_d)


@jit(numpy_division=True)
def _write_colors(pixel, color, order, buffer, mask, has_alpha, blend, factors, equations,
                  const, nan_byte):  # pragma: no cover - compiled
    s = np.empty(4, dtype=np.float64)
    d = np.empty(4, dtype=np.float64)
    for i in order:
        p = pixel[i]
        for ch in range(4):
            s[ch] = _clip01(np.float64(color[i, ch]))
        if not blend:
            for ch in range(4):
                if mask[ch]:
                    buffer[p, ch] = _unorm8(s[ch], nan_byte)
            continue
        for ch in range(4):
            d[ch] = np.float64(buffer[p, ch]) / 255.0
        if not has_alpha:
            d[3] = 1.0
        for ch in range(4):
            rgb = 0 if ch < 3 else 1
            alpha = ch == 3
            sf = s[ch] * _factor_kernel(factors[2 * rgb], s[ch], s[3], d[ch], d[3], const[ch],
                                 const[3], alpha)
            df = d[ch] * _factor_kernel(factors[2 * rgb + 1], s[ch], s[3], d[ch], d[3], const[ch],
                                 const[3], alpha)
            eq = equations[rgb]
            if eq == 0:
                value = sf + df
            elif eq == 1:
                value = sf - df
            elif eq == 2:
                value = df - sf
            elif eq == 3:  # MIN_EXT (EXT_blend_minmax): factors unused
                value = min(s[ch], d[ch])
            else:          # MAX_EXT
                value = max(s[ch], d[ch])
            if mask[ch]:
                buffer[p, ch] = _unorm8(_clip01(value), nan_byte)


def write_colors_compiled(pixel, color, order, buffer, mask, has_alpha: bool, state,
                          tile=None) -> None:
    """Blend (if ``state.blend``) and write ``color`` (N, 4) of the fragments in ``order``
    (indices; each pixel's fragments in submission order) into the flat (P, 4) uint8
    ``buffer`` under ``mask`` (4,) bool, as ``output_merger.write_colors``. Where the
    fragments in ``order`` come tile by tile (``tile`` (N,): each fragment's), spans of whole
    tiles run on the kernel threads: a pixel's fragments stay in one span, in order."""
    factors = np.array([BLEND_FACTORS[state.blend_src_rgb], BLEND_FACTORS[state.blend_dst_rgb],
                        BLEND_FACTORS[state.blend_src_alpha],
                        BLEND_FACTORS[state.blend_dst_alpha]], dtype=np.int64)
    equations = np.array([BLEND_EQUATIONS[state.blend_eq_rgb],
                          BLEND_EQUATIONS[state.blend_eq_alpha]], dtype=np.int64)
    mask = np.asarray(mask, dtype=bool)
    const = np.asarray(state.blend_color, dtype=np.float64)
    parts = _tile_runs(order, tile)

    def part(span):
        _write_colors(pixel, color, order[span[0]:span[1]], buffer, mask, has_alpha,
                      bool(state.blend), factors, equations, const, NAN_BYTE)

    in_threads(part, parts)
