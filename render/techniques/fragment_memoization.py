"""Fragment Memoization with Parallel Frame Rendering (Arnau et al.; Frame Coherence §1.3.1,
§4.3.1).

The prior art Rendering Elimination is compared with (DESIGN §7). A fragment's color is a
deterministic function of its inputs (the interpolated inputs the fragment program reads,
gl_FragCoord / gl_FrontFacing only when the program declares them) plus the draw's constants,
the program and the bound textures. A small LUT keyed by a hash of those inputs remembers
recent colors; a fragment whose key hits reuses the stored color and skips the fragment
program. Redundancy is mostly across frames, so two frames render in parallel (Parallel Frame
Rendering) to shorten the reuse distance: both render the same tile at the same time, and the
second frame of each pair finds the first one's colors of that tile.

Parameters (thesis Table 4.1): 2 frames in parallel, 32-bit signature, 4-way LUT, 2048 sets
(the original 512 entries grown to 2048 sets "to better compare to the chip area of RE").
Keys are 64 bits by default (``memo``); ``memo/32`` is the thesis's 32-bit signature.

Pieces:

- :func:`fragment_keys`: the key of every lane, (n,) uint64 (:data:`KEY_DTYPE`, the only key
  dtype the LUT and the memoizer accept: anything else is a TypeError, never a cast). The
  32-bit key is CRC-32 exactly as ``zlib.crc32`` (reflected polynomial 0xEDB88320, register
  preset and final xor 0xFFFFFFFF), computed vectorized over lanes, of the lane's input bits,
  continuing from the draw's ``context_crc``: ``key = zlib.crc32(lane_message, context_crc)``.
  By CRC linearity that is the input CRC XOR-mixed with the context signature advanced over
  the message length, and equals the CRC of (context bytes || lane message) when
  ``context_crc`` is the CRC of the context bytes (:func:`context_signature`). The 64-bit key
  adds a CRC-32C of the same message in the high half. Lane message: its inputs as float32
  bit patterns, little-endian, input-major then x, y, z, w. With ``quad_inputs`` (the program
  takes derivatives or samples with implicit LOD, so its color depends on the whole 2x2 quad)
  the message is the inputs of the 4 lanes of its quad in lane order, then the lane's
  position in the quad (0-3) as a 32-bit word.
- :class:`MemoLUT`: the set-associative LUT, exact LRU (tilesim.render.pipeline.set_associative):
set = the low log2(sets) bits of the key, tag = the rest; each entry stores the color its inserting
  fragment produced, bit for bit. A miss inserts its fragment's color; a hit returns the
  stored color, which differs from the true one on a hash collision (counted, and shown).
- :class:`FragmentMemoizer`: frames in pairs (2k, 2k+1); the LUT sees, tile by tile in
  traversal order, frame 2k's fragments of the tile then frame 2k+1's (each in submission
  order). The LUT carries over from pair to pair.
- :class:`ScreenMemo`: memoization on the pipeline (tilesim.render.techniques.bus): logs the default
  framebuffer's shaded fragments, clears and color writes per frame, and shows a frame as the
  hardware would, with the stored colors on hits (a frame where a hit returned a wrong color
  is drawn again from its log with the memoized colors).

Counters the pipeline stores (DESIGN §5): per tile ``memo_lookups`` (shaded fragments that
looked the LUT up), ``memo_hits`` (shader executions saved), ``memo_table_writes`` (misses,
each inserting an entry); per frame ``memo_collisions`` (hits whose stored color differs from
the fragment's true color in any bit).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from tilesim.backend import array_module, to_host
from tilesim.backend import xp as active_xp
from tilesim.errors import InputError
from tilesim.jit import jit, usable
from tilesim.render.pipeline.counters import add_counts_compiled
from tilesim.render.pipeline.gpu_config import GPU_CONFIG, counted_entry
from tilesim.render.pipeline.set_associative import SetAssociativeLRU
from tilesim.render.techniques.registry import TechniqueUnit
from tilesim.render.techniques.rendering_elimination import draw_state_bytes

__all__ = ["COUNTERS", "KEY_DTYPE", "Chunks", "FragmentMemoizer", "MemoFrame", "MemoLUT",
           "SharedWork", "check_keys", "context_signature", "crc32_words", "fragment_keys",
           "pack_rgba8", "rows_differ", "unpack_rgba8"]

COUNTERS = ("memo_lookups", "memo_hits", "memo_table_writes")   # per tile; collisions per frame

_U32 = np.uint32
_ONES = _U32(0xFFFFFFFF)

# The dtype of every memoization key past fragment_keys (the LUT refuses any other). Keys are
# unsigned 64-bit integers; NumPy promotes uint64 mixed with a signed integer array (an empty
# int64 placeholder, say) to float64, which rounds keys above 2^53 and made wrong-color hits.
KEY_DTYPE = np.uint64


def check_keys(keys, where: str):
    """``keys`` as a 1-D array of :data:`KEY_DTYPE`; TypeError for any other dtype (no cast:
    a float or signed array here means a key was damaged on its way, e.g. by promotion)."""
    xp = array_module(keys)
    keys = xp.asarray(keys)
    if keys.dtype != KEY_DTYPE:
        raise TypeError(f"{where}: memoization keys must be {np.dtype(KEY_DTYPE).name} (from "
                        f"fragment_keys), got {keys.dtype}")
    if keys.ndim != 1:
        raise ValueError(f"{where}: keys must be 1-D, got shape {keys.shape}")
    return keys


# ------------------------------------------------------------------------------------------
# CRC-32 over 32-bit words, vectorized over messages


CRC32_POLY = 0xEDB88320     # zlib's CRC-32 (reflected)
CRC32C_POLY = 0x82F63B78    # Castagnoli's CRC-32C (reflected): the second half of 64-bit keys


def _crc_byte_tables(poly: int = CRC32_POLY) -> np.ndarray:
    """Slicing-by-4 tables (4, 256) uint32: after ``c ^= word``, ``c = t[3][byte 0 of c] ^
    t[2][byte 1] ^ t[1][byte 2] ^ t[0][byte 3]`` (the compiled keys' tables)."""
    t0 = np.arange(256, dtype=_U32)
    for _ in range(8):
        t0 = (t0 >> _U32(1)) ^ (_U32(poly) * (t0 & _U32(1)))
    t = [t0]
    for _ in range(3):
        prev = t[-1]
        t.append((prev >> _U32(8)) ^ t0[prev & _U32(0xFF)])
    return np.stack(t)


def _crc_tables(poly: int = CRC32_POLY) -> tuple[np.ndarray, np.ndarray]:
    """Slicing-by-4 tables folded into two 16-bit-indexed ones (256 KB each): one word costs
    two gathers, ``c = lo[c & 0xFFFF] ^ hi[c >> 16]`` after ``c ^= word``."""
    t = _crc_byte_tables(poly)
    low_byte, high_byte = np.arange(1 << 16) & 0xFF, np.arange(1 << 16) >> 8
    lo = t[3][low_byte] ^ t[2][high_byte]      # bytes 0 and 1 of the register
    hi = t[1][low_byte] ^ t[0][high_byte]      # bytes 2 and 3
    return lo, hi


_TABLES = {("numpy", CRC32_POLY): _crc_tables(CRC32_POLY),
           ("numpy", CRC32C_POLY): _crc_tables(CRC32C_POLY)}
# The compiled keys' byte tables: the CRC-32's (a key's low half), then the CRC-32C's.
_BYTE_TABLES = np.stack([_crc_byte_tables(CRC32_POLY), _crc_byte_tables(CRC32C_POLY)])


def _tables(xp, poly: int = CRC32_POLY):
    name = xp.__name__
    if (name, poly) not in _TABLES:
        _TABLES[name, poly] = tuple(xp.asarray(t) for t in _TABLES["numpy", poly])
    return _TABLES[name, poly]


def crc32_words(words, crc=0, poly: int = CRC32_POLY):
    """``zlib.crc32`` of messages of 32-bit little-endian words, continuing from ``crc``.

    words: (W, m) uint32, message j being words[:, j]; crc: int or (m,) uint32 (the running
    value, as zlib's second argument). Returns (m,) uint32.
    """
    xp = array_module(words)
    lo, hi = _tables(xp, poly)
    words = xp.asarray(words, dtype=_U32)
    c = xp.broadcast_to(xp.asarray(crc, dtype=_U32), words.shape[1:]) ^ _ONES
    if usable(words, c) and words.ndim == 2:
        crc32_words_compiled(words, c, lo, hi)
        return c ^ _ONES
    for word in words:
        c = c ^ word
        c = xp.take(lo, c & _U32(0xFFFF)) ^ xp.take(hi, c >> _U32(16))
    return c ^ _ONES


def context_signature(*parts) -> int:
    """CRC-32 of the draw context (zlib's, chained over ``parts``): the program, its constants,
    the bound textures... Each part: bytes, str (UTF-8), int (8 bytes, little-endian, signed)
    or an array (its bytes, C order; a device array is copied to the host). Pass the result as
    ``fragment_keys``'s context_crc."""
    crc = 0
    for part in parts:
        if isinstance(part, str):
            data = part.encode()
        elif isinstance(part, (bytes, bytearray, memoryview)):
            data = bytes(part)
        elif isinstance(part, (int, np.integer)):
            data = int(part).to_bytes(8, "little", signed=True)
        else:
            data = np.ascontiguousarray(to_host(part)).tobytes()
        crc = zlib.crc32(data, crc)
    return crc


def fragment_keys(inputs, context_crc: int = 0, quad_inputs: bool = False, bits: int = 32):
    """The memoization key of every lane (module docstring for the exact hash).

    ``bits`` 32 (the thesis's signature, Frame Coherence Table 4.1) or 64: the CRC-32 in the low
    half and a CRC-32C of the same message in the high half. With 32 bits a LUT tag is 21 bits (2048
    sets), so a fragment whose inputs are new matches a resident entry with probability about ways /
    2^21 and takes its color: rare, but not lossless; 64-bit keys make it negligible.

    inputs: (n_inputs, 4, n) float32 per lane (the program's IN registers, plus the system
    values it reads, stacked as extra rows); lanes 4q..4q+3 are quad q. context_crc: the
    draw's signature (:func:`context_signature`). quad_inputs: key on the whole quad's
    inputs and the lane's position in it (requires n % 4 == 0). Returns (n,) uint64 for
    either width (32 bits: the CRC-32 zero-extended), the one key dtype the LUT takes.
    """
    if bits not in (32, 64):
        raise ValueError(f"fragment_keys: bits must be 32 or 64, got {bits}")
    if usable(inputs):
        # Both halves in one pass over the lanes' words (the same CRCs, bit for bit).
        words, quad_inputs = _key_words(inputs, quad_inputs)
        return fragment_keys_compiled(words, quad_inputs, context_crc,
                                      _BYTE_TABLES[:bits // 32])
    low = _keys(inputs, context_crc, quad_inputs, CRC32_POLY).astype(KEY_DTYPE)
    if bits == 32:
        return low
    high = _keys(inputs, context_crc, quad_inputs, CRC32C_POLY).astype(KEY_DTYPE)
    return (high << KEY_DTYPE(32)) | low


def _key_words(inputs, quad_inputs: bool):
    """The lanes' messages as (W, n) uint32 words (the inputs' float32 bit patterns: -0.0 !=
    0.0, NaNs kept), checked; and quad_inputs, which needs whole quads."""
    xp = array_module(inputs)
    values = xp.ascontiguousarray(xp.asarray(inputs, dtype=np.float32))
    if values.ndim != 3 or values.shape[1] != 4:
        raise ValueError(f"fragment_keys: inputs must be (n_inputs, 4, n), got {values.shape}")
    n = values.shape[2]
    if quad_inputs and n % 4:
        raise ValueError(f"fragment_keys: quad_inputs needs whole quads, got {n} lanes")
    return values.view(_U32).reshape(values.shape[0] * 4, n), quad_inputs


def _keys(inputs, context_crc: int, quad_inputs: bool, poly: int):
    xp = array_module(inputs)
    words, quad_inputs = _key_words(inputs, quad_inputs)
    n = words.shape[1]
    context = _U32(context_crc & 0xFFFFFFFF)
    if not quad_inputs:
        return crc32_words(words, context, poly)
    # The quad's message is shared by its 4 lanes: hash it once per quad, then append the
    # lane's position, so quad keys cost about as much as lane keys.
    rows = words.shape[0]
    quad_words = xp.ascontiguousarray(
        words.reshape(rows, n // 4, 4).transpose(2, 0, 1).reshape(4 * rows, n // 4))
    quad_crc = crc32_words(quad_words, context, poly)
    position = (xp.arange(n, dtype=_U32) & _U32(3))[None, :]
    return crc32_words(position, xp.repeat(quad_crc, 4), poly)


# ------------------------------------------------------------------------------------------
# Colors


def pack_rgba8(colors):
    """(n, 4) uint8 -> (n,) uint32 (r in the low byte); (n,) integers pass as uint32."""
    xp = array_module(colors)
    colors = xp.asarray(colors)
    if colors.ndim == 1:
        return colors.astype(_U32)
    if colors.ndim != 2 or colors.shape[1] != 4:
        raise ValueError(f"colors must be (n, 4) RGBA8 or (n,) packed, got {colors.shape}")
    c = colors.astype(_U32)
    return c[:, 0] | (c[:, 1] << _U32(8)) | (c[:, 2] << _U32(16)) | (c[:, 3] << _U32(24))


def unpack_rgba8(packed):
    """(n,) uint32 -> (n, 4) uint8, inverse of :func:`pack_rgba8`."""
    xp = array_module(packed)
    shifts = xp.asarray(np.array([0, 8, 16, 24], dtype=_U32))
    return ((xp.asarray(packed, dtype=_U32)[:, None] >> shifts) & _U32(0xFF)).astype(np.uint8)


def rows_differ(a, b, where=None):
    """(n,) bool: whether row i of ``a`` and ``b`` ((n, ...) of one dtype) differ in any bit
    (floats compared by bit pattern: -0.0 differs from 0.0, a NaN equals itself); with
    ``where`` ((n,) bool), only among the rows it selects (False elsewhere)."""
    xp = array_module(a, b)
    a, b = xp.asarray(a), xp.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        raise ValueError(f"rows_differ: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
    if usable(a, b, where):
        # Rows where does not select are not read (the hits are a few of the fragments).
        return rows_differ_compiled(_row_bits(a), _row_bits(b), where)
    if where is not None:
        return where & rows_differ(a, b)
    if a.dtype.kind == "f":
        bits = np.dtype(f"u{a.dtype.itemsize}")
        a, b = xp.ascontiguousarray(a).view(bits), xp.ascontiguousarray(b).view(bits)
    differ = a != b
    if differ.ndim == 1:
        return differ
    # Rows of an explicit width: -1 cannot be inferred when there are no rows.
    return differ.reshape(differ.shape[0], int(np.prod(differ.shape[1:]))).any(axis=1)


def _row_bits(rows):
    """(n, w) view of each row's bits of ``rows`` ((n, ...) of any dtype; a copy only when
    not C-contiguous) as w unsigned words, the widest that divide a row: float32 RGBA is 2
    uint64, so the compiled loops compare and move colors in 2 steps, not 16."""
    xp = array_module(rows)
    rows = xp.ascontiguousarray(rows)
    row = rows.reshape(rows.shape[0], int(np.prod(rows.shape[1:])))
    size = row.shape[1] * row.dtype.itemsize
    unit = next(u for u in (8, 4, 2, 1) if size % u == 0)
    return row.view(np.dtype(f"u{unit}"))


# ------------------------------------------------------------------------------------------
# The LUT


# 2^20 entries (4 MB of colors): 128x Table 4.1's LUT, far beyond an on-chip SRAM; the bound
# keeps a mistyped size from allocating the machine's memory.
MAX_LUT_ENTRIES = 1 << 20


def lut_geometry(path: str = str(GPU_CONFIG)) -> tuple[int, int]:
    """(sets, ways) of the LUT: ``[techniques.memo] lut_sets`` and ``lut_ways`` of the GPU
    configuration file (Frame Coherence Table 4.1: 2048 sets, 4 ways), the entries the timing
    model sizes the LUT's leakage by (within ``gpu_config.renderer_config``, its values)."""
    sets = counted_entry(path, "techniques.memo.lut_sets", power_of_two=True, least=2)
    ways = counted_entry(path, "techniques.memo.lut_ways")
    if sets * ways > MAX_LUT_ENTRIES:
        raise InputError(f"techniques.memo.lut_sets x lut_ways: at most {MAX_LUT_ENTRIES} "
                         f"entries (a LUT in SRAM), got {sets} x {ways}", source=path)
    return sets, ways


class MemoLUT:
    """``sets`` x ``ways`` entries of (tag, color), exact LRU per set; set index = the low
    log2(sets) bits of the 64-bit key, tag = the remaining high bits.

    An entry keeps the color its inserting fragment produced, exactly as given (any row
    layout: (n, 4) float32 shader outputs, (n, 4) RGBA8, (n,) packed), so a hit returns that
    color bit for bit: the true one when the key identifies the inputs, another fragment's on
    a collision. The LRU table (tilesim.render.pipeline.set_associative) carries, per entry, the
    index of its color in :attr:`colors` (the resident entries' colors, renumbered after every
    batch).
    """

    def __init__(self, sets: int = 2048, ways: int = 4):
        if sets < 1 or sets & (sets - 1):
            raise ValueError("MemoLUT: sets must be a power of two")
        self.sets, self.ways = sets, ways
        self.index_bits = sets.bit_length() - 1
        self.table = SetAssociativeLRU(sets, ways, payload_dtype=np.int64)
        self.colors = None      # (entries, ...) the color of the entry payload k names

    @property
    def entries(self) -> int:
        return self.sets * self.ways

    def reset(self) -> None:
        """Empty the LUT."""
        self.table.reset()
        self.colors = None

    def lookup_insert(self, keys, colors, order=None):
        """Look up fragments (n,) in the given order, inserting each miss.

        keys: (n,) uint64 (:data:`KEY_DTYPE`; TypeError otherwise); colors: each fragment's
        true color, (n, ...) rows of any dtype; order: the fragments that look up, in the
        order they do (indices; None: all, 0..n-1). Returns (hit (n,) bool, colors (n, ...)
        in the layout given: on a hit the stored color of the matching entry (on a collision
        not the true one), else the true color; a fragment not in ``order`` misses).
        """
        keys = check_keys(keys, "MemoLUT.lookup_insert")
        xp = array_module(keys, colors)
        colors = xp.asarray(colors)
        n = keys.shape[0]
        if colors.ndim < 1 or colors.shape[0] != n:
            raise ValueError(f"MemoLUT.lookup_insert: {n} keys but colors {colors.shape}")
        if self.index_bits == 0 and n and bool((keys >> KEY_DTYPE(63)).any()):
            raise ValueError("MemoLUT: a one-set LUT takes keys below 2^63 (the whole key "
                             "is its tag, a non-negative int64)")
        entries = self.entries
        if (self.colors is None or array_module(self.colors) is not xp
                or self.colors.shape[1:] != colors.shape[1:]
                or self.colors.dtype != colors.dtype):
            # First batch, or colors of another layout or backend: start from an empty LUT.
            self.table.reset()
            self.colors = xp.zeros((entries, *colors.shape[1:]), dtype=colors.dtype)
        if n == 0:
            return xp.zeros(0, dtype=bool), colors.copy()
        if usable(keys, colors, order):
            return self._lookup_compiled(keys, colors, order)
        if order is not None:
            # The accesses in their order, the answers back in the fragments' places.
            hit_ordered, stored_ordered = self.lookup_insert(
                xp.take(keys, order), xp.take(colors, order, axis=0))
            hit, stored = xp.zeros(n, dtype=bool), colors.copy()
            hit[order], stored[order] = hit_ordered, stored_ordered
            return hit, stored
        # The tag is the key without its index bits: below 2^63, so exact as int64.
        tags = (keys >> KEY_DTYPE(self.index_bits)).astype(np.int64)
        sets = (keys & KEY_DTYPE(self.sets - 1)).astype(np.int64)
        # Payload: entries' colors are 0..entries-1, this batch's are entries + position.
        ids = xp.arange(entries, entries + n, dtype=np.int64)
        hit, used = self.table.access_with_payload(sets, tags, ids)
        pool = xp.concatenate([self.colors, colors])
        stored = xp.take(pool, used, axis=0)
        # Keep the resident entries' colors only, renumbered (empty ways never hit).
        resident = self.table.payload.reshape(-1)
        self.colors = xp.take(pool, resident, axis=0)
        self.table.payload = xp.arange(entries, dtype=np.int64).reshape(self.sets, self.ways)
        return hit, stored

    def _lookup_compiled(self, keys, colors, order):
        """:meth:`lookup_insert` in one compiled pass: the entries' colors move with their
        tags in :attr:`colors` (entry (set, way) at row set * ways + way, as the vectorized
        path renumbers them), so nothing is gathered or scattered."""
        n = keys.shape[0]
        order = np.arange(n, dtype=np.int64) if order is None else np.asarray(order, np.int64)
        self.table.ensure_state(np)
        self.table.state = np.ascontiguousarray(self.table.state)
        self.colors = np.ascontiguousarray(self.colors)
        stored = np.array(colors, copy=True, order="C")
        entry_bits = _row_bits(self.colors)
        entry_bits = entry_bits.reshape(self.sets, self.ways, entry_bits.shape[1])
        hit = memo_lookup_compiled(order, keys, self.index_bits, self.table.state,
                                   entry_bits, _row_bits(stored))
        self.table.payload = np.arange(self.entries, dtype=np.int64).reshape(self.sets,
                                                                              self.ways)
        return hit, stored


# ------------------------------------------------------------------------------------------
# Parallel frame rendering


@dataclass
class MemoFrame:
    """What memoization did in one frame. Per tile (tiles,) int64: memo_lookups, memo_hits
    (shader executions saved), memo_table_writes; memo_collisions: hits whose stored color
    differs from the true color. Per fragment (n,): hit, and colors, the memoized colors (the
    stored color on a hit, the true one elsewhere), in the layout of the colors given; wrong,
    the hits whose stored color differs (None: not known)."""

    frame_index: int
    memo_lookups: np.ndarray
    memo_hits: np.ndarray
    memo_table_writes: np.ndarray
    memo_collisions: int
    hit: np.ndarray
    colors: np.ndarray
    wrong: np.ndarray | None = None

    def counters(self) -> dict:
        """The counters under their pipeline names."""
        return {"memo_lookups": self.memo_lookups, "memo_hits": self.memo_hits,
                "memo_table_writes": self.memo_table_writes,
                "memo_collisions": self.memo_collisions}


class SharedWork:
    """Results memoizers of one render may share, by the identity of their inputs: side by
    side, ``memo`` and ``memo/32`` log the same fragments (only their keys differ), so the
    joins of a pair's logs, its lookup order and the traversal's rank table are made once.
    Each kind of result keeps its last inputs (referenced, so their identities stay theirs)
    and value."""

    def __init__(self):
        self._last: dict[str, tuple] = {}

    def get(self, kind: str, inputs: tuple, make):
        """``make()``, or its value for the same ``inputs`` (the same objects) last time."""
        last = self._last.get(kind)
        if last is not None and len(last[0]) == len(inputs) and all(
                a is b for a, b in zip(last[0], inputs, strict=True)):
            return last[1]
        value = make()
        self._last[kind] = (inputs, value)
        return value

    def same(self, kind: str, array: np.ndarray) -> np.ndarray:
        """``array``, or the equal host array of this kind given before (results keyed on
        it are then shared)."""
        last = self._last.get(kind)
        if last is not None and np.array_equal(last[1], array):
            return last[1]
        self._last[kind] = ((), array)
        return array


def _share(shared: SharedWork | None, kind: str, inputs: tuple, make):
    return make() if shared is None else shared.get(kind, inputs, make)


@dataclass
class _FrameLog:
    """One frame's fragments, as lists of chunks (joined with the rest of its group)."""

    frame_index: int
    lanes: int
    tile: list
    keys: list
    colors: list
    shaded: list


@dataclass
class FragmentMemoizer:
    """Fragment memoization over a sequence of frames rendered ``frames_in_parallel`` at a
    time (2: PFR as in the thesis; 1: frames one after the other).

    tiles: tiles per frame; traversal: tile numbers in rendering order (default 0..tiles-1,
    e.g. ``Framebuffer.traversal()``). Feed each frame's fragment log to :meth:`add_frame`; it
    returns the :class:`MemoFrame` of every frame whose group completed (in frame order), and
    :meth:`finish` those of a trailing incomplete group.
    """

    tiles: int
    traversal: np.ndarray | None = None
    sets: int = 2048
    ways: int = 4
    frames_in_parallel: int = 2
    shared: SharedWork | None = None
    lut: MemoLUT = field(init=False)
    _pending: list = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if self.frames_in_parallel < 1:
            raise ValueError("FragmentMemoizer: frames_in_parallel must be positive")
        self.lut = MemoLUT(self.sets, self.ways)
        # The traversal is checked and inverted on the host (a few thousand tiles, once); the
        # rank table is copied to each array backend that uses it, once.
        order = np.arange(self.tiles) if self.traversal is None else to_host(self.traversal)
        if sorted(order.tolist()) != list(range(self.tiles)):
            raise ValueError("FragmentMemoizer: traversal must be a permutation of the tiles")
        rank = np.empty(self.tiles, dtype=np.int64)
        rank[order] = np.arange(self.tiles)
        # Memoizers of one traversal use one rank table, so they can share lookup orders.
        self._tile_rank = rank if self.shared is None else self.shared.same("rank", rank)
        self._ranks = {np.__name__: self._tile_rank}

    def reset(self) -> None:
        """Empty the LUT and drop buffered frames."""
        self.lut.reset()
        self._pending = []

    def add_frame(self, frame_index: int, tile, keys, colors, shaded_mask=None) -> list[MemoFrame]:
        """Buffer one frame's fragment log, in submission order: tile (n,) tile of each
        fragment, keys (n,) uint64 (:func:`fragment_keys`; TypeError for another dtype),
        colors (n, ...) the true colors (shader outputs (n, 4) float32, RGBA8 (n, 4) uint8 or
        (n,) packed: rows of any dtype), shaded_mask (n,) bool: fragments that would run the
        fragment program (only those look the LUT up; None: all). Each may also be
        :class:`Chunks`, the frame's arrays in order (joined once, with the rest of the
        group). Returns the results of the frames of every group this completes (frames 2k
        and 2k+1 together with 2 in parallel)."""
        group = frame_index // self.frames_in_parallel
        done = []
        if self._pending and self._pending[0].frame_index // self.frames_in_parallel != group:
            done = self.finish()       # the previous group is incomplete: run it as it is
        if any(log.frame_index == frame_index for log in self._pending):
            raise ValueError(f"FragmentMemoizer: frame {frame_index} added twice")
        keys = [check_keys(k, f"FragmentMemoizer.add_frame (frame {frame_index})")
                for k in _chunks(keys)]
        xp = array_module(*keys, *_chunks(tile), *_chunks(colors))
        n = sum(k.shape[0] for k in keys)
        shaded = ([xp.ones(n, dtype=bool)] if shaded_mask is None
                  else [xp.asarray(s, dtype=bool) for s in _chunks(shaded_mask)])
        tile = [xp.asarray(t).astype(np.int64, copy=False) for t in _chunks(tile)]
        colors = [xp.asarray(c) for c in _chunks(colors)]
        self._pending.append(_FrameLog(frame_index, n, tile, keys, colors, shaded))
        if len(self._pending) == self.frames_in_parallel:
            done += self.finish()
        return done

    def finish(self) -> list[MemoFrame]:
        """Run the buffered frames (a group, or an incomplete trailing one)."""
        logs = sorted(self._pending, key=lambda log: log.frame_index)
        self._pending = []
        if not logs:
            return []
        xp = array_module(*(a for log in logs for a in (*log.tile, *log.keys, *log.colors)))
        if xp.__name__ not in self._ranks:
            self._ranks[xp.__name__] = _share(self.shared, f"rank {xp.__name__}",
                                              (self._tile_rank,),
                                              lambda: xp.asarray(self._tile_rank))
        rank = self._ranks[xp.__name__]
        # Frames concatenated in frame order, fragments in submission order; the shaded ones
        # stably sorted by their tile's traversal rank give, tile by tile, frame 2k's then
        # frame 2k+1's: the order they look the LUT up in.
        tile, keys, shaded, true = (
            self._joined(name, [part for log in logs for part in getattr(log, name)])
            for name in ("tile", "keys", "shaded", "colors"))
        order = _share(self.shared, "order", (tile, shaded, rank),
                       lambda: _lookup_order(tile, shaded, rank))
        hit, stored = self.lut.lookup_insert(keys, true, order=order)
        wrong = rows_differ(stored, true, where=hit)
        results, begin = [], 0
        for log in logs:
            end = begin + log.lanes
            f_tile = tile[begin:end]
            lookups = _per_tile(f_tile, shaded[begin:end], self.tiles)
            hits = _per_tile(f_tile, hit[begin:end], self.tiles)
            results.append(MemoFrame(
                frame_index=log.frame_index, memo_lookups=lookups, memo_hits=hits,
                memo_table_writes=lookups - hits,
                memo_collisions=int(wrong[begin:end].sum()), hit=hit[begin:end],
                colors=stored[begin:end], wrong=wrong[begin:end]))
            begin = end
        return results

    def _joined(self, name: str, parts: list):
        """The group's chunks of one field, joined (once for memoizers sharing work)."""
        if len(parts) == 1:
            return parts[0]
        return _share(self.shared, f"group {name}", tuple(parts), lambda: _joined(parts))


class Chunks(list):
    """A field of a frame's log as its chunks (arrays), in order: what
    :meth:`FragmentMemoizer.add_frame` joins once with the rest of the group."""


def _chunks(arrays) -> list:
    """:class:`Chunks` as a list, or one array-like as a list of one chunk."""
    return list(arrays) if isinstance(arrays, Chunks) else [arrays]


def _joined(parts):
    """``concatenate(parts)``, C-ordered: the LUT reads a fragment's color as one row, and
    the shader's colors come column-major (a concatenation of those would be too)."""
    xp = array_module(*parts)
    out = xp.empty((sum(p.shape[0] for p in parts), *parts[0].shape[1:]),
                   dtype=xp.result_type(*parts))
    return xp.concatenate(parts, out=out)


def _lookup_order(tile, shaded, rank):
    """The lanes with ``shaded`` set, stably sorted by their tile's traversal ``rank``."""
    if usable(tile, shaded, rank):
        return memo_order_compiled(tile, shaded, rank)
    xp = array_module(tile)
    lanes = xp.flatnonzero(shaded)
    return xp.take(lanes, xp.argsort(xp.take(rank, xp.take(tile, lanes)), kind="stable"))


def _per_tile(tile, selected, tiles: int):
    """(tiles,) int64: how many of the lanes with ``selected`` set lie in each tile."""
    xp = array_module(tile)
    if usable(tile, selected):
        counts = np.zeros(tiles, dtype=np.int64)
        add_counts_compiled(counts, tile, selected)
        return counts
    return xp.bincount(tile[selected], minlength=tiles)


# ------------------------------------------------------------------------------------------
# On the pipeline: the frames as the hardware shows them


@dataclass
class _ScreenFrame:
    start: np.ndarray     # (H, W, 4) uint8, row 0 at the top: the buffer the frame began on
    end: np.ndarray       # the buffer it ended with, as rendered (true colors)
    events: list          # ("clear", rect, rgba8, mask) / ("write", pixel, lanes, state,
    #                       alpha, the batch's first lane in the frame, its end)


class ScreenMemo:
    """Fragment memoization of the default framebuffer on the pipeline
    (tilesim.render.techniques.bus).

    Per frame it logs the fragments the on-screen draws shade (tile, key, the color the
    fragment program produced, whether the fragment is live) and, in order, the clears and
    color writes of the default framebuffer (pixels, the shaded lanes written, the draw's
    per-fragment state). Frames go to a :class:`FragmentMemoizer` in pairs; when a pair is
    done, :meth:`show` gives the frame as the hardware would display it: a hit writes the
    color stored in the LUT, so where a hit returned another fragment's color (a collision)
    the frame is drawn again from its log with the memoized colors (clears, then each draw's
    blending and color writes in submission order, from the buffer the frame began on: the
    previous frame as shown). Depth and discards do not depend on the color and are kept
    (the LUT is taken to remember a discard with the color). A frame without a wrong hit is
    the frame rendered, so nothing is drawn again.
    """

    def __init__(self, target, traversal=None, key_bits: int = 64,
                 shared: SharedWork | None = None):
        self.key_bits = key_bits
        self.xp = active_xp()       # the render's array backend
        self.shared = shared        # work shared with other memoizers of the render
        sets, ways = lut_geometry()
        self.memoizer = FragmentMemoizer(target.tile_count, traversal=traversal, sets=sets,
                                         ways=ways, shared=shared)
        self.frames_redrawn = 0
        self._size = (target.height, target.width)
        self._start = target.image()
        self._frames: dict[int, _ScreenFrame] = {}
        self._shown = None    # (index, image) of the last frame shown unlike it was rendered
        self._new_frame()

    def _new_frame(self) -> None:
        self._chunks: list = []
        self._events: list = []
        self._lanes = 0
        self._chunk_begin = 0

    # -- logging (the pipeline's hooks, default framebuffer only) ----------------------------

    def shaded(self, keys, color, tile, alive) -> None:
        """The lanes of one raster batch: keys (n,) uint64, color (n, 4) the program's
        output, tile (n,), alive (n,) bool (covered and not culled early: these look up)."""
        keys = check_keys(keys, "ScreenMemo.shaded")
        self._chunk_begin = self._lanes
        self._lanes += keys.shape[0]
        self._chunks.append((tile, keys, color, alive))

    @property
    def last_chunk(self) -> tuple[int, int]:
        """The frame's lanes ``[begin, end)`` of the last :meth:`shaded` batch: where its lanes
        sit in the frame's :attr:`MemoFrame.hit` (a recorder maps quads to their lookups)."""
        return self._chunk_begin, self._lanes

    def cleared(self, rect, color, color_mask) -> None:
        """A clear of the default framebuffer: rect (x0, y0, x1, y1), color RGBA (floats) or
        None, color_mask the channels written."""
        x0, y0, x1, y1 = rect
        if color is None or not any(color_mask) or x1 <= x0 or y1 <= y0:
            return
        # As RenderTarget.clear converts the clear color.
        rgba8 = np.round(np.asarray(color, dtype=np.float64) * 255).astype(np.uint8)
        self._events.append(("clear", rect, rgba8, tuple(color_mask)))

    def written(self, pixel, lanes, state, has_alpha: bool) -> None:
        """Color writes of the last :meth:`shaded` batch: pixel (m,) flat pixel indices (row
        0 at the bottom), lanes (m,) their positions in that batch, in submission order;
        state the draw's FragmentState (blending, color mask)."""
        if pixel.shape[0]:
            # The batch is the frame's lanes chunk_begin..lanes (its positions are added only
            # where a redraw reads them).
            self._events.append(("write", pixel, lanes, state, has_alpha, self._chunk_begin,
                                 self._lanes))

    def end_frame(self, index: int, screen: np.ndarray) -> list[MemoFrame]:
        """Close frame ``index`` (``screen``: the default framebuffer as rendered, (H, W, 4)
        uint8 on the host, row 0 at the top); returns the frames completed."""
        if self._chunks:
            # Chunks as they are: the memoizer joins them once, with the other frame's.
            tile, keys, colors, alive = (Chunks(parts) for parts in zip(*self._chunks,
                                                                        strict=True))
        else:
            # A frame that shaded nothing on screen: empty arrays of the dtypes of a full one
            # (an int64 key placeholder once turned its pair's uint64 keys into float64).
            xp = self.xp
            tile, keys = xp.zeros(0, dtype=np.int64), xp.zeros(0, dtype=KEY_DTYPE)
            colors, alive = xp.zeros((0, 4), dtype=np.float32), xp.zeros(0, dtype=bool)
        self._frames[index] = _ScreenFrame(self._start, screen, self._events)
        self._start = screen
        self._new_frame()
        return self.memoizer.add_frame(index, tile, keys, colors, alive)

    def finish(self) -> list[MemoFrame]:
        """The frames of a trailing incomplete group."""
        return self.memoizer.finish()

    # -- showing ----------------------------------------------------------------------------

    def show(self, outcome: MemoFrame):
        """The default framebuffer of ``outcome``'s frame as displayed: None where it is the
        one rendered, else (rendered, shown) images: the frame drawn again with the memoized
        colors, as a hit returned a wrong color (or the frame began on a previous frame
        shown otherwise)."""
        frame = self._frames.pop(outcome.frame_index)
        previous = self._shown
        self._shown = None
        began_otherwise = previous is not None and previous[0] == outcome.frame_index - 1
        if outcome.memo_collisions == 0 and not began_otherwise:
            return None
        start = previous[1] if began_otherwise else frame.start
        image = self._redraw(start, frame, outcome)
        self.frames_redrawn += 1
        if np.array_equal(image, frame.end):
            return None
        self._shown = (outcome.frame_index, image)
        return frame.end, image

    def _redraw(self, start: np.ndarray, frame: _ScreenFrame, outcome: MemoFrame) -> np.ndarray:
        """The frame drawn from ``start`` with the memoized colors. A pixel's color depends
        only on where it began, the clears and the colors written to it, so only the pixels
        that began otherwise or took a wrong color are drawn again (their writes in
        submission order); the others are the frame's own (a few collisions touch a few
        pixels, where drawing all again costs a frame's color writes)."""
        from tilesim.render.pipeline.output_merger import rank_groups, write_colors

        colors = outcome.colors
        xp = array_module(colors)
        writes = [event for event in frame.events if event[0] == "write"]
        affected = self._affected(xp, start, frame, outcome, writes)
        buffer = xp.asarray(np.array(start[::-1], order="C"))      # a copy, row 0 at the bottom
        flat = buffer.reshape(-1, 4)
        for event in frame.events:
            if event[0] == "clear":
                _, (x0, y0, x1, y1), rgba8, mask = event
                for c in range(4):
                    if mask[c]:
                        buffer[y0:y1, x0:x1, c] = int(rgba8[c])
                continue
            _, pixel, lanes, state, has_alpha, first, _ = event
            keep = xp.flatnonzero(xp.take(affected, pixel))
            if keep.shape[0]:
                pixel = xp.take(pixel, keep)
                write_colors(pixel, xp.take(colors, xp.take(lanes, keep) + first, axis=0), flat,
                             state, has_alpha, lambda pixel=pixel: rank_groups(pixel))
        end = xp.asarray(np.array(frame.end[::-1], order="C"))
        image = xp.where(affected.reshape(end.shape[:2])[..., None], buffer, end)
        return to_host(image[::-1]).copy()

    def _affected(self, xp, start, frame: _ScreenFrame, outcome: MemoFrame, writes: list):
        """(H * W,) bool, row 0 at the bottom: pixels a wrong color was written to, or whose
        start is not the frame's (all where the wrong hits are not known)."""
        height, width = self._size
        if outcome.wrong is None:
            return xp.ones(height * width, dtype=bool)
        affected = xp.zeros(height * width, dtype=bool)
        # Wrong hits are few: only the batches that hold one are looked at.
        wrong = to_host(xp.flatnonzero(outcome.wrong))
        for _, pixel, lanes, _, _, first, end in writes:
            k = np.searchsorted(wrong, first)
            if k < wrong.shape[0] and wrong[k] < end:
                affected[pixel[xp.take(outcome.wrong[first:end], lanes)]] = True
        if start is not frame.start:
            began = (np.asarray(start) != frame.start).any(axis=2)[::-1].reshape(-1)
            affected |= xp.asarray(began)
        return affected


class MemoKeys:
    """The memoization keys of one shaded batch, computed on first use and once for every
    technique set that asks (side by side, ``memo`` and ``memo/32`` hash the same inputs):
    ``bits`` the widest asked for; a 32-bit key is the low half of the 64-bit one
    (``fragment_keys``)."""

    def __init__(self, draw, inputs, system_values: dict, bits: int):
        self._batch = (draw, inputs, system_values)
        self.bits = bits
        self._keys = None

    def of(self, bits: int):
        """(n,) uint64 keys of ``bits`` (at most :attr:`bits`)."""
        if bits > self.bits:
            raise ValueError(f"MemoKeys: {bits}-bit keys asked of {self.bits}-bit ones")
        if self._keys is None:
            draw, inputs, system_values = self._batch
            self._keys = fragment_keys(
                _memo_inputs(inputs, system_values), zlib.crc32(draw_state_bytes(draw)),
                draw.program.fragment_uses_derivatives, bits=self.bits)
        if bits == self.bits:
            return self._keys
        return self._keys & self._keys.dtype.type((1 << bits) - 1)


def _memo_inputs(inputs: np.ndarray, system_values: dict) -> np.ndarray:
    """Everything a fragment program reads per lane: its IN registers and system values."""
    xp = array_module(inputs)
    inputs = xp.asarray(inputs, dtype=xp.float32)
    if not system_values:
        return inputs           # the usual case: nothing to append, so no copy
    extra = [xp.asarray(v, dtype=xp.float32).reshape(1, 4, -1) for _, v in
             sorted(system_values.items())]
    return xp.concatenate([inputs, *extra], axis=0)


class FragmentMemoizationUnit(TechniqueUnit):
    """Memoization behind the pipeline's hooks: logs the screen's shaded fragments and color
    writes; frames are decided in pairs (Parallel Frame Rendering's, §4.3.1), so a finished
    frame is held until its pair is done, then released with its memoization counters and
    the image the hardware shows (a collision shows)."""

    holds_frames = True

    def __init__(self, screen, traversal: str, techniques) -> None:
        super().__init__(screen, traversal, techniques)
        self.key_bits = techniques.memo_key_bits
        self.memo = ScreenMemo(screen, traversal=screen.traversal(traversal),
                               key_bits=self.key_bits, shared=techniques.memo_shared)
        self._held: list = []          # frames memoization has not completed yet
        self._done: set[int] = set()   # of those, the ones whose outcome is applied
        # Outcomes applied since :meth:`take_arrived` (a recorder marks its quads' hits),
        # kept only where one takes them (``Techniques.keeps_memo_outcomes``).
        self._arrived: list[MemoFrame] | None = (
            [] if techniques.keeps_memo_outcomes else None)

    def cleared(self, counters, rect, color, depth, color_mask) -> None:
        self.memo.cleared(rect, color, color_mask)

    def shaded(self, draw, inputs, system_values, color, tile, alive, keys=None) -> None:
        if keys is None:
            keys = MemoKeys(draw, inputs, system_values, self.key_bits)
        self.memo.shaded(keys.of(self.key_bits), color, tile, alive)

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        self.memo.written(pixel, lanes, draw.fragment, draw.target.has_alpha)

    def end_frame(self, result, screen) -> None:
        self._held.append(result)
        self._apply(self.memo.end_frame(result.index, screen.image()))

    def _apply(self, done) -> None:
        for outcome in done:
            result = next(r for r in self._held if r.index == outcome.frame_index)
            screen = next((p for p in result.counters.passes if p.target == "default"), None)
            if screen is not None:
                for name, values in outcome.counters().items():
                    if name != "memo_collisions":
                        screen.add_per_tile(name, values)
            result.counters.scalars["memo_collisions"] = int(outcome.memo_collisions)
            # What the hardware displays: the LUT's colors on hits, so a collision shows. (A
            # frame whose image is not the default framebuffer, a readPixels of another
            # target, keeps its image; its collisions are still counted.)
            shown = self.memo.show(outcome)
            if shown is not None and np.array_equal(result.image, shown[0]):
                result.image = shown[1]
            self._done.add(outcome.frame_index)
            if self._arrived is not None:
                self._arrived.append(outcome)

    def take_arrived(self) -> list[MemoFrame]:
        """The frames' outcomes applied since the last call (none unless the techniques
        keep them, ``Techniques.keeps_memo_outcomes``)."""
        if self._arrived is None:
            return []
        arrived, self._arrived = self._arrived, []
        return arrived

    @property
    def last_chunk(self) -> tuple[int, int]:
        return self.memo.last_chunk

    def release(self, result) -> list:
        ready = []
        while self._held and self._held[0].index in self._done:
            ready.append(self._held.pop(0))
            self._done.discard(ready[-1].index)
        return ready

    def finish(self) -> list:
        self._apply(self.memo.finish())
        ready, self._held = self._held, []
        self._done.clear()
        return ready


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

@jit
def _crc32_words(words, running, lo, hi):  # pragma: no cover - compiled
    for w in range(words.shape[0]):
        for j in range(words.shape[1]):
            c = running[j] ^ words[w, j]
            running[j] = lo[c & np.uint32(0xFFFF)] ^ hi[c >> np.uint32(16)]


def crc32_words_compiled(words, running, lo, hi) -> None:
    """``fragment_memoization.crc32_words``'s loop in place: fold each row of ``words``
    ((W, m) uint32) into ``running`` ((m,) uint32, the complemented registers) with the two
    16-bit slicing tables ``lo`` and ``hi``; one pass per lane instead of two temporaries of
    every lane per word."""
    _crc32_words(words, running, lo, hi)


@jit(inline=True)
def _crc_byte_step(c, table):  # pragma: no cover - compiled
    # Slicing-by-4 on 1 KB byte tables: they stay in L1, where a sequential per-key loop
    # over the 256 KB 16-bit tables waits on the cache.
    return (table[3, c & np.uint32(0xFF)] ^ table[2, (c >> np.uint32(8)) & np.uint32(0xFF)]
            ^ table[1, (c >> np.uint32(16)) & np.uint32(0xFF)] ^ table[0, c >> np.uint32(24)])


@jit(inline=True)
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


@jit
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


def fragment_keys_compiled(words, quad: bool, context: int, tables) -> np.ndarray:
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


@jit
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


def memo_order_compiled(tile, shaded, rank) -> np.ndarray:
    """The shaded lanes (``shaded`` (n,) bool) stably sorted by their tile's ``rank``
    (``argsort(rank[tile[lanes]], kind="stable")`` of ``lanes = flatnonzero(shaded)``, as
    lane indices), by counting."""
    order = np.empty(int(np.count_nonzero(shaded)), dtype=np.int64)
    _memo_order(tile, shaded, rank, rank.shape[0], order)
    return order


@jit
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


# Fragments per compiled call of the LUT: the loop does not see Ctrl-C, and a 4K frame's
# lookups took 1.6 s in one call (like_hearthstone at 3840x2160); slices of this many take
# well under 0.1 s each, and Python hears a signal between them.
LOOKUP_SLICE = 1 << 20


def memo_lookup_compiled(order, keys, index_bits: int, state, stored, rows,
                         slice_lanes: int = LOOKUP_SLICE) -> np.ndarray:
    """``MemoLUT.lookup_insert``'s LUT, one fragment after the other in ``order``: key
    ``keys[i]`` (uint64; set = its low ``index_bits`` bits, tag = the rest) against
    ``state`` (sets, ways) int64 tags, oldest first, and ``stored`` (sets, ways, w) their
    colors' bits as w unsigned words, both updated in place. ``rows`` (n, w) of the same
    dtype: the fragments' colors, replaced in place by the stored color on a hit. Returns
    hit (n,) bool (False for lanes not in ``order``). Run in slices of ``slice_lanes`` of
    ``order`` (the LUT's state carries over; the result does not depend on it)."""
    hit = np.zeros(keys.shape[0], dtype=bool)
    step = max(int(slice_lanes), 1)
    for start in range(0, order.shape[0], step):
        _memo_lookup(order[start:start + step], keys, index_bits, state, stored, hit, rows)
    return hit


@jit
def _rows_differ(a, b, where, out):  # pragma: no cover - compiled
    for i in range(a.shape[0]):
        differ = False
        if where[i]:
            for k in range(a.shape[1]):
                if a[i, k] != b[i, k]:
                    differ = True
                    break
        out[i] = differ


def rows_differ_compiled(a, b, where=None) -> np.ndarray:
    """(n,) bool: whether rows of the (n, w) unsigned arrays ``a`` and ``b`` differ, among
    the rows ``where`` ((n,) bool; None: all) selects (False elsewhere, not read)."""
    out = np.empty(a.shape[0], dtype=bool)
    _rows_differ(a, b, np.ones(a.shape[0], dtype=bool) if where is None else where, out)
    return out
