"""Dynamic Sampling Rate (Frame Coherence ch. 6): per-tile frequency analysis and the rate FSM.

Array code only, no rendering; it runs on the array backend of its inputs (NumPy or CuPy,
``tilesim.backend``). Each finished 16x16 tile of the default framebuffer goes through an
orthonormal 2D DCT (Eq. 6.1-6.4); ``MaxC``, the largest absolute coefficient on the
high-frequency diagonals, is compared with thresholds to move the tile's sampling rate one
step down (Reduce) or up (Increase) for the next frame (Fig. 6.5, Algorithm 5).

Rates are indices 0..4 = 1x, 1/4x, 1/16x, 1/64x, 1/256x: one sample per NxN block with
N = 1, 2, 4, 8, 16 (``BLOCK_SIZES``). The parameters are a <T_R, D_R> pair for the Reduce
transition of states 0..3 and a <T_I, D_I> pair for the Increase transition of states 1..3;
state 4 (one sample per tile, a flat tile with no frequency content to analyse) always goes
back to 3. They live in ``dsr_parameters.toml`` (:class:`DSRParameters`), fitted by
``tilesim dsr-search`` (``tilesim.studies.dsr_search``).

The content-change guard (optional, ``[guard]`` in the parameters; not in the thesis): the FSM
decides a tile's next rate from this frame's content, which is right only while the tile's
content is coherent from frame to frame, the premise of Frame Coherence ch. 6. Each SRT entry also
keeps the tile's mean luminance (the DC coefficient the DCT unit computes anyway, ``tile_means``);
a tile whose mean moved by more than ``change_threshold`` luma levels since the last frame,
or that has no last frame (the first frame after a reset: nothing shows its content is
coherent), is "changed" and may not be reduced: its next rate is the lowest of the FSM's
decision, its current rate and ``change_cap`` (a rate index: 0 restarts it at 1x, 4 only
forbids the reduction). Both values are fitted by the search. Without a guard the FSM is the
seed's, whose frame 1 is decided on frame 0 alone: a program whose sprites appear on frame 1
over flat tiles analysed at frame 0 lost 0.09 MSSIM on that frame.

Tiles are numbered as the renderer numbers the tiles of the default framebuffer: row-major
with tile row 0 at the BOTTOM of the image (OpenGL window coordinates): pixel (x, y), y up,
is in tile ``(y // 16) * tiles_x + x // 16``, and image row r (row 0 at the top) is
y = H - 1 - r. Inside a tile array, pixel rows keep image order (row 0 at the tile's top);
neither the DCT magnitudes nor SSIM depend on that orientation.

Also here: the image-quality helpers the search needs, MSSIM on luminance exactly as
``tilesim.images`` sets up scikit-image (Wang et al. 2004), and a batched NumPy version of
the same Gaussian-window SSIM for many 16x16 tiles at once (checked against scikit-image in the
tests). Small constant tables (the DCT kernel, the SSIM filter matrices, the FSM's thresholds) are
built with NumPy and copied to the inputs' backend where they meet the data.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim import backend
from tilesim.atomic import write_text
from tilesim.backend import array_module, to_host
from tilesim.errors import InputError
from tilesim.render.techniques.registry import ScreenPass, TechniqueUnit

TILE = 16
RATE_NAMES = ("1x", "1/4x", "1/16x", "1/64x", "1/256x")
BLOCK_SIZES = np.array([1, 2, 4, 8, 16])
SAMPLES_PER_PIXEL = 1.0 / BLOCK_SIZES.astype(np.float64) ** 2
LOWEST = len(RATE_NAMES) - 1          # 1/256x: one sample per tile
LUMA_WEIGHTS = np.array([0.299, 0.587, 0.114])
MAX_DIAGONAL = 2 * TILE - 2           # u + v of the highest-frequency coefficient (30)
DEFAULT_PARAMETERS = Path(__file__).resolve().with_name("dsr_parameters.toml")

# SSIM settings of tilesim.images (Wang et al. 2004): Gaussian window, sigma 1.5, truncated
# at 3.5 sigma as scipy.ndimage does (radius 5, an 11x11 window), population covariance.
SSIM_SIGMA, SSIM_TRUNCATE, SSIM_K1, SSIM_K2, SSIM_RANGE = 1.5, 3.5, 0.01, 0.03, 255.0
SSIM_RADIUS = int(SSIM_TRUNCATE * SSIM_SIGMA + 0.5)


# -- DCT and MaxC ---------------------------------------------------------------------------


def dct_kernel(n: int = TILE) -> np.ndarray:
    """The (n, n) Kernel Matrix of Eq. 6.4: row p is the p-th orthonormal DCT-II basis."""
    p = np.arange(n)[:, None]
    q = np.arange(n)[None, :]
    kernel = np.sqrt(2.0 / n) * np.cos((2 * q + 1) * np.pi * p / (2 * n))
    kernel[0, :] = 1.0 / np.sqrt(n)
    return kernel


def tile_dct(tiles: np.ndarray) -> np.ndarray:
    """Orthonormal 2D DCT-II of a batch of square tiles: (T, n, n) -> (T, n, n).

    ``DCT = K X K^T`` (Eq. 6.3), batched; coefficient (p, q) has frequency p along rows (down
    the tile) and q along columns."""
    xp = array_module(tiles)
    tiles = xp.asarray(tiles, dtype=np.float64)
    if tiles.ndim != 3 or tiles.shape[1] != tiles.shape[2]:
        raise ValueError(f"tile_dct: expected (T, n, n) tiles, got {tiles.shape}")
    kernel = xp.asarray(dct_kernel(tiles.shape[1]))
    return xp.einsum("pm,tmn,qn->tpq", kernel, tiles, kernel, optimize=True)


def diagonal_index(n: int = TILE) -> np.ndarray:
    """(n, n) array of u + v: the diagonal each coefficient lies on (0: the DC term)."""
    return np.add.outer(np.arange(n), np.arange(n))


def max_c(dct: np.ndarray, d) -> np.ndarray:
    """MaxC of each tile: the largest |coefficient| on diagonals u + v >= d.

    ``d`` is the number of low-frequency diagonals that are ignored (Frame Coherence §6.2: "the
    number of low-frequency matrix Diagonals that are ignored (D)"), so diagonals 0 .. d-1 are left
    out; in the thesis's Fig. 6.4 example diagonals 0-3 are ignored, i.e. d = 4. ``d`` is a
    scalar or one value per tile. A d past the last diagonal leaves no coefficient: MaxC 0.
    """
    xp = array_module(dct, d)
    dct = xp.asarray(dct)
    d = xp.broadcast_to(xp.asarray(d), dct.shape[:1])
    diagonal = xp.asarray(diagonal_index(dct.shape[1]))
    considered = diagonal[None, :, :] >= d[:, None, None]
    return xp.where(considered, xp.abs(dct), 0.0).max(axis=(1, 2))


def max_c_table(dct: np.ndarray) -> np.ndarray:
    """MaxC for every d at once: (T, n, n) -> (T, 2n - 1), column d = ``max_c(dct, d)``.

    The per-diagonal maxima, then a running maximum from the highest diagonal down; the
    search precomputes this once per tile so each parameter combination is a lookup. Built
    from gathers and ``maximum`` only (CuPy has no ``maximum.reduceat``/``accumulate``); a
    maximum is exact, so the result does not depend on the order it is taken in."""
    xp = array_module(dct)
    dct = xp.asarray(dct)
    n = dct.shape[1]
    # Row k: the flat indices of diagonal k's coefficients, padded to n with repeats of its
    # first one (a repeat leaves a maximum unchanged).
    diagonal = diagonal_index(n).ravel()
    order = np.argsort(diagonal, kind="stable")
    starts = np.searchsorted(diagonal[order], np.arange(2 * n))
    slot = np.arange(n)[None, :]
    inside = slot < (starts[1:] - starts[:-1])[:, None]
    members = order[np.where(inside, starts[:-1, None] + slot, starts[:-1, None])]
    magnitudes = xp.abs(dct.reshape(dct.shape[0], n * n))
    per_diagonal = xp.take(magnitudes, xp.asarray(members), axis=1).max(axis=2)
    # Running maximum from the last diagonal down, by doubling: after the step with shift s,
    # column k holds the maximum of columns k .. k + 2s - 1.
    table, shift = per_diagonal, 1
    while shift < table.shape[1]:
        table = xp.concatenate([xp.maximum(table[:, :-shift], table[:, shift:]),
                                table[:, -shift:]], axis=1)
        shift *= 2
    return table


# -- tiles of an image ----------------------------------------------------------------------


def luminance(image: np.ndarray) -> np.ndarray:
    """Luma Y = 0.299 R + 0.587 G + 0.114 B of an (H, W, 3|4) uint8 image, float64 0..255."""
    xp = array_module(image)
    image = xp.asarray(image)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise ValueError(f"expected an (H, W, 3) or (H, W, 4) image, got {image.shape}")
    return image[:, :, :3].astype(np.float64) @ xp.asarray(LUMA_WEIGHTS)


def tile_grid(height: int, width: int, tile: int = TILE) -> tuple[int, int]:
    """(tiles_y, tiles_x) covering a height x width image (partial tiles at the edges)."""
    return -(-height // tile), -(-width // tile)


def to_tiles(plane: np.ndarray, tile: int = TILE, mode: str = "edge", **pad) -> np.ndarray:
    """An (H, W) plane (row 0 at the top) as (tiles, tile, tile) in the renderer's numbering.

    Partial tiles at the top and right edges are padded with ``np.pad(mode, **pad)``: by
    default edge replication, which adds no frequency a tile's own pixels do not have."""
    xp = array_module(plane)
    height, width = plane.shape
    tiles_y, tiles_x = tile_grid(height, width, tile)
    padded = xp.pad(plane, ((tiles_y * tile - height, 0), (0, tiles_x * tile - width)),
                    mode=mode, **pad)
    blocks = padded.reshape(tiles_y, tile, tiles_x, tile).transpose(0, 2, 1, 3)
    # Tile row 0 is the bottom of the image (OpenGL window coordinates).
    return blocks[::-1].reshape(tiles_y * tiles_x, tile, tile)


def from_tiles(tiles: np.ndarray, height: int, width: int) -> np.ndarray:
    """Inverse of :func:`to_tiles`: (tiles, tile, tile, ...) -> (H, W, ...), padding dropped."""
    tile = tiles.shape[1]
    tiles_y, tiles_x = tile_grid(height, width, tile)
    blocks = tiles.reshape(tiles_y, tiles_x, tile, tile, *tiles.shape[3:])[::-1]
    plane = blocks.swapaxes(1, 2).reshape(tiles_y * tile, tiles_x * tile, *tiles.shape[3:])
    return plane[tiles_y * tile - height:, :width]


def tile_luminance(image: np.ndarray, tile: int = TILE) -> np.ndarray:
    """Luminance tiles of an (H, W, 4) uint8 image (row 0 at the top): (tiles, tile, tile).

    Why luminance: the error criterion, MSSIM, is computed on luminance, and the eye resolves
    far more detail in luma than in chroma, so luma is what a sampling rate must preserve.
    Partial edge tiles are padded by edge replication (see :func:`to_tiles`)."""
    return to_tiles(luminance(image), tile)


def pixel_tiles(height: int, width: int, tile: int = TILE, *, xp=np) -> np.ndarray:
    """(H, W) tile number of every pixel of an image (row 0 at the top), made by the array
    module ``xp``."""
    _, tiles_x = tile_grid(height, width, tile)
    y = (height - 1 - xp.arange(height))[:, None]
    x = xp.arange(width)[None, :]
    return (y // tile) * tiles_x + x // tile


def compose(rate_images: np.ndarray, rates: np.ndarray, tile: int = TILE) -> np.ndarray:
    """The frame a tile-rate map gives, from frames rendered at each uniform rate.

    ``rate_images``: (5, H, W, C); ``rates``: (tiles,). Each tile is rendered independently
    (its colors depend only on its own rate), so tile by tile the frame equals the uniform
    frame of that tile's rate."""
    xp = array_module(rate_images, rates)
    rate_images = xp.asarray(rate_images)
    _, height, width = rate_images.shape[:3]
    per_pixel = xp.asarray(rates)[pixel_tiles(height, width, tile, xp=xp)]
    index = per_pixel.reshape(1, height, width, *([1] * (rate_images.ndim - 3)))
    return xp.take_along_axis(rate_images, index.astype(np.intp), axis=0)[0]


# -- SSIM -----------------------------------------------------------------------------------


def frame_mssim(image: np.ndarray, reference: np.ndarray) -> float:
    """MSSIM of two (H, W, 3|4) uint8 frames on luminance (or of two (H, W) luma planes).

    scikit-image ``structural_similarity`` with ``tilesim.images.SSIM_OPTIONS`` (Wang et
    al. 2004: Gaussian window sigma 1.5, population covariance, data range 255). scikit-image
    runs on the host: device frames are copied there."""
    from skimage.metrics import structural_similarity

    from tilesim.images import SSIM_OPTIONS

    a = to_host(image)
    b = to_host(reference)
    if a.shape != b.shape:
        raise InputError(f"frame sizes differ: {a.shape} against {b.shape}",
                         source="frame_mssim")
    if np.array_equal(a, b):
        return 1.0
    a = luminance(a) if a.ndim == 3 else a.astype(np.float64)
    b = luminance(b) if b.ndim == 3 else b.astype(np.float64)
    if min(a.shape) < 2 * SSIM_RADIUS + 1:
        raise InputError(f"frames of {a.shape[1]}x{a.shape[0]} pixels are smaller than the "
                         f"{2 * SSIM_RADIUS + 1}x{2 * SSIM_RADIUS + 1} SSIM window",
                         source="frame_mssim")
    return float(structural_similarity(a, b, **SSIM_OPTIONS))


def gaussian_taps() -> np.ndarray:
    """The 11 normalised taps scipy.ndimage.gaussian_filter uses for sigma 1.5."""
    x = np.arange(-SSIM_RADIUS, SSIM_RADIUS + 1)
    taps = np.exp(-0.5 / SSIM_SIGMA**2 * x**2)
    return taps / taps.sum()


def valid_filter_matrix(n_out: int) -> np.ndarray:
    """(n_out, n_out + 10): the Gaussian filter of a line of n_out + 10 samples, kept where
    the whole window lies inside it ('valid' correlation)."""
    taps = gaussian_taps()
    matrix = np.zeros((n_out, n_out + 2 * SSIM_RADIUS))
    rows = np.arange(n_out)[:, None]
    matrix[rows, rows + np.arange(taps.size)] = taps
    return matrix


def reflect_matrix(n: int) -> np.ndarray:
    """(n + 10, n): pads a line of n samples by 5 on each side as scipy's 'reflect' mode does
    (d c b a | a b c d | d c b a), the mode scikit-image's SSIM filters with."""
    position = np.arange(-SSIM_RADIUS, n + SSIM_RADIUS)
    source = np.where(position < 0, -position - 1,
                      np.where(position >= n, 2 * n - 1 - position, position))
    matrix = np.zeros((position.size, n))
    matrix[np.arange(position.size), source] = 1.0
    return matrix


def ssim_map(x: np.ndarray, y: np.ndarray, window: np.ndarray) -> np.ndarray:
    """SSIM at every output pixel of batches of patches, ``window`` applying the Gaussian
    window separably: filtered = W X W^T. x, y: (K, a, a); result (K, b, b), window (b, a)."""
    def blur(plane):
        return window @ plane @ window.T

    ux, uy = blur(x), blur(y)
    vx = blur(x * x) - ux * ux
    vy = blur(y * y) - uy * uy
    vxy = blur(x * y) - ux * uy
    c1, c2 = (SSIM_K1 * SSIM_RANGE) ** 2, (SSIM_K2 * SSIM_RANGE) ** 2
    return ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))


def tile_ssim(tiles: np.ndarray, references: np.ndarray) -> np.ndarray:
    """MSSIM of each (n, n) luma tile against its reference tile, alone: (T, n, n) -> (T,).

    Equals ``structural_similarity(tile, reference, **SSIM_OPTIONS)`` on each pair (the test
    checks it): scikit-image filters with 'reflect' borders and averages the SSIM map over the
    pixels at least 5 from the border, which for a 16x16 tile is its central 6x6 (its
    automatic window, 11x11, fits a 16-pixel side, so no win_size is needed)."""
    xp = array_module(tiles, references)
    tiles = xp.asarray(tiles, dtype=np.float64)
    references = xp.asarray(references, dtype=np.float64)
    n = tiles.shape[1]
    if n < 2 * SSIM_RADIUS + 1:
        raise ValueError(f"tiles of {n}x{n} are smaller than the 11x11 SSIM window")
    window = xp.asarray(valid_filter_matrix(n) @ reflect_matrix(n))
    inner = slice(SSIM_RADIUS, n - SSIM_RADIUS)
    return ssim_map(tiles, references, window)[:, inner, inner].mean(axis=(1, 2))


# -- parameters -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DSRParameters:
    """The <T, D> pairs of the FSM's transitions (Frame Coherence §6.2, Fig. 6.5).

    ``reduce_thresholds`` / ``reduce_diagonals``: <T_R, D_R> of states 0..3 (1x .. 1/64x):
    reduce when MaxC(D_R) < T_R. ``increase_thresholds`` / ``increase_diagonals``: <T_I, D_I>
    of states 1..3 (1/4x .. 1/64x): otherwise increase when MaxC(D_I) >= T_I. State 4 always
    returns to 3. ``provenance``: how and when they were fitted (saved with them).

    The content-change guard (module docstring), off when ``change_threshold`` is None:
    a tile whose mean luma moved by more than ``change_threshold`` (0..255 levels; 255: only
    the first frame counts as a change) since the last frame, or that has no last frame, takes
    next the lowest of the FSM's rate, its current rate and ``change_cap`` (rate index 0..4).
    """

    reduce_thresholds: tuple[float, ...]
    reduce_diagonals: tuple[int, ...]
    increase_thresholds: tuple[float, ...]
    increase_diagonals: tuple[int, ...]
    provenance: dict = field(default_factory=dict, compare=False, repr=False)
    change_threshold: float | None = None
    change_cap: int = LOWEST

    def __post_init__(self):
        for name, count, kind in _FIELDS:
            values = tuple(kind(v) for v in getattr(self, name))
            if len(values) != count:
                raise ValueError(f"{name}: expected {count} values, got {len(values)}")
            object.__setattr__(self, name, values)
        if self.change_threshold is not None:
            threshold = float(self.change_threshold)
            if not 0 <= threshold <= 255:
                raise ValueError(f"change_threshold: {threshold} is outside 0..255")
            object.__setattr__(self, "change_threshold", threshold)
        if not 0 <= int(self.change_cap) <= LOWEST:
            raise ValueError(f"change_cap: {self.change_cap} is outside 0..{LOWEST}")
        object.__setattr__(self, "change_cap", int(self.change_cap))

    @property
    def guarded(self) -> bool:
        """Whether the content-change guard is on."""
        return self.change_threshold is not None

    @classmethod
    def never_reduce(cls, increase_thresholds=(0.0,) * 3, increase_diagonals=(0,) * 3,
                     provenance: dict | None = None) -> DSRParameters:
        """Parameters that keep every tile at 1x (T_R = 0: MaxC is never below 0)."""
        return cls((0.0,) * 4, (0,) * 4, increase_thresholds, increase_diagonals,
                   dict(provenance or {}))

    def key(self) -> tuple:
        """The parameter values as one hashable tuple (provenance left out):
        the four tuples of ``_FIELDS``, then (change_threshold, change_cap)."""
        return (*(getattr(self, name) for name, _, _ in _FIELDS),
                (self.change_threshold, self.change_cap))

    @classmethod
    def from_key(cls, key: tuple, provenance: dict | None = None) -> DSRParameters:
        """The parameters of a :meth:`key`."""
        *fields, (threshold, cap) = key
        return cls(*fields, provenance=dict(provenance or {}), change_threshold=threshold,
                   change_cap=cap)

    def replace(self, *, reduce: tuple[int, float, int] | None = None,
                increase: tuple[int, float, int] | None = None,
                guard: tuple[float | None, int] | None = None) -> DSRParameters:
        """A copy with one transition changed: ``reduce=(state, T, D)`` or likewise, or the
        guard: ``guard=(change_threshold, change_cap)`` (threshold None: off)."""
        values = {name: list(getattr(self, name)) for name, _, _ in _FIELDS}
        if reduce is not None:
            state, threshold, diagonals = reduce
            values["reduce_thresholds"][state] = threshold
            values["reduce_diagonals"][state] = diagonals
        if increase is not None:
            state, threshold, diagonals = increase
            values["increase_thresholds"][state - 1] = threshold
            values["increase_diagonals"][state - 1] = diagonals
        threshold, cap = guard if guard is not None else (self.change_threshold,
                                                          self.change_cap)
        return DSRParameters(**values, provenance=dict(self.provenance),
                             change_threshold=threshold, change_cap=cap)

    def tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(T_R, D_R, T_I, D_I), each indexed by state 0..4. Transitions that do not exist
        get thresholds no MaxC passes: T_R[4] = -inf, T_I[0] = T_I[4] = +inf (state 4's
        return to 3 is forced by the FSM, not by a threshold)."""
        t_r = np.array([*self.reduce_thresholds, -np.inf])
        d_r = np.array([*self.reduce_diagonals, 0], dtype=np.intp)
        t_i = np.array([np.inf, *self.increase_thresholds, np.inf])
        d_i = np.array([0, *self.increase_diagonals, 0], dtype=np.intp)
        return t_r, d_r, t_i, d_i

    # TOML ---------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path | None = None) -> DSRParameters:
        """Read a parameters file (default: the shipped ``dsr_parameters.toml``)."""
        path = Path(path) if path is not None else DEFAULT_PARAMETERS
        where = str(path)
        from tilesim.inputs import parse_toml, read_input_text

        # the text is kept: from_dict names the line of a bad key
        text = read_input_text(path, "DSR parameters file")
        data = parse_toml(text, where)
        return cls.from_dict(data, where, text)

    @classmethod
    def from_dict(cls, data: dict, where: str = "<parameters>",
                  text: str | None = None) -> DSRParameters:
        """Parameters from the parsed TOML tables; InputError naming ``where`` (and the line,
        when ``text`` is given) on a missing, extra or out-of-range value."""
        def fail(message, table=None, key=None):
            # The key's line, else its table's header (a missing key), else none.
            line = None
            if text is not None and table is not None:
                line = _key_line(text, table, key) or _key_line(text, table, None)
            raise InputError(message, source=where, line=line)

        unknown = sorted(set(data) - {"reduce", "increase", "guard", "provenance"})
        if unknown:
            fail(f"unknown table(s) {', '.join(unknown)}: expected [reduce], [increase], "
                 "[guard] and [provenance]")
        values = {}
        for table, count, states in (("reduce", 4, "0..3"), ("increase", 3, "1..3")):
            section = data.get(table)
            if not isinstance(section, dict):
                fail(f"missing table [{table}] (threshold and diagonals of states {states})")
            extra = sorted(set(section) - {"threshold", "diagonals"})
            if extra:
                fail(f"[{table}]: unknown key(s) {', '.join(extra)}; expected threshold and "
                     "diagonals", table, extra[0])
            for key in ("threshold", "diagonals"):
                value = section.get(key)
                if not isinstance(value, list) or len(value) != count:
                    fail(f"{table}.{key}: expected a list of {count} values (states {states}),"
                         f" got {value!r}", table, key)
                for item in value:
                    if key == "threshold":
                        ok = (isinstance(item, int | float) and not isinstance(item, bool)
                              and math.isfinite(item) and item >= 0)
                        expected = "finite numbers >= 0"
                    else:
                        ok = (isinstance(item, int) and not isinstance(item, bool)
                              and 0 <= item <= MAX_DIAGONAL)
                        expected = f"integers 0..{MAX_DIAGONAL}"
                    if not ok:
                        fail(f"{table}.{key}: {item!r} is out of range (expected {expected})",
                             table, key)
                values[f"{table}_{'thresholds' if key == 'threshold' else 'diagonals'}"] = value
        guard = data.get("guard")
        if guard is not None:
            if not isinstance(guard, dict):
                fail("guard must be a table", "guard")
            extra = sorted(set(guard) - {"change_threshold", "change_cap"})
            if extra:
                fail(f"[guard]: unknown key(s) {', '.join(extra)}; expected change_threshold "
                     "and change_cap", "guard", extra[0])
            threshold, cap = guard.get("change_threshold"), guard.get("change_cap")
            if not (isinstance(threshold, int | float) and not isinstance(threshold, bool)
                    and math.isfinite(threshold) and 0 <= threshold <= 255):
                fail(f"guard.change_threshold: expected a number of luma levels in 0..255, "
                     f"got {threshold!r}", "guard", "change_threshold")
            if not (isinstance(cap, int) and not isinstance(cap, bool) and 0 <= cap <= LOWEST):
                fail(f"guard.change_cap: expected a rate index 0..{LOWEST}, got {cap!r}",
                     "guard", "change_cap")
            values.update(change_threshold=threshold, change_cap=cap)
        provenance = data.get("provenance", {})
        if not isinstance(provenance, dict):
            fail("provenance must be a table", "provenance")
        return cls(**values, provenance=provenance)

    def to_toml(self) -> str:
        """The parameters as TOML: [reduce], [increase], then [provenance]."""
        lines = [
            "# Dynamic Sampling Rate parameters (Frame Coherence §6.2-6.3), read by",
            "# tilesim.render.techniques.dynamic_sampling_rate.DSRParameters.load.",
            "# States 0..4 are 1x, 1/4x, 1/16x, 1/64x, 1/256x.",
            "# Reduce state s when MaxC(D_R[s]) < T_R[s]; otherwise",
            "# increase when MaxC(D_I) >= T_I. MaxC: largest |DCT coefficient| of the tile's",
            "# luminance on diagonals u + v >= D. 1/256x always goes back to 1/64x.",
            "",
            "[reduce]  # states 0..3 (1x, 1/4x, 1/16x, 1/64x)",
            f"threshold = {_toml_value(list(self.reduce_thresholds))}",
            f"diagonals = {_toml_value(list(self.reduce_diagonals))}",
            "",
            "[increase]  # states 1..3 (1/4x, 1/16x, 1/64x)",
            f"threshold = {_toml_value(list(self.increase_thresholds))}",
            f"diagonals = {_toml_value(list(self.increase_diagonals))}",
        ]
        if self.guarded:
            lines += [
                "",
                "[guard]  # content change: mean luma moved > change_threshold (or no last",
                "# frame) -> next rate <= min(FSM, current, change_cap); 0 = 1x",
                f"change_threshold = {_toml_value(self.change_threshold)}",
                f"change_cap = {_toml_value(self.change_cap)}",
            ]
        if self.provenance:
            lines += ["", *_toml_table(("provenance",), self.provenance)]
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_toml` atomically."""
        return write_text(path, self.to_toml())


_FIELDS = (("reduce_thresholds", 4, float), ("reduce_diagonals", 4, int),
           ("increase_thresholds", 3, float), ("increase_diagonals", 3, int))
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    import json

    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value) -> str:
    """A TOML literal for str, bool, int, float and lists of them (JSON string escapes are
    valid TOML basic-string escapes)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_table(path: tuple[str, ...], table: dict) -> list[str]:
    """Lines of a table: its header and scalars (a table of only sub-tables needs no header
    of its own), then each sub-table, blank lines between."""
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    subtables = {k: v for k, v in table.items() if isinstance(v, dict)}
    blocks = []
    if scalars or not subtables:
        blocks.append(["[" + ".".join(_toml_key(k) for k in path) + "]",
                       *(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in scalars.items())])
    blocks += [_toml_table((*path, str(k)), v) for k, v in subtables.items()]
    lines: list[str] = []
    for block in blocks:
        lines += ([""] if lines else []) + block
    return lines


def _key_line(text: str, table: str | None, key: str | None) -> int | None:
    """1-based line of ``key =`` inside ``[table]`` (or of the header when key is None)."""
    current = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.match(r"^\[([^\[\]]+)\]", stripped)
        if header:
            current = header.group(1).strip()
            if key is None and current == table:
                return number
        elif key is not None and current == table and re.match(
                rf"^{re.escape(key)}\s*=", stripped):
            return number
    return None


# -- the FSM and the Sampling Rate Table ----------------------------------------------------


def tile_means(tiles: np.ndarray) -> np.ndarray:
    """Mean luminance of each (n, n) tile rounded to an 8-bit value, (T, n, n) -> (T,)
    float64 in 0..255: the DC coefficient of its DCT over n, as the guard keeps it per tile.
    The luma values are rounded to float32 first and summed in float64, which is exact (luma
    of 8-bit colors needs under 44 bits), so the pipeline's float64 tiles and the search's
    float32 tables give the same means."""
    xp = array_module(tiles)
    tiles = xp.asarray(tiles).astype(np.float32).astype(np.float64)
    return xp.floor(tiles.sum(axis=(1, 2)) / (tiles.shape[1] * tiles.shape[2]) + 0.5)


def changed_tiles(means: np.ndarray, previous: np.ndarray | None,
                  params: DSRParameters) -> np.ndarray | None:
    """The guard's test: (T,) bool, True where a tile's mean luma moved by more than
    ``params.change_threshold`` since the last frame's ``previous`` means, or everywhere when
    there is no last frame (None). None when the guard is off."""
    if not params.guarded:
        return None
    xp = array_module(means)
    if previous is None:
        return xp.ones(means.shape, dtype=bool)
    return xp.abs(means - xp.asarray(previous)) > params.change_threshold


def transition(rates: np.ndarray, maxc, params: DSRParameters, *,
               increase_only: bool = False, changed: np.ndarray | None = None) -> np.ndarray:
    """Algorithm 5's decision for every tile at once: the rates of the next frame.

    ``maxc(d)`` gives each tile's MaxC for a per-tile array of ignored diagonals ``d`` (from
    its DCT, or a precomputed :func:`max_c_table`). Reduce (index + 1) when MaxC(D_R) < T_R,
    else increase (index - 1) when MaxC(D_I) >= T_I, else stay; 1/256x always goes back to
    1/64x. ``increase_only`` leaves out the Reduce test (Algorithm 6). ``changed`` ((T,)
    bool, from :func:`changed_tiles`): those tiles take the lowest rate of the decision,
    their current rate and ``params.change_cap`` (see :func:`guard`). Runs on the backend
    of ``rates`` (``maxc`` must answer on the same one)."""
    xp = array_module(rates)
    rates = xp.asarray(rates)
    if rates.size and bool(((rates < 0) | (rates > LOWEST)).any()):
        raise ValueError(f"sampling rate indices must be 0..{LOWEST}")
    state = rates.astype(np.intp)
    t_r, d_r, t_i, d_i = (xp.asarray(table) for table in params.tables())
    if increase_only:
        reduce = xp.zeros(state.shape, dtype=bool)
    else:
        reduce = maxc(d_r[state]) < t_r[state]
    increase = ~reduce & (maxc(d_i[state]) >= t_i[state])
    following = state + reduce - increase
    following[state == LOWEST] = LOWEST - 1
    following = xp.clip(following, 0, LOWEST).astype(np.int8)
    return following if changed is None else guard(following, rates, changed, params)


def guard(following: np.ndarray, rates: np.ndarray, changed: np.ndarray,
          params: DSRParameters) -> np.ndarray:
    """The next rates with the guard applied: where ``changed``, the lowest sampling rate
    (highest index) is min(``following``, ``rates``, ``params.change_cap``), i.e. no
    reduction, and at most ``change_cap`` (0: back to 1x)."""
    xp = array_module(following)
    capped = xp.minimum(xp.minimum(following, xp.asarray(rates).astype(np.int8)),
                        np.int8(params.change_cap))
    return xp.where(xp.asarray(changed), capped, following).astype(np.int8)


def next_rates(rates: np.ndarray, dct: np.ndarray, params: DSRParameters, *,
               increase_only: bool = False, changed: np.ndarray | None = None) -> np.ndarray:
    """The next frame's rate index of each tile from this frame's rates and tile DCTs."""
    return transition(rates, lambda d: max_c(dct, d), params, increase_only=increase_only,
                      changed=changed)


class SamplingRateTable:
    """The SRT (Frame Coherence §6.4.1): one 3-bit entry per tile, the rate of the next frame.

    All tiles start at 1x. :meth:`update` analyses a finished frame (DCT of each tile's
    luminance, MaxC, FSM) and stores the rates for the next one. With the guard on, each
    entry also keeps the tile's mean luma (``means``; None until the first frame: no tile
    has a last frame then) and :meth:`update` counts the changed tiles (``changed``,
    ``changed_tiles`` in total). Work is counted:
    ``dct_tiles`` (2D DCTs computed), ``reads`` and ``writes`` (SRT entries; :meth:`read` is
    the rasteriser fetching each tile's state, :meth:`update` reads and writes every entry).

    The entries start on the active array backend (``tilesim.backend.xp()``) and stay on the
    device once a frame from it (or any frame, with the entries there) has been analysed: a
    host frame is copied to the entries' backend, so the analysis runs where the renderer's
    arrays live.
    """

    ENTRY_BITS = 3
    MEAN_BITS = 8

    def __init__(self, tiles: int, params: DSRParameters | None = None, *, tile: int = TILE):
        self.tiles = int(tiles)
        self.tile = tile
        self.params = params if params is not None else DSRParameters.load()
        self.rates = backend.xp().zeros(self.tiles, dtype=np.int8)
        self.means = None
        self.changed = None
        self.changed_tiles = 0
        self.dct_tiles = 0
        self.reads = 0
        self.writes = 0

    @property
    def entry_bits(self) -> int:
        """Bits per entry: the 3-bit state, and with the guard an 8-bit mean luma."""
        return self.ENTRY_BITS + (self.MEAN_BITS if self.params.guarded else 0)

    @property
    def storage_bytes(self) -> float:
        """SRT size: 3 bits per tile (2.96 KB for the 8100 tiles of 1920x1080), 11 with the
        guard (10.9 KB)."""
        return self.tiles * self.entry_bits / 8

    def read(self) -> np.ndarray:
        """The rate of every tile, as the rasteriser fetches it when a tile starts."""
        self.reads += self.tiles
        return self.rates.copy()

    def update(self, image: np.ndarray) -> np.ndarray:
        """Run the frequency analysis and FSM on a finished (H, W, 4) frame; returns (and
        keeps) the rates of the next frame, on the device if the frame or the entries are
        there."""
        xp = array_module(image, self.rates)
        tiles = tile_luminance(xp.asarray(image), self.tile)
        if tiles.shape[0] != self.tiles:
            raise ValueError(f"the frame has {tiles.shape[0]} tiles, the SRT {self.tiles}")
        changed = None
        if self.params.guarded:
            means = tile_means(tiles)
            changed = changed_tiles(means, self.means, self.params)
            self.means = means
            self.changed = changed
            self.changed_tiles += int(changed.sum())
        self.rates = next_rates(xp.asarray(self.rates), tile_dct(tiles), self.params,
                                changed=changed)
        self.dct_tiles += self.tiles
        self.reads += self.tiles
        self.writes += self.tiles
        return self.rates.copy()

    def counters(self) -> dict[str, int]:
        return {"dct_tiles": self.dct_tiles, "srt_reads": self.reads,
                "srt_writes": self.writes}


class DynamicSamplingRateUnit(TechniqueUnit):
    """DSR behind the pipeline's hooks: the SRT gives every screen tile its sampling rate
    (``rates``, read by the rasterizer); each finished frame is analysed for the next one's
    rates, and each pass counts its DCTs and SRT accesses per tile."""

    def __init__(self, screen, traversal: str, techniques) -> None:
        super().__init__(screen, traversal, techniques)
        params = techniques.dsr_parameters
        if params is None or not isinstance(params, DSRParameters):
            params = DSRParameters.load(params)
        if screen.tile_size != TILE:
            raise InputError("DSR's sampling rates (1x .. 1/256x) are defined on 16x16 "
                             f"tiles, not {screen.tile_size}x{screen.tile_size}")
        self.srt = SamplingRateTable(screen.tile_count, params, tile=screen.tile_size)
        self.rates = self.srt.read()

    def end_pass(self, counters, board: ScreenPass) -> None:
        xp = array_module(self.screen.color)
        tiles = self.screen.tile_count
        counters.add_per_tile("dsr_rate", xp.asarray(self.rates))
        counters.add_per_tile("dsr_dcts", xp.ones(tiles, dtype=xp.int64))
        counters.add_per_tile("dsr_srt_accesses", xp.full(tiles, 2, dtype=xp.int64))

    def end_frame(self, result, screen) -> None:
        # The finished frame, row 0 at the top, where it lies (the device).
        self.srt.update(screen.color[::-1])
        self.rates = self.srt.read()
