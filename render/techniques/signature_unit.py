"""Signature Unit of Rendering Elimination (Frame Coherence §4.1.3-4.2.2, Algorithms 1-3).

A vectorized functional model of the hardware that signs each tile's inputs while binning, plus
the work it does (Shift-subunit steps, Signature Buffer accesses, signed sub-blocks) so that the
timing model can charge it.

CRC convention (the thesis's linear form): CRC-32 with polynomial 0x04C11DB7 in the reflected form
0xEDB88320 that zlib uses (bytes enter LSB first), register starting at 0 and no final xor. Call
it the *raw* CRC; ``raw_crc(m) == zlib.crc32(m) ^ zlib.crc32(bytes(len(m)))``. Being linear over
GF(2) with a zero start, it obeys Algorithm 1's concatenation rule::

    raw(A || B) = advance(raw(A), len(B)) ^ raw(B)

where ``advance(c, n)`` runs the CRC register from ``c`` over ``n`` zero bytes (the thesis's
``ComputeCRC(CRC_A << b)``). Leading zero bytes do not change a raw CRC.

Hardware units modelled, each a few byte-indexed 1-KB LUTs (256 x uint32):

- Sign subunit: eight LUTs; LUT ``i`` holds the CRC of byte ``i`` of a 64-bit sub-block followed
  by the remaining ``7 - i`` zero bytes; the sub-block's CRC is the XOR of the eight lookups.
- Shift subunit: four LUTs; carries a 32-bit CRC through 64 zero bits (the message "CRC followed by
  64 zero bits"), i.e. ``advance(c, 8 bytes)``.  In the reflected form this equals signing the
  sub-block whose low four bytes are ``c``, so the four Shift LUTs equal Sign LUTs 0-3.
- Compute CRC unit (Algorithm 2): ``CRC_out = Sign(A_i) ^ Shift(CRC_out)`` per sub-block.
- Accumulate CRC unit (Algorithm 3): applies Shift ``shift_amount`` times. Modelled with
  precomputed GF(2) 32x32 matrices "advance by 2^j sub-blocks" (repeated squaring), so the cost of
  the model is O(log max_shift) vectorized steps; the hardware's cost (one Shift step per
  sub-block) is what the counters report.

Sub-blocks are uint64 values whose byte ``i`` (bits 8i..8i+7) is message byte ``i`` (a
little-endian view of the bytes). Byte messages whose length is not a multiple of 8 are padded
with zero bytes at the END up to a multiple of 8 before signing (the hardware signs whole
sub-blocks), so the CRC of such a message is the raw CRC of the padded message.

An XOR-based signature (the ablation of thesis §4.3) is available through
``TileSignatures(kind="xor")``; see ``xor_sign_bytes`` for its definition.
"""

from __future__ import annotations

import numpy as np

from tilesim.backend import array_module
from tilesim.backend import xp as active_xp
from tilesim.jit import jit, usable

CRC32_POLY_REFLECTED = 0xEDB88320
SUBBLOCK_BYTES = 8  # 64-bit sub-blocks (thesis §4.2.2: eight 1-KB LUTs)
SIGNATURE_KINDS = ("crc32", "xor")

_U32 = np.uint32
_BYTE_MASK = np.uint32(0xFF)


# --------------------------------------------------------------------------------------------
# Bitwise reference (used only to build the tables at import; tests re-check the tables)
# --------------------------------------------------------------------------------------------


def advance_bitwise(crc: np.ndarray, zero_bytes: int) -> np.ndarray:
    """Run the reflected CRC register from ``crc`` over ``zero_bytes`` zero bytes, bit by bit.

    crc: any-shape uint32 array. Returns a uint32 array of the same shape. Slow reference
    (8 vectorized steps per byte); the LUT units below are the fast path.
    """
    state = np.asarray(crc, dtype=_U32).copy()
    poly = _U32(CRC32_POLY_REFLECTED)
    for _ in range(8 * zero_bytes):
        # Reflected shift register: drop the LSB and fold the polynomial in when it was 1.
        low_bit = state & _U32(1)
        state = (state >> _U32(1)) ^ (poly * low_bit)
    return state


# --------------------------------------------------------------------------------------------
# LUTs (module constants, built once)
# --------------------------------------------------------------------------------------------

_ALL_BYTES = np.arange(256, dtype=_U32)

# SIGN_LUTS[i, b] = raw CRC of (byte b, then 7 - i zero bytes): feeding b into a zero register
# leaves b in it, so this is the register b advanced over 8 - i bytes.
SIGN_LUTS = np.stack([advance_bitwise(_ALL_BYTES, SUBBLOCK_BYTES - i) for i in range(8)])

# SHIFT_LUTS[k, b] = register holding (b << 8k) carried through 64 zero bits.
SHIFT_LUTS = np.stack(
    [advance_bitwise(_ALL_BYTES << _U32(8 * k), SUBBLOCK_BYTES) for k in range(4)]
)

for _luts in (SIGN_LUTS, SHIFT_LUTS):
    _luts.setflags(write=False)


def _on(xp, table: np.ndarray):
    """A module LUT on backend ``xp``: copied to a device once, then reused."""
    if array_module(table) is xp:
        return table
    key = (id(table), xp.__name__)
    if key not in _DEVICE_TABLES:
        _DEVICE_TABLES[key] = xp.asarray(table)
    return _DEVICE_TABLES[key]


_DEVICE_TABLES: dict = {}


def _xor_rows(words):
    """XOR of each row of (n, k) uint32 words -> (n,): NumPy's reduction, or on CuPy, which
    has no ``bitwise_xor.reduce``, a loop over the short axis."""
    xp = array_module(words)
    if xp is np:
        return np.bitwise_xor.reduce(words, axis=1, dtype=_U32, initial=_U32(0))
    out = xp.zeros(words.shape[0], dtype=_U32)
    for k in range(words.shape[1]):
        out ^= words[:, k]
    return out


def sign_subblocks(subblocks: np.ndarray) -> np.ndarray:
    """Sign subunit: raw CRC of each 64-bit sub-block. Any-shape uint64 -> same-shape uint32."""
    xp = array_module(subblocks)
    subblocks = xp.asarray(subblocks, dtype=xp.uint64)
    crc = xp.zeros(subblocks.shape, dtype=_U32)
    for byte_index in range(8):
        byte = ((subblocks >> xp.uint64(8 * byte_index)) & xp.uint64(0xFF)).astype(xp.intp)
        crc ^= _on(xp, SIGN_LUTS)[byte_index][byte]
    return crc


def _apply_byte_tables(tables: np.ndarray, crc: np.ndarray) -> np.ndarray:
    """Apply a GF(2)-linear map given as four byte LUTs (4, 256) to a uint32 array."""
    xp = array_module(crc)
    tables = _on(xp, tables)
    out = tables[0][(crc & _BYTE_MASK).astype(xp.intp)]
    for k in range(1, 4):
        out = out ^ tables[k][((crc >> _U32(8 * k)) & _BYTE_MASK).astype(xp.intp)]
    return out


def shift_subblock(crc: np.ndarray) -> np.ndarray:
    """Shift subunit: advance each CRC over one 64-bit zero sub-block. uint32 -> same shape."""
    xp = array_module(crc)
    return _apply_byte_tables(SHIFT_LUTS, xp.asarray(crc, dtype=_U32))


# --------------------------------------------------------------------------------------------
# GF(2) matrix ladders for advancing by many zero sub-blocks / bytes
# --------------------------------------------------------------------------------------------

_UNIT_VECTORS = _U32(1) << np.arange(32, dtype=_U32)
# _BYTE_BITS[b, t] = bit t of byte value b.
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(bool)


def _columns_to_byte_tables(columns: np.ndarray) -> np.ndarray:
    """Matrix as 32 image columns (M e_i) -> four byte LUTs (4, 256): table k, byte b = M(b<<8k)."""
    per_byte_columns = columns.reshape(4, 1, 8)
    return np.bitwise_xor.reduce(np.where(_BYTE_BITS[None], per_byte_columns, _U32(0)), axis=-1)


def _power_ladder(step_columns: np.ndarray, rungs: int) -> np.ndarray:
    """Byte tables of step^(2^j) for j < rungs, by repeated squaring -> (rungs, 4, 256) uint32."""
    ladder = np.empty((rungs, 4, 256), dtype=_U32)
    columns = step_columns
    for j in range(rungs):
        ladder[j] = _columns_to_byte_tables(columns)
        # Squaring: the columns of M @ M are M applied to M's columns.
        columns = _apply_byte_tables(ladder[j], columns)
    ladder.setflags(write=False)
    return ladder


# Non-negative int64 shift amounts have at most 63 bits.
_MAX_SHIFT_BITS = 63
# Rung j advances by 2^j zero sub-blocks; rung 0 is the Shift subunit itself.
SUBBLOCK_ADVANCE_LADDER = _power_ladder(shift_subblock(_UNIT_VECTORS), _MAX_SHIFT_BITS)
# Rungs advancing by 1, 2 and 4 zero bytes, for byte lengths that are not whole sub-blocks.
_BYTE_ADVANCE_LADDER = _power_ladder(advance_bitwise(_UNIT_VECTORS, 1), 3)


def _advance_by_ladder(crc: np.ndarray, amount: np.ndarray, ladder: np.ndarray) -> np.ndarray:
    xp = array_module(crc)
    crc, amount = xp.broadcast_arrays(xp.asarray(crc, dtype=_U32), xp.asarray(amount))
    crc = crc.copy()
    ladder = _on(xp, ladder)
    if amount.size == 0:
        return crc
    if amount.min() < 0:
        raise ValueError("advance amounts must be non-negative")
    for j in range(int(amount.max()).bit_length()):
        take = ((amount >> j) & 1).astype(bool)
        crc[take] = _apply_byte_tables(ladder[j], crc[take])
    return crc


def accumulate(previous_crc: np.ndarray, shift_amount: np.ndarray) -> np.ndarray:
    """Accumulate CRC unit (Algorithm 3): advance CRCs over ``shift_amount`` zero sub-blocks.

    previous_crc: uint32 array; shift_amount: int array (sub-blocks, >= 0); broadcast together.
    Equals applying ``shift_subblock`` ``shift_amount`` times (the hardware's iterations), computed
    in O(log max(shift_amount)) vectorized steps. Returns uint32 of the broadcast shape.
    """
    xp = array_module(previous_crc)
    return _advance_by_ladder(
        previous_crc, xp.asarray(shift_amount, dtype=xp.int64), SUBBLOCK_ADVANCE_LADDER
    )


def advance_bytes(crc: np.ndarray, zero_bytes: np.ndarray) -> np.ndarray:
    """Advance CRCs over ``zero_bytes`` zero bytes (any count, not only whole sub-blocks)."""
    xp = array_module(zero_bytes)
    zero_bytes = xp.asarray(zero_bytes, dtype=xp.int64)
    whole = accumulate(crc, zero_bytes // SUBBLOCK_BYTES)
    return _advance_by_ladder(whole, zero_bytes % SUBBLOCK_BYTES, _BYTE_ADVANCE_LADDER)


def combine(crc_a: np.ndarray, crc_b: np.ndarray, length_b_bytes: np.ndarray) -> np.ndarray:
    """Algorithm 1 step: raw CRC of A || B from raw(A), raw(B) and len(B) in bytes (broadcast)."""
    xp = array_module(crc_a)
    return advance_bytes(crc_a, length_b_bytes) ^ xp.asarray(crc_b, dtype=_U32)


# --------------------------------------------------------------------------------------------
# Compute CRC unit and byte helpers
# --------------------------------------------------------------------------------------------


def bytes_to_subblocks(data: np.ndarray) -> np.ndarray:
    """Pack messages into 64-bit sub-blocks: (n, B) uint8 -> (n, ceil(B / 8)) uint64.

    A B that is not a multiple of 8 is zero-padded at the END of every message to the next
    multiple of 8. Sub-block byte i is message byte i (little-endian view).
    """
    xp = array_module(data)
    data = xp.asarray(data)
    if data.ndim != 2 or data.dtype != xp.uint8:
        raise ValueError(f"expected an (n, bytes) uint8 array, got {data.dtype} {data.shape}")
    padded_bytes = -(-data.shape[1] // SUBBLOCK_BYTES) * SUBBLOCK_BYTES
    padded = xp.zeros((data.shape[0], padded_bytes), dtype=xp.uint8)
    padded[:, : data.shape[1]] = data
    return padded.view("<u8").astype(xp.uint64)


def subblock_counts(byte_lengths: np.ndarray) -> np.ndarray:
    """Sub-blocks the Compute unit signs for messages of these byte lengths: ceil(len / 8)."""
    xp = array_module(byte_lengths)
    return -(-xp.asarray(byte_lengths, dtype=xp.int64) // SUBBLOCK_BYTES)


def compute_crc(subblocks: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
    """Compute CRC unit (Algorithm 2) for many messages at once.

    subblocks: (n, k) uint64, message j in its first ``lengths[j]`` sub-blocks (the rest is
    padding and ignored); lengths: (n,) int sub-block counts in [0, k], default k.
    Returns (n,) uint32 raw CRCs, each ``CRC_out = Sign(A_i) ^ Shift(CRC_out)`` over its
    sub-blocks.
    """
    xp = array_module(subblocks)
    subblocks = xp.asarray(subblocks, dtype=xp.uint64)
    if subblocks.ndim != 2:
        raise ValueError(f"expected (n, k) sub-blocks, got shape {subblocks.shape}")
    count, width = subblocks.shape
    lengths = xp.full(count, width, xp.int64) if lengths is None else xp.asarray(lengths)
    if lengths.shape != (count,) or (lengths.size and (lengths.min() < 0 or lengths.max() > width)):
        raise ValueError(f"lengths must be ({count},) sub-block counts in [0, {width}]")
    if usable(subblocks, lengths):
        # The same unit, message by message in a compiled loop.
        return compute_crc_compiled(subblocks, lengths, SIGN_LUTS, SHIFT_LUTS)
    crc_out = xp.zeros(count, dtype=_U32)
    signs = sign_subblocks(subblocks)  # the Sign subunit works on every sub-block independently
    for index in range(width):  # the hardware's one-sub-block-per-cycle loop
        active = index < lengths
        crc_out = xp.where(active, signs[:, index] ^ shift_subblock(crc_out), crc_out)
    return crc_out


def raw_crc(message: bytes | bytearray | np.ndarray) -> int:
    """Raw CRC-32 (zero start, no final xor) of one byte message of any length."""
    data = np.frombuffer(bytes(message), dtype=np.uint8)
    # Leading zeros leave a zero-start CRC unchanged, so pad at the FRONT to whole sub-blocks.
    front_pad = (-data.size) % SUBBLOCK_BYTES
    subblocks = bytes_to_subblocks(np.concatenate([np.zeros(front_pad, np.uint8), data])[None])[0]
    # Algorithm 1 unrolled by linearity: each sub-block's CRC advanced past the ones after it.
    blocks_after = np.arange(subblocks.size - 1, -1, -1, dtype=np.int64)
    contributions = accumulate(sign_subblocks(subblocks), blocks_after)
    return int(np.bitwise_xor.reduce(contributions, initial=_U32(0)))


def _zero_past_lengths(data: np.ndarray, byte_lengths: np.ndarray | None) -> np.ndarray:
    xp = array_module(data)
    data = xp.asarray(data, dtype=xp.uint8)
    if byte_lengths is None:
        return data
    byte_lengths = xp.asarray(byte_lengths, dtype=xp.int64)
    if byte_lengths.shape != data.shape[:1] or (
        byte_lengths.size and (byte_lengths.min() < 0 or byte_lengths.max() > data.shape[1])
    ):
        raise ValueError(f"byte_lengths must be ({data.shape[0]},) in [0, {data.shape[1]}]")
    # Bytes past a message's end must not leak into its last (zero-padded) sub-block.
    return xp.where(xp.arange(data.shape[1]) < byte_lengths[:, None], data, xp.uint8(0))


def crc32_sign_bytes(
    data: np.ndarray, byte_lengths: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """CRC32 signatures of byte messages: (n, B) uint8 -> (crc (n,) uint32, sub-blocks (n,) int64).

    Message j is ``data[j, :byte_lengths[j]]`` (default all B bytes), zero-padded at the end to a
    multiple of 8 bytes; the crc is the raw CRC of that padded message.
    """
    xp = array_module(data)
    data = _zero_past_lengths(data, byte_lengths)
    lengths = subblock_counts(data.shape[1] if byte_lengths is None else byte_lengths)
    lengths = xp.broadcast_to(lengths, data.shape[:1]).copy()
    return compute_crc(bytes_to_subblocks(data), lengths), lengths


def xor_sign_bytes(
    data: np.ndarray, byte_lengths: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """XOR signatures of byte messages (the ablation): same shapes as ``crc32_sign_bytes``.

    The signature is the XOR of the message's little-endian 32-bit words after zero-padding it
    to a multiple of 8 bytes (padding adds zero words). Sub-block counts are reported as for
    CRC32 (the unit still consumes the message 64 bits per cycle). Order-insensitive: swapping
    words, or blocks folded into a tile, gives the same value, which is why it collides.
    """
    xp = array_module(data)
    data = _zero_past_lengths(data, byte_lengths)
    lengths = subblock_counts(data.shape[1] if byte_lengths is None else byte_lengths)
    lengths = xp.broadcast_to(lengths, data.shape[:1]).copy()
    words = bytes_to_subblocks(data).view("<u4")
    return _xor_rows(words), lengths


# --------------------------------------------------------------------------------------------
# Per-tile incremental signatures (Signature Buffer + OT-queue fold)
# --------------------------------------------------------------------------------------------


def fold_crc32(
    signatures: np.ndarray,
    tile_ids: np.ndarray,
    block_crc: np.ndarray,
    block_subblocks: np.ndarray,
) -> np.ndarray:
    """Fold blocks into tile CRCs as the SU does, entry by entry in array order.

    signatures: (tiles,) uint32; tile_ids, block_crc, block_subblocks: (m,). Per entry
    ``sig[t] = accumulate(sig[t], len) ^ crc``. By linearity the final value is
    ``advance(sig_old[t], total_len[t]) ^ XOR_e advance(crc_e, len of t's entries after e)``.
    Returns the new (tiles,) uint32 signatures.
    """
    xp = array_module(tile_ids)
    if usable(signatures, tile_ids, block_crc, block_subblocks):
        return fold_crc32_compiled(signatures, tile_ids, block_crc, block_subblocks,
                                   SUBBLOCK_ADVANCE_LADDER)
    tiles = signatures.shape[0]
    order = xp.argsort(tile_ids, kind="stable")  # keeps submission order within a tile
    sorted_tiles, sorted_lengths = tile_ids[order], block_subblocks[order]
    total_per_tile = xp.zeros(tiles, dtype=xp.int64)
    xp.add.at(total_per_tile, tile_ids, block_subblocks)
    # Inclusive prefix of lengths within each tile's run of the sorted entries.
    running = xp.cumsum(sorted_lengths)
    run_start = xp.concatenate([xp.ones(1, dtype=bool), sorted_tiles[1:] != sorted_tiles[:-1]])
    # The running total before each entry's run (a running maximum, from ops CuPy has).
    before_run = (running - sorted_lengths)[xp.nonzero(run_start)[0]][xp.cumsum(run_start) - 1]
    suffix_after = xp.empty_like(block_subblocks)
    suffix_after[order] = total_per_tile[sorted_tiles] - (running - before_run)

    folded = accumulate(signatures, total_per_tile)
    xp.bitwise_xor.at(folded, tile_ids, accumulate(block_crc, suffix_after))
    return folded


class TileSignatures:
    """Signature Buffer for the current and previous frame, with the SU's work counters.

    current, previous: (tiles,) uint32 signatures; valid_previous: False until a frame ended
    (and after ``invalidate_previous``, e.g. on a shader or texture change), when no tile may be
    skipped. kind: "crc32" (Rendering Elimination) or "xor" (``current[t] ^= crc`` per block,
    no Accumulate unit).

    Counters (cumulative until ``reset_counters``):
      shifts (tiles,) int64: Shift-subunit steps of the Accumulate unit = sum of shift amounts
        (Algorithm 3 iterates once per sub-block; 0 for "xor").
      accesses (tiles,) int64: Signature Buffer reads + writes, 2 per folded entry.
      signed_subblocks int: sub-blocks signed by the Compute unit (one per cycle).
    """

    def __init__(self, tiles: int, kind: str = "crc32") -> None:
        if kind not in SIGNATURE_KINDS:
            raise ValueError(f"kind must be one of {SIGNATURE_KINDS}, got {kind!r}")
        if tiles < 0:
            raise ValueError(f"tiles must be >= 0, got {tiles}")
        self.tiles = int(tiles)
        self.kind = kind
        self.xp = xp = active_xp()   # the Signature Buffer lives beside the pipeline's arrays
        self.current = xp.zeros(self.tiles, dtype=_U32)
        self.previous = xp.zeros(self.tiles, dtype=_U32)
        self.valid_previous = False
        self.reset_counters()

    def reset_counters(self) -> None:
        xp = self.xp
        self.shifts = xp.zeros(self.tiles, dtype=xp.int64)
        self.accesses = xp.zeros(self.tiles, dtype=xp.int64)
        self.signed_subblocks = 0

    def sign(self, subblocks: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
        """Sign packed messages ((n, k) uint64, (n,) sub-block counts) -> (n,) uint32."""
        xp = array_module(subblocks)
        subblocks = xp.asarray(subblocks, dtype=xp.uint64)
        if lengths is None:
            lengths = xp.full(subblocks.shape[0], subblocks.shape[1], xp.int64)
        lengths = xp.asarray(lengths, dtype=xp.int64)
        if self.kind == "crc32":
            signature = compute_crc(subblocks, lengths)
        else:
            live = xp.arange(subblocks.shape[1]) < lengths[:, None]
            words = xp.where(live, subblocks, xp.uint64(0)).view("<u4")
            signature = _xor_rows(words)
        self.signed_subblocks += int(lengths.sum())
        return signature

    def sign_bytes(
        self, data: np.ndarray, byte_lengths: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Sign (n, B) uint8 messages (see ``crc32_sign_bytes`` / ``xor_sign_bytes``).

        Returns (signature (n,) uint32, sub-blocks (n,) int64) and counts the sub-blocks.
        """
        sign = crc32_sign_bytes if self.kind == "crc32" else xor_sign_bytes
        signature, lengths = sign(data, byte_lengths)
        self.signed_subblocks += int(lengths.sum())
        return signature, lengths

    def fold(
        self, tile_ids: np.ndarray, block_crc: np.ndarray, block_subblocks: np.ndarray
    ) -> None:
        """Fold blocks into the current signatures, entries in submission (array) order.

        tile_ids (m,) int64 in [0, tiles); block_crc (m,) uint32; block_subblocks (m,) int64
        >= 0. CRC32: ``sig = accumulate(sig, len) ^ crc`` per entry; XOR: ``sig ^= crc``.
        """
        xp = self.xp
        tile_ids = xp.asarray(tile_ids, dtype=xp.int64).ravel()
        block_crc = xp.asarray(block_crc, dtype=_U32).ravel()
        block_subblocks = xp.asarray(block_subblocks, dtype=xp.int64).ravel()
        if not (tile_ids.shape == block_crc.shape == block_subblocks.shape):
            raise ValueError(
                "tile_ids, block_crc and block_subblocks must have the same length, got "
                f"{tile_ids.size}, {block_crc.size}, {block_subblocks.size}"
            )
        if tile_ids.size == 0:
            return
        out_of_range = (tile_ids < 0) | (tile_ids >= self.tiles)
        if out_of_range.any():
            bad = int(tile_ids[out_of_range][0])
            raise ValueError(f"tile ids must be in [0, {self.tiles}), got {bad}")
        if block_subblocks.min() < 0:
            raise ValueError("block_subblocks must be >= 0")
        if self.kind == "crc32":
            self.current = fold_crc32(self.current, tile_ids, block_crc, block_subblocks)
            xp.add.at(self.shifts, tile_ids, block_subblocks)
        else:
            xp.bitwise_xor.at(self.current, tile_ids, block_crc)
        xp.add.at(self.accesses, tile_ids, 2)  # read the old signature, write the new one

    def end_frame(self) -> None:
        """Current frame's signatures become the previous frame's; current restarts at 0."""
        xp = self.xp
        self.previous = self.current
        self.current = xp.zeros(self.tiles, dtype=_U32)
        self.valid_previous = True

    def invalidate_previous(self) -> None:
        """Forbid skipping against the previous frame (shader/texture change, forced refresh)."""
        self.valid_previous = False

    def equal_to_previous(self) -> np.ndarray:
        """(tiles,) bool: tile signature equals last frame's (all False without a valid one)."""
        xp = self.xp
        if not self.valid_previous:
            return xp.zeros(self.tiles, dtype=bool)
        return self.current == self.previous


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============
# The Signature Unit's steps for one message or entry, inlined into the kernels below and
# into Rendering Elimination's (``rendering_elimination._binned``).

@jit(inline=True)
def mapped(tables, rung, crc):  # pragma: no cover - compiled
    """A GF(2)-linear map of CRCs given as four byte LUTs, ``tables[rung]`` (4, 256), applied
    to one CRC (``_apply_byte_tables``)."""
    return (tables[rung, 0, np.int64(crc & np.uint32(0xFF))]
            ^ tables[rung, 1, np.int64((crc >> np.uint32(8)) & np.uint32(0xFF))]
            ^ tables[rung, 2, np.int64((crc >> np.uint32(16)) & np.uint32(0xFF))]
            ^ tables[rung, 3, np.int64((crc >> np.uint32(24)) & np.uint32(0xFF))])


@jit(inline=True)
def crc_of(subblocks, count, sign_luts, shift):  # pragma: no cover - compiled
    """Compute CRC unit (Algorithm 2) over the first ``count`` of (k,) uint64 sub-blocks:
    Sign of each sub-block XOR Shift of the CRC so far. ``shift[0]``: the Shift subunit's
    tables (``SHIFT_LUTS``, rung 0 of ``SUBBLOCK_ADVANCE_LADDER``)."""
    crc = np.uint32(0)
    for i in range(count):
        block = subblocks[i]
        sign = np.uint32(0)
        for b in range(8):
            sign ^= sign_luts[b, np.int64((block >> np.uint64(8 * b)) & np.uint64(0xFF))]
        crc = np.uint32(sign ^ mapped(shift, 0, crc))
    return crc


@jit(inline=True)
def xor_of(subblocks, count):  # pragma: no cover - compiled
    """``xor_sign_bytes`` of the first ``count`` of (k,) uint64 sub-blocks: the XOR of their
    little-endian 32-bit words."""
    signature = np.uint64(0)
    for i in range(count):
        signature ^= subblocks[i]
    return np.uint32((signature ^ (signature >> np.uint64(32))) & np.uint64(0xFFFFFFFF))


@jit(inline=True)
def advanced(crc, amount, ladder):  # pragma: no cover - compiled
    """Accumulate CRC unit (Algorithm 3): ``crc`` advanced over ``amount`` zero sub-blocks
    (``ladder``: the byte tables advancing by 2**j zero sub-blocks)."""
    rung = 0
    while amount > 0:
        if amount & 1:
            crc = np.uint32(mapped(ladder, rung, crc))
        amount >>= 1
        rung += 1
    return crc


@jit(inline=True)
def folded(signature, entry, subblocks, crc32, ladder):  # pragma: no cover - compiled
    """A tile's signature with one entry folded in (``TileSignatures.fold``): CRC32
    (``crc32``) advances it over the entry's sub-blocks (Algorithm 3, one Shift step each)
    before XORing the entry's signature in; XOR only XORs. Scalars in and out: the same
    helper writing the Signature Buffer arrays passed to it, inlined, made Rendering
    Elimination's kernel six times slower on a draw of 4500 entries."""
    if crc32:
        return np.uint32(advanced(signature, subblocks, ladder) ^ entry)
    return np.uint32(signature ^ entry)


@jit
def _compute_crc(subblocks, lengths, sign_luts, shift, out):  # pragma: no cover
    for j in range(subblocks.shape[0]):
        out[j] = crc_of(subblocks[j], lengths[j], sign_luts, shift)


def compute_crc_compiled(subblocks, lengths, sign_luts, shift_luts) -> np.ndarray:
    """``signature_unit.compute_crc``: (n,) uint32 raw CRCs of (n, k) uint64 sub-blocks, each
    message over its first ``lengths[j]`` sub-blocks (Sign of the sub-block XOR Shift of the
    CRC so far), with the unit's byte tables."""
    out = np.empty(subblocks.shape[0], dtype=np.uint32)
    _compute_crc(subblocks, lengths.astype(np.int64), sign_luts, shift_luts[None], out)
    return out


@jit
def _fold_crc32(signatures, tile_ids, block_crc, block_subblocks, ladder):  # pragma: no cover
    for i in range(tile_ids.shape[0]):
        t = tile_ids[i]
        signatures[t] = advanced(signatures[t], block_subblocks[i], ladder) ^ block_crc[i]


def fold_crc32_compiled(signatures, tile_ids, block_crc, block_subblocks, ladder) -> np.ndarray:
    """``signature_unit.fold_crc32`` entry by entry, as the Signature Unit folds them: each
    tile's CRC advanced over the entry's sub-blocks (``ladder``: the byte tables advancing by
    2**j zero sub-blocks) then XORed with the entry's CRC. Returns new (tiles,) uint32
    signatures."""
    out = signatures.astype(np.uint32, copy=True)
    _fold_crc32(out, tile_ids.astype(np.int64, copy=False),
                block_crc.astype(np.uint32, copy=False),
                block_subblocks.astype(np.int64, copy=False), ladder)
    return out
