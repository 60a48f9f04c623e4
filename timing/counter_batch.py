"""Counters of many frames as flat arrays, so the model runs once over every tile of every frame.

A :class:`Batch` holds, for F frames with P render passes and N tiles in all:

* ``scalars[name]``: (F,) float64 frame counters (``MODEL_FRAME_COUNTERS``, the
  ``tilesim.render.pipeline.counters.FRAME_COUNTERS`` the model reads, and the techniques'; absent =
  0);
* ``tiles[name]``: (N,) float64 tile counters of all passes of all frames, concatenated in frame
  then pass order (``MODEL_TILE_COUNTERS``, the ``TILE_COUNTERS`` the model reads, and the
  technique counters; absent = 0, one shared read-only zero array);
* ``tile_frame`` / ``tile_pass``: (N,) frame and pass position of each tile;
  ``pass_frame``, ``pass_tiles_x``, ``pass_tiles``: (P,) per pass; ``pass_target`` (P,) str: the
  render target of each pass (``"default"``: the default framebuffer, the screen; ``fboN``: a
  framebuffer object);
* ``pass_present[technique]`` (P,) / ``present[technique]`` (F,) bool: the pass (a pass of the
  frame) carries that technique's hardware counters (its structures exist and leak even when a
  count is 0);
* ``programs``: TGSI text of every program the frames ran, by digest; ``fs_programs[digest]``
  (N,) fragment quad instructions of that program per tile and ``vs_programs[digest]`` (F,)
  vertex lane instructions per frame (the per-program work the shader-core throughput is
  weighted by; empty for counters written before tilesim kept them).

``load_batch`` reads the ``.npz`` files ``tilesim.render.pipeline.counters.FrameCounters.save``
writes, member by member with ``zipfile`` (no pickle: object arrays are refused) and only the
members the model uses, in a thread pool: zlib inflation dominates and releases the GIL. It is
several times faster than building ``FrameCounters`` with ``np.load``; ``batch_from_frames`` takes
those objects.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from tilesim.render.pipeline.counters import FRAME_COUNTERS, TILE_COUNTERS, FrameCounters
from tilesim.timing.techniques import (
    TECHNIQUE_FRAME_COUNTERS,
    TECHNIQUE_PRESENCE,
    TECHNIQUE_TILE_COUNTERS,
)

# The renderer's tile counters the model reads (the others, e.g. quads_rasterized or
# pixels_cleared, are not loaded), then every technique counter.
MODEL_TILE_COUNTERS = (
    "prims_binned", "pb_list_bytes_written", "pb_bytes_read", "fragments_rasterized",
    "early_z_tested", "late_z_tested", "fragments_shaded", "fs_alu", "fs_tex", "fs_flow",
    "fs_quad_alu", "fs_quad_tex", "fs_quad_flow", "texels_fetched", "tex_cache_accesses",
    "tex_cache_misses", "depth_reads", "depth_writes", "blend_ops", "color_writes",
    "color_flush_bytes", "depth_flush_bytes")
assert set(MODEL_TILE_COUNTERS) <= set(TILE_COUNTERS)
TILE_NAMES = (*MODEL_TILE_COUNTERS, *TECHNIQUE_TILE_COUNTERS)
MODEL_FRAME_COUNTERS = (
    "vertex_cache_accesses", "vertex_cache_misses", "index_bytes", "vs_alu", "vs_tex", "vs_flow",
    "prims_assembled", "prims_rasterized", "pb_record_bytes_written")
assert set(MODEL_FRAME_COUNTERS) <= set(FRAME_COUNTERS)
FRAME_NAMES = (*MODEL_FRAME_COUNTERS, *TECHNIQUE_FRAME_COUNTERS)


@dataclass
class Batch:
    frame_ids: np.ndarray          # (F,) int64 frame numbers
    scalars: dict[str, np.ndarray]  # name -> (F,) float64
    tiles: dict[str, np.ndarray]   # name -> (N,) float64
    tile_frame: np.ndarray         # (N,) int64
    tile_pass: np.ndarray          # (N,) int64
    pass_frame: np.ndarray         # (P,) int64
    pass_tiles_x: np.ndarray       # (P,) float64
    pass_tiles: np.ndarray         # (P,) float64
    pass_target: np.ndarray        # (P,) str
    pass_present: dict[str, np.ndarray]  # technique -> (P,) bool
    present: dict[str, np.ndarray]  # technique -> (F,) bool
    programs: dict[str, str] = field(default_factory=dict)            # digest -> TGSI text
    fs_programs: dict[str, np.ndarray] = field(default_factory=dict)  # digest -> (N,)
    vs_programs: dict[str, np.ndarray] = field(default_factory=dict)  # digest -> (F,)

    @property
    def frames(self) -> int:
        return len(self.frame_ids)

    @cached_property
    def _frame_segments(self) -> tuple[np.ndarray, np.ndarray, int]:
        return _segments(self.tile_frame, self.frames)

    @cached_property
    def _pass_segments(self) -> tuple[np.ndarray, np.ndarray, int]:
        return _segments(self.tile_pass, len(self.pass_frame))

    def per_frame(self, values: np.ndarray) -> np.ndarray:
        """Sum a (N,) tile array per frame: (F,)."""
        return _segment_sums(values, *self._frame_segments)

    def per_pass(self, values: np.ndarray) -> np.ndarray:
        """Sum a (N,) tile array per pass: (P,)."""
        return _segment_sums(values, *self._pass_segments)

    def chunks(self, max_tiles: int) -> list[Batch]:
        """Consecutive runs of whole frames with at most ``max_tiles`` tiles each (or one frame
        when a frame alone is larger). Tiles are stored frame after frame, so every array of a
        chunk is a view; frame and pass indices are re-based."""
        if self.tile_frame.size <= max_tiles:
            return [self]
        tile_end = np.cumsum(np.bincount(self.tile_frame, minlength=self.frames))
        pass_end = np.cumsum(np.bincount(self.pass_frame, minlength=self.frames))
        out, first = [], 0
        while first < self.frames:
            start = tile_end[first - 1] if first else 0
            last = max(first + 1, int(np.searchsorted(tile_end, start + max_tiles, "right")))
            out.append(self._slice(first, last, int(start), int(tile_end[last - 1]),
                                   int(pass_end[first - 1]) if first else 0,
                                   int(pass_end[last - 1])))
            first = last
        return out

    def _slice(self, f0, f1, t0, t1, p0, p1) -> Batch:
        return Batch(
            frame_ids=self.frame_ids[f0:f1],
            scalars={k: v[f0:f1] for k, v in self.scalars.items()},
            tiles={k: v[t0:t1] for k, v in self.tiles.items()},
            tile_frame=self.tile_frame[t0:t1] - f0, tile_pass=self.tile_pass[t0:t1] - p0,
            pass_frame=self.pass_frame[p0:p1] - f0, pass_tiles_x=self.pass_tiles_x[p0:p1],
            pass_tiles=self.pass_tiles[p0:p1], pass_target=self.pass_target[p0:p1],
            pass_present={k: v[p0:p1] for k, v in self.pass_present.items()},
            present={k: v[f0:f1] for k, v in self.present.items()}, programs=self.programs,
            fs_programs={k: v[t0:t1] for k, v in self.fs_programs.items()},
            vs_programs={k: v[f0:f1] for k, v in self.vs_programs.items()})


def _segments(owner: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(owners that have tiles, their first tile, owner count) for tiles stored owner after
    owner (frames, or passes, in order)."""
    sizes = np.bincount(owner, minlength=count)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    nonempty = np.flatnonzero(sizes)
    return nonempty, starts[nonempty], count


def _segment_sums(values: np.ndarray, nonempty: np.ndarray, starts: np.ndarray,
                  count: int) -> np.ndarray:
    # np.add.reduceat over the contiguous runs: ~20x faster than a weighted bincount
    out = np.zeros(count)
    if nonempty.size:
        out[nonempty] = np.add.reduceat(np.asarray(values, dtype=np.float64), starts)
    return out


def _assemble(frame_ids, scalar_rows, passes, programs=None) -> Batch:
    """``scalar_rows``: per frame {name: value}; ``passes``: (frame pos, tiles_x, {name: (n,)},
    {fragment program digest: (n,)}, render target name); ``programs``: per frame ({digest:
    text}, {vertex program digest: instructions})."""
    nframes = len(frame_ids)
    scalars = {name: np.array([float(row.get(name, 0)) for row in scalar_rows])
               for name in FRAME_NAMES}
    sizes = np.array([next(iter(arrays.values())).size for _, _, arrays, _, _ in passes],
                     dtype=np.int64)
    ends = np.cumsum(sizes)
    # one float64 array per counter, filled pass by pass (no int64 intermediate); counters no
    # pass carries share one read-only zero array
    zeros = np.zeros(int(ends[-1]) if len(ends) else 0)
    zeros.flags.writeable = False
    tiles = {}
    for name in TILE_NAMES:
        if not any(name in arrays for _, _, arrays, _, _ in passes):
            tiles[name] = zeros
            continue
        out = np.zeros(zeros.size)
        for (_, _, arrays, _, _), end, n in zip(passes, ends, sizes, strict=True):
            if name in arrays:
                out[end - n:end] = arrays[name]
        tiles[name] = out
    fs_programs = {}
    for (_, _, _, per_program, _), end, n in zip(passes, ends, sizes, strict=True):
        for digest, values in per_program.items():
            if digest not in fs_programs:
                fs_programs[digest] = np.zeros(zeros.size)
            fs_programs[digest][end - n:end] = values
    texts, vs_programs = {}, {}
    for f, (frame_texts, frame_vs) in enumerate(programs or ()):
        texts.update(frame_texts)
        for digest, count in frame_vs.items():
            vs_programs.setdefault(digest, np.zeros(nframes))[f] = count
    pass_frame = np.array([f for f, _, _, _, _ in passes], dtype=np.int64)
    pass_present = {tech: np.array([any(n in arrays for n in names)
                                    for _, _, arrays, _, _ in passes], dtype=bool)
                    for tech, names in TECHNIQUE_PRESENCE.items()}
    present = {tech: np.bincount(pass_frame, weights=has, minlength=nframes) > 0
               for tech, has in pass_present.items()}
    return Batch(
        frame_ids=np.asarray(frame_ids, dtype=np.int64), scalars=scalars, tiles=tiles,
        tile_frame=np.repeat(pass_frame, sizes), tile_pass=np.repeat(np.arange(len(passes)), sizes),
        pass_frame=pass_frame,
        pass_tiles_x=np.array([tx for _, tx, _, _, _ in passes], dtype=np.float64),
        pass_tiles=sizes.astype(np.float64),
        pass_target=np.array([target for *_, target in passes], dtype=str),
        pass_present=pass_present, present=present,
        programs=texts, fs_programs=fs_programs, vs_programs=vs_programs)


def batch_from_frames(frames: list[FrameCounters]) -> Batch:
    passes = [(i, p.tiles_x, {k: np.asarray(v).ravel() for k, v in p.tiles.items()},
               {k: np.asarray(v).ravel() for k, v in p.fs_programs.items()}, p.target)
              for i, f in enumerate(frames) for p in f.passes]
    return _assemble([f.frame for f in frames], [f.scalars for f in frames], passes,
                     [(f.programs, f.vs_programs) for f in frames])


# The header numpy writes for these plain arrays, parsed without ast (5x faster per member);
# anything else goes through numpy's own (safe, literal-only) header reader.
_SIMPLE_HEADER = re.compile(
    rb"\{'descr': '([<|>]?[a-zA-Z]\d+)', 'fortran_order': False, 'shape': \(([\d, ]*)\), \}")


def _read_member(archive: zipfile.ZipFile, name: str) -> np.ndarray:
    data = archive.read(name + ".npy")
    simple = (_SIMPLE_HEADER.match(data, 10) if data[:8] == b"\x93NUMPY\x01\x00" else None)
    if simple is not None:
        dtype = np.dtype(simple.group(1).decode())
        shape = tuple(int(v) for v in simple.group(2).split(b",") if v.strip())
        offset = 10 + int.from_bytes(data[8:10], "little")
        fortran = False
    else:
        stream = io.BytesIO(data)
        version = npy_format.read_magic(stream)
        read_header = (npy_format.read_array_header_1_0 if version == (1, 0)
                       else npy_format.read_array_header_2_0)
        shape, fortran, dtype = read_header(stream)
        offset = stream.tell()
    if dtype.hasobject:
        raise ValueError(f"{name}: object arrays are not allowed")
    count = int(np.prod(shape)) if shape else 1
    array = np.frombuffer(data, dtype=dtype, offset=offset, count=count)
    return array.reshape(shape, order="F" if fortran else "C")


def _read_npz(path: Path) -> tuple[int, dict, list[tuple[int, dict, dict]], tuple[dict, dict]]:
    """(frame number, {scalar: value}, [(tiles_x, {tile counter: (n,) array}, {fragment
    program: (n,) array}, render target)], ({program: text}, {vertex program: instructions}))
    of one file."""
    wanted_tiles = set(TILE_NAMES)
    with zipfile.ZipFile(path) as archive:
        members = {n[:-4] for n in archive.namelist() if n.endswith(".npy")}
        frame = int(_read_member(archive, "frame.index"))
        scalars = {k[6:]: float(_read_member(archive, k)) for k in members
                   if k.startswith("frame.") and k != "frame.index" and k[6:] in FRAME_NAMES}
        passes = []
        k = 0
        while f"pass{k}.meta" in members:
            meta = json.loads(str(_read_member(archive, f"pass{k}.meta")))
            arrays = {}
            for member in members:
                prefix, _, name = member.partition(".")
                if prefix == f"pass{k}" and name in wanted_tiles:
                    arrays[name] = _read_member(archive, member).ravel()
            if not arrays:  # a pass without counters still has tiles
                arrays["prims_binned"] = np.zeros(meta["tiles_x"] * meta["tiles_y"])
            prefix = f"pass{k}.fs_program."
            per_program = {m[len(prefix):]: _read_member(archive, m).ravel()
                           for m in members if m.startswith(prefix)}
            passes.append((int(meta["tiles_x"]), arrays, per_program, str(meta["target"])))
            k += 1
        texts = {m[8:]: str(_read_member(archive, m)) for m in members
                 if m.startswith("program.")}
        vertex = {m[11:]: float(_read_member(archive, m)) for m in members
                  if m.startswith("vs_program.")}
    return frame, scalars, passes, (texts, vertex)


def load_batch(paths: list[Path], workers: int | None = None) -> Batch:
    """Read counter files (in the given order) into one batch. Raises OSError, ValueError,
    KeyError (with the file name) on unreadable files."""
    def read(path):
        try:
            return _read_npz(path)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            # (json.JSONDecodeError is a ValueError; zlib.error: a damaged compressed member)
            raise ValueError(f"{path.name}: unreadable counters file: {exc}") from None

    workers = workers or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(paths)))) as pool:
        results = list(pool.map(read, paths))
    frame_ids = [r[0] for r in results]
    passes = [(i, tx, arrays, per_program, target) for i, r in enumerate(results)
              for tx, arrays, per_program, target in r[2]]
    return _assemble(frame_ids, [r[1] for r in results], passes, [r[3] for r in results])
