"""Compressed texture formats: decoding at upload, and their size in texture memory.

OES_compressed_ETC1_RGB8_texture (Khronos OpenGL ES extension #5) adds one internal format,
``ETC1_RGB8_OES`` (0x8D64), uploaded with glCompressedTexImage2D only. An image is
``ceil(w / 4) x ceil(h / 4)`` blocks of 64 bits in row order (the first block holds the
texels of rows t = 0..3, s = 0..3), so ``imageSize = ceil(w/4) * ceil(h/4) * 8`` bytes, 4 bits
per texel. The renderer samples the decoded texels (as Mesa does: with no ETC1 hardware,
st/mesa decodes ETC1 to RGBA8 at upload), while the texture-memory and cache models keep the
compressed size (:data:`BITS_PER_TEXEL`): a 4x4 block of 8 bytes, so one 64-byte cache line
holds 8 blocks instead of 4 texels' rows.

The extension spec's restrictions hold here too: TexSubImage2D, CopyTexSubImage2D and
CompressedTexSubImage2D of an ETC1 image are INVALID_OPERATION, and so is GenerateMipmap
(OpenGL ES 2.0 §3.7.11: level 0 in a compressed format).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BITS_PER_TEXEL", "COMPRESSED_FORMATS", "compressed_image_size", "decode_etc1"]

# Internal formats glCompressedTexImage2D accepts, and the bits each stores per texel.
COMPRESSED_FORMATS = ("ETC1_RGB8_OES",)
BITS_PER_TEXEL = {"ETC1_RGB8_OES": 4}

# The spec's "intensity modifier" table (its Table 3.17.2): codeword -> (small, large).
_MODIFIERS = np.array([[2, 8], [5, 17], [9, 29], [13, 42], [18, 60], [24, 80], [33, 106],
                       [47, 183]], dtype=np.int32)


def compressed_image_size(fmt: str, width: int, height: int) -> int:
    """Bytes of a ``width`` x ``height`` image of compressed ``fmt`` (the imageSize GL
    expects): whole 4x4 blocks of 64 bits for ETC1."""
    return -(-width // 4) * -(-height // 4) * (16 * BITS_PER_TEXEL[fmt] // 8)


def decode_etc1(data, width: int, height: int) -> np.ndarray:
    """The (height, width, 3) uint8 RGB texels of an ETC1 image (``data``: its bytes).

    Every block is decoded at once (OES_compressed_ETC1_RGB8_texture, "Compressed Texture
    Images"): the 64-bit big-endian word holds two base colors (individual mode: two 4-bit
    RGB colors, each c -> 17 c; differential mode: a 5-bit color and a 3-bit signed delta,
    c -> (c << 3) | (c >> 2)), two 3-bit table codewords, the diff and flip bits, and per texel
    a 2-bit index (MSB in bits 16..31, LSB in bits 0..15, texel (x, y) at bit x * 4 + y) that
    picks +small, +large, -small or -large of the sub-block's codeword, added to its base
    color and clamped to 0..255. flip 0 splits the block into 2x4 left/right sub-blocks,
    flip 1 into 4x2 top/bottom ones. Row 0 of the result is t = 0 (the first block row).
    Blocks of the edges are decoded whole and cropped.
    """
    bw, bh = -(-width // 4), -(-height // 4)
    raw = np.frombuffer(np.ascontiguousarray(data).reshape(-1).view(np.uint8), np.uint8)
    blocks = raw[:bw * bh * 8].view(">u8").reshape(bh, bw).astype(np.uint64)
    high = (blocks >> np.uint64(32)).astype(np.uint32)
    low = (blocks & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    diff = ((high >> 1) & 1).astype(bool)
    flip = (high & 1).astype(bool)
    bases = np.empty((bh, bw, 2, 3), np.int32)     # (block row, block col, sub-block, RGB)
    for c, shift in enumerate((24, 16, 8)):
        byte = ((high >> shift) & 0xFF).astype(np.int32)
        # individual mode: 4-bit colors, sub-block 1 in the high nibble
        individual = np.stack([(byte >> 4) * 17, (byte & 0xF) * 17], axis=-1)
        # differential mode: 5-bit color and a 3-bit two's complement delta
        c5 = byte >> 3
        delta = (byte & 7) - ((byte & 4) << 1)
        # c5 + delta outside 0..31 is undefined in the spec; Mesa (texcompress_etc) adds in
        # an unsigned byte and keeps the low 8 bits of the expansion, and so does this.
        c5b = (c5 + delta) & 0xFF
        differential = np.stack([(c5 << 3) | (c5 >> 2), ((c5b << 3) | (c5b >> 2)) & 0xFF],
                                axis=-1)
        bases[..., c] = np.where(diff[..., None], differential, individual)
    codewords = np.stack([(high >> 5) & 7, (high >> 2) & 7], axis=-1).astype(np.intp)
    # texel (x, y) of a block: bit x * 4 + y of each index half
    x = np.arange(4)[None, :]
    y = np.arange(4)[:, None]
    bit = (x * 4 + y).astype(np.uint32)                                    # (4 y, 4 x)
    lsb = (low[..., None, None] >> bit) & 1
    msb = (low[..., None, None] >> (bit + 16)) & 1                         # (bh, bw, 4, 4)
    sub = np.where(flip[..., None, None], y >= 2, x >= 2).astype(np.intp)  # (bh, bw, 4, 4)
    codeword = np.take_along_axis(codewords, sub.reshape(bh, bw, 16), axis=-1)
    magnitude = _MODIFIERS[codeword.reshape(bh, bw, 4, 4), lsb.astype(np.intp)]
    modifier = np.where(msb.astype(bool), -magnitude, magnitude)
    base = np.take_along_axis(bases, sub.reshape(bh, bw, 16, 1), axis=2)  # (bh, bw, 16, 3)
    texels = np.clip(base.reshape(bh, bw, 4, 4, 3) + modifier[..., None], 0, 255)
    image = texels.astype(np.uint8).transpose(0, 2, 1, 3, 4).reshape(bh * 4, bw * 4, 3)
    return np.ascontiguousarray(image[:height, :width])
