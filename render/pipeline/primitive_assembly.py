"""Primitive assembly: a draw's element list into triangles (and lines and points).

Triangles come out as (T, 3) positions in the element list, in submission order, with the
GL ordering rules: a strip's odd triangles are (i+1, i, i+2) so that every triangle keeps
the winding of the first, fans are (0, i+1, i+2). The last vertex of each triple is GL's
provoking vertex. Lines are (L, 2) pairs (strips and loops unrolled) and points (P,).
"""

from __future__ import annotations

import numpy as np

from tilesim.backend import xp as active_xp

TRIANGLE_MODES = ("TRIANGLES", "TRIANGLE_STRIP", "TRIANGLE_FAN")
LINE_MODES = ("LINES", "LINE_STRIP", "LINE_LOOP")


def triangles(mode: str, count: int) -> np.ndarray:
    """(T, 3) int64 element positions of the triangles a mode makes of ``count`` elements."""
    xp = active_xp()
    if mode == "TRIANGLES":
        n = count // 3
        return xp.arange(3 * n, dtype=xp.int64).reshape(n, 3)
    n = max(count - 2, 0)
    i = xp.arange(n, dtype=xp.int64)
    if mode == "TRIANGLE_STRIP":
        odd = (i & 1).astype(bool)
        return xp.stack([xp.where(odd, i + 1, i), xp.where(odd, i, i + 1), i + 2], axis=1)
    if mode == "TRIANGLE_FAN":
        return xp.stack([xp.zeros_like(i), i + 1, i + 2], axis=1)
    raise ValueError(f"{mode} is not a triangle mode")


def lines(mode: str, count: int) -> np.ndarray:
    """(L, 2) int64 element positions of the line segments of a line mode."""
    xp = active_xp()
    if mode == "LINES":
        n = count // 2
        return xp.arange(2 * n, dtype=xp.int64).reshape(n, 2)
    if count < 2:
        return xp.zeros((0, 2), dtype=xp.int64)
    i = xp.arange(count - 1, dtype=xp.int64)
    segments = xp.stack([i, i + 1], axis=1)
    if mode == "LINE_LOOP":
        segments = xp.concatenate([segments, xp.asarray([[count - 1, 0]])])
    return segments


def points(count: int) -> np.ndarray:
    xp = active_xp()
    return xp.arange(count, dtype=xp.int64)
