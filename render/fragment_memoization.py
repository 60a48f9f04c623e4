"""Fragment Memoization with Parallel Frame Rendering (Arnau et al.; seed 001 §1.3.1, §4.3.1).

The prior art Rendering Elimination is compared with (DESIGN §7). A fragment's color is a
deterministic function of its inputs (the interpolated inputs the fragment program reads,
gl_FragCoord / gl_FrontFacing only when the program declares them) plus the draw's constants,
the program and the bound textures. A small LUT keyed by a 32-bit hash of those inputs
remembers recent colors; a fragment whose key hits reuses the stored color and skips the
fragment program. Redundancy is mostly across frames, so two frames render in parallel
(Parallel Frame Rendering) to shorten the reuse distance: both render the same tile at the
same time, and the second frame of each pair finds the first one's colors of that tile.

Parameters (seed Table 4.1): 2 frames in parallel, 32-bit signature, 4-way LUT, 2048 sets
(the original 512 entries grown to 2048 sets "to better compare to the chip area of RE").

Pieces:

- :func:`fragment_keys`: the 32-bit key of every lane. The hash is CRC-32 exactly as
  ``zlib.crc32`` (reflected polynomial 0xEDB88320, register preset and final xor 0xFFFFFFFF),
  computed vectorized over lanes, of the lane's input bits, continuing from the draw's
  ``context_crc``: ``key = zlib.crc32(lane_message, context_crc)``. By CRC linearity that is
  the input CRC XOR-mixed with the context signature advanced over the message length, and
  equals the CRC of (context bytes || lane message) when ``context_crc`` is the CRC of the
  context bytes (:func:`context_signature`). Lane message: its inputs as float32 bit
  patterns, little-endian, input-major then x, y, z, w. With ``quad_inputs`` (the program
  takes derivatives or samples with implicit LOD, so its color depends on the whole 2x2 quad)
  the message is the inputs of the 4 lanes of its quad in lane order, then the lane's
  position in the quad (0-3) as a 32-bit word.
- :class:`MemoLUT`: the set-associative LUT, exact LRU (render.set_associative): set = the
  low log2(sets) bits of the key, tag = the rest; each entry stores a 4-byte RGBA8 color. A
  miss inserts its fragment's color; a hit returns the stored color, which differs from the
  true one on a hash collision (counted, and kept in the memoized image).
- :class:`FragmentMemoizer`: frames in pairs (2k, 2k+1); the LUT sees, tile by tile in
  traversal order, frame 2k's fragments of the tile then frame 2k+1's (each in submission
  order). The LUT carries over from pair to pair.

Counters the pipeline stores (DESIGN §5): per tile ``memo_lookups`` (shaded fragments that
looked the LUT up), ``memo_hits`` (shader executions saved), ``memo_table_writes`` (misses,
each inserting an entry); per frame ``memo_collisions`` (hits whose stored color differs from
the fragment's true color).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from tilesim.backend import array_module, to_host

from .set_associative import SetAssociativeLRU

__all__ = ["COUNTERS", "KEY_DTYPE", "FragmentMemoizer", "MemoFrame", "MemoLUT", "check_keys",
           "context_signature", "crc32_words", "fragment_keys", "pack_rgba8", "unpack_rgba8"]

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


def _crc_tables(poly: int = CRC32_POLY) -> tuple[np.ndarray, np.ndarray]:
    """Slicing-by-4 tables folded into two 16-bit-indexed ones (256 KB each): one word costs
    two gathers, ``c = lo[c & 0xFFFF] ^ hi[c >> 16]`` after ``c ^= word``."""
    t0 = np.arange(256, dtype=_U32)
    for _ in range(8):
        t0 = (t0 >> _U32(1)) ^ (_U32(poly) * (t0 & _U32(1)))
    t = [t0]
    for _ in range(3):
        prev = t[-1]
        t.append((prev >> _U32(8)) ^ t0[prev & _U32(0xFF)])
    low_byte, high_byte = np.arange(1 << 16) & 0xFF, np.arange(1 << 16) >> 8
    lo = t[3][low_byte] ^ t[2][high_byte]      # bytes 0 and 1 of the register
    hi = t[1][low_byte] ^ t[0][high_byte]      # bytes 2 and 3
    return lo, hi


_TABLES = {("numpy", CRC32_POLY): _crc_tables(CRC32_POLY),
           ("numpy", CRC32C_POLY): _crc_tables(CRC32C_POLY)}


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

    ``bits`` 32 (the seed's signature, 001 Table 4.1) or 64: the CRC-32 in the low half and a
    CRC-32C of the same message in the high half. With 32 bits a LUT tag is 21 bits (2048
    sets), so a fragment whose inputs are new matches a resident entry with probability about
    ways / 2^21 and takes its color: rare, but not lossless; 64-bit keys make it negligible.

    inputs: (n_inputs, 4, n) float32 per lane (the program's IN registers, plus the system
    values it reads, stacked as extra rows); lanes 4q..4q+3 are quad q. context_crc: the
    draw's signature (:func:`context_signature`). quad_inputs: key on the whole quad's
    inputs and the lane's position in it (requires n % 4 == 0). Returns (n,) uint64 for
    either width (32 bits: the CRC-32 zero-extended), the one key dtype the LUT takes.
    """
    if bits not in (32, 64):
        raise ValueError(f"fragment_keys: bits must be 32 or 64, got {bits}")
    low = _keys(inputs, context_crc, quad_inputs, CRC32_POLY).astype(KEY_DTYPE)
    if bits == 32:
        return low
    high = _keys(inputs, context_crc, quad_inputs, CRC32C_POLY).astype(KEY_DTYPE)
    return (high << KEY_DTYPE(32)) | low


def _keys(inputs, context_crc: int, quad_inputs: bool, poly: int):
    xp = array_module(inputs)
    values = xp.ascontiguousarray(xp.asarray(inputs, dtype=np.float32))
    if values.ndim != 3 or values.shape[1] != 4:
        raise ValueError(f"fragment_keys: inputs must be (n_inputs, 4, n), got {values.shape}")
    n = values.shape[2]
    words = values.view(_U32).reshape(-1, n)         # bit patterns: -0.0 != 0.0, NaNs kept
    context = _U32(context_crc & 0xFFFFFFFF)
    if not quad_inputs:
        return crc32_words(words, context, poly)
    if n % 4:
        raise ValueError(f"fragment_keys: quad_inputs needs whole quads, got {n} lanes")
    # The quad's message is shared by its 4 lanes: hash it once per quad, then append the
    # lane's position, so quad keys cost about as much as lane keys.
    quad_words = xp.ascontiguousarray(
        words.reshape(words.shape[0], n // 4, 4).transpose(2, 0, 1).reshape(-1, n // 4))
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


def _like(packed, template):
    """Packed colors in the layout of ``template`` ((n, 4) RGBA8 or (n,))."""
    if template.ndim == 2:
        return unpack_rgba8(packed)
    return packed.astype(template.dtype)


# ------------------------------------------------------------------------------------------
# The LUT


class MemoLUT:
    """``sets`` x ``ways`` entries of (tag, RGBA8 color), exact LRU per set; set index = the low
    log2(sets) bits of the (32- or 64-bit) key, tag = the remaining high bits."""

    def __init__(self, sets: int = 2048, ways: int = 4):
        if sets < 1 or sets & (sets - 1):
            raise ValueError("MemoLUT: sets must be a power of two")
        self.sets, self.ways = sets, ways
        self.index_bits = sets.bit_length() - 1
        self.table = SetAssociativeLRU(sets, ways, payload_dtype=_U32)

    @property
    def entries(self) -> int:
        return self.sets * self.ways

    def reset(self) -> None:
        """Empty the LUT."""
        self.table.reset()

    def lookup_insert(self, keys, colors):
        """Look up fragments (n,) in the given order, inserting each miss.

        keys: (n,) uint64 (:data:`KEY_DTYPE`; TypeError otherwise); colors: each fragment's true color, (n, 4) uint8 or (n,) packed.
        Returns (hit (n,) bool, colors (n, ...) in the layout given: on a hit the stored
        color of the matching entry (on a collision not the true one), else the true color).
        """
        keys = check_keys(keys, "MemoLUT.lookup_insert")
        xp = array_module(keys, colors)
        colors = xp.asarray(colors)
        # The tag is the key without its index bits: below 2^63, so exact as int64.
        tags = (keys >> KEY_DTYPE(self.index_bits)).astype(np.int64)
        sets = (keys & KEY_DTYPE(self.sets - 1)).astype(np.int64)
        hit, stored = self.table.access_with_payload(sets, tags, pack_rgba8(colors))
        return hit, _like(stored, colors)


# ------------------------------------------------------------------------------------------
# Parallel frame rendering


@dataclass
class MemoFrame:
    """What memoization did in one frame. Per tile (tiles,) int64: memo_lookups, memo_hits
    (shader executions saved), memo_table_writes; memo_collisions: hits whose stored color
    differs from the true color. Per fragment (n,): hit, and colors, the memoized colors (the
    stored color on a hit, the true one elsewhere), in the layout of the colors given."""

    frame_index: int
    memo_lookups: np.ndarray
    memo_hits: np.ndarray
    memo_table_writes: np.ndarray
    memo_collisions: int
    hit: np.ndarray
    colors: np.ndarray

    def counters(self) -> dict:
        """The counters under their pipeline names."""
        return {"memo_lookups": self.memo_lookups, "memo_hits": self.memo_hits,
                "memo_table_writes": self.memo_table_writes,
                "memo_collisions": self.memo_collisions}


@dataclass
class _FrameLog:
    frame_index: int
    tile: object
    keys: object
    colors: object
    shaded: object


@dataclass
class FragmentMemoizer:
    """Fragment memoization over a sequence of frames rendered ``frames_in_parallel`` at a
    time (2: PFR as in the seed; 1: frames one after the other).

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
        self._tile_rank = np.empty(self.tiles, dtype=np.int64)
        self._tile_rank[order] = np.arange(self.tiles)
        self._ranks = {np.__name__: self._tile_rank}

    def reset(self) -> None:
        """Empty the LUT and drop buffered frames."""
        self.lut.reset()
        self._pending = []

    def add_frame(self, frame_index: int, tile, keys, colors, shaded_mask=None) -> list[MemoFrame]:
        """Buffer one frame's fragment log, in submission order: tile (n,) tile of each
        fragment, keys (n,) uint64 (:func:`fragment_keys`; TypeError for another dtype), colors (n, 4) uint8 or (n,) packed
        (the true colors), shaded_mask (n,) bool: fragments that would run the fragment program
        (only those look the LUT up; None: all). Returns the results of the frames of every
        group this completes (frames 2k and 2k+1 together with 2 in parallel)."""
        group = frame_index // self.frames_in_parallel
        done = []
        if self._pending and self._pending[0].frame_index // self.frames_in_parallel != group:
            done = self.finish()       # the previous group is incomplete: run it as it is
        if any(log.frame_index == frame_index for log in self._pending):
            raise ValueError(f"FragmentMemoizer: frame {frame_index} added twice")
        keys = check_keys(keys, f"FragmentMemoizer.add_frame (frame {frame_index})")
        xp = array_module(tile, keys, colors, shaded_mask)
        n = keys.shape[0]
        shaded = (xp.ones(n, dtype=bool) if shaded_mask is None
                  else xp.asarray(shaded_mask, dtype=bool))
        self._pending.append(_FrameLog(frame_index, xp.asarray(tile).astype(np.int64),
                                       xp.asarray(keys), xp.asarray(colors), shaded))
        if len(self._pending) == self.frames_in_parallel:
            done += self.finish()
        return done

    def finish(self) -> list[MemoFrame]:
        """Run the buffered frames (a group, or an incomplete trailing one)."""
        logs = sorted(self._pending, key=lambda log: log.frame_index)
        self._pending = []
        if not logs:
            return []
        xp = array_module(*(a for log in logs for a in (log.tile, log.keys, log.colors)))
        if xp.__name__ not in self._ranks:
            self._ranks[xp.__name__] = xp.asarray(self._tile_rank)
        rank = self._ranks[xp.__name__]
        lanes = [xp.flatnonzero(log.shaded) for log in logs]
        # Frames concatenated in frame order, fragments in submission order; a stable sort by
        # the tile's traversal rank then gives, tile by tile, frame 2k's then frame 2k+1's.
        tile = xp.concatenate([log.tile[idx] for log, idx in zip(logs, lanes, strict=True)])
        keys = xp.concatenate([log.keys[idx] for log, idx in zip(logs, lanes, strict=True)])
        true = xp.concatenate([pack_rgba8(log.colors)[idx]
                               for log, idx in zip(logs, lanes, strict=True)])
        order = xp.argsort(xp.take(rank, tile), kind="stable")
        hit_sorted, color_sorted = self.lut.lookup_insert(xp.take(keys, order),
                                                          xp.take(true, order))
        hit, stored = xp.empty_like(hit_sorted), xp.empty_like(color_sorted)
        hit[order], stored[order] = hit_sorted, color_sorted
        results, begin = [], 0
        for log, idx in zip(logs, lanes, strict=True):
            end = begin + idx.shape[0]
            f_tile, f_hit = tile[begin:end], hit[begin:end]
            f_stored, f_true = stored[begin:end], true[begin:end]
            lookups = xp.bincount(f_tile, minlength=self.tiles)
            hits = xp.bincount(f_tile[f_hit], minlength=self.tiles)
            frame_hit = xp.zeros(log.shaded.shape[0], dtype=bool)
            frame_hit[idx] = f_hit
            packed = pack_rgba8(log.colors)
            packed[idx] = f_stored
            results.append(MemoFrame(
                frame_index=log.frame_index, memo_lookups=lookups, memo_hits=hits,
                memo_table_writes=lookups - hits,
                memo_collisions=int((f_hit & (f_stored != f_true)).sum()),
                hit=frame_hit, colors=_like(packed, log.colors)))
            begin = end
        return results
