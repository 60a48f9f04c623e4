"""OES_compressed_ETC1_RGB8_texture and EXT_texture_compression_s3tc: the ETC1 and S3TC
decoders against the extension specs' rules (hand-decoded blocks; S3TC's interpolated colors
with llvmpipe's rounding), uploads and their errors, and the texture memory and cache traffic
counted at 4 bits per texel (ETC1, DXT1) or 8 (DXT3, DXT5). The decoders against Mesa are
the conformance scenes ``etc1_textures`` and ``s3tc_textures``
(tests/render/test_conformance.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.errors import InputError
from tilesim.jit import disabled
from tilesim.render.gl.compressed import (
    compressed_image_size,
    decode_compressed,
    decode_etc1,
    decode_s3tc,
)
from tilesim.render.gl.textures import Texture
from tilesim.render.pipeline.texture_sampler import TextureSampler
from tilesim.shaders.sampling import TextureRequest
from tilesim.shaders.synthetic_inputs import quad_pixels

# Block A, individual mode, flip 0: sub-block colors 4-bit (8, 4, 1) and (2, 1, 0), codewords
# 3 (13, 42) and 0 (2, 8). Indices: texel (0, 0) 0 (+13), (1, 0) 1 (+42, LSB bit 4),
# (0, 1) 2 (-13, MSB bit 17), (3, 3) 3 (-8, bits 15 and 31); the rest 0.
BLOCK_A = bytes([0x82, 0x41, 0x10, 0x60]) + ((1 << 4) | (1 << 17) | (1 << 15) | (1 << 31)
                                             ).to_bytes(4, "big")
# Block B, differential mode, flip 1: 5-bit (20, 0, 31) with deltas (-1, +3, -4), codewords
# 7 (47, 183) and 1 (5, 17), every index 0.
BLOCK_B = bytes([(20 << 3) | 7, 3, (31 << 3) | 4, (7 << 5) | (1 << 2) | 3, 0, 0, 0, 0])


def _expected_a():
    image = np.empty((4, 4, 3), int)
    image[:, :2] = np.array([136, 68, 17]) + 13      # sub-block 1 (left), index 0
    image[:, 2:] = np.array([34, 17, 0]) + 2         # sub-block 2 (right), index 0
    image[0, 1] = [136 + 42, 68 + 42, 17 + 42]       # (x 1, y 0): +large
    image[1, 0] = [136 - 13, 68 - 13, 17 - 13]       # (x 0, y 1): -small
    image[3, 3] = [34 - 8, 17 - 8, 0]                # (x 3, y 3): -large, clamped
    return image


def _expected_b():
    image = np.empty((4, 4, 3), int)
    image[:2] = [min(165 + 47, 255), 0 + 47, 255]    # top: (165, 0, 255) + 47, clamped
    image[2:] = [156 + 5, 24 + 5, 222 + 5]           # bottom: (156, 24, 222) + 5
    return image


def test_etc1_blocks_decode_as_the_spec_says():
    data = np.frombuffer(BLOCK_A + BLOCK_B, np.uint8)
    image = decode_etc1(data, 8, 4)
    assert image.dtype == np.uint8 and image.shape == (4, 8, 3)
    np.testing.assert_array_equal(image[:, :4], _expected_a())
    np.testing.assert_array_equal(image[:, 4:], _expected_b())
    # A size that is no multiple of 4 crops the edge blocks.
    np.testing.assert_array_equal(decode_etc1(data, 6, 3), image[:3, :6])


def test_etc1_differential_overflow_wraps_as_mesa():
    # R 0 with delta -4 (undefined in the spec): Mesa's byte arithmetic gives 0xFF for the
    # right sub-block (flip 0), where 0 - 4 would be 28 -> 231 with 5-bit wrapping.
    image = decode_etc1(np.array([(0 << 3) | 4, 0, 0, 0x02, 0, 0, 0, 0], np.uint8), 4, 4)
    assert image[0, 2, 0] == 255 and image[0, 0, 0] == 2


def _etc1_texture(width, height, seed=0) -> tuple[Texture, np.ndarray]:
    blocks = np.random.default_rng(seed).integers(
        0, 256, compressed_image_size("ETC1_RGB8_OES", width, height), dtype=np.uint8)
    texture = Texture()
    texture.compressed_tex_image_2d("TEXTURE_2D", 0, "ETC1_RGB8_OES", width, height, blocks)
    return texture, blocks


def test_upload_keeps_the_compressed_size_and_samples_the_decoded_rgb():
    texture, blocks = _etc1_texture(13, 10)
    image = texture.image(0, 0)
    assert image.nbytes == 4 * 3 * 8 == blocks.size and image.bits_per_texel == 4
    rgb = decode_etc1(blocks, 13, 10)
    np.testing.assert_array_equal(image.rgba8()[..., :3], rgb)
    assert (image.rgba8()[..., 3] == 255).all()


def test_etc1_errors_name_the_call():
    texture, _ = _etc1_texture(8, 8)
    with pytest.raises(InputError, match="compressedTexImage2D: a 8x8 ETC1_RGB8_OES image "
                                         "is 32 bytes"):
        texture.compressed_tex_image_2d("TEXTURE_2D", 0, "ETC1_RGB8_OES", 8, 8,
                                        np.zeros(31, np.uint8))
    for call, action in (
            ("texSubImage2D", lambda: texture.tex_sub_image_2d(
                "TEXTURE_2D", 0, 0, 0, 1, 1, "RGB", "UNSIGNED_BYTE", np.zeros(3, np.uint8))),
            ("generateMipmap", texture.generate_mipmap),
            ("copyTexSubImage2D", lambda: texture.copy_tex_sub_image_2d(
                "TEXTURE_2D", 0, 0, 0, 0, 0, 1, 1, np.zeros((4, 4, 4), np.uint8))),
            ("write_rgba", lambda: texture.write_rgba("TEXTURE_2D", 0,
                                                      np.zeros((1, 1, 4))))):
        with pytest.raises(InputError, match=f"{call}: .*compressed format"):
            action()


@pytest.mark.slow
@pytest.mark.parametrize("jit", [True, False])
def test_cache_traffic_is_counted_at_four_bits_per_texel(jit):
    """Every texel of a 64x64 texture read once (NEAREST, one lane per texel): the misses
    are the lines the texture occupies in the block-linear layout, 64 x 64 x 4 bits = 32
    lines of 64 bytes for ETC1 against 256 for the same texels as RGBA8."""
    etc1, blocks = _etc1_texture(64, 64, seed=3)
    rgba = np.concatenate([decode_etc1(blocks, 64, 64),
                           np.full((64, 64, 1), 255, np.uint8)], -1)
    plain = Texture()
    plain.tex_image_2d("TEXTURE_2D", 0, "RGBA", 64, 64, "RGBA", "UNSIGNED_BYTE",
                       rgba.reshape(-1))
    x, y = quad_pixels(64, 64)
    coords = np.stack([(x + 0.5) / 64, (y + 0.5) / 64, np.zeros(x.size), np.ones(x.size)])
    misses, colors = {}, {}
    for name, texture in (("etc1", etc1), ("rgba", plain)):
        texture.parameter("TEXTURE_MIN_FILTER", "NEAREST")
        texture.parameter("TEXTURE_MAG_FILTER", "NEAREST")
        sampler = TextureSampler({0: texture})
        request = TextureRequest(unit=0, target="2D", coords=coords.astype(np.float32),
                                 lod_mode="implicit")
        if jit:
            colors[name] = sampler.sample(request)
        else:
            with disabled():
                colors[name] = sampler.sample(request)
        misses[name] = int(sampler.stats.cache_misses.sum())
    np.testing.assert_array_equal(colors["etc1"], colors["rgba"])
    # Quads go round-robin to 4 caches and a line misses once in each cache that reads it:
    # an RGBA8 line is one 4x4 block (2x2 quads: 2 caches), an ETC1 line 8 blocks in a row
    # (all 4 caches).
    assert misses == {"etc1": 32 * 4, "rgba": 256 * 2}


def test_sub_image_replaces_whole_blocks_and_edge_blocks():
    """EXT_compressed_ETC1_RGB8_sub_texture: a rectangle of whole blocks, or one reaching
    the image's edge, is replaced by its decoded blocks; anything else is an error."""
    texture, blocks = _etc1_texture(13, 10, seed=5)
    before = texture.image(0, 0).rgba8()[..., :3].copy()
    data = np.frombuffer(BLOCK_A + BLOCK_B, np.uint8)
    texture.compressed_tex_sub_image_2d("TEXTURE_2D", 0, 4, 4, 8, 4, "ETC1_RGB8_OES", data)
    texture.compressed_tex_sub_image_2d("TEXTURE_2D", 0, 12, 8, 1, 2, "ETC1_RGB8_OES",
                                        data[:8])
    after = texture.image(0, 0).rgba8()[..., :3]
    expected = before.copy()
    expected[4:8, 4:12] = decode_etc1(data, 8, 4)
    expected[8:10, 12:13] = _expected_a()[:2, :1]
    np.testing.assert_array_equal(after, expected)
    for x, y, w, h in ((2, 0, 4, 4), (0, 0, 6, 4)):
        with pytest.raises(InputError, match="compressedTexSubImage2D: rectangle .* is not "
                                             "whole 4x4 blocks"):
            texture.compressed_tex_sub_image_2d("TEXTURE_2D", 0, x, y, w, h, "ETC1_RGB8_OES",
                                                np.zeros(16, np.uint8))


# --- S3TC ------------------------------------------------------------------------------------
DXT1 = "COMPRESSED_RGB_S3TC_DXT1_EXT"
DXT1A = "COMPRESSED_RGBA_S3TC_DXT1_EXT"
DXT3 = "COMPRESSED_RGBA_S3TC_DXT3_EXT"
DXT5 = "COMPRESSED_RGBA_S3TC_DXT5_EXT"
# Texels (i, j) = (0, 0), (1, 0), (2, 0), (3, 0) get codes 0, 1, 2, 3; the rest code 0.
CODES_0123 = (1 << 2) | (2 << 4) | (3 << 6)
# Four-color mode (color0 0xF800 red > color1 0x001F blue), and three-color mode (swapped).
RED_BLUE = (0xF800).to_bytes(2, "little") + (0x001F).to_bytes(2, "little") \
    + CODES_0123.to_bytes(4, "little")
BLUE_RED = (0x001F).to_bytes(2, "little") + (0xF800).to_bytes(2, "little") \
    + CODES_0123.to_bytes(4, "little")


def test_dxt1_blocks_decode_with_llvmpipes_rounding():
    """Four-color mode: 2/3 c0 + 1/3 c1 is c0 + ((85 (c1 - c0)) >> 8) in llvmpipe, which
    gives blue 84 where (2 c0 + c1) / 3 would give 85, and 1/3 c0 + 2/3 c1 gives red 85, blue
    169 (not 170). Three-color mode: the half rounds up (pavgb, 128) and code 3 is black,
    transparent in DXT1 RGBA."""
    four = decode_s3tc(DXT1A, np.frombuffer(RED_BLUE, np.uint8), 4, 4)
    np.testing.assert_array_equal(four[0], [[255, 0, 0, 255], [0, 0, 255, 255],
                                            [170, 0, 84, 255], [85, 0, 169, 255]])
    assert (four[1:] == [255, 0, 0, 255]).all()
    three = decode_s3tc(DXT1A, np.frombuffer(BLUE_RED, np.uint8), 4, 4)
    np.testing.assert_array_equal(three[0], [[0, 0, 255, 255], [255, 0, 0, 255],
                                             [128, 0, 128, 255], [0, 0, 0, 0]])
    rgb = decode_s3tc(DXT1, np.frombuffer(BLUE_RED, np.uint8), 4, 4)
    assert rgb.shape == (4, 4, 3)
    np.testing.assert_array_equal(rgb, three[..., :3])


def test_dxt3_and_dxt5_alpha_blocks_decode_with_llvmpipes_rounding():
    # DXT3: 4-bit alpha a -> 17 a, texel (i, j) at bit 4 (4 j + i); the color block is in
    # four-color mode even with color0 < color1.
    alpha = (0xF | (0x8 << 4) | (0x1 << 60)).to_bytes(8, "little")
    dxt3 = decode_s3tc(DXT3, np.frombuffer(alpha + BLUE_RED, np.uint8), 4, 4)
    assert dxt3[0, 0, 3] == 255 and dxt3[0, 1, 3] == 136 and dxt3[3, 3, 3] == 17
    assert dxt3[1, 1, 3] == 0
    np.testing.assert_array_equal(dxt3[0, 2, :3], [84, 0, 170])    # 2/3 blue + 1/3 red
    # DXT5, alpha0 200 > alpha1 100: sevenths; weights (2331 (code - 1)) >> 6, then
    # 200 + ((-100 weight) >> 8): code 2 -> 185, code 7 -> 114.
    codes = [0, 1, 2, 7] + [0] * 12
    bits = sum(code << (3 * k) for k, code in enumerate(codes))
    seven = bytes([200, 100]) + bits.to_bytes(6, "little")
    dxt5 = decode_s3tc(DXT5, np.frombuffer(seven + RED_BLUE, np.uint8), 4, 4)
    assert list(dxt5[0, :, 3]) == [200, 100, 185, 114]
    # alpha0 100 <= alpha1 200: fifths for codes 2..5 (weights (3264 (code - 1)) >> 6:
    # 119 and 179, where (4 a0 + a1) / 5 would be 120 and 180), 6 -> 0, 7 -> 255.
    codes = [2, 5, 6, 7] + [1] * 12
    bits = sum(code << (3 * k) for k, code in enumerate(codes))
    five = bytes([100, 200]) + bits.to_bytes(6, "little")
    dxt5 = decode_s3tc(DXT5, np.frombuffer(five + RED_BLUE, np.uint8), 4, 4)
    assert list(dxt5[0, :, 3]) == [119, 179, 0, 255] and (dxt5[1:, :, 3] == 200).all()


@pytest.mark.parametrize("fmt, bits", [(DXT1, 4), (DXT1A, 4), (DXT3, 8), (DXT5, 8)])
def test_s3tc_upload_keeps_the_compressed_size(fmt, bits):
    size = compressed_image_size(fmt, 13, 10)
    assert size == 4 * 3 * 2 * bits
    blocks = np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8)
    texture = Texture()
    texture.compressed_tex_image_2d("TEXTURE_2D", 0, fmt, 13, 10, blocks)
    image = texture.image(0, 0)
    assert image.nbytes == size and image.bits_per_texel == bits
    texels = decode_compressed(fmt, blocks, 13, 10)
    np.testing.assert_array_equal(image.rgba8()[..., :texels.shape[-1]], texels)
    if texels.shape[-1] == 3:
        assert (image.rgba8()[..., 3] == 255).all()
    with pytest.raises(InputError, match=f"compressedTexImage2D: a 8x8 {fmt} image is "
                                         f"{8 * bits} bytes \\(4x4 blocks of {2 * bits} "
                                         "bytes\\)"):
        texture.compressed_tex_image_2d("TEXTURE_2D", 0, fmt, 8, 8, np.zeros(3, np.uint8))
    with pytest.raises(InputError, match="generateMipmap: .*compressed format"):
        texture.generate_mipmap()


@pytest.mark.slow
def test_s3tc_cache_traffic_is_counted_at_the_formats_bits():
    """A 64x64 texture read once (NEAREST, a lane per texel): DXT1 occupies 32 lines of 64
    bytes as ETC1 does, DXT5 64 (a line is 4 blocks of 16 bytes in a row: 16x4 texels, which
    quads of all 4 caches read), against 256 for RGBA8 (test above)."""
    x, y = quad_pixels(64, 64)
    coords = np.stack([(x + 0.5) / 64, (y + 0.5) / 64, np.zeros(x.size),
                       np.ones(x.size)]).astype(np.float32)
    misses = {}
    for fmt in (DXT1, DXT5):
        blocks = np.random.default_rng(3).integers(
            0, 256, compressed_image_size(fmt, 64, 64), dtype=np.uint8)
        texture = Texture()
        texture.compressed_tex_image_2d("TEXTURE_2D", 0, fmt, 64, 64, blocks)
        texture.parameter("TEXTURE_MIN_FILTER", "NEAREST")
        texture.parameter("TEXTURE_MAG_FILTER", "NEAREST")
        sampler = TextureSampler({0: texture})
        sampler.sample(TextureRequest(unit=0, target="2D", coords=coords,
                                      lod_mode="implicit"))
        misses[fmt] = int(sampler.stats.cache_misses.sum())
    assert misses == {DXT1: 32 * 4, DXT5: 64 * 4}


@pytest.mark.mesa
@pytest.mark.slow
def test_s3tc_scene_is_bit_exact_against_llvmpipe():
    """The conformance scene ``s3tc_textures`` (random blocks of the four formats, partial
    edge blocks, sub-images, compressed mip levels, shown as RGB and as alpha) renders the
    very bytes llvmpipe renders: the decoder's rounding is llvmpipe's (util_format's
    (2 c0 + c1) / 3 would leave some 3000 pixels 1/255 off)."""
    from conftest import require_mesa

    from tilesim.studies.conformance import run_scene
    require_mesa()
    result = run_scene("s3tc_textures")
    assert result.error is None, result.error
    assert [frame.max_difference for frame in result.frames] == [0]
    assert result.fragments_tilesim == result.fragments_mesa
