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

S3TC (EXT_texture_compression_s3tc, and its GLES pieces EXT_texture_compression_dxt1 and
ANGLE_texture_compression_dxt3 / _dxt5, which Mesa's GLES2 contexts list) adds four formats
of 4x4 blocks: DXT1 as RGB (0x83F0) or RGBA with 1-bit alpha (0x83F1), 64 bits a block
(4 bits per texel), and DXT3 (0x83F2, explicit 4-bit alpha) and DXT5 (0x83F3, interpolated
alpha), 128 bits a block (8 bits per texel). The spec states the interpolated colors as
exact fractions (2/3 c0 + 1/3 c1, ...) and leaves the rounding to the implementation; the
decoder here reproduces llvmpipe's integer arithmetic (gallivm's lp_bld_format_s3tc.c), so
that the texels are the ones Mesa samples, bit for bit (conformance scene ``s3tc_textures``).
CompressedTexSubImage2D of whole blocks is allowed (as for ETC1); TexSubImage2D,
CopyTexSubImage2D and GenerateMipmap are one-line errors here (ES 2.0 allows no changes to
a compressed image but through CompressedTexSubImage2D).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BITS_PER_TEXEL", "COMPRESSED_FORMATS", "COMPRESSED_COMPONENTS",
           "compressed_image_size", "decode_compressed", "decode_etc1", "decode_s3tc"]

# Internal formats glCompressedTexImage2D accepts, and the bits each stores per texel.
S3TC_FORMATS = ("COMPRESSED_RGB_S3TC_DXT1_EXT", "COMPRESSED_RGBA_S3TC_DXT1_EXT",
                "COMPRESSED_RGBA_S3TC_DXT3_EXT", "COMPRESSED_RGBA_S3TC_DXT5_EXT")
COMPRESSED_FORMATS = ("ETC1_RGB8_OES",) + S3TC_FORMATS
BITS_PER_TEXEL = {"ETC1_RGB8_OES": 4, "COMPRESSED_RGB_S3TC_DXT1_EXT": 4,
                  "COMPRESSED_RGBA_S3TC_DXT1_EXT": 4, "COMPRESSED_RGBA_S3TC_DXT3_EXT": 8,
                  "COMPRESSED_RGBA_S3TC_DXT5_EXT": 8}
# Components of the decoded texels: RGB (alpha 1 when sampled) or RGBA.
COMPRESSED_COMPONENTS = {"ETC1_RGB8_OES": 3, "COMPRESSED_RGB_S3TC_DXT1_EXT": 3,
                         "COMPRESSED_RGBA_S3TC_DXT1_EXT": 4,
                         "COMPRESSED_RGBA_S3TC_DXT3_EXT": 4,
                         "COMPRESSED_RGBA_S3TC_DXT5_EXT": 4}

# The spec's "intensity modifier" table (its Table 3.17.2): codeword -> (small, large).
_MODIFIERS = np.array([[2, 8], [5, 17], [9, 29], [13, 42], [18, 60], [24, 80], [33, 106],
                       [47, 183]], dtype=np.int32)


def compressed_image_size(fmt: str, width: int, height: int) -> int:
    """Bytes of a ``width`` x ``height`` image of compressed ``fmt`` (the imageSize GL
    expects): whole 4x4 blocks of 64 bits (ETC1, DXT1) or 128 bits (DXT3, DXT5)."""
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


def decode_compressed(fmt: str, data, width: int, height: int) -> np.ndarray:
    """The decoded (height, width, :data:`COMPRESSED_COMPONENTS`) uint8 texels of an image of
    compressed ``fmt``, row 0 the first block row (t = 0)."""
    if fmt == "ETC1_RGB8_OES":
        return decode_etc1(data, width, height)
    return decode_s3tc(fmt, data, width, height)


def _expand565(color: np.ndarray) -> np.ndarray:
    """(..., 3) int32 RGB8 of RGB565 words: each field's high bits replicated into the low
    ones (r5 << 3 | r5 >> 2, g6 << 2 | g6 >> 4), as the spec's and Mesa's decoders do."""
    r, g, b = (color >> 11) & 31, (color >> 5) & 63, color & 31
    return np.stack([(r << 3) | (r >> 2), (g << 2) | (g >> 4), (b << 3) | (b >> 2)], axis=-1)


def _s3tc_colors(words: np.ndarray, four_color_only: bool, rgba_dxt1: bool) -> np.ndarray:
    """(bh, bw, 4, 4, 4) int32 RGBA of the 64-bit color blocks ``words`` ((bh, bw) uint64,
    little-endian: color0, color1 RGB565, then 2-bit indices, texel (i, j) at bit
    2 (4 j + i)).

    EXT_texture_compression_s3tc: with color0 > color1 (or always, for DXT3 / DXT5) the four
    colors are c0, c1, 2/3 c0 + 1/3 c1 and 1/3 c0 + 2/3 c1; else c0, c1, (c0 + c1) / 2 and
    black, which DXT1 RGBA makes transparent. llvmpipe computes the thirds in 16-bit lanes as
    c0 + ((85 (c1 - c0)) >> 8) and c0 + ((85 (c1 - c0)) >> 7) (arithmetic shifts: a floor)
    and the half with pavgb, (c0 + c1 + 1) >> 1; those are the values here.
    """
    color0 = (words & np.uint64(0xFFFF)).astype(np.int32)
    color1 = ((words >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int32)
    indices = (words >> np.uint64(32)).astype(np.uint32)
    c0, c1 = _expand565(color0), _expand565(color1)            # (bh, bw, 3)
    delta = c1 - c0
    third = c0 + ((85 * delta) >> 8)
    two_thirds = c0 + ((85 * delta) >> 7)
    opaque = np.full(c0.shape[:-1] + (1,), 255, np.int32)
    palette = np.stack([np.concatenate([c, opaque], -1) for c in (c0, c1, third, two_thirds)],
                       axis=2)                                 # (bh, bw, 4 colors, RGBA)
    if not four_color_only:
        three = ~(color0 > color1)
        half = np.concatenate([(c0 + c1 + 1) >> 1, opaque], -1)
        black = np.zeros_like(palette[:, :, 3])
        if not rgba_dxt1:
            black[..., 3] = 255
        palette[:, :, 2] = np.where(three[..., None], half, palette[:, :, 2])
        palette[:, :, 3] = np.where(three[..., None], black, palette[:, :, 3])
    i = np.arange(4)[None, :]
    j = np.arange(4)[:, None]
    code = (indices[..., None, None] >> (2 * (4 * j + i)).astype(np.uint32)) & 3   # (.., 4j, 4i)
    bh, bw = words.shape
    return np.take_along_axis(palette, code.reshape(bh, bw, 16, 1).astype(np.intp),
                              axis=2).reshape(bh, bw, 4, 4, 4)


def _dxt5_alpha(words: np.ndarray) -> np.ndarray:
    """(bh, bw, 4, 4) int32 alpha of DXT5 alpha blocks ``words`` ((bh, bw) uint64,
    little-endian: alpha0, alpha1, then 3-bit codes, texel (i, j) at bit 16 + 3 (4 j + i)).

    Codes 0 and 1 are alpha0 and alpha1; with alpha0 > alpha1 codes 2..7 interpolate in
    sevenths, else codes 2..5 in fifths and 6, 7 are 0 and 255. llvmpipe's weights are
    (255 * 64 / 7 or 255 * 64 / 5) * (code - 1) >> 6, applied as
    alpha0 + (((alpha1 - alpha0) * weight) >> 8) in 16-bit lanes.
    """
    a0 = (words & np.uint64(0xFF)).astype(np.int32)[..., None, None]
    a1 = ((words >> np.uint64(8)) & np.uint64(0xFF)).astype(np.int32)[..., None, None]
    i = np.arange(4)[None, :]
    j = np.arange(4)[:, None]
    shift = (16 + 3 * (4 * j + i)).astype(np.uint64)
    code = ((words[..., None, None] >> shift) & np.uint64(7)).astype(np.int32)
    seven = a0 > a1
    weight = (np.where(seven, 255 * 64 // 7, 255 * 64 // 5) * (code - 1)) >> 6
    interpolated = (a0 + (((a1 - a0) * weight) >> 8)) & 0xFF
    alpha = np.where(code == 0, a0, np.where(code == 1, a1, interpolated))
    alpha = np.where(~seven & (code == 6), 0, alpha)
    return np.where(~seven & (code == 7), 255, alpha)


def decode_s3tc(fmt: str, data, width: int, height: int) -> np.ndarray:
    """The (height, width, 3 or 4) uint8 texels of an S3TC image (``data``: its bytes;
    ``fmt`` one of :data:`S3TC_FORMATS`), decoded as llvmpipe decodes them.

    Blocks are in row order, the first holding rows t = 0..3. DXT1: one 64-bit color block
    (:func:`_s3tc_colors`). DXT3: a 64-bit alpha block, 4 bits a texel (texel (i, j) at bit
    4 (4 j + i), a -> a * 17), then a color block in four-color mode. DXT5: a 64-bit alpha
    block (:func:`_dxt5_alpha`), then a four-color color block. Edge blocks are decoded whole
    and cropped. DXT1 RGB's texels are RGB (the transparent black reads as black, alpha 1).
    """
    bw, bh = -(-width // 4), -(-height // 4)
    block = 16 * BITS_PER_TEXEL[fmt] // 8
    raw = np.frombuffer(np.ascontiguousarray(data).reshape(-1).view(np.uint8), np.uint8)
    words = raw[:bw * bh * block].view("<u8").reshape(bh, bw, block // 8)
    dxt1 = block == 8
    rgba = _s3tc_colors(words[..., -1], four_color_only=not dxt1,
                        rgba_dxt1=fmt == "COMPRESSED_RGBA_S3TC_DXT1_EXT")
    if fmt == "COMPRESSED_RGBA_S3TC_DXT3_EXT":
        i = np.arange(4)[None, :]
        j = np.arange(4)[:, None]
        shift = (4 * (4 * j + i)).astype(np.uint64)
        nibble = ((words[..., 0, None, None] >> shift) & np.uint64(15)).astype(np.int32)
        rgba[..., 3] = nibble * 17
    elif fmt == "COMPRESSED_RGBA_S3TC_DXT5_EXT":
        rgba[..., 3] = _dxt5_alpha(words[..., 0])
    components = COMPRESSED_COMPONENTS[fmt]
    image = rgba[..., :components].astype(np.uint8).transpose(0, 2, 1, 3, 4)
    return np.ascontiguousarray(image.reshape(bh * 4, bw * 4, components)[:height, :width])
