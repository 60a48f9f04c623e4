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
from tilesim.render.gl.commands import DUAL_SOURCE_FACTORS
from tilesim.render.pipeline import compiled

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
    if compiled.usable(pixel, depth, buffer):
        return compiled.depth_test(pixel, depth, np.arange(pixel.size), buffer, func, write)
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
                 color1: np.ndarray | None = None) -> int:
    """Blend (if enabled) and write (N, 4) float colors to a flat (P, 4) uint8 ``buffer``
    under the color mask, in submission order; returns the blend operations done.

    ``groups`` (from ``rank_groups``, possibly filtered; or a function that makes them,
    called only by the vectorized path) selects and orders the fragments to write; ``keep``
    ((N,) bool) selects them otherwise; without either every fragment is written.
    The compiled kernel writes the selected fragments one by one in submission order; it
    has no second source color, so dual-source blending (``color1``, the SRC1_* factors of
    EXT_blend_func_extended) takes the vectorized path."""
    xp = array_module(pixel)
    mask = np.array(state.color_mask, dtype=bool)
    if not has_alpha:
        mask[3] = False
    if not mask.any() or pixel.size == 0:
        return 0
    dual = dual_source_factors(state)
    if compiled.usable(pixel, color, buffer) and not dual:
        if keep is not None:
            order = np.nonzero(keep)[0]
        elif groups is not None and not callable(groups):
            order = np.concatenate(groups) if groups else np.zeros(0, dtype=np.int64)
        else:
            order = np.arange(pixel.size)
        compiled.write_colors(pixel, color, order, buffer, mask, has_alpha, state)
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
