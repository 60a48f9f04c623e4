"""Fitting the Dynamic Sampling Rate parameters (Frame Coherence §6.3, Algorithms 5 and 6).

Each tile is rendered independently and its colors depend only on its own sampling rate, so
the frame of ANY tile-rate map equals, tile by tile, the frames rendered at a uniform rate.
A trace is therefore rendered five times (every tile at 1x, at 1/4x, ... at 1/256x:
:func:`render_rates`) and every parameter combination after that is pure NumPy over the
tiles: pick each tile from the frame of its rate, look up its MaxC (the DCT of a tile at rate
r is the DCT of that tile of the rate-r frame, precomputed for every number of ignored
diagonals), step the FSM, and measure the frame's MSSIM against the 1x frame.

MSSIM of a composed frame is computed only where it can differ from 1: the SSIM map at a
pixel depends on the 11x11 window around it, so where the composed and the 1x frame agree on
the whole window it is exactly 1. Only tiles within one tile of a tile whose luma differs
from 1x are evaluated, on 26x26 patches (the tile and 5 pixels of context) with the batched
Gaussian-window SSIM of ``tilesim.render.techniques.dynamic_sampling_rate``; the result equals
scikit-image's ``structural_similarity`` on the whole frame (the tests check it).

``tilesim dsr-search`` renders and caches the five uniform-rate frames of each trace
(``--cache``, one ``.npz`` per trace and rate, so an interrupted search resumes), derives the
per-tile tables (``.npy``, memory-mapped by every worker), then searches in two steps, as the
seed does (divide and conquer): Algorithm 6 (the Local Minimum as the reduction mechanism)
over a grid of <T_I, D_I>, then Algorithm 5 over a grid of <T_R, D_R> with the chosen
increase pairs. The Local Minimum (the lowest rate at which a tile by itself stays at MSSIM
0.95) judges each tile in its 1x surroundings over all its 256 pixels (``--local-minimum-tile
context``, the default): scikit-image on the 16x16 tile alone (``alone``) counts only its
central 6x6 pixels, lets errors along tile edges through, and can leave Algorithm 6, which
never samples above the Local Minimum, no error-free combination. The states are coupled,
so each step searches either the full product of the per-state grids (``--strategy
product``) or by coordinate descent (``coordinate``, the default): starting from a known
point, each state in turn tries every pair of the grid with the other states fixed and
keeps the best, sweeping until a sweep changes nothing. A combination is discarded at its
first frame below MSSIM 0.95 (the thesis's pruning); the winner has the lowest ASR and no
error on the training traces. It is then run on the evaluation traces and written, with
provenance, as a parameters TOML.

The content-change guard (``dynamic_sampling_rate``, not in the thesis) is searched with the
reduce step, as one more coordinate: its <change_threshold, change_cap> pairs
(``--guard-thresholds``, ``--guard-caps``; ``--no-guard`` fits the thesis's FSM alone). The
increase step runs with the strictest pair, and a sweep relaxes the guard as far as the
reductions chosen so far stay error-free. ``--train-min-mssim`` asks the training traces to
keep a higher MSSIM than the 0.95 limit, a margin for traces the fit has not seen.

Leave-workloads-out validation (``--folds K`` or ``--leave-out A,B`` per fold): each fold
fits on the other training traces and runs its parameters on the ones it holds out, reporting
the worst held-out frame (trace, frame, MSSIM) and the held-out ASR; the parameters written
are then fitted on all the traces, with the folds in their provenance. Exit status 1 when a
fold's worst held-out frame is below the limit.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
import os
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tilesim.atomic import write_bytes, write_json
from tilesim.errors import InputError
from tilesim.options import (
    frame_range,
)
from tilesim.render.replay import render_trace
from tilesim.render.techniques.dynamic_sampling_rate import (
    LOWEST,
    MAX_DIAGONAL,
    RATE_NAMES,
    SAMPLES_PER_PIXEL,
    SSIM_RADIUS,
    TILE,
    DSRParameters,
    changed_tiles,
    frame_mssim,
    from_tiles,
    guard,
    max_c_table,
    ssim_map,
    tile_dct,
    tile_grid,
    tile_luminance,
    tile_means,
    tile_ssim,
    to_tiles,
    transition,
    valid_filter_matrix,
)
from tilesim.render.traces.trace_file import open_trace
from tilesim.studies.batch import renderer_sha256
from tilesim.studies.dask_cluster import dask_client, map_in_order
from tilesim.studies.defaults import LOCAL_MINIMUM_TILES, PARAMETERS_FILE  # noqa: F401 (named here)
from tilesim.studies.dsr_grid import MAX_PRODUCT, SearchGrid  # noqa: F401 (named here)
from tilesim.thresholds import DSR_MIN_MSSIM

RATES = len(RATE_NAMES)
CACHE_VERSION = 1
PATCH = TILE + 2 * SSIM_RADIUS  # a tile and the context its SSIM windows reach


# -- rendering at uniform rates -------------------------------------------------------------


def frames_of(frames, count: int, where: str = "<trace>") -> range:
    """None (all), 'A:B', a range or a (start, stop) pair -> the frame numbers, checked
    against a trace of ``count`` frames (InputError naming ``where``)."""
    if frames is None or isinstance(frames, str):
        try:
            return frame_range(frames or ":", count)
        except InputError as exc:
            raise InputError(exc.bare_message, source=where) from None
    start, stop = (frames.start, frames.stop) if isinstance(frames, range) else frames
    if not 0 <= start < stop <= count:
        raise InputError(f"frames {start}:{stop}: the trace has frames 0..{count - 1}",
                         source=where)
    return range(start, stop)


def render_rate(trace_path: str | os.PathLike, rate: int, frames=None,
                size: tuple[int, int] | None = None, *, on_frame: Callable | None = None
                ) -> np.ndarray:
    """The frames of a trace with every tile at sampling rate index ``rate``: (F, H, W, 4).

    ``size`` (W, H) renders into a window of that size instead of the trace's own (draws
    that keep the default viewport scale with it; a trace that sets its own viewport keeps
    it). Frames before the first wanted one are replayed too (later frames depend on them).
    """
    if not 0 <= rate <= LOWEST:
        raise InputError(f"sampling rate index {rate}: expected 0..{LOWEST}",
                         source=str(trace_path))
    with open_trace(trace_path) as trace:
        wanted = frames_of(frames, trace.frame_count, str(trace_path))
        width, height = size or (trace.width, trace.height)
        images = np.zeros((len(wanted), height, width, 4), dtype=np.uint8)
        for result in render_trace(trace, frames=wanted, size=size, tile_size=TILE,
                                   tile_rates=rate, source=str(trace_path)):
            images[result.index - wanted.start] = result.image
            if on_frame is not None:
                on_frame(result.index)
    return images


def render_rates(trace_path: str | os.PathLike, frames=None,
                 size: tuple[int, int] | None = None) -> np.ndarray:
    """The frames of a trace at each uniform rate: (5, F, H, W, 4) uint8, rate 0 = 1x."""
    return np.stack([render_rate(trace_path, rate, frames, size) for rate in range(RATES)])


# -- per-tile tables of one trace -----------------------------------------------------------


class TileGeometry:
    """Where the tiles of a height x width frame lie, for SSIM over tile patches.

    ``neighbours``: (T, 3, 3) tile numbers around each tile as laid out in the image (edge
    tiles repeat themselves); ``counted``: (T, 16, 16) the pixels scikit-image averages the
    SSIM map over (at least 5 from the border); ``inside``: (T, 16, 16) the pixels in the
    image (partial tiles); ``window``: the (16, 26) Gaussian filter of a 26x26 patch."""

    def __init__(self, height: int, width: int):
        if min(width, height) < 2 * SSIM_RADIUS + 1:
            raise InputError(f"frames of {width}x{height} pixels are smaller than the 11x11 "
                             "SSIM window")
        self.height, self.width = height, width
        tiles_y, tiles_x = tile_grid(height, width)
        self.tiles = tiles_y * tiles_x
        self.whole = (tiles_y * TILE, tiles_x * TILE)
        grid = (tiles_y - 1 - np.arange(tiles_y))[:, None] * tiles_x + np.arange(tiles_x)
        windows = np.lib.stride_tricks.sliding_window_view(np.pad(grid, 1, mode="edge"),
                                                           (3, 3))
        self.neighbours = np.empty((self.tiles, 3, 3), dtype=np.intp)
        self.neighbours[grid.ravel()] = windows.reshape(-1, 3, 3)
        number = np.arange(self.tiles)
        self.tile_index = number
        self.tile_top = (tiles_y - 1 - number // tiles_x) * TILE
        self.tile_left = number % tiles_x * TILE
        counted = np.zeros((height, width), dtype=bool)
        counted[SSIM_RADIUS:height - SSIM_RADIUS, SSIM_RADIUS:width - SSIM_RADIUS] = True
        self.counted = to_tiles(counted, mode="constant", constant_values=False)
        self.counted_total = int(counted.sum())
        self.inside = to_tiles(np.ones((height, width), dtype=bool), mode="constant",
                               constant_values=False)
        self.window = valid_filter_matrix(TILE)

    def context(self, tiles: np.ndarray, which: np.ndarray) -> np.ndarray:
        """(K, 26, 26) patches of a frame given as (T, 16, 16) tiles: each tile of ``which``
        and the 5 pixels around it (edge replication past the image, which no pixel MSSIM
        counts ever sees)."""
        # Whole tiles (the padding of partial tiles kept) so tile offsets are multiples of 16.
        plane = np.pad(from_tiles(tiles, *self.whole), SSIM_RADIUS, mode="edge")
        windows = np.lib.stride_tricks.sliding_window_view(plane, (PATCH, PATCH))
        return windows[self.tile_top[which], self.tile_left[which]]

    def tile_ssim_in_context(self, tiles: np.ndarray, reference: np.ndarray,
                             which: np.ndarray) -> np.ndarray:
        """(K,): for each tile of ``which``, the mean SSIM over its own pixels of the frame
        where only that tile comes from ``tiles`` and everything around it from
        ``reference`` (both (T, 16, 16)): the tile judged with its true neighbourhood, every
        pixel of it counting."""
        reference_patches = self.context(reference, which)
        patches = reference_patches.copy()
        patches[:, SSIM_RADIUS:SSIM_RADIUS + TILE, SSIM_RADIUS:SSIM_RADIUS + TILE] = \
            tiles[which]
        ssim = ssim_map(patches, reference_patches, self.window)
        inside = self.inside[which]
        return (ssim * inside).sum(axis=(1, 2)) / inside.sum(axis=(1, 2))


@dataclass
class RateStack:
    """What the search needs of one trace's frames at the five uniform rates, per tile.

    ``luminance[r]``: (F, T, 16, 16) float32 luma tiles of the rate-r frames (renderer tile
    numbering, see ``dynamic_sampling_rate.to_tiles``); ``maxc``: (5, F, T, 31) float32,
    MaxC of each tile for d = 0..30 ignored diagonals; ``changed``: (5, F, T) whether the
    tile's luma differs from 1x; ``tile_ssim``: (5, F, T) the tile's MSSIM against its 1x
    tile, alone (``dynamic_sampling_rate.tile_ssim``); ``tile_ssim_context``: (5, F, T) the
    same in its 1x surroundings (``TileGeometry.tile_ssim_in_context``). Both serve the
    Local Minimum. Arrays may be memory-mapped from a cache folder.
    """

    width: int
    height: int
    luminance: list[np.ndarray]
    maxc: np.ndarray
    changed: np.ndarray
    tile_ssim: np.ndarray
    tile_ssim_context: np.ndarray
    name: str = "<images>"
    _cache: dict = field(default_factory=dict, repr=False)

    TABLES = ("maxc", "changed", "tile_ssim", "tile_ssim_context")

    @property
    def frames(self) -> int:
        return self.maxc.shape[1]

    @property
    def tiles(self) -> int:
        return self.maxc.shape[2]

    @property
    def geometry(self) -> TileGeometry:
        if "geometry" not in self._cache:
            self._cache["geometry"] = TileGeometry(self.height, self.width)
        return self._cache["geometry"]

    @property
    def means(self) -> np.ndarray:
        """(5, F, T) float64: each tile's 8-bit mean luma at each rate
        (``dynamic_sampling_rate.tile_means``), what the guard compares; derived from the
        luminance tables once, on first use."""
        if "means" not in self._cache:
            self._cache["means"] = np.stack([
                np.stack([tile_means(np.asarray(frame)) for frame in self.luminance[rate]])
                for rate in range(RATES)])
        return self._cache["means"]

    @classmethod
    def from_images(cls, rate_images: np.ndarray, name: str = "<images>") -> RateStack:
        """Tables of (5, F, H, W, 3|4) uint8 frames, rate-major."""
        rate_images = np.asarray(rate_images)
        if rate_images.ndim != 5 or rate_images.shape[0] != RATES \
                or rate_images.shape[4] not in (3, 4) or rate_images.dtype != np.uint8:
            raise InputError(f"expected (5, frames, H, W, 4) uint8 frames, got "
                             f"{rate_images.shape} {rate_images.dtype}", source=name)
        _, _, height, width, _ = rate_images.shape
        builder = _TableBuilder(width, height, name)
        for rate in range(RATES):
            builder.add_rate(rate, rate_images[rate])
        return builder.finish()

    def composed_mssim(self, frame: int, rates: np.ndarray) -> float:
        """MSSIM (luma, Wang et al. settings) of frame ``frame`` rendered at tile rates
        ``rates`` against the same frame at 1x; equals ``dynamic_sampling_rate.frame_mssim``
        on the composed frame (to float rounding)."""
        geo = self.geometry
        rates = np.asarray(rates, dtype=np.intp)
        changed = self.changed[rates, frame, geo.tile_index]
        if not changed.any():
            return 1.0
        reference = np.asarray(self.luminance[0][frame], dtype=np.float64)
        composed = reference.copy()
        for rate in np.unique(rates[changed]):
            chosen = np.flatnonzero(changed & (rates == rate))
            composed[chosen] = self.luminance[rate][frame][chosen]
        # Only tiles next to (or at) a changed tile can have SSIM below 1 (window radius 5 <
        # 16 pixels).
        dirty = np.flatnonzero(changed[geo.neighbours].any(axis=(1, 2)))
        if dirty.size > 0.5 * self.tiles:
            # Most of the frame: scipy's filters on the whole frame are faster.
            return frame_mssim(from_tiles(composed, self.height, self.width),
                               from_tiles(reference, self.height, self.width))
        ssim = ssim_map(geo.context(composed, dirty), geo.context(reference, dirty),
                        geo.window)
        lost = ((1.0 - ssim) * geo.counted[dirty]).sum()
        return float(1.0 - lost / geo.counted_total)

    def local_minimum(self, min_mssim: float = DSR_MIN_MSSIM, tile: str = "context") -> np.ndarray:
        """(F, T) int8: per tile and frame the lowest rate whose tile has MSSIM >=
        ``min_mssim`` against its 1x tile (Frame Coherence §6.3's Local Minimum), the tile judged in
        its 1x surroundings over all its pixels (``tile="context"``) or alone as scikit-image
        would (``"alone"``: only its central 6x6 pixels count)."""
        if tile not in LOCAL_MINIMUM_TILES:
            raise ValueError(f"tile must be one of {LOCAL_MINIMUM_TILES}, got {tile!r}")
        key = ("local_minimum", min_mssim, tile)
        if key not in self._cache:
            table = self.tile_ssim_context if tile == "context" else self.tile_ssim
            good = np.asarray(table) >= min_mssim
            good[0] = True
            self._cache[key] = (LOWEST - np.argmax(good[::-1], axis=0)).astype(np.int8)
        return self._cache[key]

    # cache folder -----------------------------------------------------------------------

    def save(self, folder: str | os.PathLike, meta: dict | None = None, *,
             luminance: bool = True) -> Path:
        """Write the tables as .npy files (``luminance=False``: all but the luminance ones,
        already there), then ``stack.json`` (its presence marks the folder complete)."""
        folder = Path(folder)
        for rate in range(RATES if luminance else 0):
            write_bytes(folder / f"luminance{rate}.npy", _npy_bytes(self.luminance[rate]))
        for name in self.TABLES:
            write_bytes(folder / f"{name}.npy", _npy_bytes(getattr(self, name)))
        write_json(folder / "stack.json", {**(meta or {}), "version": CACHE_VERSION,
                                           "name": self.name, "width": self.width,
                                           "height": self.height, "frames": self.frames,
                                           "tiles": self.tiles})
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike, mmap: bool = True) -> RateStack:
        folder = Path(folder)
        try:
            meta = json.loads((folder / "stack.json").read_text())
            mode = "r" if mmap else None
            arrays = {name: np.load(folder / f"{name}.npy", mmap_mode=mode,
                                    allow_pickle=False) for name in cls.TABLES}
            luminance = [np.load(folder / f"luminance{rate}.npy", mmap_mode=mode,
                                 allow_pickle=False) for rate in range(RATES)]
            stack = cls(meta["width"], meta["height"], luminance, **arrays, name=meta["name"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"unreadable DSR cache ({exc}); delete the folder to rebuild it",
                             source=str(folder)) from None
        if meta.get("version") != CACHE_VERSION or stack.maxc.shape != (
                RATES, meta["frames"], meta["tiles"], MAX_DIAGONAL + 1):
            raise InputError("DSR cache of another version or shape; delete the folder to "
                             "rebuild it", source=str(folder))
        return stack


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


class _TableBuilder:
    """Builds a RateStack one rate at a time (rate 0 first), frame by frame, so only one
    rate's frames need be in memory."""

    def __init__(self, width: int, height: int, name: str):
        self.width, self.height, self.name = width, height, name
        try:
            self.geometry = TileGeometry(height, width)
        except InputError as exc:
            raise InputError(exc.bare_message, source=name) from None
        self.tables: dict[str, list[np.ndarray]] = {
            name: [] for name in ("luminance", *RateStack.TABLES)}

    def add_rate(self, rate: int, images: np.ndarray) -> None:
        done = self.tables["luminance"]
        if rate != len(done):
            raise ValueError("rates must be added in order 0..4")
        if images.shape[1:3] != (self.height, self.width) or (
                done and images.shape[0] != done[0].shape[0]):
            raise InputError(f"rate {RATE_NAMES[rate]}: frames of shape {images.shape} do not "
                             f"match the 1x frames", source=self.name)
        lum = np.stack([tile_luminance(image) for image in images]).astype(np.float32)
        maxc = np.stack([max_c_table(tile_dct(tiles)) for tiles in lum]).astype(np.float32)
        alone = np.ones(lum.shape[:2])
        in_context = np.ones(lum.shape[:2])
        if rate == 0:
            changed = np.zeros(lum.shape[:2], dtype=bool)
        else:
            reference = done[0]
            changed = (lum != reference).any(axis=(2, 3))
            for frame in range(lum.shape[0]):
                which = np.flatnonzero(changed[frame])
                alone[frame, which] = tile_ssim(lum[frame, which], reference[frame, which])
                in_context[frame, which] = self.geometry.tile_ssim_in_context(
                    lum[frame].astype(np.float64), reference[frame].astype(np.float64),
                    which)
        for name, table in (("luminance", lum), ("maxc", maxc), ("changed", changed),
                            ("tile_ssim", alone), ("tile_ssim_context", in_context)):
            self.tables[name].append(table)

    def finish(self) -> RateStack:
        tables = {name: np.stack(self.tables[name]) for name in RateStack.TABLES}
        return RateStack(self.width, self.height, self.tables["luminance"], **tables,
                         name=self.name)


def _as_stack(rate_images) -> RateStack:
    return rate_images if isinstance(rate_images, RateStack) else RateStack.from_images(
        rate_images)


# -- Algorithms 5 and 6 ---------------------------------------------------------------------


class Simulation(NamedTuple):
    """A run of the FSM over a trace's frames.

    ``rates``: (F, T) int8, the rate each tile was rendered at (frame 0: all 1x); ``mssim``:
    (F,) per frame against 1x (NaN after a stop on error); ``asr``: mean samples per pixel
    over the tiles and frames run; ``error``: some frame below the MSSIM limit."""

    rates: np.ndarray
    mssim: np.ndarray
    asr: float
    error: bool

    @property
    def frames_run(self) -> int:
        return int(np.count_nonzero(~np.isnan(self.mssim)))

    def frames_below(self, min_mssim: float = DSR_MIN_MSSIM) -> int:
        return int(np.count_nonzero(self.mssim < min_mssim))


def simulate(rate_images, params: DSRParameters, local_minimum: np.ndarray | None = None, *,
             stop_on_error: bool = False, min_mssim: float = DSR_MIN_MSSIM) -> Simulation:
    """Run the DSR FSM over the frames of ``rate_images`` ((5, F, H, W, 4) uint8 frames at
    each uniform rate, or a :class:`RateStack`).

    Algorithm 5: every tile starts at 1x; after each frame its rate for the next one comes
    from the heuristic on its DCT at the rate it was rendered. With ``local_minimum`` ((F, T)
    rate indices) it is Algorithm 6: the heuristic only increases (or keeps) the rate and the
    next rate is the lower of that and the Local Minimum of the next frame. With the guard
    on (``params.change_threshold``), tiles whose mean luma as rendered moved by more than
    the threshold since the last frame (every tile after frame 0) are then capped as
    ``dynamic_sampling_rate.guard`` does, as the Sampling Rate Table does in the pipeline.
    ``stop_on_error`` stops at the first frame below ``min_mssim`` (the search discards the
    combination)."""
    stack = _as_stack(rate_images)
    frames, tiles = stack.frames, stack.tiles
    if local_minimum is not None:
        local_minimum = np.asarray(local_minimum)
        if local_minimum.shape != (frames, tiles):
            raise ValueError(f"local_minimum: expected shape {(frames, tiles)}, got "
                             f"{local_minimum.shape}")
    tile_index = np.arange(tiles)
    rates = np.zeros(tiles, dtype=np.int8)
    history = np.zeros((frames, tiles), dtype=np.int8)
    mssim = np.full(frames, np.nan)
    means = stack.means if params.guarded else None
    previous = None
    run = 0
    for frame in range(frames):
        history[frame] = rates
        run = frame + 1
        mssim[frame] = stack.composed_mssim(frame, rates)
        if stop_on_error and mssim[frame] < min_mssim:
            break
        if frame + 1 == frames:
            break
        # The DCT of a tile at rate r is that of the same tile of the rate-r frame.
        state = rates.astype(np.intp)

        def maxc(d, state=state, frame=frame):
            return stack.maxc[state, frame, tile_index, d]

        following = transition(rates, maxc, params, increase_only=local_minimum is not None)
        if local_minimum is not None:
            # min(next, LocMin) in samples per pixel is the larger rate index.
            following = np.maximum(following, local_minimum[frame + 1]).astype(np.int8)
        if means is not None:
            current = means[state, frame, tile_index]
            following = guard(following, rates, changed_tiles(current, previous, params),
                              params)
            previous = current
        rates = following
    asr = float(SAMPLES_PER_PIXEL[history[:run]].mean())
    return Simulation(history, mssim, asr, bool(np.any(mssim[:run] < min_mssim)))


def local_minimum(rate_images, min_mssim: float = DSR_MIN_MSSIM, tile: str = "context"
                  ) -> np.ndarray:
    """(F, T) int8: per tile and frame the lowest rate whose 16x16 luma tile has MSSIM >=
    ``min_mssim`` against the 1x tile, with the frame MSSIM's settings (Gaussian window,
    batched over tiles in NumPy).

    ``tile="context"`` (default) judges the tile inside its 1x surroundings and averages
    the SSIM map over all its pixels; ``"alone"`` runs scikit-image on the 16x16 tile by
    itself, which (cropping 5 pixels at each border) counts only its central 6x6 pixels and
    so misses errors along tile edges: composed at that Local Minimum, frames can fall well
    below 0.95 (0.92 on the test sphere), and Algorithm 6, which never samples above the
    Local Minimum, then cannot be error-free."""
    return _as_stack(rate_images).local_minimum(min_mssim, tile)


@dataclass
class Evaluation:
    """A parameter combination over several traces: ``asr`` pooled over every tile and frame
    run, ``error`` if any frame fell below the limit, per-trace figures in ``traces``."""

    asr: float
    error: bool
    min_mssim: float
    frames_below: int
    traces: dict[str, dict]

    def better_than(self, other: Evaluation | None) -> bool:
        """Error-free and a lower ASR (anything error-free beats an error)."""
        if self.error:
            return False
        return other is None or other.error or self.asr < other.asr - 1e-12


def evaluate(stacks: Sequence[RateStack], params: DSRParameters, *, algorithm: int = 5,
             stop_on_error: bool = True, min_mssim: float = DSR_MIN_MSSIM,
             local_minimum_mssim: float | None = None,
             local_minimum_tile: str = "context") -> Evaluation:
    """Simulate every trace (Algorithm 5, or 6 with each trace's Local Minimum at tile
    MSSIM ``local_minimum_mssim``, default ``min_mssim``, see :func:`local_minimum`); with
    ``stop_on_error`` the first erroneous frame ends the whole evaluation."""
    samples = tile_frames = 0.0
    worst, below, traces = 1.0, 0, {}
    for stack in stacks:
        locmin = (stack.local_minimum(local_minimum_mssim or min_mssim, local_minimum_tile)
                  if algorithm == 6 else None)
        run = simulate(stack, params, locmin, stop_on_error=stop_on_error,
                       min_mssim=min_mssim)
        count = run.frames_run * stack.tiles
        samples += run.asr * count
        tile_frames += count
        trace_min = float(np.nanmin(run.mssim))
        worst = min(worst, trace_min)
        below += run.frames_below(min_mssim)
        traces[stack.name] = {"asr": run.asr, "min_mssim": trace_min,
                              "worst_frame": int(np.nanargmin(run.mssim)),
                              "frames_below": run.frames_below(min_mssim),
                              "frames": run.frames_run, "tiles": stack.tiles}
        if stop_on_error and run.error:
            break
    return Evaluation(samples / tile_frames if tile_frames else 1.0, below > 0, worst, below,
                      traces)


# -- the parameter search -------------------------------------------------------------------


EvaluateMany = Callable[[list[DSRParameters], int, str], list[Evaluation]]


@dataclass
class StepResult:
    params: DSRParameters
    evaluation: Evaluation
    evaluated: int


def search_step(evaluate_many: EvaluateMany, base: DSRParameters, kind: str,
                thresholds: Sequence[float], diagonals: Sequence[int], *,
                strategy: str = "coordinate", sweeps: int = 3,
                guards: Sequence[tuple[float, int]] = ()) -> StepResult:
    """Best <T, D> pairs of one kind of transition ("increase": states 1..3 by Algorithm 6,
    "reduce": states 0..3 by Algorithm 5), the other kind kept as in ``base``; with
    ``guards`` ((change_threshold, change_cap) pairs), the guard is searched as one more
    coordinate after the states (``base`` carries its starting value).

    ``product`` evaluates every combination of the per-state grids (and guards); ``coordinate``
    starts at ``base`` and, coordinate by coordinate, tries each value of its grid with the
    others fixed, keeping a change when it is error-free with a lower ASR, until a sweep
    changes nothing (or ``sweeps`` sweeps). Starting from the strictest guard, a sweep
    relaxes it as far as the reductions chosen so far stay error-free."""
    algorithm = 6 if kind == "increase" else 5
    states = (1, 2, 3) if kind == "increase" else (0, 1, 2, 3)
    pairs = list(itertools.product(thresholds, diagonals))
    guards = [tuple(g) for g in guards]
    memo: dict[tuple, Evaluation] = {}

    def run(candidates: list[DSRParameters], desc: str) -> None:
        todo = list({c.key(): c for c in candidates if c.key() not in memo}.values())
        if todo:
            for params, result in zip(todo, evaluate_many(todo, algorithm, desc), strict=True):
                memo[params.key()] = result

    def with_pairs(chosen) -> DSRParameters:
        params = base
        for state, (threshold, diagonal) in zip(states, chosen, strict=True):
            params = params.replace(**{kind: (state, threshold, diagonal)})
        return params

    if strategy == "product":
        candidates = [with_pairs(chosen) for chosen in itertools.product(pairs,
                                                                         repeat=len(states))]
        if guards:
            candidates = [c.replace(guard=g) for c in candidates for g in guards]
        run(candidates, f"{kind} (product)")
        best = None
        for params in candidates:
            if memo[params.key()].better_than(None if best is None else memo[best.key()]):
                best = params
        best = best or candidates[0]
    elif strategy == "coordinate":
        best = base
        run([best], f"{kind} start")
        for sweep in range(sweeps):
            moved = False
            coordinates = [*states, *(["guard"] if guards else [])]
            for state in coordinates:
                if state == "guard":
                    candidates = [best.replace(guard=g) for g in guards]
                else:
                    candidates = [best.replace(**{kind: (state, t, d)}) for t, d in pairs]
                run(candidates, f"{kind} sweep {sweep + 1} "
                                f"{'guard' if state == 'guard' else f'state {state}'}")
                for params in candidates:
                    if memo[params.key()].better_than(memo[best.key()]):
                        best, moved = params, True
            if not moved:
                break
    else:
        raise InputError(f"unknown search strategy {strategy!r} (product or coordinate)")
    return StepResult(best, memo[best.key()], len(memo))


def increase_start(grid: SearchGrid) -> DSRParameters:
    """Where the increase step starts: the eagerest increase the grid holds (lowest T_I,
    fewest ignored diagonals), never reducing (Algorithm 6 reduces through the Local
    Minimum instead), with the strictest guard of the grid (none if it has none)."""
    params = DSRParameters.never_reduce((min(grid.increase_thresholds),) * 3,
                                        (min(grid.increase_diagonals),) * 3)
    guards = grid.guard_pairs()
    return params.replace(guard=guards[0]) if guards else params


# -- executing: serially or on Dask ---------------------------------------------------------


@functools.cache
def _cached_stack(folder: str) -> RateStack:
    """A worker's memory-mapped stack (the page cache shares it between processes)."""
    return RateStack.load(folder)


def _evaluate_task(folders: tuple[str, ...], key: tuple, algorithm: int, min_mssim: float,
                   local_minimum: tuple[float, str]) -> Evaluation:
    stacks = [_cached_stack(folder) for folder in folders]
    return evaluate(stacks, DSRParameters.from_key(key), algorithm=algorithm, min_mssim=min_mssim,
                    local_minimum_mssim=local_minimum[0], local_minimum_tile=local_minimum[1])


def _local_minimum_task(folder: str, min_mssim: float, local_minimum: tuple[float, str]
                        ) -> dict:
    """How the frames of a trace fare with every tile at its Local Minimum: Algorithm 6
    never samples above it, so a frame below ``min_mssim`` here dooms the increase step."""
    stack = _cached_stack(folder)
    locmin = stack.local_minimum(*local_minimum)
    mssim = np.array([stack.composed_mssim(frame, locmin[frame])
                      for frame in range(stack.frames)])
    return {"asr": float(SAMPLES_PER_PIXEL[locmin].mean()), "min_mssim": float(mssim.min()),
            "frames_below": int(np.count_nonzero(mssim < min_mssim))}


def _render_task(trace: str, rate: int, frames: tuple[int, int], size, path: str) -> str:
    images = render_rate(trace, rate, frames, size)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, images=images, frames=np.arange(*frames))
    write_bytes(path, buffer.getvalue())
    return path


def _derive_task(folder: str, name: str, meta: dict) -> str:
    """Build the tables of a trace from its five cached renders."""
    folder_path = Path(folder)
    builder = None
    for rate in range(RATES):
        path = folder_path / f"rate{rate}.npz"
        try:
            with np.load(path, allow_pickle=False) as data:
                images = data["images"]
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"unreadable cached render ({exc}); delete it to render again",
                             source=str(path)) from None
        if builder is None:
            builder = _TableBuilder(images.shape[2], images.shape[1], name)
        builder.add_rate(rate, images)
        del images
        # Keep only a memory map of each rate's luminance (1080p: 830 MB per 100 frames).
        path = folder_path / f"luminance{rate}.npy"
        write_bytes(path, _npy_bytes(builder.tables["luminance"][rate]))
        builder.tables["luminance"][rate] = np.load(path, mmap_mode="r")
    builder.finish().save(folder_path, meta, luminance=False)
    return folder


class Executor:
    """Runs tasks in this process (``workers`` 1) or on a local Dask cluster of processes
    (:mod:`tilesim.studies.dask_cluster`), with a progress bar."""

    def __init__(self, workers: int = 1):
        self.workers = max(1, int(workers))
        self.client = None
        self._stack = ExitStack()

    def __enter__(self) -> Executor:
        if self.workers > 1:
            # No memory limit: workers memory-map the cached tables, and the mapped pages
            # (shared, reclaimable) count in each worker's RSS.
            self.client = self._stack.enter_context(dask_client(self.workers, memory_limit=0))
        return self

    def __exit__(self, *exc) -> None:
        self.client = None
        self._stack.close()

    def map(self, function: Callable, argument_lists: list[tuple], desc: str,
            unit: str = "task") -> list:
        if self.client is not None:
            return map_in_order(self.client, function, argument_lists, desc=desc, unit=unit)
        from tqdm import tqdm

        return [function(*arguments)
                for arguments in tqdm(argument_lists, desc=desc, unit=unit, disable=None)]


# -- preparing traces -----------------------------------------------------------------------


@dataclass(frozen=True)
class TraceSpec:
    path: str
    frames: tuple[int, int]
    size: tuple[int, int]
    digest: str

    @property
    def name(self) -> str:
        return Path(self.path).stem

    def folder(self, cache: Path) -> Path:
        """The cache folder of the trace's renders: by the trace's content, its frames and
        window, and the renderer's sources (a changed renderer renders again)."""
        (a, b), (w, h) = self.frames, self.size
        return cache / (f"{self.name}-{self.digest[:12]}-r{renderer_sha256()[:12]}"
                        f"-f{a}-{b}-{w}x{h}")

    def as_dict(self) -> dict:
        return {"trace": self.path, "sha256": self.digest, "frames": list(self.frames),
                "size": list(self.size), "renderer_sha256": renderer_sha256()}


def trace_spec(text: str, frames: str, size: tuple[int, int] | None) -> TraceSpec:
    """``TRACE[@A:B]`` -> the trace, its frames and size, checked (InputError otherwise)."""
    from tilesim.inputs import trace_and_frames

    path, own_frames = trace_and_frames(text)
    with open_trace(path) as trace:
        wanted = frames_of(own_frames or frames, trace.frame_count, path)
        window = size or (trace.width, trace.height)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return TraceSpec(path, (wanted.start, wanted.stop), tuple(window), digest)


def prepare(specs: Sequence[TraceSpec], cache: Path, executor: Executor) -> list[str]:
    """Render what the cache lacks (one task per trace and rate), then derive the tables of
    each trace; returns the stack folders in ``specs`` order."""
    folders = [spec.folder(cache) for spec in specs]
    renders = []
    for spec, folder in zip(specs, folders, strict=True):
        for rate in range(RATES):
            path = folder / f"rate{rate}.npz"
            if not path.exists() and not (folder / "stack.json").exists():
                renders.append((spec.path, rate, spec.frames, spec.size, str(path)))
    if renders:
        executor.map(_render_task, renders, "render uniform rates", "trace-rate")
    derive = [(str(folder), spec.name, spec.as_dict())
              for spec, folder in zip(specs, folders, strict=True)
              if not (folder / "stack.json").exists()]
    if derive:
        executor.map(_derive_task, derive, "tile tables", "trace")
    return [str(folder) for folder in folders]


# -- the whole search -----------------------------------------------------------------------


def fit(executor: Executor, train_folders: Sequence[str], names: Sequence[str],
        grid: SearchGrid, min_mssim: float = DSR_MIN_MSSIM) -> dict:
    """Search the parameters on the stacks in ``train_folders`` (named ``names``): Algorithm 6
    for the increase pairs, then Algorithm 5 for the reduce pairs (and the guard, when the
    grid has one). A combination is error-free when no training frame falls below
    ``grid.train_min_mssim`` (default ``min_mssim``). Returns ``local_minimum`` (per trace),
    ``increase_step``, ``reduce_step`` (None when the increase step found nothing error-free)
    and ``params`` (DSRParameters or None)."""
    train_folders = tuple(train_folders)
    if grid.train_min_mssim is not None:
        min_mssim = grid.train_min_mssim
    locmin = (grid.local_minimum_mssim, grid.local_minimum_tile)

    def evaluate_many(candidates, algorithm, desc):
        return executor.map(_evaluate_task,
                            [(train_folders, c.key(), algorithm, min_mssim, locmin)
                             for c in candidates],
                            desc, "combination")

    floors = executor.map(_local_minimum_task,
                          [(folder, min_mssim, locmin) for folder in train_folders],
                          "local minimum", "trace")
    increase = search_step(evaluate_many, increase_start(grid), "increase",
                           grid.increase_thresholds, grid.increase_diagonals,
                           strategy=grid.strategy, sweeps=grid.sweeps)
    result = {"local_minimum": dict(zip(names, floors, strict=True)),
              "increase_step": _step_report(increase), "reduce_step": None, "params": None}
    if increase.evaluation.error:
        return result
    base = DSRParameters.never_reduce(increase.params.increase_thresholds,
                                      increase.params.increase_diagonals)
    if increase.params.guarded:
        base = base.replace(guard=(increase.params.change_threshold,
                                   increase.params.change_cap))
    reduce = search_step(evaluate_many, base, "reduce", grid.reduce_thresholds,
                         grid.reduce_diagonals, strategy=grid.strategy, sweeps=grid.sweeps,
                         guards=grid.guard_pairs())
    result["reduce_step"] = _step_report(reduce)
    result["params"] = reduce.params
    return result


def run_search(train: Sequence[TraceSpec], evaluation: Sequence[TraceSpec], grid: SearchGrid,
               *, cache: Path, workers: int = 1, min_mssim: float = DSR_MIN_MSSIM) -> dict:
    """Prepare the traces, search (Algorithm 6 then 5), evaluate. Returns a report with
    ``params`` (DSRParameters, or None when no combination is error-free)."""
    grid.check()
    started = time.perf_counter()
    names = [spec.name for spec in [*train, *evaluation]]
    with Executor(workers) as executor:
        folders = prepare([*train, *evaluation], cache, executor)
        eval_folders = folders[len(train):]
        fitted = fit(executor, folders[:len(train)], names[:len(train)], grid, min_mssim)
        report = {"train": [s.as_dict() for s in train],
                  "eval": [s.as_dict() for s in evaluation], "grid": grid.as_dict(),
                  "min_mssim": min_mssim, **fitted, "train_figures": None,
                  "eval_figures": None}
        chosen = fitted["params"]
        if chosen is None:
            report["seconds"] = round(time.perf_counter() - started, 3)
            return report
        # Full runs (no stop on error) for the figures, training and evaluation traces.
        full = executor.map(
            _evaluate_full_task,
            [((folder,), chosen.key(), min_mssim) for folder in folders],
            "figures", "trace")
    report["train_figures"] = _pool(full[:len(train)], names[:len(train)])
    report["eval_figures"] = _pool(full[len(train):], names[len(train):]) if eval_folders \
        else None
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def fold_groups(names: Sequence[str], folds: int | None = None,
                leave_out: Sequence[Sequence[str]] = ()) -> list[list[int]]:
    """The held-out trace indices of each fold: ``folds`` = K deals the traces round-robin
    into K groups (K = the number of traces: leave one out); ``leave_out`` names the groups
    (trace file stems) instead. InputError on an unknown name, a trace in two groups, a
    group that holds every trace, or fewer than 2 folds."""
    where = "tilesim dsr-search"
    if leave_out:
        index = {name: k for k, name in enumerate(names)}
        groups, seen = [], set()
        for group in leave_out:
            members = []
            for name in group:
                if name not in index:
                    raise InputError(f"--leave-out {name!r}: no such trace among --train "
                                     f"({', '.join(names)})", source=where)
                if name in seen:
                    raise InputError(f"--leave-out: {name} is in two folds", source=where)
                seen.add(name)
                members.append(index[name])
            groups.append(members)
    else:
        if len(names) < 2:      # "expected 2..1" said nothing
            raise InputError(f"--folds {folds}: folds hold traces out, and there is one "
                             "--train trace: give two or more", source=where)
        if folds is None or not 2 <= folds <= len(names):
            raise InputError(f"--folds {folds}: expected 2..{len(names)} (the number of "
                             "--train traces)", source=where)
        groups = [list(range(k, len(names), folds)) for k in range(folds)]
    for group in groups:
        if not group or len(group) == len(names):
            raise InputError("every fold must hold out at least one trace and train on at "
                             "least one", source=where)
    return groups


def run_cross_validation(specs: Sequence[TraceSpec], groups: Sequence[Sequence[int]],
                         grid: SearchGrid, *, cache: Path, workers: int = 1,
                         min_mssim: float = DSR_MIN_MSSIM) -> dict:
    """Leave-workloads-out validation, then the fit on every trace.

    For each fold (``groups``: the indices of ``specs`` it holds out, see
    :func:`fold_groups`): fit on the other traces (:func:`fit`) and run the parameters found
    on the held-out traces, reporting the worst held-out frame (trace, frame number, MSSIM),
    the held-out ASR (mean samples per pixel over their tiles and frames) and how many
    held-out frames fall below ``min_mssim``. Last, the fit on all the traces gives
    ``params`` (None if nothing is error-free) with its figures, as :func:`run_search`."""
    grid.check()
    started = time.perf_counter()
    names = [spec.name for spec in specs]
    folds = []
    with Executor(workers) as executor:
        folders = prepare(specs, cache, executor)
        for number, held in enumerate(groups, start=1):
            held = list(held)
            train = [k for k in range(len(specs)) if k not in held]
            fold_started = time.perf_counter()
            fitted = fit(executor, [folders[k] for k in train], [names[k] for k in train],
                         grid, min_mssim)
            fold = {"fold": number, "held_out": [names[k] for k in held],
                    "train": [names[k] for k in train],
                    "params": None if fitted["params"] is None
                    else params_dict(fitted["params"]),
                    "train_asr": None, "held_out_asr": None, "worst_mssim": None,
                    "worst_trace": None, "worst_frame": None, "frames_below": None,
                    "held_out_frames": None, "traces": {}}
            if fitted["params"] is not None:
                fold["train_asr"] = fitted["reduce_step"]["asr"]
                full = executor.map(
                    _evaluate_full_task,
                    [((folders[k],), fitted["params"].key(), min_mssim) for k in held],
                    f"fold {number} held out", "trace")
                pooled = _pool(full, [names[k] for k in held])
                worst = min(held, key=lambda k: pooled["traces"][names[k]]["min_mssim"])
                figures = pooled["traces"][names[worst]]
                fold.update(held_out_asr=pooled["asr"], worst_mssim=pooled["min_mssim"],
                            worst_trace=names[worst],
                            worst_frame=specs[worst].frames[0] + figures["worst_frame"],
                            frames_below=pooled["frames_below"],
                            held_out_frames=pooled["frames"])
                fold["traces"] = {
                    names[k]: {**pooled["traces"][names[k]],
                               "worst_frame": specs[k].frames[0]
                               + pooled["traces"][names[k]]["worst_frame"]}
                    for k in held}
            fold["seconds"] = round(time.perf_counter() - fold_started, 3)
            folds.append(fold)
        fitted = fit(executor, folders, names, grid, min_mssim)
        report = {"train": [s.as_dict() for s in specs], "eval": [],
                  "grid": grid.as_dict(), "min_mssim": min_mssim, **fitted,
                  "train_figures": None, "eval_figures": None, "folds": folds}
        if fitted["params"] is not None:
            full = executor.map(
                _evaluate_full_task,
                [((folder,), fitted["params"].key(), min_mssim) for folder in folders],
                "figures", "trace")
            report["train_figures"] = _pool(full, names)
    report["cross_validation"] = cross_validation_summary(folds, min_mssim)
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def cross_validation_summary(folds: list[dict], min_mssim: float = DSR_MIN_MSSIM) -> dict:
    """Whether every fold found parameters and kept its worst held-out frame >= the limit,
    and the worst fold."""
    done = [f for f in folds if f["worst_mssim"] is not None]
    worst = min(done, key=lambda f: f["worst_mssim"]) if done else None
    return {"folds": len(folds),
            "passed": len(done) == len(folds) and all(f["worst_mssim"] >= min_mssim
                                                      for f in done),
            "worst_mssim": None if worst is None else worst["worst_mssim"],
            "worst_fold": None if worst is None else worst["fold"]}


def _evaluate_full_task(folders: tuple[str, ...], key: tuple, min_mssim: float) -> Evaluation:
    stacks = [_cached_stack(folder) for folder in folders]
    return evaluate(stacks, DSRParameters.from_key(key), stop_on_error=False, min_mssim=min_mssim)


def _step_report(step: StepResult) -> dict:
    e = step.evaluation
    return {"combinations": step.evaluated, "asr": e.asr, "error": e.error,
            "min_mssim": e.min_mssim, "params": params_dict(step.params)}


def params_dict(params: DSRParameters) -> dict:
    values = {"reduce_thresholds": list(params.reduce_thresholds),
              "reduce_diagonals": list(params.reduce_diagonals),
              "increase_thresholds": list(params.increase_thresholds),
              "increase_diagonals": list(params.increase_diagonals)}
    if params.guarded:
        values.update(change_threshold=params.change_threshold, change_cap=params.change_cap)
    return values


def _pool(evaluations: list[Evaluation], names: list[str]) -> dict:
    """Pooled figures of several single-trace evaluations (ASR weighted by tile-frames)."""
    per_trace = {}
    weighted = weight = 0.0
    for name, e in zip(names, evaluations, strict=True):
        figures = next(iter(e.traces.values()))
        per_trace[name] = figures
        # Weighted by tile-frames, as evaluate() pools.
        weighted += e.asr * figures["frames"] * figures["tiles"]
        weight += figures["frames"] * figures["tiles"]
    return {"asr": weighted / weight, "min_mssim": min(e.min_mssim for e in evaluations),
            "frames_below": sum(e.frames_below for e in evaluations),
            "frames": sum(t["frames"] for t in per_trace.values()), "traces": per_trace}


def provenance(report: dict) -> dict:
    """The [provenance] table written with the fitted parameters."""
    train, figures = report["train_figures"], report["eval_figures"]

    def trace_table(specs, pooled):
        table = {}
        for spec in specs:
            name = Path(spec["trace"]).stem
            entry = {"trace": spec["trace"], "sha256": spec["sha256"],
                     "frames": f"{spec['frames'][0]}:{spec['frames'][1]}",
                     "size": f"{spec['size'][0]}x{spec['size'][1]}"}
            if pooled is not None:
                entry.update({k: pooled["traces"][name][k]
                              for k in ("asr", "min_mssim", "frames_below")})
            floor = report["local_minimum"].get(name)
            if floor is not None and specs is report["train"]:
                entry.update({f"local_minimum_{k}": v for k, v in floor.items()})
            table[name] = entry
        return table

    guard = ""
    if report["grid"].get("guard_thresholds"):
        guard = (" and the content-change guard <change_threshold, change_cap> as one more "
                 "coordinate")
    result = {
        "method": "tilesim dsr-search: Frame Coherence §6.3, Algorithm 6 (Local Minimum reduction) "
                  f"for <T_I, D_I>, then Algorithm 5 for <T_R, D_R>{guard}; lowest ASR with "
                  f"no frame below MSSIM {report['min_mssim']} (luma, Wang et al. 2004) on "
                  "the training traces",
        "fitted": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": report["seconds"],
        "train_asr": train["asr"], "train_min_mssim": train["min_mssim"],
        "train_frames_below": train["frames_below"],
        "increase_step_asr": report["increase_step"]["asr"],
        "increase_step_combinations": report["increase_step"]["combinations"],
        "reduce_step_combinations": report["reduce_step"]["combinations"],
    }
    if figures is not None:
        result.update(eval_asr=figures["asr"], eval_min_mssim=figures["min_mssim"],
                      eval_frames_below=figures["frames_below"])
    if report.get("command"):
        result["command"] = report["command"]
    result["grid"] = report["grid"]
    result["train"] = trace_table(report["train"], train)
    if report["eval"]:
        result["eval"] = trace_table(report["eval"], figures)
    if report.get("folds"):
        summary = report["cross_validation"]
        table = {"method": "leave workloads out: each fold fits on the other traces and runs "
                           "its parameters on the held-out ones",
                 "passed": summary["passed"], "worst_mssim": summary["worst_mssim"],
                 "worst_fold": summary["worst_fold"]}
        for fold in report["folds"]:
            entry = {k: fold[k] for k in ("held_out", "worst_mssim", "worst_trace",
                                          "worst_frame", "held_out_asr", "frames_below",
                                          "held_out_frames", "train_asr")
                     if fold[k] is not None}
            if fold["params"] is not None:
                entry["params"] = fold["params"]
            table[f"fold{fold['fold']}"] = entry
        result["cross_validation"] = table
    return result


# -- command line ---------------------------------------------------------------------------


def print_folds(report: dict) -> None:
    """The leave-workloads-out table: per fold, the held-out traces, the worst held-out
    frame and the held-out average sample rate."""
    limit = report["min_mssim"]
    print("leave-workloads-out validation (each fold fits on the other traces):")
    print(f"  {'fold':>4}  {'held out':<40} {'worst frame':<32} {'MSSIM':>7}  {'ASR':>6}")
    for fold in report["folds"]:
        held = ", ".join(fold["held_out"])
        if fold["worst_mssim"] is None:
            print(f"  {fold['fold']:>4}  {held:<40} no error-free parameters on its training "
                  "traces")
            continue
        where = f"{fold['worst_trace']} frame {fold['worst_frame']}"
        flag = "" if fold["worst_mssim"] >= limit else f"  BELOW {limit}"
        print(f"  {fold['fold']:>4}  {held:<40} {where:<32} {fold['worst_mssim']:>7.4f}  "
              f"{fold['held_out_asr']:>6.4f}{flag}")
    summary = report["cross_validation"]
    verdict = "every fold's worst held-out frame is" if summary["passed"] else "NOT every " \
        "fold's worst held-out frame is"
    print(f"{verdict} >= {limit}")
