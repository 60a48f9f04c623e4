"""Per-tile activity counters: the contract between the renderer and the timing model.

For every frame: scalar frame counters (geometry work, draw calls, state changes) and, for
every render pass (a run of draws into one render target), one (tiles_y, tiles_x) int64 array
per tile counter. Everything the timing model uses comes from these records, so it can be
re-run without re-rendering.

Per-program work, for the shader-core throughput (Shader Core ch. 3) the timing model charges
per program: each frame keeps the TGSI text of every program that ran (``programs``: content
digest -> text, ``tilesim.shaders.ir.program_digest``), the vertex lane instructions of
each vertex program (``vs_programs``: digest -> count) and, per pass, the fragment quad
instructions (ALU + texture + flow, warps of 4 lanes) of each fragment program per tile
(``PassCounters.fs_programs``: digest -> (tiles,) array; their sum over programs is
``fs_quad_alu + fs_quad_tex + fs_quad_flow``).

On disk, a frame's counters are one ``.npz`` (written atomically, loaded with
``allow_pickle=False``): ``frame.<name>`` 0-d arrays, ``pass<k>.<name>`` tile arrays and
``pass<k>.meta`` a JSON string {target, width, height, tile_size, traversal order};
``program.<digest>`` the programs' texts, ``vs_program.<digest>`` 0-d counts and
``pass<k>.fs_program.<digest>`` tile arrays.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.atomic import write_bytes
from tilesim.backend import array_module, to_host
from tilesim.jit import in_threads, jit, spans, usable

# name -> meaning (units). Tile counters are summed over the tile's pixels and draws.
TILE_COUNTERS = {
    "prims_binned": "primitives in the tile's display list",
    "pb_list_bytes_written": "Parameter Buffer display-list bytes written for the tile",
    "pb_bytes_read": "Parameter Buffer bytes read by the tile (list entries + primitive records)",
    "quads_rasterized": "2x2 quads with at least one covered pixel",
    "fragments_rasterized": "covered pixels (fragments) produced by the rasterizer",
    "early_z_tested": "fragments depth-tested before shading",
    "early_z_killed": "fragments that failed the early depth test",
    "late_z_tested": "fragments depth-tested after shading (shader discards or writes depth)",
    "late_z_killed": "fragments that failed the late depth test",
    "fragments_shaded": "covered fragments the fragment program ran for",
    "quads_shaded": "quads the fragment program ran for (4 lanes each, helpers included)",
    "fragments_discarded": "shaded fragments killed by KILL / KILL_IF",
    "fs_alu": "fragment ALU instructions executed, summed over active lanes",
    "fs_tex": "fragment texture instructions executed, summed over active lanes",
    "fs_flow": "fragment flow-control instructions executed, summed over active lanes",
    "fs_quad_alu": "fragment ALU instructions issued per quad (warp of 4 lanes)",
    "fs_quad_tex": "fragment texture instructions issued per quad",
    "fs_quad_flow": "fragment flow-control instructions issued per quad",
    "tex_samples": "texture samples taken by shaded lanes",
    "texels_fetched": "texels read by those samples",
    "texels_nearest": "texels read by nearest (1-texel) samples",
    "texels_bilinear": "texels read by bilinear (4-texel) samples",
    "texels_trilinear": "texels read by trilinear (8-texel) samples",
    "tex_cache_accesses": "texture cache line accesses",
    "tex_cache_misses": "texture cache line misses",
    "depth_reads": "depth buffer reads (depth tests)",
    "depth_writes": "depth buffer writes",
    "blend_ops": "blending operations (fragments blended with the color buffer)",
    "color_writes": "fragments written to the color buffer",
    "pixels_written": "distinct pixels written at least once in the pass",
    "pixels_cleared": "pixels cleared by glClear",
    "color_flush_bytes": "color buffer bytes flushed to main memory at the end of the pass",
    "depth_flush_bytes": "depth buffer bytes flushed to a depth texture at the end of the pass",
}

# Counters the frame-coherence techniques add (only in passes of a render that enables them);
# the raster work of a tile Rendering Elimination skips is removed from TILE_COUNTERS.
TECHNIQUE_TILE_COUNTERS = {
    "te_subblocks_signed": "TE: 64-bit color sub-blocks hashed by the Compute CRC unit",
    "te_signature_accesses": "TE: Signature Buffer reads and writes",
    "te_flushes_skipped": "TE: tiles whose color flush was skipped (CRC equal to last frame)",
    "te_flush_bytes_saved": "TE: color bytes not flushed (already left out of color_flush_bytes)",
    "re_subblocks_signed": "RE: 64-bit sub-blocks of constants and primitives signed by the "
                           "Compute CRC unit (each block once, charged to its first tile)",
    "re_shifts": "RE: Accumulate CRC unit shift steps (one per 64-bit sub-block folded)",
    "re_signature_accesses": "RE: Signature Buffer reads and writes",
    "re_bitmap_accesses": "RE: constant-bitmap reads and writes",
    "re_otq_overflow_entries": "RE: Overlapped Tiles Queue entries beyond its capacity "
                               "(entries): sum over the primitives folded into the signature "
                               "of max(0, tiles covered - ot_queue_entries of "
                               "timing/baseline_gpu.toml, 128), each charged to its first tile; "
                               "clears (from the Command Processor, not the binner) excluded",
    "re_tiles_skipped": "RE: 1 where the tile was not rendered (signature equal to last frame)",
    "re_tiles_equal_color": "RE oracle: 1 where the tile's colors equal last frame's",
    "re_false_positives": "RE check: 1 where a skipped tile's colors would have changed",
    "evr_lgt_accesses": "EVR: Layer Generator Table accesses (one per display-list entry)",
    "evr_fvp_reads": "EVR: FVP Table reads (one per display-list entry)",
    "evr_prims_occluded": "EVR: display-list entries predicted occluded",
    "evr_prims_reordered": "EVR: entries moved to the second list (occluded, opaque, WOZ)",
    "evr_layer_bytes_written": "EVR: layer identifiers written to the Parameter Buffer",
    "evr_layer_buffer_writes": "EVR: Layer Buffer writes (opaque fragments)",
    "evr_fvp_updates": "EVR: FVP Table updates (one per rendered tile)",
    "oracle_fragments_shaded": "fragments a depth pre-pass (final depth known) would shade",
    "dsr_dcts": "DSR: 16x16 2D DCTs computed",
    "dsr_srt_accesses": "DSR: Sampling Rate Table reads and writes",
    "dsr_rate": "DSR: the tile's sampling-rate index (0: 1x, 1: 1/4x ... 4: 1/256x)",
    "memo_lookups": "memoization: LUT lookups (fragments that would be shaded)",
    "memo_hits": "memoization: LUT hits (fragment shader executions saved)",
    "memo_table_writes": "memoization: LUT insertions",
}

FRAME_COUNTERS = {
    "draw_calls": "draw commands",
    "state_changes": "state-changing commands",
    "clears": "clear commands",
    "vertices_fetched": "vertices fetched (distinct vertices per draw)",
    "vertices_shaded": "vertex shader invocations",
    "index_bytes": "index bytes read",
    "attribute_bytes": "vertex attribute bytes read",
    "vertex_cache_accesses": "vertex cache accesses (one per fetched vertex and attribute)",
    "vertex_cache_misses": "vertex cache misses (distinct 64-byte lines a draw touches)",
    "vs_alu": "vertex ALU instructions executed",
    "vs_tex": "vertex texture instructions executed",
    "vs_flow": "vertex flow-control instructions executed",
    "prims_assembled": "primitives assembled",
    "prims_clip_rejected": "primitives wholly outside the view volume",
    "prims_clip_split": "primitives cut by a clip plane",
    "prims_culled": "primitives removed by face culling",
    "prims_degenerate": "primitives of zero area after snapping",
    "prims_rasterized": "triangles sent to binning and rasterization",
    "pb_record_bytes_written": "Parameter Buffer primitive-record bytes written",
    "passes": "render passes (runs of draws into one render target)",
}

TECHNIQUE_FRAME_COUNTERS = {
    "re_disabled": "RE: 1 when RE was off for the frame (shader, texture or render-target "
                   "changes)",
    "memo_collisions": "memoization: hits whose stored color differs from the true color",
}


def _constant(weights) -> int | None:
    """The weight of every entry where ``weights`` gives the same one to all: None (1), an
    int, or a broadcast view of one value (stride 0, as ``DynamicStats`` gives uniform
    counts); None where the weights vary (or are not integers)."""
    if weights is None:
        return 1
    if isinstance(weights, (int, np.integer)):
        return int(weights)
    strides = getattr(weights, "strides", None)
    if (strides is not None and weights.ndim == 1 and strides[0] == 0 and weights.size
            and weights.dtype.kind in "iub"):
        return int(weights[0])
    return None


@dataclass
class PassCounters:
    target: str
    width: int
    height: int
    tile_size: int
    tiles_x: int
    tiles_y: int
    traversal: np.ndarray
    tiles: dict[str, np.ndarray] = field(default_factory=dict)
    fs_programs: dict[str, np.ndarray] = field(default_factory=dict)
    # While the pass renders: its texture caches, tile by tile (render/pipeline/tile_caches.py),
    # whose inherited hits ``PipelineHooks.finish_pass`` takes off; not saved.
    texture_caches: object = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        for name in TILE_COUNTERS:
            self.tiles.setdefault(name, np.zeros(self.tiles_x * self.tiles_y, dtype=np.int64))

    def tile_array(self, name: str, like=None) -> np.ndarray:
        """The (tiles,) int64 array of the tile counter ``name`` (made, zero, where absent),
        on the device if ``like`` is there: a pass's counters follow the work onto the device
        until ``to_host`` at the end of the pass. A kernel that counts several counters in
        one pass adds into these arrays in place."""
        array = self.tiles.get(name)
        if array is None:
            if name not in TECHNIQUE_TILE_COUNTERS:
                raise KeyError(f"unknown tile counter {name!r}")
            array = self.tiles[name] = np.zeros(self.tiles_x * self.tiles_y, dtype=np.int64)
        xp = array_module(array, like)
        if array_module(array) is not xp:
            array = self.tiles[name] = xp.asarray(array)
        return array

    def add(self, name: str, tile: np.ndarray, weights=None, scale: int = 1) -> None:
        """Add 1 (or ``weights``, summed in float64 as ``bincount`` sums them) for each entry
        of ``tile`` (flat tile numbers), times ``scale`` (the sums scaled: the same integers as
        scaled weights, without an array of them)."""
        if tile.size:
            self._accumulate(self.tile_array(name, tile), tile, weights, scale=scale)

    def add_each(self, tile: np.ndarray, weights: dict[str, object]) -> None:
        """:meth:`add` of every counter in ``weights`` (name -> integer or bool weights per
        entry of ``tile``, an int: that much per entry, or None: 1 per entry). As with
        :meth:`add` of a non-empty ``tile``, each counter exists afterwards, a bool weight
        that selects nothing included (where absent and present differ, add the selected
        entries with :meth:`add`)."""
        if tile.size:
            entries = None      # entries per tile, counted once for the constant weights
            for name, column in weights.items():
                array = self.tile_array(name, tile)
                amount = _constant(column)
                if amount is None:
                    self._accumulate(array, tile, column)
                    continue
                if entries is None:
                    entries = array_module(array).zeros(array.shape[0], dtype=np.int64)
                    self._accumulate(entries, tile, None)
                if amount:
                    array += entries * amount

    def add_program(self, digest: str, tile: np.ndarray, weights) -> None:
        """Add the fragment quad instructions ``weights`` of program ``digest`` per tile
        (summed as :meth:`add` sums them)."""
        if tile.size:
            xp = array_module(tile)
            array = self.fs_programs.get(digest)
            array = (xp.zeros(self.tiles_x * self.tiles_y, dtype=np.int64) if array is None
                     else xp.asarray(array))
            self.fs_programs[digest] = array
            self._accumulate(array, tile, weights)

    def _accumulate(self, array, tile: np.ndarray, weights, scale: int = 1) -> None:
        """``array`` (on ``tile``'s backend) += ``weights`` per entry of ``tile`` (an array,
        an int: that much each, None: 1 each). Compiled: a pass over the weights where
        they are, a counter at a time (a stage's dozen counters in one pass needed an int64
        copy of them all, which cost twice the counting)."""
        amount = _constant(weights)
        constant = amount is not None
        if constant:
            amount *= scale
            weights = None if amount == 1 else amount
        if usable(array, tile, None if constant else weights):
            add_counts_compiled(array, tile, weights, scale=1 if constant else scale)
            return
        xp = array_module(tile)
        size = self.tiles_x * self.tiles_y
        if constant:
            counts = xp.bincount(tile, minlength=size)
            array += counts if weights is None else counts * int(weights)
            return
        counts = xp.bincount(tile, weights=xp.asarray(weights).astype(xp.float64),
                             minlength=size)
        array += counts.astype(np.int64) if scale == 1 else counts.astype(np.int64) * scale

    def add_per_tile(self, name: str, values) -> None:
        array = self.tile_array(name, values)
        array += array_module(array).asarray(values).astype(np.int64)

    def clear_tiles(self, names, tiles) -> None:
        """Zero the counters ``names`` (those present) in the ``tiles`` (a (tiles,) mask)."""
        for name in names:
            if name in self.tiles:
                array = self.tile_array(name, tiles)
                array[array_module(array).asarray(tiles)] = 0
        if "fs_quad_alu" in names:  # the per-program split of the work removed
            xp = array_module(tiles)
            for digest, array in self.fs_programs.items():
                array = self.fs_programs[digest] = xp.asarray(array)
                array[xp.asarray(tiles)] = 0

    def to_host(self) -> PassCounters:
        """Bring every tile counter to the host (at the end of the pass)."""
        self.tiles = {name: to_host(values) for name, values in self.tiles.items()}
        self.fs_programs = {d: to_host(values) for d, values in self.fs_programs.items()}
        self.texture_caches = None
        return self


@dataclass
class FrameCounters:
    frame: int
    scalars: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FRAME_COUNTERS, 0))
    passes: list[PassCounters] = field(default_factory=list)
    programs: dict[str, str] = field(default_factory=dict)       # digest -> TGSI text
    vs_programs: dict[str, int] = field(default_factory=dict)    # digest -> lane instructions

    def __repr__(self) -> str:
        """One line: the frame, its passes and a few totals (``summary()`` has them all)."""
        return (f"FrameCounters(frame={self.frame}, passes={len(self.passes)}, "
                f"draw_calls={self.total('draw_calls')}, "
                f"fragments_shaded={self.total('fragments_shaded')})")

    def total(self, name: str) -> int:
        if name in self.scalars:
            return int(self.scalars[name])
        return int(sum(int(p.tiles[name].sum()) for p in self.passes if name in p.tiles))

    def overshading(self) -> float | None:
        """Fragments shaded per distinct pixel written (1.0: every shaded fragment visible)."""
        written = self.total("pixels_written")
        return self.total("fragments_shaded") / written if written else None

    def summary(self) -> dict:
        names = list(TILE_COUNTERS) + [n for n in TECHNIQUE_TILE_COUNTERS
                                        if any(n in p.tiles for p in self.passes)]
        tiles = {name: self.total(name) for name in names}
        return {"frame": self.frame, **{k: int(v) for k, v in self.scalars.items()}, **tiles,
                "overshading": self.overshading()}

    def to_npz_bytes(self, provenance: dict | None = None) -> bytes:
        """The counters file's bytes; ``provenance`` (tilesim.render_folder.provenance: the
        render's identity, the frame number and image size) is kept as the JSON member
        ``provenance``, so a file read anywhere says which render and frame it is."""
        arrays = {f"frame.{k}": np.asarray(v, dtype=np.int64) for k, v in self.scalars.items()}
        arrays["frame.index"] = np.asarray(self.frame, dtype=np.int64)
        for k, p in enumerate(self.passes):
            meta = {"target": p.target, "width": p.width, "height": p.height,
                    "tile_size": p.tile_size, "tiles_x": p.tiles_x, "tiles_y": p.tiles_y}
            arrays[f"pass{k}.meta"] = np.asarray(json.dumps(meta))
            arrays[f"pass{k}.traversal"] = p.traversal.astype(np.int64)
            for name, values in p.tiles.items():
                arrays[f"pass{k}.{name}"] = values.reshape(p.tiles_y, p.tiles_x)
            for digest, values in p.fs_programs.items():
                arrays[f"pass{k}.fs_program.{digest}"] = values.reshape(p.tiles_y, p.tiles_x)
        for digest, text in self.programs.items():
            arrays[f"program.{digest}"] = np.asarray(text)
        for digest, count in self.vs_programs.items():
            arrays[f"vs_program.{digest}"] = np.asarray(count, dtype=np.int64)
        if provenance is not None:
            arrays["provenance"] = np.asarray(json.dumps(provenance, sort_keys=True))
        return _npz_bytes(arrays)

    def save(self, path: str | Path) -> Path:
        return write_bytes(path, self.to_npz_bytes())


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """``np.savez_compressed``'s format (any ``np.load`` reads it) at zlib level 1: a study
    writes a counters file per frame and run, and level 6 spent four times the CPU of the
    rest of the save for files 15% smaller."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, values in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(values), allow_pickle=False)
    return buffer.getvalue()

def load_counters(path: str | Path) -> FrameCounters:
    with np.load(path, allow_pickle=False) as npz:
        keys = set(npz.files)
        frame = FrameCounters(int(npz["frame.index"]))
        frame.scalars = {k[6:]: int(npz[k]) for k in keys
                         if k.startswith("frame.") and k != "frame.index"}
        k = 0
        while f"pass{k}.meta" in keys:
            meta = json.loads(str(npz[f"pass{k}.meta"]))
            p = PassCounters(meta["target"], meta["width"], meta["height"], meta["tile_size"],
                             meta["tiles_x"], meta["tiles_y"], npz[f"pass{k}.traversal"])
            for name in (*TILE_COUNTERS, *TECHNIQUE_TILE_COUNTERS):
                if f"pass{k}.{name}" in keys:
                    p.tiles[name] = npz[f"pass{k}.{name}"].ravel().astype(np.int64)
            prefix = f"pass{k}.fs_program."
            p.fs_programs = {key[len(prefix):]: npz[key].ravel().astype(np.int64)
                             for key in keys if key.startswith(prefix)}
            frame.passes.append(p)
            k += 1
        frame.programs = {key[8:]: str(npz[key]) for key in keys if key.startswith("program.")}
        frame.vs_programs = {key[11:]: int(npz[key]) for key in keys
                             if key.startswith("vs_program.")}
    return frame


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============
# Each kernel checks every tile number as it counts it (they index without NumPy's checks):
# one compare in a loop bound by reading the weights, where a separate pass over the tile
# numbers cost as much as a counter (~9 ms a runner frame at 1080p). At a tile number outside,
# the kernel takes back what it added (integers: exactly) and returns False; the caller
# raises, with the counters as they were.

@jit
def _count_integers(tile, weights, scale, out):  # pragma: no cover - compiled
    size = out.shape[0]
    for i in range(tile.shape[0]):
        t = tile[i]
        if t < 0 or t >= size:
            for j in range(i):
                out[tile[j]] -= np.int64(weights[j]) * scale
            return False
        out[t] += np.int64(weights[i]) * scale
    return True


@jit
def _count_weighted(tile, weights, sums):  # pragma: no cover - compiled
    size = sums.shape[0]
    for i in range(tile.shape[0]):
        t = tile[i]
        if t < 0 or t >= size:
            return False            # (``sums`` is the caller's scratch)
        sums[t] += weights[i]
    return True


@jit
def _count_constant(tile, amount, out):  # pragma: no cover - compiled
    size = out.shape[0]
    for i in range(tile.shape[0]):
        t = tile[i]
        if t < 0 or t >= size:
            for j in range(i):
                out[tile[j]] -= amount
            return False
        out[t] += amount
    return True


def _outside(size: int) -> ValueError:
    return ValueError(f"tile numbers outside 0..{size - 1}")


# Entries below which a count runs in one call: a thread's hand-off (~50 us) is what
# counting this many costs.
COUNT_SPLIT_MIN = 1 << 17


def _counted(out: np.ndarray, n: int, count) -> bool:
    """``count(start, stop, into)`` (a kernel's call over entries start..stop into a (T,)
    int64 array; False: a tile number outside) over ``range(n)``: in one call, or in spans
    on the kernel threads, each into an array of its own, added to ``out`` after (integer
    sums, the same in any order). False where a span refused; ``out`` unchanged then."""
    parts = spans(n) if n >= COUNT_SPLIT_MIN else [(0, n)]
    if len(parts) == 1:
        return count(0, n, out)
    partial = np.zeros((len(parts), out.size), dtype=np.int64)
    if not all(in_threads(lambda k: count(*parts[k], partial[k]), range(len(parts)))):
        return False
    out += partial.sum(axis=0)
    return True


def add_counts_compiled(out: np.ndarray, tile: np.ndarray, weights=None, *,
                        scale: int = 1) -> None:
    """``out += bincount(tile, weights).astype(int64) * scale`` (the same sums, in the same
    order; integer weights are summed as integers, which float64 sums exactly below 2**53);
    ``weights`` an int: that much per entry (None: 1). A ValueError, ``out`` unchanged,
    where a tile number is outside it. Integer counts of many entries run in spans on the
    kernel threads (:func:`_counted`)."""
    n = tile.shape[0]
    if weights is None or isinstance(weights, (int, np.integer)):
        amount = (1 if weights is None else int(weights)) * scale
        if not _counted(out, n, lambda a, b, into: _count_constant(tile[a:b], amount, into)):
            raise _outside(out.size)
        return
    if weights.shape[0] != n:
        raise ValueError(f"{weights.shape[0]} weights for {n} tile numbers")
    if weights.dtype.kind in "iub":
        if not _counted(out, n, lambda a, b, into: _count_integers(tile[a:b], weights[a:b],
                                                                  scale, into)):
            raise _outside(out.size)
    else:
        # float64 sums in entry order (bincount's rounding): one call
        sums = np.zeros(out.size, dtype=np.float64)
        if not _count_weighted(tile, np.asarray(weights, dtype=np.float64), sums):
            raise _outside(out.size)
        out += sums.astype(np.int64) * scale
