"""Compiled CPU kernels (Numba) for the stages that are sequential per pixel or per quad:
rasterization, plane interpolation, the depth test and the color write in submission order,
the per-tile counters, and texture sampling (coordinates and implicit LOD, then each lane's
taps, filter, counters and texture-cache accesses in one pass).

Each kernel is a drop-in replacement for the vectorized NumPy code of its stage and gives
bit-identical results: integer arithmetic where the NumPy code is exact, and float64 /
float32 operations in the NumPy code's order (Numba, without ``fastmath``, neither reorders
nor fuses them), so frames and counters do not depend on which path ran
(``tests/test_compiled_path.py`` renders real scenes both ways). The stages call a kernel
only for NumPy arrays and when Numba is installed; CuPy arrays, a machine without Numba, or
``TILESIM_JIT=0`` take the NumPy code. ``disabled()`` turns the kernels off for a block
(the tests compare both paths in one process).
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from tilesim.kernel_cache import configure_numba, jit_enabled

try:  # pragma: no cover - depends on the environment
    import numba
except ImportError:  # pragma: no cover
    numba = None

AVAILABLE = numba is not None
_enabled = AVAILABLE and jit_enabled()

# What NumPy's float -> uint8 cast gives a NaN on this machine (LLVM leaves it undefined).
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    NAN_BYTE = int(np.array([np.nan]).astype(np.uint8)[0])

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


def enabled() -> bool:
    """Whether the stages use the compiled kernels (for NumPy arrays)."""
    return _enabled


def usable(*arrays) -> bool:
    """Whether the compiled kernels may run on ``arrays`` (all NumPy or None, kernels
    enabled)."""
    return _enabled and all(a is None or type(a) is np.ndarray for a in arrays)


@contextlib.contextmanager
def disabled():
    """Run the block on the NumPy path (the kernels off), then restore."""
    global _enabled
    previous, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = previous


def _jit(function):
    """Compiled and cached on disk, in a cache of this source (tilesim.kernel_cache: a kernel
    whose inlined helpers changed must not load its old code)."""
    if numba is None:
        return function
    configure_numba(numba)
    return numba.njit(cache=True, nogil=True)(function)


def _jit_inline(function):
    """:func:`_jit` for a scalar helper of a hot loop that LLVM would leave a call (too
    large to inline, or taking an array): Numba inlines it into the caller's IR."""
    if numba is None:
        return function
    configure_numba(numba)
    return numba.njit(cache=True, nogil=True, inline="always")(function)


# -- rasterization -----------------------------------------------------------------------------

@_jit
def _rasterize(a, b, c, bias, x0, y0, x1, y1, rect, subpixel, start, tri_out, qx_out,
               qy_out, cov_out):  # pragma: no cover - compiled
    """Covered quads of triangles ``start``.. (rasterizer.rasterize's contract) into the
    output arrays, triangle by triangle while they fit; returns (next triangle, quads)."""
    rx0, ry0, rx1, ry1 = rect[0], rect[1], rect[2], rect[3]
    capacity = tri_out.shape[0]
    n = 0
    t = start
    count = a.shape[0]
    half = subpixel // 2
    while t < count:
        if x1[t] < x0[t] or y1[t] < y0[t]:
            t += 1
            continue
        qx0, qx1 = x0[t] // 2, x1[t] // 2
        qy0, qy1 = y0[t] // 2, y1[t] // 2
        if n + (qx1 - qx0 + 1) * (qy1 - qy0 + 1) > capacity:
            break
        a0, a1, a2 = a[t, 0], a[t, 1], a[t, 2]
        b0, b1, b2 = b[t, 0], b[t, 1], b[t, 2]
        k0, k1, k2 = bias[t, 0], bias[t, 1], bias[t, 2]
        sx0, sx1, sx2 = a0 * subpixel, a1 * subpixel, a2 * subpixel
        sy0, sy1, sy2 = b0 * subpixel, b1 * subpixel, b2 * subpixel
        for qy in range(qy0, qy1 + 1):
            cy = 2 * qy * subpixel + half
            py = 2 * qy
            row_in = (py >= ry0, py < ry1, py + 1 >= ry0, py + 1 < ry1)
            top_ok = row_in[0] and row_in[1]
            bottom_ok = row_in[2] and row_in[3]
            cx = 2 * qx0 * subpixel + half
            e0 = a0 * cx + b0 * cy + c[t, 0]
            e1 = a1 * cx + b1 * cy + c[t, 1]
            e2 = a2 * cx + b2 * cy + c[t, 2]
            for qx in range(qx0, qx1 + 1):
                px = 2 * qx
                left_ok = px >= rx0 and px < rx1
                right_ok = px + 1 >= rx0 and px + 1 < rx1
                l0 = (e0 >= k0 and e1 >= k1 and e2 >= k2) and top_ok and left_ok
                l1 = (e0 + sx0 >= k0 and e1 + sx1 >= k1 and e2 + sx2 >= k2
                      ) and top_ok and right_ok
                l2 = (e0 + sy0 >= k0 and e1 + sy1 >= k1 and e2 + sy2 >= k2
                      ) and bottom_ok and left_ok
                l3 = (e0 + sx0 + sy0 >= k0 and e1 + sx1 + sy1 >= k1
                      and e2 + sx2 + sy2 >= k2) and bottom_ok and right_ok
                if l0 or l1 or l2 or l3:
                    tri_out[n] = t
                    qx_out[n] = qx
                    qy_out[n] = qy
                    cov_out[n, 0] = l0
                    cov_out[n, 1] = l1
                    cov_out[n, 2] = l2
                    cov_out[n, 3] = l3
                    n += 1
                e0 += 2 * sx0
                e1 += 2 * sx1
                e2 += 2 * sx2
        t += 1
    return t, n


def rasterize(a, b, c, bias, x0, y0, x1, y1, rect, subpixel: int):
    """(triangle, qx, qy, coverage) of the covered quads, as ``rasterizer.rasterize``."""
    per = np.where((x1 >= x0) & (y1 >= y0),
                   (x1 // 2 - x0 // 2 + 1) * (y1 // 2 - y0 // 2 + 1), 0)
    capacity = int(max(min(int(per.sum()), 1 << 20), int(per.max(initial=0)), 1))
    rect = np.asarray(rect, dtype=np.int64)
    parts = []
    start = 0
    while True:
        tri = np.empty(capacity, dtype=np.int64)
        qx = np.empty(capacity, dtype=np.int64)
        qy = np.empty(capacity, dtype=np.int64)
        cov = np.empty((capacity, 4), dtype=bool)
        start, n = _rasterize(a, b, c, bias, x0, y0, x1, y1, rect, subpixel, start, tri, qx,
                              qy, cov)
        parts.append((tri[:n], qx[:n], qy[:n], cov[:n]))
        if start >= len(a):
            break
    if len(parts) == 1:
        # Copies, so the unused capacity is freed.
        return tuple(p.copy() for p in parts[0])
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))


# -- plane interpolation -----------------------------------------------------------------------

@_jit
def _evaluate(c, a, b, triangle, qx, qy, out):  # pragma: no cover - compiled
    k = c.shape[1]
    for q in range(triangle.shape[0]):
        t = triangle[q]
        fx = 2 * qx[q] + 0.5
        fy = 2 * qy[q] + 0.5
        for j in range(k):
            aj, bj = a[t, j], b[t, j]
            origin = c[t, j] + aj * fx + bj * fy
            right = origin + aj
            out[4 * q, j] = origin
            out[4 * q + 1, j] = right
            out[4 * q + 2, j] = origin + bj
            out[4 * q + 3, j] = right + bj


def evaluate(planes, triangle, qx, qy) -> np.ndarray:
    """Plane values at every lane's pixel center, (4 * Q, K) float64, as
    ``fragment_shading._evaluate``."""
    c, a, b = planes
    out = np.empty((4 * triangle.size, c.shape[1]), dtype=np.float64)
    _evaluate(np.ascontiguousarray(c), np.ascontiguousarray(a), np.ascontiguousarray(b),
              triangle, qx, qy, out)
    return out


@_jit
def _evaluate_perspective(c, a, b, triangle, qx, qy, inv_w, out):  # pragma: no cover
    k = c.shape[1]
    for q in range(triangle.shape[0]):
        t = triangle[q]
        fx = 2 * qx[q] + 0.5
        fy = 2 * qy[q] + 0.5
        for j in range(k):
            aj, bj = a[t, j], b[t, j]
            origin = c[t, j] + aj * fx + bj * fy
            right = origin + aj
            out[j, 4 * q] = origin / inv_w[4 * q]
            out[j, 4 * q + 1] = right / inv_w[4 * q + 1]
            out[j, 4 * q + 2] = (origin + bj) / inv_w[4 * q + 2]
            out[j, 4 * q + 3] = (right + bj) / inv_w[4 * q + 3]


@_jit
def _evaluate_linear(c, a, b, triangle, qx, qy, out):  # pragma: no cover - compiled
    k = c.shape[1]
    for q in range(triangle.shape[0]):
        t = triangle[q]
        fx = 2 * qx[q] + 0.5
        fy = 2 * qy[q] + 0.5
        for j in range(k):
            aj, bj = a[t, j], b[t, j]
            origin = c[t, j] + aj * fx + bj * fy
            right = origin + aj
            out[j, 4 * q] = origin
            out[j, 4 * q + 1] = right
            out[j, 4 * q + 2] = origin + bj
            out[j, 4 * q + 3] = right + bj


def evaluate_into(planes, triangle, qx, qy, inv_w, out) -> None:
    """Write the plane values at every lane (divided by the lane's ``inv_w`` when it is not
    None: perspective-correct) into ``out`` (K, 4 * Q) (float32: rounded once, as NumPy's
    assignment of the float64 result rounds)."""
    c, a, b = (np.ascontiguousarray(p) for p in planes)
    if inv_w is None:
        _evaluate_linear(c, a, b, triangle, qx, qy, out)
    else:
        _evaluate_perspective(c, a, b, triangle, qx, qy, inv_w, out)


# -- depth test and color write, in submission order ---------------------------------------

@_jit
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


def depth_test(pixel, depth, order, buffer, func: str, write: bool) -> np.ndarray:
    """The pass mask of fragments tested one after another in ``order`` (indices; each pixel's
    fragments in submission order), updating ``buffer`` as ``output_merger.depth_test``."""
    passed = np.zeros(pixel.size, dtype=bool)
    _depth_test(pixel, depth, order, buffer, DEPTH_FUNCS[func], write, passed)
    return passed


@_jit
def _unorm8(value, nan_byte):  # pragma: no cover - compiled
    if value != value:
        return nan_byte
    if value < 0.0:
        value = 0.0
    elif value > 1.0:
        value = 1.0
    return np.uint8(np.floor(value * 255.0 + 0.5))


@_jit
def _clip01(value):  # pragma: no cover - compiled
    # np.clip: NaN stays NaN.
    if value < 0.0:
        return 0.0
    if value > 1.0:
        return 1.0
    return value


@_jit
def _minimum(a, b):  # pragma: no cover - compiled
    # np.minimum: NaN wins.
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b


@_jit
def _factor(code, value_s, alpha_s, value_d, alpha_d, value_c, alpha_c,
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


@_jit
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
            sf = s[ch] * _factor(factors[2 * rgb], s[ch], s[3], d[ch], d[3], const[ch],
                                 const[3], alpha)
            df = d[ch] * _factor(factors[2 * rgb + 1], s[ch], s[3], d[ch], d[3], const[ch],
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


def write_colors(pixel, color, order, buffer, mask, has_alpha: bool, state) -> None:
    """Blend (if ``state.blend``) and write ``color`` (N, 4) of the fragments in ``order``
    (indices; each pixel's fragments in submission order) into the flat (P, 4) uint8
    ``buffer`` under ``mask`` (4,) bool, as ``output_merger.write_colors``."""
    factors = np.array([BLEND_FACTORS[state.blend_src_rgb], BLEND_FACTORS[state.blend_dst_rgb],
                        BLEND_FACTORS[state.blend_src_alpha],
                        BLEND_FACTORS[state.blend_dst_alpha]], dtype=np.int64)
    equations = np.array([BLEND_EQUATIONS[state.blend_eq_rgb],
                          BLEND_EQUATIONS[state.blend_eq_alpha]], dtype=np.int64)
    _write_colors(pixel, color, order, buffer, np.asarray(mask, dtype=bool), has_alpha,
                  bool(state.blend), factors, equations,
                  np.asarray(state.blend_color, dtype=np.float64), NAN_BYTE)


# -- per-tile counters -----------------------------------------------------------------------

@_jit_inline
def _all_within(index, size):  # pragma: no cover - compiled
    """Every entry of ``index`` in 0..size-1: the check a kernel makes before it writes."""
    for k in index:
        if k < 0 or k >= size:
            return False
    return True


@_jit
def _count_integers(tile, weights, out):  # pragma: no cover - compiled
    if not _all_within(tile, out.shape[0]):
        return False
    for i in range(tile.shape[0]):
        out[tile[i]] += np.int64(weights[i])
    return True


@_jit
def _count_weighted(tile, weights, sums):  # pragma: no cover - compiled
    if not _all_within(tile, sums.shape[0]):
        return False
    for i in range(tile.shape[0]):
        sums[tile[i]] += weights[i]
    return True


@_jit
def _count_constant(tile, amount, out):  # pragma: no cover - compiled
    if not _all_within(tile, out.shape[0]):
        return False
    for t in tile:
        out[t] += amount
    return True


def add_counts(out: np.ndarray, tile: np.ndarray, weights=None) -> None:
    """``out += bincount(tile, weights).astype(int64)`` (the same sums, in the same order;
    integer weights are summed as integers, which float64 sums exactly below 2**53);
    ``weights`` an int: that much per entry (None: 1)."""
    if weights is None or isinstance(weights, (int, np.integer)):
        ok = _count_constant(tile, 1 if weights is None else int(weights), out)
    elif weights.dtype.kind in "iub":
        ok = _count_integers(tile, weights, out)
    else:
        sums = np.zeros(out.size, dtype=np.float64)
        ok = _count_weighted(tile, np.asarray(weights, dtype=np.float64), sums)
        if ok:
            out += sums.astype(np.int64)
    if not ok:
        raise ValueError(f"tile numbers outside 0..{out.size - 1}")


@_jit
def _maximum_at(buffer, index, values, where):  # pragma: no cover - compiled
    if not _all_within(index, buffer.shape[0]):
        return False
    for i in range(index.shape[0]):
        if where is not None and not where[i]:
            continue
        if values[i] > buffer[index[i]]:
            buffer[index[i]] = values[i]
    return True


def maximum_at(buffer: np.ndarray, index: np.ndarray, values: np.ndarray,
               where: np.ndarray | None = None) -> None:
    """``np.maximum.at(buffer, index, values)`` of a flat int64 ``buffer`` and int64
    ``values`` (a maximum does not depend on the order it is taken in), of the entries
    ``where`` selects ((n,) bool; None: all) without gathering them first."""
    if not _maximum_at(buffer, index, values, where):
        raise IndexError(f"indices outside 0..{buffer.shape[0] - 1}")


# -- set-associative LRU tables and the texture caches ----------------------------------------

@_jit_inline
def _lru_one(state, g, t):  # pragma: no cover - compiled
    """One access of tag ``t`` to set ``g`` (ways oldest first); returns whether it hit."""
    ways = state.shape[1]
    if ways == 2:
        # The common two ways without branches: a hit on the most recent way leaves the set
        # as it is; any other access (a hit on the oldest or a miss) shifts it by one.
        s0, s1 = state[g, 0], state[g, 1]
        state[g, 0] = s0 if s1 == t else s1
        state[g, 1] = t
        return s0 == t or s1 == t
    if state[g, ways - 1] == t:
        return True             # a hit on the most recent way leaves the set as it is
    j = 0
    while j < ways and state[g, j] != t:
        j += 1
    found = j < ways
    if not found:
        j = 0           # a miss evicts the least recently used way
    for w in range(j, ways - 1):
        state[g, w] = state[g, w + 1]
    state[g, ways - 1] = t
    return found


@_jit
def _lru(key, tag, state, hit):  # pragma: no cover - compiled
    for i in range(key.shape[0]):
        hit[i] = _lru_one(state, key[i], tag[i])


def lru_access(state: np.ndarray, key: np.ndarray, tag: np.ndarray) -> np.ndarray:
    """Exact LRU over the accesses (M,) one at a time, updating ``state`` (groups, ways) int64
    (oldest first) in place; returns hit (M,) bool, as ``SetAssociativeLRU.access``."""
    hit = np.empty(key.shape[0], dtype=bool)
    _lru(key.astype(np.int64), tag.astype(np.int64), state, hit)
    return hit


@_jit
def _lru_payload(key, tag, value, state, stored, hit):  # pragma: no cover - compiled
    ways = state.shape[1]
    for i in range(key.shape[0]):
        g, t = key[i], tag[i]
        j = 0
        while j < ways and state[g, j] != t:
            j += 1
        hit[i] = j < ways
        if hit[i]:
            value[i] = stored[g, j]     # a hit returns (and keeps) the stored value
        else:
            j = 0                       # a miss evicts the least recently used way
        kept = value[i]
        for w in range(j, ways - 1):
            state[g, w] = state[g, w + 1]
            stored[g, w] = stored[g, w + 1]
        state[g, ways - 1] = t
        stored[g, ways - 1] = kept


def lru_access_with_payload(state: np.ndarray, stored: np.ndarray, key: np.ndarray,
                            tag: np.ndarray, payload: np.ndarray):
    """:func:`lru_access` for a table with a payload ``stored`` (groups, ways), both updated
    in place; returns (hit (M,) bool, value (M,)) as ``SetAssociativeLRU.access_with_payload``:
    the stored value on a hit, the access's own payload (inserted) on a miss."""
    hit = np.empty(key.shape[0], dtype=bool)
    value = np.array(payload, dtype=stored.dtype, copy=True)
    _lru_payload(key.astype(np.int64), tag.astype(np.int64), value, state, stored, hit)
    return hit, value


@_jit
def _texture_cache(table, width0, active, cache_of_lane, sets, set_shift, state, accesses,
                   misses):  # pragma: no cover - compiled
    n, width = table.shape
    for lane in range(n):
        if not active[lane]:
            continue
        base = cache_of_lane[lane] * sets
        for column in range(width):
            line = table[lane, column]
            if line < 0:
                continue
            # One access per distinct line among the columns of one level (slot).
            first = 0 if column < width0 else width0
            repeat = False
            for other in range(first, column):
                if table[lane, other] == line:
                    repeat = True
                    break
            if repeat:
                continue
            accesses[lane] += 1
            if set_shift >= 0:      # a power of two (lines are non-negative)
                hit = _lru_one(state, base + (line & (sets - 1)), line >> set_shift)
            else:
                hit = _lru_one(state, base + line % sets, line // sets)
            if not hit:
                misses[lane] += 1


@_jit
def _fill_lines(table, column, xs, ys, images, lanes, has_lanes, blocks_w, line_bases, bpp,
                shift, mask, line_shift):  # pragma: no cover - compiled
    k, m = xs.shape
    for i in range(m):
        row = lanes[i] if has_lanes else i
        for j in range(k):
            x = np.int64(xs[j, i])
            y = np.int64(ys[j, i])
            image = images[j, i]
            offset = ((((y >> shift) * np.int64(blocks_w[image]) + (x >> shift))
                       << (2 * shift)) + ((y & mask) << shift) + (x & mask))
            table[row, column + j] = ((offset * bpp) >> line_shift) + line_bases[image]


def fill_lines(table, column: int, xs, ys, images, lanes, blocks_w, line_bases, bpp: int,
               shift: int, mask: int, line_shift: int) -> None:
    """Write the cache line of every tap ((k, m) texel columns ``xs``, rows ``ys``, images)
    into ``table[lanes[i], column + j]`` (``lanes`` None: row i), as
    ``TextureSampler._count_cache`` computes them: the texel's offset in its level's
    block-linear layout, times ``bpp`` (bits per texel, with ``line_shift`` the line size's
    log2 in bits), in lines, after the image's first line."""
    has_lanes = lanes is not None
    _fill_lines(table, column, xs, ys, images,
                lanes if has_lanes else np.zeros(0, dtype=np.int64), has_lanes, blocks_w,
                line_bases, bpp, shift, mask, line_shift)


def texture_cache(table, width0: int, active, cache_of_lane, sets: int, state, accesses,
                  misses) -> None:
    """The cache accesses of one sampling instruction, lane by lane and column by column:
    ``table`` (N, width) int64 line numbers (negative: none; a line repeated among the
    columns of one level, the first ``width0`` or the rest, is accessed once),
    ``active`` (N,) bool,
    ``cache_of_lane`` (N,) int64 the cache each lane uses; adds each lane's accesses and
    misses to ``accesses`` / ``misses`` (N,) int64 and updates ``state`` (caches * sets, ways)
    as ``TextureSampler._count_cache`` does with the vectorized LRU."""
    set_shift = sets.bit_length() - 1 if sets & (sets - 1) == 0 else -1
    _texture_cache(table, width0, active, cache_of_lane, sets, set_shift, state, accesses,
                   misses)


# -- lane positions, pixels, tiles and depths ----------------------------------------------------

@_jit
def _lane_xy(qx, qy, x, y):  # pragma: no cover - compiled
    for q in range(qx.shape[0]):
        for lane in range(4):
            x[4 * q + lane] = 2 * qx[q] + (lane & 1)
            y[4 * q + lane] = 2 * qy[q] + (lane >> 1)


def lane_xy(qx, qy) -> tuple[np.ndarray, np.ndarray]:
    """(4 * Q,) pixel x and y of every lane of the quads, as ``Quads.pixels`` (raveled)."""
    x = np.empty(4 * qx.size, dtype=np.int64)
    y = np.empty(4 * qx.size, dtype=np.int64)
    _lane_xy(qx, qy, x, y)
    return x, y


@_jit
def _pixel_tile(x, y, scale, width, height, tile_size, tiles_x, pixel,
                tile):  # pragma: no cover - compiled
    for i in range(x.shape[0]):
        px = x[i] * scale
        py = y[i] * scale
        if scale > 1:
            px = min(px, width - 1)
            py = min(py, height - 1)
        pixel[i] = py * width + px
        tile[i] = (py // tile_size) * tiles_x + px // tile_size


def pixel_tile(x, y, scale: int, width: int, height: int, tile_size: int, tiles_x: int):
    """(pixel, tile) of lanes at (x, y) (superfragments of ``scale`` pixels clamped to the
    target), as ``quad_stages.raster_fragments`` computes them."""
    pixel = np.empty(x.size, dtype=np.int64)
    tile = np.empty(x.size, dtype=np.int64)
    _pixel_tile(x, y, scale, width, height, tile_size, tiles_x, pixel, tile)
    return pixel, tile


# What NumPy's float -> int64 cast gives a NaN on this machine.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    NAN_INT64 = int(np.array([np.nan]).astype(np.int64)[0])


@_jit
def _quantize(z, depth_max, nan_value, out):  # pragma: no cover - compiled
    for i in range(z.shape[0]):
        value = z[i]
        if value != value:
            out[i] = nan_value
            continue
        if value < 0.0:
            value = 0.0
        elif value > 1.0:
            value = 1.0
        out[i] = np.int64(np.floor(value * depth_max + 0.5))


def quantize_depth(z, depth_max: int) -> np.ndarray:
    """floor(clip(z, 0, 1) * depth_max + 0.5) as int64."""
    out = np.empty(z.size, dtype=np.int64)
    _quantize(z, float(depth_max), NAN_INT64, out)
    return out


# -- texture filtering ---------------------------------------------------------------------------

@_jit
def _bilinear_fixed(texels, base, width, x0, x1, y0, y1, ws, wt, out):  # pragma: no cover
    count = texels.shape[0]
    for i in range(x0.shape[0]):
        row0 = base[i] + np.int64(y0[i]) * width[i]
        row1 = base[i] + np.int64(y1[i]) * width[i]
        r00, r01, r10, r11 = row0 + x0[i], row0 + x1[i], row1 + x0[i], row1 + x1[i]
        if min(r00, r01, r10, r11) < 0 or max(r00, r01, r10, r11) >= count:
            return False
        w, v = np.int64(ws[i]), np.int64(wt[i])
        for c in range(4):
            a = np.int64(texels[r00, c])
            top = a + (((np.int64(texels[r01, c]) - a) * w + 128) >> 8)
            a = np.int64(texels[r10, c])
            bottom = a + (((np.int64(texels[r11, c]) - a) * w + 128) >> 8)
            out[i, c] = top + (((bottom - top) * v + 128) >> 8)
    return True


def bilinear_fixed(texels, base, width, x0, x1, y0, y1, ws, wt) -> np.ndarray:
    """llvmpipe's 8.8 fixed-point bilinear filter (``_lerp_fixed`` of the four taps, as
    ``_Sampling._sample_level``): (m, 4) int32 from the (T, 4) int32 ``texels`` of each
    lane's image (first texel ``base``, row length ``width``) at columns x0/x1, rows y0/y1,
    with 8-bit weights ws, wt."""
    out = np.empty((x0.size, 4), dtype=np.int32)
    if not _bilinear_fixed(texels, base, width, x0, x1, y0, y1, ws, wt, out):
        raise IndexError("bilinear taps outside the texture's texels")
    return out


# -- CRC32 signatures (Rendering Elimination's Signature Unit) ------------------------------------

@_jit
def _compute_crc(subblocks, lengths, sign_luts, shift_luts, out):  # pragma: no cover
    for j in range(subblocks.shape[0]):
        crc = np.uint32(0)
        for i in range(lengths[j]):
            block = subblocks[j, i]
            sign = np.uint32(0)
            for b in range(8):
                sign ^= sign_luts[b, np.int64((block >> np.uint64(8 * b)) & np.uint64(0xFF))]
            shifted = (shift_luts[0, np.int64(crc & np.uint32(0xFF))]
                       ^ shift_luts[1, np.int64((crc >> np.uint32(8)) & np.uint32(0xFF))]
                       ^ shift_luts[2, np.int64((crc >> np.uint32(16)) & np.uint32(0xFF))]
                       ^ shift_luts[3, np.int64((crc >> np.uint32(24)) & np.uint32(0xFF))])
            crc = sign ^ shifted
        out[j] = crc


def compute_crc(subblocks, lengths, sign_luts, shift_luts) -> np.ndarray:
    """``signature_unit.compute_crc``: (n,) uint32 raw CRCs of (n, k) uint64 sub-blocks, each
    message over its first ``lengths[j]`` sub-blocks (Sign of the sub-block XOR Shift of the
    CRC so far), with the unit's byte tables."""
    out = np.empty(subblocks.shape[0], dtype=np.uint32)
    _compute_crc(subblocks, lengths.astype(np.int64), sign_luts, shift_luts, out)
    return out



@_jit
def _fold_crc32(signatures, tile_ids, block_crc, block_subblocks, ladder):  # pragma: no cover
    for i in range(tile_ids.shape[0]):
        t = tile_ids[i]
        crc = signatures[t]
        amount = block_subblocks[i]
        rung = 0
        while amount > 0:
            if amount & 1:
                crc = (ladder[rung, 0, np.int64(crc & np.uint32(0xFF))]
                       ^ ladder[rung, 1, np.int64((crc >> np.uint32(8)) & np.uint32(0xFF))]
                       ^ ladder[rung, 2, np.int64((crc >> np.uint32(16)) & np.uint32(0xFF))]
                       ^ ladder[rung, 3, np.int64(crc >> np.uint32(24))])
            amount >>= 1
            rung += 1
        signatures[t] = crc ^ block_crc[i]


def fold_crc32(signatures, tile_ids, block_crc, block_subblocks, ladder) -> np.ndarray:
    """``signature_unit.fold_crc32`` entry by entry, as the Signature Unit folds them: each
    tile's CRC advanced over the entry's sub-blocks (``ladder``: the byte tables advancing by
    2**j zero sub-blocks) then XORed with the entry's CRC. Returns new (tiles,) uint32
    signatures."""
    out = signatures.astype(np.uint32, copy=True)
    _fold_crc32(out, tile_ids.astype(np.int64, copy=False),
                block_crc.astype(np.uint32, copy=False),
                block_subblocks.astype(np.int64, copy=False), ladder)
    return out


# -- Fragment memoization's keys -------------------------------------------------------------------

@_jit
def _crc32_words(words, running, lo, hi):  # pragma: no cover - compiled
    for w in range(words.shape[0]):
        for j in range(words.shape[1]):
            c = running[j] ^ words[w, j]
            running[j] = lo[c & np.uint32(0xFFFF)] ^ hi[c >> np.uint32(16)]


def crc32_words(words, running, lo, hi) -> None:
    """``fragment_memoization.crc32_words``'s loop in place: fold each row of ``words``
    ((W, m) uint32) into ``running`` ((m,) uint32, the complemented registers) with the two
    16-bit slicing tables ``lo`` and ``hi``; one pass per lane instead of two temporaries of
    every lane per word."""
    _crc32_words(words, running, lo, hi)


@_jit
def _stable_order(keys, bins, order):  # pragma: no cover - compiled
    start = np.zeros(bins + 1, dtype=np.int64)
    for i in range(keys.shape[0]):
        start[keys[i] + 1] += 1
    for b in range(bins):
        start[b + 1] += start[b]
    for i in range(keys.shape[0]):
        k = keys[i]
        order[start[k]] = i
        start[k] += 1


def stable_order(keys, bins: int) -> np.ndarray:
    """``argsort(keys, kind="stable")`` of (n,) integer ``keys`` in [0, bins), by counting
    (one pass to count, one to place: O(n + bins) where the merge sort is O(n log n))."""
    order = np.empty(keys.shape[0], dtype=np.int64)
    _stable_order(keys, bins, order)
    return order

@_jit_inline
def _crc_byte_step(c, table):  # pragma: no cover - compiled
    # Slicing-by-4 on 1 KB byte tables: they stay in L1, where a sequential per-key loop
    # over the 256 KB 16-bit tables waits on the cache.
    return (table[3, c & np.uint32(0xFF)] ^ table[2, (c >> np.uint32(8)) & np.uint32(0xFF)]
            ^ table[1, (c >> np.uint32(16)) & np.uint32(0xFF)] ^ table[0, c >> np.uint32(24)])


@_jit_inline
def _store_keys(out, first, group, quad, low, high, tables, halves):  # pragma: no cover
    """The keys of the ``group`` lanes from ``first`` whose message CRCs are low / high: with
    ``quad``, each continued over the lane's position in the quad."""
    ones = np.uint32(0xFFFFFFFF)
    for position in range(group):
        lane_low, lane_high = low, high
        if quad:
            lane_low = _crc_byte_step(low ^ np.uint32(position), tables[0])
            if halves == 2:
                lane_high = _crc_byte_step(high ^ np.uint32(position), tables[1])
        key = np.uint64(lane_low ^ ones)
        if halves == 2:
            key |= np.uint64(lane_high ^ ones) << np.uint64(32)
        out[first + position] = key


@_jit
def _fragment_keys(words, quad, register, tables, halves, out):  # pragma: no cover
    rows, n = words.shape
    group = 4 if quad else 1
    low_table, high_table = tables[0], tables[halves - 1]
    # Two messages at a time: each CRC is a chain of dependent table reads, and two
    # independent chains overlap (a last odd message pairs with itself).
    first = 0
    while first < n:
        second = first + group if first + group < n else first
        a_low, a_high = register[0], register[1]
        b_low, b_high = register[0], register[1]
        for offset in range(group):
            for r in range(rows):
                a_word = words[r, first + offset]
                b_word = words[r, second + offset]
                a_low = _crc_byte_step(a_low ^ a_word, low_table)
                b_low = _crc_byte_step(b_low ^ b_word, low_table)
                if halves == 2:
                    a_high = _crc_byte_step(a_high ^ a_word, high_table)
                    b_high = _crc_byte_step(b_high ^ b_word, high_table)
        _store_keys(out, first, group, quad, a_low, a_high, tables, halves)
        if second != first:
            _store_keys(out, second, group, quad, b_low, b_high, tables, halves)
        first = second + group


def fragment_keys(words, quad: bool, context: int, tables) -> np.ndarray:
    """``fragment_memoization.fragment_keys``'s hash in one pass over the lanes: ``words``
    (W, n) uint32, the lanes' input words (lane-major messages; with ``quad`` the 4 lanes of
    each quad hashed as one message, then the lane's position); ``tables`` (halves, 4, 256)
    uint32 byte tables, the CRC-32's (the key's low half) and, for 64-bit keys, the
    CRC-32C's (the high half), each continuing from ``context``. Returns (n,) uint64."""
    halves = tables.shape[0]
    register = np.full(2, (context & 0xFFFFFFFF) ^ 0xFFFFFFFF, dtype=np.uint32)
    out = np.empty(words.shape[1], dtype=np.uint64)
    _fragment_keys(words, quad, register, tables, halves, out)
    return out


# -- Fragment memoization's LUT ---------------------------------------------------------------

@_jit
def _memo_order(tile, shaded, rank, bins, order):  # pragma: no cover - compiled
    start = np.zeros(bins + 1, dtype=np.int64)
    for i in range(tile.shape[0]):
        if shaded[i]:
            start[rank[tile[i]] + 1] += 1
    for b in range(bins):
        start[b + 1] += start[b]
    for i in range(tile.shape[0]):
        if shaded[i]:
            k = rank[tile[i]]
            order[start[k]] = i
            start[k] += 1


def memo_order(tile, shaded, rank) -> np.ndarray:
    """The shaded lanes (``shaded`` (n,) bool) stably sorted by their tile's ``rank``
    (``argsort(rank[tile[lanes]], kind="stable")`` of ``lanes = flatnonzero(shaded)``, as
    lane indices), by counting."""
    order = np.empty(int(np.count_nonzero(shaded)), dtype=np.int64)
    _memo_order(tile, shaded, rank, rank.shape[0], order)
    return order


@_jit
def _memo_lookup(order, keys, index_bits, state, stored, hit, rows):  # pragma: no cover
    ways = state.shape[1]
    width = rows.shape[1]
    set_mask = np.uint64(state.shape[0] - 1)
    for i in order:
        key = keys[i]
        g = np.int64(key & set_mask)
        t = np.int64(key >> np.uint64(index_bits))
        j = 0
        while j < ways and state[g, j] != t:
            j += 1
        found = j < ways
        hit[i] = found
        # Element loops, not slices: slice assignment in this loop costs twice the time.
        if found:
            for k in range(width):          # a hit returns (and keeps) the stored color
                rows[i, k] = stored[g, j, k]
        else:
            j = 0                           # a miss evicts the least recently used way
        for w in range(j, ways - 1):
            state[g, w] = state[g, w + 1]
            for k in range(width):
                stored[g, w, k] = stored[g, w + 1, k]
        state[g, ways - 1] = t
        for k in range(width):
            stored[g, ways - 1, k] = rows[i, k]


def memo_lookup(order, keys, index_bits: int, state, stored, rows) -> np.ndarray:
    """``MemoLUT.lookup_insert``'s LUT, one fragment after the other in ``order``: key
    ``keys[i]`` (uint64; set = its low ``index_bits`` bits, tag = the rest) against
    ``state`` (sets, ways) int64 tags, oldest first, and ``stored`` (sets, ways, w) their
    colors' bits as w unsigned words, both updated in place. ``rows`` (n, w) of the same
    dtype: the fragments' colors, replaced in place by the stored color on a hit. Returns
    hit (n,) bool (False for lanes not in ``order``)."""
    hit = np.zeros(keys.shape[0], dtype=bool)
    _memo_lookup(order, keys, index_bits, state, stored, hit, rows)
    return hit


@_jit
def _rows_differ(a, b, where, out):  # pragma: no cover - compiled
    for i in range(a.shape[0]):
        differ = False
        if where[i]:
            for k in range(a.shape[1]):
                if a[i, k] != b[i, k]:
                    differ = True
                    break
        out[i] = differ


def rows_differ(a, b, where=None) -> np.ndarray:
    """(n,) bool: whether rows of the (n, w) unsigned arrays ``a`` and ``b`` differ, among
    the rows ``where`` ((n,) bool; None: all) selects (False elsewhere, not read)."""
    out = np.empty(a.shape[0], dtype=bool)
    _rows_differ(a, b, np.ones(a.shape[0], dtype=bool) if where is None else where, out)
    return out


# -- Dynamic Sampling Rate's upsampling -----------------------------------------------------------

@_jit
def _resolve_superfragments(color, depth, written, tiles, rates, tile_size, tiles_x, width,
                            height):  # pragma: no cover - compiled
    for k in range(tiles.shape[0]):
        tile = tiles[k]
        scale = np.int64(1) << np.int64(rates[tile])
        y0, x0 = (tile // tiles_x) * tile_size, (tile % tiles_x) * tile_size
        for y in range(y0, min(y0 + tile_size, height)):
            source_row = (y // scale * scale) * width
            for x in range(x0, min(x0 + tile_size, width)):
                p, s = y * width + x, source_row + x // scale * scale
                if p == s:
                    continue
                for c in range(color.shape[1]):
                    color[p, c] = color[s, c]
                if depth is not None:
                    depth[p] = depth[s]
                if written is not None:
                    written[p] = written[s]


def resolve_superfragments(color, depth, written, tiles, rates, tile_size: int, tiles_x: int,
                           width: int, height: int) -> None:
    """``Renderer._resolve_superfragments`` in place, tile by tile: every pixel of the
    ``tiles`` takes the (n, 4) ``color``, (n,) ``depth`` and ``written`` (None: absent) of its
    block's bottom-left pixel, blocks of 2**rates[tile] pixels; the caller makes sure blocks
    lie inside their tile (tile_size a multiple of every block), so a source pixel is never
    written."""
    _resolve_superfragments(color, depth, written, tiles, rates, tile_size, tiles_x, width,
                            height)


# -- Early Visibility Resolution's oracle ----------------------------------------------------------

@_jit
def _first_visible(pixel, depth, final, visible, tile_of_pixel, shaded):  # pragma: no cover
    for i in range(pixel.shape[0]):
        p = pixel[i]
        if depth[i] == final[p] and not visible[p]:
            visible[p] = True
            shaded[tile_of_pixel[p]] += 1


def first_visible(pixel, depth, final, visible, tile_of_pixel, shaded) -> None:
    """Mark the pixels whose fragment (``pixel``, ``depth``) is at the final depth and not yet
    marked in ``visible``, and count each once in ``shaded`` at its tile (the oracle's
    ``unique`` of such pixels, then ``bincount`` of their tiles)."""
    _first_visible(pixel, depth, final, visible, tile_of_pixel, shaded)


# -- texture sampling: every lane's filter, counters and cache accesses in one pass ---------------
# The per-lane arithmetic of ``texture_sampler._Sampling`` (wrap, taps, fetch, filter, level
# blend) in float32 / int steps in the same order, so colors are bit-identical; the cache
# accesses go through the LRU lane by lane, level 0 taps then level 1 taps, as
# ``_count_cache`` orders them (it builds a table of lines first; here they never leave
# registers).

WRAP_CODES = {"REPEAT": 0, "CLAMP_TO_EDGE": 1, "MIRRORED_REPEAT": 2}
_F0, _HALF, _F256 = np.float32(0), np.float32(0.5), np.float32(256)
_COORD_LIMIT = np.float32(1 << 30)
_BELOW_ONE = np.float32(0.99999994)
_INV255 = np.float32(1.0 / 255.0)


@_jit
def _clip_coord(v):  # pragma: no cover - compiled
    """np.clip(v, -2^30, 2^30) of a finite float32 (before float -> int conversions)."""
    if v < -_COORD_LIMIT:
        return -_COORD_LIMIT
    if v > _COORD_LIMIT:
        return _COORD_LIMIT
    return v


@_jit
def _mirror(s):  # pragma: no cover - compiled
    half = s * _HALF
    frac = half - np.rint(half)
    return abs(frac + frac)


@_jit
def _wrap_nearest(s, size, size_f, wrap, pot):  # pragma: no cover - compiled
    """_Sampling._wrap_nearest for one coordinate."""
    if wrap == 0:
        if pot:
            return np.int64(np.floor(_clip_coord(s * size_f))) & (size - 1)
        frac = min(s - np.floor(s), _BELOW_ONE)
        return np.int64(_clip_coord(frac * size_f))        # truncation
    if wrap == 1:
        return min(max(np.int64(_clip_coord(s * size_f)), 0), size - 1)
    return min(np.int64(_clip_coord(_mirror(s) * size_f)), size - 1)


@_jit
def _wrap_linear(s, size, size_f, wrap, pot):  # pragma: no cover - compiled
    """_Sampling._wrap_linear for one coordinate: (i0, i1, float32 weight)."""
    if wrap == 0:
        if pot:
            u = s * size_f - _HALF
            i0 = np.int64(np.floor(_clip_coord(u))) & (size - 1)
            return i0, (i0 + 1) & (size - 1), u - np.floor(u)
        u = (s - np.floor(s)) * size_f - _HALF
        i0 = size - 1 if u < _F0 else np.int64(np.floor(_clip_coord(u)))
        return i0, (i0 + 1 if i0 != size - 1 else 0), u - np.floor(u)
    if wrap == 1:
        u = max(min(s * size_f, size_f) - _HALF, _F0)
        i0 = np.int64(np.floor(_clip_coord(u)))
        return i0, min(i0 + 1, size - 1), u - np.floor(u)
    u = _mirror(s) * size_f - _HALF
    i0 = np.int64(np.floor(_clip_coord(u)))
    return max(i0, 0), min(i0 + 1, size - 1), u - np.floor(u)


@_jit
def _wrap_linear_fixed(s, size, size_f, wrap, pot):  # pragma: no cover - compiled
    """_Sampling._wrap_linear_fixed (REPEAT or CLAMP_TO_EDGE): (i0, i1, 8-bit weight)."""
    if wrap == 0 and not pot:
        scaled = np.int64(np.rint(_clip_coord((s - np.floor(s)) * size_f * _F256))) - 128
        i0 = min(size - 1 if (scaled >> 8) < 0 else scaled >> 8, size - 1)
        return i0, (i0 + 1 if i0 != size - 1 else 0), scaled & 255
    scaled = np.int64(np.rint(_clip_coord(s * (size_f * _F256)))) - 128
    i0, weight = scaled >> 8, scaled & 255
    if wrap == 0:
        i0 = i0 & (size - 1)
        return i0, (i0 + 1 if i0 != size - 1 else 0), weight
    inside = i0 >= 0 and i0 < size - 1
    i0 = min(max(i0, 0), size - 1)
    return i0, (i0 + 1 if inside else i0), weight


@_jit_inline
def _taps(s, t, linear, fixed, width, height, width_f, height_f, wrap_s, wrap_t,
          pot):  # pragma: no cover - compiled
    """The taps of one level (``_sample_level``'s wrap): columns x0, x1, rows y0, y1 (x1 = x0,
    y1 = y0 for NEAREST) and the weights, 8-bit (fixed) or float32."""
    if not linear:
        x = _wrap_nearest(s, width, width_f, wrap_s, pot)
        y = _wrap_nearest(t, height, height_f, wrap_t, pot)
        return x, x, y, y, 0, 0, _F0, _F0
    if fixed:
        x0, x1, wsi = _wrap_linear_fixed(s, width, width_f, wrap_s, pot)
        y0, y1, wti = _wrap_linear_fixed(t, height, height_f, wrap_t, pot)
        return x0, x1, y0, y1, wsi, wti, _F0, _F0
    x0, x1, wsf = _wrap_linear(s, width, width_f, wrap_s, pot)
    y0, y1, wtf = _wrap_linear(t, height, height_f, wrap_t, pot)
    return x0, x1, y0, y1, 0, 0, wsf, wtf


# 8-bit channels r, g, b, a in the 16-bit fields of one int64 ("spread" texels): one
# multiply-add lerps all four, a (256 - w) + b w + 128 < 2^16 per field (a + ((w (b - a) + 128)
# >> 8) == (a (256 - w) + b w + 128) >> 8 exactly); the top field may wrap the sign, which
# the mask after the shift drops.
_FIELDS = np.int64(0x00FF00FF00FF00FF)
_ROUND = np.int64(0x0080008000800080)


@_jit
def _lerp_spread(a, b, w):  # pragma: no cover - compiled
    """llvmpipe's 8-bit lerp of four spread channels at once (see ``_lerp_fixed``)."""
    return ((a * (256 - w) + b * w + _ROUND) >> 8) & _FIELDS


def _lanes_kernel(fixed, min_linear, mag_linear, has_two, counting):
    """The lane loop of :func:`sample_lanes` for one combination of the per-call flags: Numba
    compiles each closure with the flags as constants (and caches each on disk, keyed by
    them), so the loop has no branches on them (about 10% of its time on the runner trace);
    the per-lane arithmetic is the helpers', shared by every combination."""

    @_jit
    def kernel(s, t, face, minified, level0, level1, weight, levels, spread, texels, offsets,
               widths, heights, widths_f, heights_f, wrap_s, wrap_t, pot, out, active,
               lane_tile, has_tile, caches, sets, set_shift, state, blocks_w, line_bases,
               bpp, shift, mask, line_shift, samples, texel_counts, nearest,
               nearest_mip_linear, bilinear, trilinear, accesses,
               misses):  # pragma: no cover - compiled
        # One loop body: the helpers are scalar ones LLVM inlines, or _jit_inline ones (a
        # call that passes arrays costs reference counting, more than the per-lane work).
        count = spread.shape[0] if fixed else texels.shape[0]
        color_f = np.empty((2, 4), dtype=np.float32)
        # Python's modulo by a power of two is a mask (negative numbers included).
        cache_mask = caches - 1 if caches & (caches - 1) == 0 else -1
        for i in range(s.shape[0]):
            mini = minified[i]
            linear = min_linear if mini else mag_linear
            two = False
            weight_i = 0
            weight_f = _F0
            if has_two and mini:
                weight_f = weight[i]
                if fixed:
                    weight_i = np.int64(np.int32(weight_f * _F256))
                    two = weight_i > 0
                else:
                    two = weight_f > _F0
            lane_counted = counting and active[i]
            cache_base = 0
            if lane_counted:
                tile = lane_tile[i] if has_tile else i >> 2
                cache_base = (tile & cache_mask if cache_mask >= 0 else tile % caches) * sets
            lane_accesses = lane_misses = np.int64(0)
            color = color1 = np.int64(0)
            for slot in range(2 if two else 1):
                image = np.int64(face[i]) * levels + (
                    np.int64(level1[i]) if slot else (np.int64(level0[i]) if mini else 0))
                width = np.int64(widths[image])
                x0, x1, y0, y1, wsi, wti, wsf, wtf = _taps(
                    s[i], t[i], linear, fixed, width, np.int64(heights[image]),
                    widths_f[image], heights_f[image], wrap_s, wrap_t, pot)
                row0 = offsets[image] + y0 * width
                row1 = offsets[image] + y1 * width
                r00, r01, r10, r11 = row0 + x0, row0 + x1, row1 + x0, row1 + x1
                if min(r00, r01, r10, r11) < 0 or max(r00, r01, r10, r11) >= count:
                    if lane_counted:        # the accesses made so far, as they were counted
                        accesses[i] += lane_accesses
                        misses[i] += lane_misses
                    return False
                if fixed:
                    c = spread[r00]
                    if linear:
                        c = _lerp_spread(_lerp_spread(c, spread[r01], wsi),
                                         _lerp_spread(spread[r10], spread[r11], wsi), wti)
                    if slot:
                        color1 = c
                    else:
                        color = c
                else:
                    for ch in range(4):
                        a = texels[r00, ch]
                        if linear:
                            top = (texels[r01, ch] - a) * wsf + a
                            a = texels[r10, ch]
                            bottom = (texels[r11, ch] - a) * wsf + a
                            a = (bottom - top) * wtf + top
                        color_f[slot, ch] = a
                if lane_counted:
                    # _fill_lines then _texture_cache: each distinct line among the level's
                    # taps (00, 01, 10, 11) is one access to the exact LRU. The texel offset
                    # in the block-linear level is a column part plus a row part.
                    blocks = np.int64(blocks_w[image])
                    first = line_bases[image]
                    column0 = ((x0 >> shift) << (2 * shift)) + (x0 & mask)
                    row_part0 = (((y0 >> shift) * blocks) << (2 * shift)) + ((y0 & mask) << shift)
                    line00 = (((row_part0 + column0) * bpp) >> line_shift) + first
                    line01 = line10 = line11 = line00
                    if linear:
                        column1 = ((x1 >> shift) << (2 * shift)) + (x1 & mask)
                        row_part1 = ((((y1 >> shift) * blocks) << (2 * shift))
                                     + ((y1 & mask) << shift))
                        line01 = (((row_part0 + column1) * bpp) >> line_shift) + first
                        line10 = (((row_part1 + column0) * bpp) >> line_shift) + first
                        line11 = (((row_part1 + column1) * bpp) >> line_shift) + first
                    for j in range(4 if linear else 1):
                        if j == 0:
                            line = line00
                        elif j == 1:
                            if line01 == line00:
                                continue
                            line = line01
                        elif j == 2:
                            if line10 == line00 or line10 == line01:
                                continue
                            line = line10
                        else:
                            if line11 == line00 or line11 == line01 or line11 == line10:
                                continue
                            line = line11
                        lane_accesses += 1
                        if set_shift >= 0:      # a power of two (lines are non-negative)
                            g, tag = cache_base + (line & (sets - 1)), line >> set_shift
                        else:
                            g, tag = cache_base + line % sets, line // sets
                        lane_misses += not _lru_one(state, g, tag)
            if two:
                if fixed:
                    color = _lerp_spread(color, color1, weight_i)
                else:
                    for ch in range(4):
                        color_f[0, ch] = ((color_f[1, ch] - color_f[0, ch]) * weight_f
                                          + color_f[0, ch])
            for ch in range(4):
                # Fixed point: n / 255 as llvmpipe converts, n * float32(1 / 255).
                out[ch, i] = (np.float32((color >> (16 * ch)) & 255) * _INV255 if fixed
                              else color_f[0, ch])
            if lane_counted:
                samples[i] += 1
                texel_counts[i] += (4 if linear else 1) * (2 if two else 1)
                if linear:
                    if two:
                        trilinear[i] += 1
                    else:
                        bilinear[i] += 1
                elif two:
                    nearest_mip_linear[i] += 1
                else:
                    nearest[i] += 1
                accesses[i] += lane_accesses
                misses[i] += lane_misses
        return True

    return kernel


_lane_kernels = {}


def _lane_kernel(fixed: bool, min_linear: bool, mag_linear: bool, has_two: bool,
                 counting: bool):
    """The lane loop for these flags, compiled on first use (from Numba's disk cache after)."""
    key = (fixed, min_linear, mag_linear, has_two, counting)
    kernel = _lane_kernels.get(key)
    if kernel is None:
        kernel = _lane_kernels[key] = _lanes_kernel(*key)
    return kernel


def sample_lanes(out, s, t, face, lod, packed, *, fixed: bool, min_linear: bool,
                 mag_linear: bool, wrap_s: str, wrap_t: str, stats=None, active=None,
                 lane_tile=None, cache=None, lru_state=None) -> None:
    """Sample every lane (not seamless cube-map LINEAR taps) into ``out`` (4, n) float32, as
    ``_Sampling._filter`` does: ``s``, ``t`` sanitized float32 coordinates, ``face`` (n,),
    ``lod`` the sampler's ``_Lod``, ``packed`` its ``_Packed`` texture; with ``stats`` (a
    TextureStats), also its counters of the ``active`` lanes and their texture-cache accesses
    (``cache`` the TextureCacheConfig, ``lru_state`` its (caches * sets, ways) LRU table,
    updated; ``lane_tile`` (n,) picks each lane's cache, else its quad)."""
    has_two = lod.weight is not None
    floats0 = np.zeros(1, dtype=np.float32)
    ints0 = np.zeros(1, dtype=np.int64)
    counting = stats is not None
    if counting:
        sets = cache.sets
        set_shift = sets.bit_length() - 1 if sets & (sets - 1) == 0 else -1
        geometry = (cache.caches, sets, set_shift, lru_state, packed.blocks_w,
                    packed.line_bases, packed.bits, cache.block.bit_length() - 1,
                    cache.block - 1, cache.line_bytes.bit_length() - 1 + 3)
        counters = tuple(getattr(stats, name) for name in (
            "samples", "texels", "nearest", "nearest_mip_linear", "bilinear", "trilinear",
            "cache_accesses", "cache_misses"))
        active = np.ascontiguousarray(active, dtype=bool)
    else:
        geometry = (1, 1, 0, np.zeros((1, 1), dtype=np.int64), packed.blocks_w,
                    packed.line_bases, 1, 0, 0, 0)
        counters = (ints0,) * 8
        active = np.zeros(1, dtype=bool)
    has_tile = counting and lane_tile is not None
    tiles = np.asarray(lane_tile).astype(np.int64, copy=False) if has_tile else ints0
    kernel = _lane_kernel(bool(fixed), bool(min_linear), bool(mag_linear), has_two, counting)
    ok = kernel(
        s, t, face, lod.minified, lod.level0,
        lod.level1 if has_two else np.zeros(1, dtype=np.int32),
        lod.weight if has_two else floats0, packed.levels,
        packed.texels_spread if fixed else ints0, packed.texels,
        packed.offsets, packed.widths, packed.heights, packed.widths_f, packed.heights_f,
        WRAP_CODES[wrap_s], WRAP_CODES[wrap_t], packed.pot, out, active, tiles,
        has_tile, *geometry, *counters)
    if not ok:
        raise IndexError("texture taps outside the texture's texels")


# -- texture coordinates and the implicit level of detail, one pass -----------------------------

_COORD_RANGE = np.float32(1 << 24)
_LOD_LIMIT = np.float32(1000)
MIP_CODES = {"none": 0, "nearest": 1, "linear": 2}


@_jit
def _sanitize(v):  # pragma: no cover - compiled
    """texture_sampler._sanitize of one float32: NaN -> 0, clamped to +-2^24."""
    if v != v:
        return _F0
    return min(max(v, -_COORD_RANGE), _COORD_RANGE)


@_jit
def _implicit_lod(coords_s, coords_t, need_lod, width, height, mip, last, switchover, s, t,
                  minified, level0, level1, weight):  # pragma: no cover - compiled
    for i in range(coords_s.shape[0]):
        s[i] = _sanitize(np.float32(coords_s[i]))
        t[i] = _sanitize(np.float32(coords_t[i]))
    if not need_lod:    # one image filter: every lane "minified" from level 0
        minified[:] = True
        level0[:] = 0
        return
    bits = np.empty(1, dtype=np.int32)
    value = bits.view(np.float32)       # float32 <-> bits, as the NumPy code's .view
    for q in range(s.shape[0] // 4):
        i = 4 * q
        # _rho2_quads: from the top-left lane's right and lower neighbours.
        dsdx, dsdy = (s[i + 1] - s[i]) * width, (s[i + 2] - s[i]) * width
        dtdx, dtdy = (t[i + 1] - t[i]) * height, (t[i + 2] - t[i]) * height
        a = dsdx * dsdx + dtdx * dtdx
        b = dsdy * dsdy + dtdy * dtdy
        rho2 = _F0 if a != a or b != b else max(a, b)
        value[0] = rho2
        exponent = (bits[0] >> 23) & 0xFF
        # _lod with llvmpipe's fast log2.
        if mip != 2:
            # ipart = round(log2(rho)) exactly; minified when lambda > c.
            mini = rho2 > (np.float32(2) if switchover > _F0 else np.float32(1))
            lev0 = min(max((exponent - 127 + 1) >> 1, 0), last) if mip == 1 else 0
            lev1, frac = 0, _F0
        else:
            bits[0] = (bits[0] & 0x007FFFFF) | 0x3F800000      # the mantissa in [1, 2)
            lod = (np.float32(exponent - 128) + value[0]) * _HALF
            lod = min(max(lod, -_LOD_LIMIT), _LOD_LIMIT)        # never NaN: rho2 is finite
            mini = lod > switchover
            floor = np.floor(lod)
            frac = lod - floor
            ipart = np.int64(floor)
            lev0 = min(max(ipart, 0), last)
            lev1 = min(max(ipart + 1, 0), last)
            if ipart < 0 or ipart >= last:
                frac = _F0
        for k in range(4):
            minified[i + k] = mini
            level0[i + k] = lev0
            level1[i + k] = lev1
            weight[i + k] = frac


def implicit_lod(coords_s, coords_t, need_lod: bool, width: int, height: int, mip: str,
                 last: int, switchover):
    """Sanitized s, t and the level of detail of 2D lanes, as ``_Sampling._run`` computes them
    (``_sanitize``, then, with ``need_lod``, ``_rho2_quads`` and ``_lod`` for an implicit LOD
    with llvmpipe's fast log2, per quad: lanes 4q..4q+3, n a multiple of 4):
    (s, t, minified, level0, level1, weight), level1 and weight None unless ``mip`` is
    "linear"."""
    n = coords_s.shape[0]
    s = np.empty(n, dtype=np.float32)
    t = np.empty(n, dtype=np.float32)
    minified = np.empty(n, dtype=bool)
    level0 = np.empty(n, dtype=np.int32)
    level1 = np.empty(n, dtype=np.int32)
    weight = np.empty(n, dtype=np.float32)
    _implicit_lod(coords_s, coords_t, need_lod, np.float32(width), np.float32(height),
                  MIP_CODES[mip], last, np.float32(switchover), s, t, minified, level0, level1,
                  weight)
    if mip != "linear" or not need_lod:
        level1 = weight = None
    return s, t, minified, level0, level1, weight
