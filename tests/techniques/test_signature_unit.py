"""Signature Unit of Rendering Elimination: CRC identities, LUT units, Algorithms 1-3, tiles."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from tilesim.render.techniques.signature_unit import (
    SHIFT_LUTS,
    SIGN_LUTS,
    TileSignatures,
    accumulate,
    advance_bitwise,
    bytes_to_subblocks,
    combine,
    compute_crc,
    crc32_sign_bytes,
    raw_crc,
    shift_subblock,
    sign_subblocks,
    xor_sign_bytes,
)


def zlib_raw(message: bytes) -> int:
    """Zero-start, no-final-xor CRC-32 from zlib by linearity."""
    return zlib.crc32(message) ^ zlib.crc32(bytes(len(message)))


def random_bytes(rng: np.random.Generator, size: int) -> bytes:
    return rng.integers(0, 256, size, dtype=np.uint8).tobytes()


def test_raw_crc_matches_zlib():
    rng = np.random.default_rng(1)
    for size in [0, 1, 3, 7, 8, 9, 16, 31, 64, 100, 1000]:
        message = random_bytes(rng, size)
        assert raw_crc(message) == zlib_raw(message), size


def test_combine_is_concatenation():
    rng = np.random.default_rng(2)
    for size_a, size_b in [(0, 5), (5, 0), (3, 13), (8, 8), (17, 100), (1, 4099)]:
        a, b = random_bytes(rng, size_a), random_bytes(rng, size_b)
        assert combine(raw_crc(a), raw_crc(b), len(b)) == raw_crc(a + b)


def test_sign_luts_match_their_definition():
    for lut_index in range(8):
        expected = [zlib_raw(bytes([b]) + bytes(7 - lut_index)) for b in range(256)]
        np.testing.assert_array_equal(SIGN_LUTS[lut_index], expected)


def test_shift_luts_carry_crc_through_64_zero_bits():
    for k in range(4):
        registers = np.arange(256, dtype=np.uint32) << np.uint32(8 * k)
        np.testing.assert_array_equal(SHIFT_LUTS[k], advance_bitwise(registers, 8))
    # Reflected form: the register overlaps the first 32 of the 64 zero bits.
    np.testing.assert_array_equal(SHIFT_LUTS, SIGN_LUTS[:4])


def test_sign_and_shift_units_match_bitwise_reference():
    rng = np.random.default_rng(3)
    subblocks = rng.integers(0, 2**64, 200, dtype=np.uint64)
    expected = [zlib_raw(int(value).to_bytes(8, "little")) for value in subblocks]
    np.testing.assert_array_equal(sign_subblocks(subblocks), expected)
    crcs = rng.integers(0, 2**32, 200, dtype=np.uint32)
    np.testing.assert_array_equal(shift_subblock(crcs), advance_bitwise(crcs, 8))


def test_compute_crc_unit_matches_zlib_with_padding():
    rng = np.random.default_rng(4)
    data = rng.integers(0, 256, (50, 37), dtype=np.uint8)
    byte_lengths = rng.integers(0, 38, 50)
    crc, subblocks = crc32_sign_bytes(data, byte_lengths)
    np.testing.assert_array_equal(subblocks, -(-byte_lengths // 8))
    for row, length, count, value in zip(data, byte_lengths, subblocks, crc, strict=True):
        padded = row[:length].tobytes() + bytes(8 * count - length)
        assert value == zlib_raw(padded)
    assert bytes_to_subblocks(data).shape == (50, 5)


def test_algorithm_1_concatenation_of_blocks():
    rng = np.random.default_rng(5)
    blocks_a = rng.integers(0, 2**64, (20, 3), dtype=np.uint64)
    blocks_b = rng.integers(0, 2**64, (20, 6), dtype=np.uint64)
    crc_a, crc_b = compute_crc(blocks_a), compute_crc(blocks_b)
    joined = compute_crc(np.concatenate([blocks_a, blocks_b], axis=1))
    np.testing.assert_array_equal(accumulate(crc_a, 6) ^ crc_b, joined)
    # Zero-padded tails are ignored: length 3 of a 9-wide row is block a alone.
    padded = np.concatenate([blocks_a, np.zeros((20, 6), np.uint64)], axis=1)
    np.testing.assert_array_equal(compute_crc(padded, np.full(20, 3)), crc_a)


def test_accumulate_equals_stepwise_shift():
    rng = np.random.default_rng(6)
    crcs = rng.integers(0, 2**32, 64, dtype=np.uint32)
    shifts = rng.integers(0, 3000, 64)
    shifts[:3] = [0, 1, 2999]
    stepwise = crcs.copy()
    for step in range(int(shifts.max())):
        stepwise = np.where(step < shifts, shift_subblock(stepwise), stepwise)
    np.testing.assert_array_equal(accumulate(crcs, shifts), stepwise)
    # Huge shifts compose additively.
    big = np.int64(3) << 40
    np.testing.assert_array_equal(
        accumulate(accumulate(crcs, big), shifts), accumulate(crcs, big + shifts)
    )
    assert accumulate(np.uint32(0x1234), 5) == advance_bitwise(np.uint32(0x1234), 40)


def sequential_fold(signatures, tile_ids, block_crc, block_subblocks):
    signatures = [int(s) for s in signatures]
    for tile, crc, length in zip(tile_ids, block_crc, block_subblocks, strict=True):
        signatures[tile] = int(accumulate(np.uint32(signatures[tile]), length)) ^ int(crc)
    return np.array(signatures, dtype=np.uint32)


def test_fold_matches_sequential_reference():
    rng = np.random.default_rng(7)
    tiles = 16
    unit = TileSignatures(tiles)
    expected = np.zeros(tiles, np.uint32)
    for _ in range(3):
        tile_ids = rng.integers(0, tiles - 2, 150)  # last tiles untouched
        block_crc = rng.integers(0, 2**32, 150, dtype=np.uint32)
        block_subblocks = rng.integers(0, 40, 150)
        expected = sequential_fold(expected, tile_ids, block_crc, block_subblocks)
        unit.fold(tile_ids, block_crc, block_subblocks)
        np.testing.assert_array_equal(unit.current, expected)


def test_xor_signature_collides_on_swapped_primitives_crc32_does_not():
    rng = np.random.default_rng(8)
    primitives = rng.integers(0, 256, (2, 48), dtype=np.uint8)
    for kind, expect_collision in [("xor", True), ("crc32", False)]:
        unit = TileSignatures(1, kind=kind)
        signature, subblocks = unit.sign_bytes(primitives)
        unit.fold([0, 0], signature, subblocks)  # A then B
        unit.end_frame()
        unit.fold([0, 0], signature[::-1], subblocks[::-1])  # B then A
        assert unit.equal_to_previous()[0] == expect_collision, kind


def test_xor_sign_definition():
    data = np.arange(12, dtype=np.uint8)[None]
    words = np.frombuffer(data.tobytes() + bytes(4), "<u4")
    signature, subblocks = xor_sign_bytes(data)
    assert signature[0] == np.bitwise_xor.reduce(words) and subblocks[0] == 2
    unit = TileSignatures(1, kind="xor")
    assert unit.sign(bytes_to_subblocks(data), [2])[0] == signature[0]


def test_counters_on_hand_computed_case():
    unit = TileSignatures(3)
    crc, subblocks = unit.sign_bytes(np.ones((2, 20), np.uint8))
    np.testing.assert_array_equal(subblocks, [3, 3])
    assert unit.signed_subblocks == 6
    unit.fold([0, 2, 0], [5, 6, 7], [2, 3, 1])
    np.testing.assert_array_equal(unit.shifts, [3, 0, 3])
    np.testing.assert_array_equal(unit.accesses, [4, 0, 2])
    # Tile 0: accumulate(accumulate(0, 2) ^ 5, 1) ^ 7 = Shift(5) ^ 7.
    assert unit.current[0] == int(shift_subblock(np.uint32(5))) ^ 7
    assert unit.current[2] == 6 and unit.current[1] == 0
    unit.sign(np.zeros((4, 2), np.uint64), [0, 1, 2, 1])
    assert unit.signed_subblocks == 10

    xor_unit = TileSignatures(3, kind="xor")
    xor_unit.fold([0, 2, 0], [5, 6, 7], [2, 3, 1])
    np.testing.assert_array_equal(xor_unit.current, [5 ^ 7, 0, 6])
    np.testing.assert_array_equal(xor_unit.shifts, [0, 0, 0])
    np.testing.assert_array_equal(xor_unit.accesses, [4, 0, 2])


def test_frames_and_invalidation():
    unit = TileSignatures(2)
    assert not unit.equal_to_previous().any()  # no previous frame yet
    unit.fold([0], [9], [1])
    unit.end_frame()
    np.testing.assert_array_equal(unit.current, [0, 0])
    unit.fold([0], [9], [1])
    np.testing.assert_array_equal(unit.equal_to_previous(), [True, True])
    unit.invalidate_previous()
    assert not unit.equal_to_previous().any()


def test_bad_inputs_are_rejected():
    unit = TileSignatures(2)
    with pytest.raises(ValueError, match="tile ids"):
        unit.fold([2], [1], [1])
    with pytest.raises(ValueError, match="same length"):
        unit.fold([0, 1], [1], [1])
    with pytest.raises(ValueError, match="kind"):
        TileSignatures(2, kind="md5")
    with pytest.raises(ValueError, match="non-negative"):
        accumulate(np.uint32(1), -1)
