"""Texture objects (tilesim.render.gl.textures) and the sampler
(tilesim.render.pipeline.texture_sampler).

Unit tests: format conversions, unpacking and argument errors; wrap modes on exact
coordinates; bilinear weights (float and llvmpipe's 8.8 fixed point); mip selection by LOD
(explicit, implicit from quads, bias, the magnification switch-over); cube face selection and
face coordinates; completeness; glGenerateMipmap; counters and the texture-cache model
(against a plain LRU simulation); TXF / TXQ; a TEX program through the TGSI interpreter.

The ``mesa`` comparison renders full-screen passes with Mesa llvmpipe
(:mod:`tilesim.shaders.mesa_fullscreen`, RGBA8 textures, RGBA32F framebuffer) whose fragment shader
is ``gl_FragColor = texture2D(tex, uv)`` (also with a bias, and ``textureCube``), with
``uv = v_uv * (a + b * v_uv.x) + offset`` so that scales give magnification, minification
and a sweep of the LOD across the screen; every filter, wrap mode, NPOT sizes and cube maps,
these with GL_TEXTURE_CUBE_MAP_SEAMLESS off (ES 2.0; ``SamplerOptions.llvmpipe(
cube_seamless=False)``) and on (Mesa's GLES2 contexts; the default), and views centred on
cube edges and corners (``cube_at``: magnified, LOD sweeps, biased to the coarse levels).
The same GLSL runs through softpipe's TGSI and the interpreter with :class:`TextureSampler`
(``SamplerOptions.llvmpipe()``) on the very inputs llvmpipe interpolated (probe passes); every
pixel and channel must agree within 2/255. ``PYTHONPATH=tests python
tests/render/test_texture_sampler.py`` prints the per-case maximum difference.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field

import numpy as np
import pytest
from mesa_probe_helpers import Probe, constant_buffer, fragment_inputs
from texture_helpers import CUBE_FACES, cube_texture, lru_touch, request, rgba8_texture

from tilesim.errors import InputError
from tilesim.render.gl.textures import Texture, unpack_pixels
from tilesim.render.pipeline.texture_sampler import (
    KINDS,
    SamplerOptions,
    TextureCacheConfig,
    TextureSampler,
    stats_texels_consistent,
)
from tilesim.shaders.sampling import BIAS, EXPLICIT, GRADIENT, TextureRequest
from tilesim.shaders.synthetic_inputs import quad_pixels

F32 = np.float32


# ----------------------------------------------------------------------------------------------
# Helpers


def level_colors_texture(size: int, colors, **params) -> Texture:
    """A mipmapped 2D texture whose level i is the constant RGBA8 color ``colors[i]``."""
    tex = Texture()
    level, n = 0, size
    while True:
        data = np.tile(np.asarray(colors[level], np.uint8), n * n)
        tex.tex_image_2d("TEXTURE_2D", level, "RGBA", n, n, "RGBA", "UNSIGNED_BYTE", data)
        if n == 1:
            break
        level, n = level + 1, n // 2
    for name, value in params.items():
        tex.parameter(name, value)
    return tex


def sample(tex, s, t, options=None, **kw):
    sampler = TextureSampler({0: tex}, options=options)
    return sampler.sample(request(s, t, target="CUBE" if tex.target.endswith("MAP") else "2D",
                                  **kw)), sampler


def quad_coords(center_s, center_t, step_s, step_t, quads=1):
    """Lanes of ``quads`` 2x2 quads whose s, t change by step per pixel in x and y."""
    dx = np.array([0, 1, 0, 1], F32)
    dy = np.array([0, 0, 1, 1], F32)
    s = np.tile(center_s + dx * step_s, quads).astype(F32)
    t = np.tile(center_t + dy * step_t, quads).astype(F32)
    return s, t


# ----------------------------------------------------------------------------------------------
# Formats and uploads


def test_unsigned_byte_formats_expand_to_rgba():
    data = np.array([10, 20, 30, 40], np.uint8)
    expected = {
        "RGBA": [10, 20, 30, 40],
        "RGB": [10, 20, 30, 255],
        "LUMINANCE": [10, 10, 10, 255],
        "ALPHA": [0, 0, 0, 10],
        "LUMINANCE_ALPHA": [10, 10, 10, 20],
    }
    for fmt, want in expected.items():
        comps = {"RGBA": 4, "RGB": 3, "LUMINANCE": 1, "ALPHA": 1, "LUMINANCE_ALPHA": 2}[fmt]
        tex = Texture()
        tex.tex_image_2d("TEXTURE_2D", 0, fmt, 1, 1, fmt, "UNSIGNED_BYTE", data[:comps])
        image = tex.image(0, 0)
        np.testing.assert_array_equal(image.texels[0, 0], np.asarray(want, F32) / F32(255))
        assert image.texels.dtype == np.float32
        assert image.bytes_per_texel == comps


@pytest.mark.parametrize("type_, fmt, bits", [
    ("UNSIGNED_SHORT_5_6_5", "RGB", (5, 6, 5)),
    ("UNSIGNED_SHORT_4_4_4_4", "RGBA", (4, 4, 4, 4)),
    ("UNSIGNED_SHORT_5_5_5_1", "RGBA", (5, 5, 5, 1)),
])
def test_packed_types_unpack_exactly(type_, fmt, bits):
    rng = np.random.default_rng(5)
    comps = np.stack([rng.integers(0, 1 << b, 64) for b in bits], axis=-1)
    words = np.zeros(64, np.uint32)
    shift = 16
    for i, b in enumerate(bits):
        shift -= b
        words |= comps[:, i].astype(np.uint32) << shift
    data = words.astype("<u2").view(np.uint8)
    tex = Texture()
    tex.tex_image_2d("TEXTURE_2D", 0, fmt, 8, 8, fmt, type_, data)
    texels = tex.image(0, 0).texels.reshape(64, 4)
    for i, b in enumerate(bits):
        np.testing.assert_array_equal(texels[:, i],
                                      comps[:, i].astype(F32) / F32((1 << b) - 1))
    if fmt == "RGB":
        assert (texels[:, 3] == 1).all()
    assert tex.image(0, 0).bytes_per_texel == 2


def test_unpack_alignment_pads_rows():
    # 3 RGB texels = 9 bytes per row; alignment 4 -> rows 12 bytes apart, last row unpadded.
    rows = [np.arange(9, dtype=np.uint8) + 10 * r for r in range(2)]
    data = np.concatenate([rows[0], [0, 0, 0], rows[1]]).astype(np.uint8)
    stored = unpack_pixels("texImage2D", "RGB", "UNSIGNED_BYTE", 3, 2, data, 4)
    np.testing.assert_array_equal(stored.reshape(2, 9), np.stack(rows))
    # A fully padded last row is accepted too; one byte short or past it is not.
    unpack_pixels("texImage2D", "RGB", "UNSIGNED_BYTE", 3, 2, np.zeros(24, np.uint8), 4)
    for size in (20, 25):
        with pytest.raises(InputError, match="texImage2D: .*needs 21 bytes"):
            unpack_pixels("texImage2D", "RGB", "UNSIGNED_BYTE", 3, 2, np.zeros(size, np.uint8),
                          4)
    with pytest.raises(InputError, match="UNPACK_ALIGNMENT"):
        unpack_pixels("texImage2D", "RGB", "UNSIGNED_BYTE", 3, 2, data, 3)


@pytest.mark.parametrize("fmt, alignment", [("RGBA", 4), ("RGB", 1), ("RGB", 8),
                                             ("LUMINANCE", 2)])
def test_unpack_subimage_reads_a_rectangle_of_a_larger_client_image(fmt, alignment):
    """EXT_unpack_subimage: rows of UNPACK_ROW_LENGTH pixels padded to the alignment, the
    image UNPACK_SKIP_ROWS rows and UNPACK_SKIP_PIXELS pixels in; the data may be the whole
    client image."""
    channels = {"RGBA": 4, "RGB": 3, "LUMINANCE": 1}[fmt]
    client = np.random.default_rng(3).integers(0, 256, (9, 11, channels), np.uint8)
    stride = -(-11 * channels // alignment) * alignment
    memory = np.zeros((9, stride), np.uint8)
    memory[:, :11 * channels] = client.reshape(9, -1)
    stored = unpack_pixels("texSubImage2D", fmt, "UNSIGNED_BYTE", 4, 3, memory.reshape(-1),
                           alignment, subimage=(11, 5, 6))
    np.testing.assert_array_equal(stored, client[5:8, 6:10])
    needed = 7 * stride + 6 * channels + 4 * channels   # up to the last texel read
    unpack_pixels("texSubImage2D", fmt, "UNSIGNED_BYTE", 4, 3, memory.reshape(-1)[:needed],
                  alignment, subimage=(11, 5, 6))
    with pytest.raises(InputError, match=f"UNPACK_ROW_LENGTH 11, SKIP_ROWS 5, SKIP_PIXELS 6 "
                                         f"needs {needed} bytes"):
        unpack_pixels("texSubImage2D", fmt, "UNSIGNED_BYTE", 4, 3,
                      memory.reshape(-1)[:needed - 1], alignment, subimage=(11, 5, 6))


def test_bgra_texels_sample_as_rgba():
    """EXT_texture_format_BGRA8888: the client's B, G, R, A bytes are stored in that order
    and sample as (R, G, B, A); texSubImage2D takes BGRA too, and RGBA into it is refused."""
    tex = Texture("TEXTURE_2D")
    data = np.array([[10, 20, 30, 40], [50, 60, 70, 80]], np.uint8)
    tex.tex_image_2d("TEXTURE_2D", 0, "BGRA_EXT", 2, 1, "BGRA_EXT", "UNSIGNED_BYTE", data)
    image = tex.image(0, 0)
    assert image.bytes_per_texel == 4
    np.testing.assert_array_equal(image.stored.reshape(-1), data.reshape(-1))
    np.testing.assert_allclose(image.texels[0] * 255, [[30, 20, 10, 40], [70, 60, 50, 80]],
                               atol=1e-4)
    tex.tex_sub_image_2d("TEXTURE_2D", 0, 1, 0, 1, 1, "BGRA_EXT", "UNSIGNED_BYTE",
                         np.array([1, 2, 3, 4], np.uint8))
    np.testing.assert_allclose(tex.image(0, 0).texels[0, 1] * 255, [3, 2, 1, 4], atol=1e-4)
    with pytest.raises(InputError, match="format RGBA differs from the image's BGRA_EXT"):
        tex.tex_sub_image_2d("TEXTURE_2D", 0, 0, 0, 1, 1, "RGBA", "UNSIGNED_BYTE",
                             np.zeros(4, np.uint8))
    with pytest.raises(InputError, match="UNSIGNED_SHORT_4_4_4_4 goes with format RGBA"):
        tex.tex_image_2d("TEXTURE_2D", 0, "BGRA_EXT", 1, 1, "BGRA_EXT",
                         "UNSIGNED_SHORT_4_4_4_4", np.zeros(2, np.uint8))


def test_half_float_texels_sample_as_floats_beyond_unorm():
    """OES_texture_half_float (+ _linear): HALF_FLOAT_OES data are kept as half floats and
    sampled unclamped, LINEAR filtering in float (never llvmpipe's 8-bit path); 2 bytes a
    component in texture memory; no mipmap generation and no other type into them."""
    tex = Texture("TEXTURE_2D")
    data = np.array([[2.0, -1.0, 0.25, 1.0], [-1.0, 3.0, 0.5, 0.0]], np.float16)
    tex.tex_image_2d("TEXTURE_2D", 0, "RGBA", 2, 1, "RGBA", "HALF_FLOAT_OES", data)
    image = tex.image(0, 0)
    assert image.nbytes == 16 and image.bits_per_texel == 64 and tex.is_half_float
    np.testing.assert_array_equal(image.texels[0], data.astype(np.float32))
    for name, value in (("TEXTURE_MIN_FILTER", "LINEAR"), ("TEXTURE_MAG_FILTER", "LINEAR"),
                        ("TEXTURE_WRAP_S", "CLAMP_TO_EDGE")):
        tex.parameter(name, value)
    out, _ = sample(tex, [0.5], [0.5], lod=[0.0], mode="explicit")
    np.testing.assert_allclose(np.asarray(out)[:, 0], [0.5, 1.0, 0.375, 0.5], atol=1e-6)
    tex.tex_sub_image_2d("TEXTURE_2D", 0, 1, 0, 1, 1, "RGBA", "HALF_FLOAT_OES",
                         np.array([-2.0, 0.0, 0.0, 1.0], np.float16))
    assert tex.image(0, 0).texels[0, 1, 0] == -2.0
    with pytest.raises(InputError, match="type UNSIGNED_BYTE differs from the image's "
                                         "HALF_FLOAT_OES"):
        tex.tex_sub_image_2d("TEXTURE_2D", 0, 0, 0, 1, 1, "RGBA", "UNSIGNED_BYTE",
                             np.zeros(4, np.uint8))
    with pytest.raises(InputError, match="generateMipmap: the image is HALF_FLOAT_OES"):
        tex.generate_mipmap()


def test_max_anisotropy_is_recorded_and_above_one_filters_anisotropically():
    """EXT_texture_filter_anisotropic: the value is kept (at least 1); above 1 the sampler
    filters through llvmpipe's elliptical footprint (more texels fetched on an anisotropic
    footprint, other colors), at 1 or with ``SamplerOptions(anisotropic=False)`` as ES 2.0
    (the footprint against llvmpipe: the conformance scene ``anisotropic_filtering``)."""
    rng = np.random.default_rng(9)
    pixels = rng.integers(0, 256, (16, 16, 4), dtype=np.uint8)
    results = []
    for anisotropy, options in ((1.0, None), (16.0, None),
                                (16.0, SamplerOptions(anisotropic=False))):
        tex = rgba8_texture(pixels, min_filter="LINEAR_MIPMAP_LINEAR", mag_filter="LINEAR",
                            mipmaps=True)
        tex.parameter_float("TEXTURE_MAX_ANISOTROPY_EXT", anisotropy)
        assert tex.max_anisotropy == anisotropy
        s, t = quad_coords(0.3, 0.4, 0.25, 0.02)      # an anisotropic footprint
        out, sampler = sample(tex, s, t, options)
        results.append((np.asarray(out), sampler.stats.texels_fetched.copy()))
    np.testing.assert_array_equal(results[0][0], results[2][0])
    np.testing.assert_array_equal(results[0][1], results[2][1])
    assert not np.array_equal(results[0][0], results[1][0])
    assert results[1][1].sum() > results[0][1].sum()
    with pytest.raises(InputError, match="TEXTURE_MAX_ANISOTROPY_EXT must be at least 1"):
        tex.parameter_float("TEXTURE_MAX_ANISOTROPY_EXT", 0.5)


def test_row_zero_is_t_zero():
    pixels = np.zeros((2, 1, 4), np.uint8)
    pixels[0, 0] = [255, 0, 0, 255]   # first row of the data: t = 0
    pixels[1, 0] = [0, 255, 0, 255]
    tex = rgba8_texture(pixels, wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    out, _ = sample(tex, [0.5, 0.5], [0.25, 0.75])
    np.testing.assert_array_equal(out.T, [[1, 0, 0, 1], [0, 1, 0, 1]])


def test_upload_errors_name_the_call():
    tex = Texture()
    with pytest.raises(InputError, match="texImage2D: level 14 out of range"):
        tex.tex_image_2d("TEXTURE_2D", 14, "RGBA", 1, 1, "RGBA", "UNSIGNED_BYTE", None)
    with pytest.raises(InputError, match="texImage2D: .*needs 16 bytes"):
        tex.tex_image_2d("TEXTURE_2D", 0, "RGBA", 2, 2, "RGBA", "UNSIGNED_BYTE",
                         np.zeros(15, np.uint8))
    with pytest.raises(InputError, match="internalformat RGB must equal format RGBA"):
        tex.tex_image_2d("TEXTURE_2D", 0, "RGB", 1, 1, "RGBA", "UNSIGNED_BYTE", None)
    with pytest.raises(InputError, match="UNSIGNED_SHORT_5_6_5 goes with format RGB"):
        tex.tex_image_2d("TEXTURE_2D", 0, "RGBA", 1, 1, "RGBA", "UNSIGNED_SHORT_5_6_5", None)
    with pytest.raises(InputError, match="does not fit a TEXTURE_2D texture"):
        tex.tex_image_2d(CUBE_FACES[0], 0, "RGBA", 1, 1, "RGBA", "UNSIGNED_BYTE", None)
    with pytest.raises(InputError, match="texSubImage2D: level 0 .* has no image"):
        tex.tex_sub_image_2d("TEXTURE_2D", 0, 0, 0, 1, 1, "RGBA", "UNSIGNED_BYTE",
                             np.zeros(4, np.uint8))
    tex.tex_image_2d("TEXTURE_2D", 0, "RGBA", 4, 4, "RGBA", "UNSIGNED_BYTE", None)
    with pytest.raises(InputError, match=r"texSubImage2D: rectangle 2x2 at \(3, 0\) is outside "
                                         r"the 4x4 level 0 image"):
        tex.tex_sub_image_2d("TEXTURE_2D", 0, 3, 0, 2, 2, "RGBA", "UNSIGNED_BYTE",
                             np.zeros(16, np.uint8))
    with pytest.raises(InputError, match="texParameter: 'LINEAR_MIPMAP_LINEAR' is not a valid "
                                         "TEXTURE_MAG_FILTER"):
        tex.parameter("TEXTURE_MAG_FILTER", "LINEAR_MIPMAP_LINEAR")
    cube = Texture("TEXTURE_CUBE_MAP")
    with pytest.raises(InputError, match="must be square"):
        cube.tex_image_2d(CUBE_FACES[2], 0, "RGBA", 2, 1, "RGBA", "UNSIGNED_BYTE", None)


def test_sub_image_replaces_a_rectangle_and_converts_types():
    tex = Texture()
    tex.tex_image_2d("TEXTURE_2D", 0, "RGBA", 4, 2, "RGBA", "UNSIGNED_BYTE", None)
    tex.tex_sub_image_2d("TEXTURE_2D", 0, 1, 1, 2, 1, "RGBA", "UNSIGNED_BYTE",
                         np.array([255, 0, 0, 255, 0, 255, 0, 255], np.uint8))
    texels = tex.image(0, 0).texels
    np.testing.assert_array_equal(texels[1, 1:3], [[1, 0, 0, 1], [0, 1, 0, 1]])
    assert (texels[0] == 0).all() and (texels[1, [0, 3]] == 0).all()
    version = tex.version
    # 4444 data into an 8-bit image: 0xF -> 255, 0x8 -> 136.
    tex.tex_sub_image_2d("TEXTURE_2D", 0, 0, 0, 1, 1, "RGBA", "UNSIGNED_SHORT_4_4_4_4",
                         np.array([0x8F, 0xF0], np.uint8))   # little-endian 0xF08F
    np.testing.assert_array_equal(tex.image(0, 0).stored[0, 0], [255, 0, 136, 255])
    assert tex.version > version


def test_generate_mipmap_is_llvmpipes_box_filter():
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (8, 8, 4), dtype=np.uint8)
    tex = rgba8_texture(pixels, mipmaps=True)
    assert [tex.image(0, i).width for i in range(4)] == [8, 4, 2, 1]
    p = pixels.astype(int)

    def half(a, b):
        return (a + b + 1) >> 1

    level1 = half(half(p[0::2, 0::2], p[0::2, 1::2]), half(p[1::2, 0::2], p[1::2, 1::2]))
    np.testing.assert_array_equal(tex.image(0, 1).stored, level1)
    assert tex.is_complete()
    with pytest.raises(InputError, match="generateMipmap: level 0 is 3x2, not a power of two"):
        rgba8_texture(np.zeros((2, 3, 4), np.uint8), mipmaps=True)
    npot = rgba8_texture(np.zeros((3, 5, 4), np.uint8), mipmaps=True, npot=True)
    assert [(npot.image(0, i).width, npot.image(0, i).height) for i in range(3)] == [
        (5, 3), (2, 1), (1, 1)]
    with pytest.raises(InputError, match="generateMipmap: texture 0 has no level 0"):
        Texture().generate_mipmap()


def test_renderer_api_name_first_then_target():
    tex = Texture(7)                      # glCreateTexture: a name, no target yet
    assert tex.target is None and tex.name == 7 and tex.incomplete_reason()
    tex.bind_target("TEXTURE_2D")
    tex.bind_target("TEXTURE_2D")
    with pytest.raises(InputError, match="texture 7 is a TEXTURE_2D, it cannot be bound to "
                                         "TEXTURE_CUBE_MAP"):
        tex.bind_target("TEXTURE_CUBE_MAP")
    tex.tex_image_2d("TEXTURE_2D", 0, "RGB", 2, 1, "RGB", "UNSIGNED_BYTE", None)
    tex.set_parameter("TEXTURE_MIN_FILTER", "NEAREST")
    assert tex.level_size("TEXTURE_2D", 0) == (2, 1) and not tex.format_has_alpha()
    with pytest.raises(InputError, match="no image at TEXTURE_2D level 1"):
        tex.level_size("TEXTURE_2D", 1)
    assert tex.level_rgba("TEXTURE_2D", 1) is None
    tex.store_rendered("TEXTURE_2D", 0, np.array([[[1, 0.5, 0, 0.2], [0, 0, 1, 1]]], F32))
    np.testing.assert_array_equal(tex.image(0, 0).stored[0], [[255, 128, 0], [0, 0, 255]])
    np.testing.assert_array_equal(tex.level_rgba("TEXTURE_2D", 0)[0, 0],
                                  [1, F32(128) / F32(255), 0, 1])


# ----------------------------------------------------------------------------------------------
# Wrap modes and filters


def ramp_texture(width: int, **params) -> Texture:
    """width x 1 texture whose texel i has red = 30 i (red * 255 / 30 identifies it)."""
    pixels = np.zeros((1, width, 4), np.uint8)
    pixels[0, :, 0] = np.arange(width) * 30
    pixels[0, :, 3] = 255
    return rgba8_texture(pixels, **params)


@pytest.mark.parametrize("wrap, s, texel", [
    ("REPEAT", [0.0, 0.124, 0.125, 0.99, 1.0, 1.3, -0.01, -1.3], [0, 0, 1, 7, 0, 2, 7, 5]),
    ("CLAMP_TO_EDGE", [-5.0, -0.01, 0.0, 0.5, 0.99, 1.0, 7.5], [0, 0, 0, 4, 7, 7, 7]),
    ("MIRRORED_REPEAT", [0.1, 0.9, 1.1, 1.9, 2.1, -0.1, -1.1], [0, 7, 7, 0, 0, 0, 7]),
])
def test_nearest_wrap_modes(wrap, s, texel):
    tex = ramp_texture(8, wrap=(wrap, "CLAMP_TO_EDGE"))
    out, _ = sample(tex, s, 0.5)
    np.testing.assert_array_equal(np.rint(out[0] * 255), np.asarray(texel) * 30)


@pytest.mark.parametrize("wrap, s, taps", [
    # s * 8 - 0.5 = 1.25: texels 1 and 2, weight 0.25
    ("REPEAT", 1.75 / 8, (1, 2, 0.25)),
    ("REPEAT", 0.25 / 8, (7, 0, 0.75)),          # u = -0.25 wraps to the last texel
    ("CLAMP_TO_EDGE", 0.25 / 8, (0, 0, 0.0)),
    ("CLAMP_TO_EDGE", 7.75 / 8, (7, 7, 0.0)),
    ("MIRRORED_REPEAT", 1.0 + 0.25 / 8, (7, 7, 0.0)),
    ("MIRRORED_REPEAT", 1.0 - 1.75 / 8, (5, 6, 0.75)),
])
def test_bilinear_weights(wrap, s, taps):
    i0, i1, w = taps
    tex = ramp_texture(8, min_filter="LINEAR", mag_filter="LINEAR",
                       wrap=(wrap, "CLAMP_TO_EDGE"))
    # Texel i holds red = 30 i; fixed point rounds each lerp to an integer.
    for options, atol in ((SamplerOptions.exact(), 1e-4), (SamplerOptions(), 0.5)):
        out, _ = sample(tex, [s], 0.5, options=options)
        np.testing.assert_allclose(out[0, 0] * 255, 30 * (i0 + w * (i1 - i0)), atol=atol)


def test_fixed_point_bilinear_rounds_like_llvmpipe():
    # Two texels 0 and 255, weight 77/256: a + ((77 * 255 + 128) >> 8) = 77.
    pixels = np.zeros((1, 2, 4), np.uint8)
    pixels[0, 1] = 255
    tex = rgba8_texture(pixels, min_filter="LINEAR", mag_filter="LINEAR",
                        wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    s = F32((0.5 + 77 / 256) / 2)                    # u = s * 2 - 0.5 = 77/256
    fixed, _ = sample(tex, [s], 0.5)
    exact, _ = sample(tex, [s], 0.5, options=SamplerOptions.exact())
    assert fixed[0, 0] == F32(77) * F32(1 / 255)
    np.testing.assert_allclose(exact[0, 0], 77 / 256, rtol=1e-6)


def test_bilinear_2d_interpolates_both_axes():
    pixels = np.zeros((2, 2, 4), np.uint8)
    pixels[..., 0] = [[0, 100], [200, 40]]
    pixels[..., 3] = 255
    tex = rgba8_texture(pixels, min_filter="LINEAR", mag_filter="LINEAR",
                        wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    s, t = (0.5 + 0.25) / 2, (0.5 + 0.5) / 2          # weights 0.25 along s, 0.5 along t
    out, _ = sample(tex, [s], [t], options=SamplerOptions.exact())
    top, bottom = 0 + 0.25 * 100, 200 + 0.25 * (40 - 200)
    np.testing.assert_allclose(out[0, 0] * 255, top + 0.5 * (bottom - top), rtol=1e-5)


# ----------------------------------------------------------------------------------------------
# Level of detail and mipmaps


LEVEL_COLORS = [(255 - 40 * i, 40 * i, 0, 255) for i in range(7)]    # 64x64: levels 0..6


def level_of(out):
    """Which LEVEL_COLORS level each (4, N) result is."""
    reds = np.rint(out[0] * 255).astype(int)
    return (255 - reds) // 40


@pytest.mark.parametrize("options", [SamplerOptions(), SamplerOptions.exact()],
                         ids=["llvmpipe", "exact"])
def test_explicit_lod_picks_levels(options):
    tex = level_colors_texture(64, LEVEL_COLORS, TEXTURE_MIN_FILTER="NEAREST_MIPMAP_NEAREST",
                               TEXTURE_MAG_FILTER="NEAREST")
    lods = np.array([-2.0, 0.0, 0.4, 0.6, 1.4, 2.7, 5.6, 9.0], F32)
    out, _ = sample(tex, np.full(8, 0.3), 0.3, mode=EXPLICIT, lod=lods, options=options)
    np.testing.assert_array_equal(level_of(out), [0, 0, 0, 1, 1, 3, 6, 6])
    # LINEAR between levels: weight = fractional part.
    tex.parameter("TEXTURE_MIN_FILTER", "NEAREST_MIPMAP_LINEAR")
    out, _ = sample(tex, [0.3, 0.3], 0.3, mode=EXPLICIT, lod=[1.25, 7.5], options=options)
    c1, c2 = (np.asarray(LEVEL_COLORS[i], F32) / 255 for i in (1, 2))
    np.testing.assert_allclose(out[:, 0], c1 + 0.25 * (c2 - c1), atol=1.5 / 255)
    np.testing.assert_allclose(out[:, 1], np.asarray(LEVEL_COLORS[6]) / 255, atol=1e-6)


@pytest.mark.parametrize("texels_per_pixel, level", [(0.5, 0), (1.0, 0), (1.9, 1), (3.0, 2),
                                                     (8.0, 3), (1000.0, 6)])
def test_implicit_lod_from_quads(texels_per_pixel, level):
    tex = level_colors_texture(64, LEVEL_COLORS, TEXTURE_MIN_FILTER="NEAREST_MIPMAP_NEAREST",
                               TEXTURE_MAG_FILTER="NEAREST")
    step = texels_per_pixel / 64
    s, t = quad_coords(0.3, 0.6, step, step * 0.5, quads=3)
    out, _ = sample(tex, s, t)
    # rho = max over x and y of the texel-space derivative length: here the x one.
    assert (level_of(out) == level).all()


def test_lod_is_per_quad_from_the_top_left_lane():
    tex = level_colors_texture(64, LEVEL_COLORS, TEXTURE_MIN_FILTER="NEAREST_MIPMAP_NEAREST",
                               TEXTURE_MAG_FILTER="NEAREST")
    # Lane 3 (bottom-right) is far away: it does not enter the quad's derivatives.
    s = np.array([0.1, 0.1 + 4 / 64, 0.1, 0.9], F32)
    t = np.array([0.1, 0.1, 0.1 + 4 / 64, 0.9], F32)
    out, _ = sample(tex, s, t)
    assert (level_of(out) == 2).all()


def test_bias_and_gradients():
    tex = level_colors_texture(64, LEVEL_COLORS, TEXTURE_MIN_FILTER="NEAREST_MIPMAP_NEAREST",
                               TEXTURE_MAG_FILTER="NEAREST")
    s, t = quad_coords(0.3, 0.6, 2 / 64, 2 / 64)                     # lambda = 1
    out, _ = sample(tex, s, t, mode=BIAS, lod=[0.0, 1.0, 2.0, -3.0])  # per-lane bias
    np.testing.assert_array_equal(level_of(out), [1, 2, 3, 0])
    ddx = np.zeros((4, 4), F32)
    ddy = np.zeros((4, 4), F32)
    ddx[0] = [1 / 64, 4 / 64, 16 / 64, 0]
    ddy[1] = [0, 0, 0, 32 / 64]
    out, _ = sample(tex, s, t, mode=GRADIENT, ddx=ddx, ddy=ddy)
    np.testing.assert_array_equal(level_of(out), [0, 2, 4, 5])


@pytest.mark.parametrize("switchover, expected", [("spec", "LINEAR"), ("zero", "NEAREST")])
def test_magnification_switchover(switchover, expected):
    # lambda = 0.3: ES 2.0 magnifies (c = 0.5 for mag LINEAR + min NEAREST_MIPMAP_NEAREST),
    # llvmpipe (c = 0) minifies with the nearest filter.
    pixels = np.zeros((64, 64, 4), np.uint8)
    pixels[..., 0] = (np.arange(64) * 4)[None, :]
    pixels[..., 3] = 255
    tex = rgba8_texture(pixels, min_filter="NEAREST_MIPMAP_NEAREST", mag_filter="LINEAR",
                        mipmaps=True)
    step = 2 ** 0.3 / 64
    s, t = quad_coords(10.5 / 64 + 0.25 / 64, 0.5, step, 0.0)
    out, _ = sample(tex, s, t, options=SamplerOptions(mag_switchover=switchover))
    red = out[0, 0] * 255
    if expected == "LINEAR":     # u = 10.25 - 0.5 -> between texels 10 and 11... blended
        assert red not in (40.0, 44.0) and 40 < red < 44
    else:
        assert red == 40.0


def test_trilinear_blends_two_bilinear_levels():
    tex = level_colors_texture(64, LEVEL_COLORS, TEXTURE_MIN_FILTER="LINEAR_MIPMAP_LINEAR",
                               TEXTURE_MAG_FILTER="LINEAR")
    out, sampler = sample(tex, [0.3], [0.3], mode=EXPLICIT, lod=[2.5])
    c2, c3 = (np.asarray(LEVEL_COLORS[i], float) for i in (2, 3))
    np.testing.assert_allclose(out[:, 0] * 255, c2 + 0.5 * (c3 - c2), atol=1)
    assert sampler.stats.trilinear[0] == 1 and sampler.stats.texels[0] == 8


# ----------------------------------------------------------------------------------------------
# Cube maps


@pytest.mark.parametrize("direction, face, s_high, t_high", [
    # ES 2.0 table 3.21: +X: sc = -rz, tc = -ry; -X: sc = rz, tc = -ry; +Y: sc = rx, tc = rz;
    # -Y: sc = rx, tc = -rz; +Z: sc = rx, tc = -ry; -Z: sc = -rx, tc = -ry.
    ((1.0, -0.5, -0.5), 0, True, True),
    ((-1.0, -0.5, 0.5), 1, True, True),
    ((0.5, 1.0, 0.5), 2, True, True),
    ((0.5, -1.0, -0.5), 3, True, True),
    ((0.5, -0.5, 1.0), 4, True, True),
    ((-0.5, -0.5, -1.0), 5, True, True),
    ((-0.5, 0.5, -1.0), 5, True, False),
    ((1.0, 1.0, 1.0), 4, True, False),        # ties: z over y over x
    ((1.0, 1.0, 0.5), 2, True, True),
])
def test_cube_face_selection_and_coordinates(direction, face, s_high, t_high):
    tex = cube_texture()
    x, y, z = direction
    out, _ = sample(tex, [x], [y], r=[z])
    assert int(np.rint(out[0, 0] * 255)) == face * 40
    assert (out[1, 0] > 0) == s_high and (out[2, 0] > 0) == t_high


def test_cube_lod_from_face_derivatives():
    colors = [LEVEL_COLORS[i] for i in range(5)]
    tex = Texture("TEXTURE_CUBE_MAP")
    for face in CUBE_FACES:
        n, level = 16, 0
        while n:
            tex.tex_image_2d(face, level, "RGBA", n, n, "RGBA", "UNSIGNED_BYTE",
                             np.tile(np.asarray(colors[level], np.uint8), n * n))
            n, level = n // 2, level + 1
    tex.parameter("TEXTURE_MIN_FILTER", "NEAREST_MIPMAP_NEAREST")
    tex.parameter("TEXTURE_MAG_FILTER", "NEAREST")
    # On +Z at the center, s = 0.5 x / z + 0.5: a step of 8/16 * 2 in x per pixel is 8 texels.
    step = 8 / 16 * 2
    s, t = quad_coords(0.0, 0.0, step, step)
    out, _ = sample(tex, s, t, r=np.ones(4))
    assert (level_of(out) == 3).all()


# Seamless cube maps. Faces of solid colors: +X red, -X green, +Y blue, -Y yellow, +Z cyan,
# -Z magenta.
FACE_COLORS = np.array([(255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255),
                        (255, 255, 0, 255), (0, 255, 255, 255), (255, 0, 255, 255)])


def solid_cube(size=4, **params) -> Texture:
    faces = np.stack([np.tile(c.astype(np.uint8), (size, size, 1)) for c in FACE_COLORS])
    return cube_texture(size, faces, **{"TEXTURE_MIN_FILTER": "LINEAR",
                                        "TEXTURE_MAG_FILTER": "LINEAR", **params})


def test_seamless_cube_edge_blends_the_adjacent_face():
    # (1, 0.99, 0.3) is on +X: s = 0.5 - 0.3 / 2 = 0.35, t = 0.5 - 0.99 / 2 = 0.005. On 4 x 4
    # faces u = 4 s - 0.5 = 0.9 (taps x = 0, 1), v = 4 t - 0.5 = -0.48: taps y = -1 (weight
    # 0.48), off the face: +Y's edge row, and y = 0 of +X (weight 0.52).
    tex = solid_cube(TEXTURE_WRAP_S="CLAMP_TO_EDGE", TEXTURE_WRAP_T="CLAMP_TO_EDGE")
    expected = (0.52 * FACE_COLORS[0] + 0.48 * FACE_COLORS[2]) / 255     # (132.6, 0, 122.4)
    for options in (None, SamplerOptions.llvmpipe()):          # seamless is the default
        out, sampler = sample(tex, [1.0], [0.99], r=[0.3], options=options)
        np.testing.assert_allclose(out[:, 0], expected, atol=1e-5)
        assert sampler.stats.bilinear[0] == 1 and sampler.stats.texels[0] == 4
    # ES 2.0 (and Mesa with GL_TEXTURE_CUBE_MAP_SEAMLESS off) clamps to the face: pure red.
    for options in (SamplerOptions.llvmpipe(cube_seamless=False), SamplerOptions.exact()):
        out, _ = sample(tex, [1.0], [0.99], r=[0.3], options=options)
        np.testing.assert_array_equal(out[:, 0], FACE_COLORS[0] / 255)


def test_seamless_cube_corner_fakes_the_missing_texel():
    # (1, 0.99, 0.99): s = t = 0.005 on +X, u = v = -0.48: the taps are (-1, -1), the corner
    # where +X, +Y and +Z meet, (0, -1) on +Y, (-1, 0) on +Z and (0, 0) on +X, weights
    # 0.48^2, 0.52 * 0.48 (twice), 0.52^2. The corner's weight goes in thirds to the others
    # (its texel is the average of the three).
    tex = solid_cube()
    corner = 0.48 * 0.48 / 3
    expected = ((0.52 * 0.52 + corner) * FACE_COLORS[0]
                + (0.52 * 0.48 + corner) * (FACE_COLORS[2] + FACE_COLORS[4])) / 255
    out, sampler = sample(tex, [1.0], [0.99], r=[0.99])
    np.testing.assert_allclose(out[:, 0], expected, atol=1e-5)   # (88.536, 83.232, 166.464)
    assert sampler.stats.texels[0] == 4
    # The same corner from the other two faces: (0.99, 1, 0.99) on +Y, (0.99, 0.99, 1) on +Z.
    out, _ = sample(tex, [0.99, 0.99], [1.0, 0.99], r=[0.99, 1.0])
    np.testing.assert_allclose(out[:, 0], ((0.52 * 0.52 + corner) * FACE_COLORS[2] + (
        0.52 * 0.48 + corner) * (FACE_COLORS[0] + FACE_COLORS[4])) / 255, atol=1e-5)
    np.testing.assert_allclose(out[:, 1], ((0.52 * 0.52 + corner) * FACE_COLORS[4] + (
        0.52 * 0.48 + corner) * (FACE_COLORS[0] + FACE_COLORS[2])) / 255, atol=1e-5)


def _face_direction(face, sc, tc):
    """Directions (3, N) whose face coordinates on ``face`` are sc, tc (ES 2.0 table 3.21)."""
    one = np.ones_like(sc)
    table = [(one, -tc, -sc), (-one, -tc, sc), (sc, one, tc), (sc, -one, -tc), (sc, -tc, one),
             (-sc, -tc, -one)]
    return np.stack([np.choose(face, [d[axis] for d in table]) for axis in range(3)])


def _nearest_cube_texel(d, size):
    """Face and clamped texel of directions (3, N) (ES 2.0 table 3.21, ties z > y > x)."""
    x, y, z = d
    ax, ay, az = np.abs(d)
    z_major = az >= np.maximum(ax, ay)
    x_major = ~z_major & (ax > ay)
    face = np.where(z_major, 4 + (z < 0), np.where(x_major, x < 0, 2 + (y < 0)))
    ma = np.choose(face // 2, [ax, ay, az])
    sc = np.choose(face, [-z, z, x, x, x, -x])
    tc = np.choose(face, [-y, -y, z, -z, -y, -y])

    def texel(c):
        return np.clip(np.floor((c / ma * 0.5 + 0.5) * size), 0, size - 1).astype(int)

    return face, texel(sc), texel(tc)


def test_seamless_taps_off_a_face_read_the_geometric_neighbours():
    # Every tap just off every edge of every face (x-, x+, y-, y+): the face and texel
    # lp_build_cube_new_coords gives are the ones the direction through the tap's center,
    # pulled back to just across the edge, hits.
    from tilesim.render.pipeline.texture_sampler import _cube_new_coords

    size, last = 8, 7
    face, along, side = (a.ravel() for a in np.meshgrid(np.arange(6), np.arange(size),
                                                       np.arange(4), indexing="ij"))
    off = np.where(side % 2 == 0, -1, size)
    tx, ty = np.where(side < 2, off, along), np.where(side < 2, along, off)
    sc = np.clip(2 * (tx + 0.5) / size - 1, -1.001, 1.001)
    tc = np.clip(2 * (ty + 0.5) / size - 1, -1.001, 1.001)
    want = _nearest_cube_texel(_face_direction(face, sc, tc), size)
    # Both taps of a pair at the same texel: x0 = -1 (x1 = 0) or x1 = size (x0 = size - 1)
    # with y0 = y1 = along; y0 = -1 or y1 = size (clamped) with x0 = x1 = along.
    x0 = np.where(side < 2, np.where(side == 0, -1, last), along).astype(np.int32)
    x1 = np.where(side < 2, x0 + 1, along).astype(np.int32)
    y = np.where(side < 2, along, np.where(side == 2, 0, last)).astype(np.int32)
    faces, xs, ys = _cube_new_coords(np, face.astype(np.int32), x0, x1, y, y, last)
    for slot in (0, 1):
        got = (np.choose(side, faces), np.choose(side, [xs[k][slot] for k in range(4)]),
               np.choose(side, [ys[k][slot] for k in range(4)]))
        for name, g, w in zip(("face", "x", "y"), got, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"{name}, slot {slot}")


def test_seamless_cube_counters_and_cache_see_the_faces_read():
    # 4 x 4 RGBA8 faces are one 64-byte cache line each: a sample inside +X reads one line,
    # one across the +X/+Y edge two, one at the +X/+Y/+Z corner three (the corner tap reads
    # +Z's texel at the clamped row); every bilinear sample still fetches 4 texels.
    tex = solid_cube()
    sampler = TextureSampler({0: tex}, record_accesses=True)
    sampler.sample(request([1.0, 1.0, 1.0], [0.3, 0.99, 0.99], r=[0.2, 0.3, 0.99],
                           target="CUBE"))
    stats = sampler.stats
    np.testing.assert_array_equal(stats.texels, [4, 4, 4])
    np.testing.assert_array_equal(stats.bilinear, [1, 1, 1])
    np.testing.assert_array_equal(stats.cache_accesses, [1, 2, 3])
    assert stats_texels_consistent(stats)
    (_, lanes, addresses), = sampler.accesses
    faces = (addresses - (tex.uid << 40)) // 64              # one 64-byte image per face
    assert [sorted(faces[lanes == k].tolist()) for k in range(3)] == [[0], [0, 2], [0, 2, 4]]
    # Without seamless filtering every tap stays on +X.
    sampler = TextureSampler({0: tex}, options=SamplerOptions.llvmpipe(cube_seamless=False))
    sampler.sample(request([1.0, 1.0, 1.0], [0.3, 0.99, 0.99], r=[0.2, 0.3, 0.99],
                           target="CUBE"))
    np.testing.assert_array_equal(sampler.stats.cache_accesses, [1, 1, 1])


def test_seamless_cube_mipmaps_filter_each_level_across_faces():
    # Levels 4 x 4, 2 x 2, 1 x 1 of solid colors per face and level. (1, 0.2, 0.1) on +X:
    # s = 0.45, t = 0.4. Level 1: u = 0.4, v = 0.3, all taps on +X. Level 2 (1 x 1): u = -0.05,
    # v = -0.1: taps (-1, -1) corner, (0, -1) on +Y, (-1, 0) on +Z, (0, 0) on +X, weights
    # 0.05 * 0.1, 0.95 * 0.1, 0.05 * 0.9, 0.95 * 0.9, the corner's shared in thirds.
    rng = np.random.default_rng(12)
    colors = rng.integers(0, 256, (3, 6, 4))
    tex = Texture("TEXTURE_CUBE_MAP")
    for f, face in enumerate(CUBE_FACES):
        for level, n in enumerate((4, 2, 1)):
            tex.tex_image_2d(face, level, "RGBA", n, n, "RGBA", "UNSIGNED_BYTE",
                             np.tile(colors[level, f].astype(np.uint8), n * n))
    tex.parameter("TEXTURE_MAG_FILTER", "LINEAR")
    corner = 0.05 * 0.1 / 3
    level2 = ((0.95 * 0.9 + corner) * colors[2, 0] + (0.95 * 0.1 + corner) * colors[2, 2]
              + (0.05 * 0.9 + corner) * colors[2, 4]) / 255
    for min_filter, lod, expected in [
            ("LINEAR_MIPMAP_NEAREST", 2.0, level2),
            ("LINEAR_MIPMAP_LINEAR", 1.5, 0.5 * (colors[1, 0] / 255 + level2))]:
        tex.parameter("TEXTURE_MIN_FILTER", min_filter)
        out, sampler = sample(tex, [1.0], [0.2], r=[0.1], mode=EXPLICIT, lod=[lod])
        np.testing.assert_allclose(out[:, 0], expected, atol=1e-5, err_msg=min_filter)
        two_levels = min_filter.endswith("LINEAR")
        assert sampler.stats.texels[0] == (8 if two_levels else 4)
        # Level 1: one line of +X; level 2: the 1 x 1 images of +X, +Y and +Z.
        assert sampler.stats.cache_accesses[0] == (4 if two_levels else 3)
        assert stats_texels_consistent(sampler.stats)


# ----------------------------------------------------------------------------------------------
# Completeness


def test_incomplete_textures_sample_0001():
    pot = np.full((4, 4, 4), 200, np.uint8)
    npot = np.full((3, 4, 4), 200, np.uint8)
    cases = {
        "no level 0": Texture(),
        "mipmap filter, no chain": rgba8_texture(pot, min_filter="LINEAR_MIPMAP_LINEAR"),
        "npot repeat": rgba8_texture(npot, min_filter="LINEAR"),
        "npot mipmaps": rgba8_texture(npot, min_filter="NEAREST_MIPMAP_NEAREST",
                                      wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE")),
    }
    chain = rgba8_texture(pot, min_filter="LINEAR_MIPMAP_LINEAR", mipmaps=True)
    chain.tex_image_2d("TEXTURE_2D", 1, "RGBA", 1, 1, "RGBA", "UNSIGNED_BYTE", None)
    cases["wrong level size"] = chain
    odd = rgba8_texture(pot, min_filter="LINEAR_MIPMAP_LINEAR", mipmaps=True)
    odd.tex_image_2d("TEXTURE_2D", 2, "RGB", 1, 1, "RGB", "UNSIGNED_BYTE", None)
    cases["level format differs"] = odd
    cube = cube_texture()
    cube.tex_image_2d(CUBE_FACES[3], 0, "RGBA", 4, 4, "RGBA", "UNSIGNED_BYTE", None)
    cases["cube faces differ"] = cube
    missing = Texture("TEXTURE_CUBE_MAP")
    missing.tex_image_2d(CUBE_FACES[0], 0, "RGBA", 2, 2, "RGBA", "UNSIGNED_BYTE", None)
    cases["cube face missing"] = missing
    for name, tex in cases.items():
        assert tex.incomplete_reason(), name
        out, sampler = sample(tex, [0.3, 0.7], [0.5, 0.5])
        np.testing.assert_array_equal(out.T, [[0, 0, 0, 1]] * 2, err_msg=name)
        assert sampler.stats.incomplete.sum() == 2
    # Complete counterparts sample the texture; GL_OES_texture_npot lifts the NPOT rules.
    for tex in (rgba8_texture(npot, wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE")),
                rgba8_texture(npot, npot=True), chain_ok()):
        assert tex.is_complete()
        out, _ = sample(tex, [0.3], [0.5])
        assert out[0, 0] == F32(200) * F32(1 / 255)


def chain_ok():
    return rgba8_texture(np.full((4, 4, 4), 200, np.uint8), min_filter="LINEAR_MIPMAP_LINEAR",
                         mipmaps=True)


def test_unbound_unit_and_wrong_target_sample_0001():
    sampler = TextureSampler({0: None, 1: chain_ok()})
    for unit, target in ((0, "2D"), (1, "CUBE"), (5, "2D")):
        out = sampler.sample(request([0.5], [0.5], unit=unit, target=target))
        np.testing.assert_array_equal(out[:, 0], [0, 0, 0, 1])


# ----------------------------------------------------------------------------------------------
# TXF, TXQ, interpreter


def test_fetch_and_size():
    rng = np.random.default_rng(9)
    pixels = rng.integers(0, 256, (8, 16, 4), dtype=np.uint8)
    tex = rgba8_texture(pixels, mipmaps=True)
    sampler = TextureSampler({0: tex})
    texel = np.array([[3, 15, 16, 1, 0], [5, 7, 0, 1, 0], [0] * 5, [0, 0, 0, 1, 4]], np.int32)
    out = sampler.fetch(0, "2D", texel, None)
    np.testing.assert_array_equal(out[:, 0], pixels[5, 3] / F32(255))
    np.testing.assert_array_equal(out[:, 1], pixels[7, 15] / F32(255))
    np.testing.assert_array_equal(out[:, 2], 0)                       # x out of range
    np.testing.assert_array_equal(out[:, 3], tex.image(0, 1).texels[1, 1])
    np.testing.assert_array_equal(out[:, 4], tex.image(0, 4).texels[0, 0])
    sizes = sampler.size(0, "2D", np.array([0, 1, 3, 4], np.int32))
    np.testing.assert_array_equal(sizes.T, [[16, 8, 1, 5], [8, 4, 1, 5], [2, 1, 1, 5],
                                            [1, 1, 1, 5]])


def test_tex_program_through_the_interpreter():
    from tilesim.shaders.interpreter import Interpreter
    from tilesim.shaders.parser import parse

    program = parse("""FRAG
DCL IN[0].xy, GENERIC[0], PERSPECTIVE
DCL OUT[0], COLOR
DCL SAMP[0]
DCL SVIEW[0], 2D, FLOAT
  0: TEX OUT[0], IN[0].xyyy, SAMP[0], 2D
  1: END
""")
    rng = np.random.default_rng(2)
    pixels = rng.integers(0, 256, (32, 32, 4), dtype=np.uint8)
    tex = rgba8_texture(pixels, min_filter="LINEAR_MIPMAP_LINEAR", mag_filter="LINEAR",
                        mipmaps=True)
    x, y = quad_pixels(16, 16)
    uv = np.stack([(x + 0.5) / 16 * 3, (y + 0.5) / 16 * 3]).astype(F32)     # lambda ~ 2.6
    inputs = np.zeros((1, 4, x.size), F32)
    inputs[0, :2] = uv
    sampler = TextureSampler({0: tex})
    out = Interpreter(program).run(inputs, {0: np.zeros((1, 4), np.uint32)}, sampler=sampler)
    direct = TextureSampler({0: tex}).sample(TextureRequest(0, "2D", np.stack(
        [uv[0], uv[1], uv[1], uv[1]])))
    np.testing.assert_array_equal(np.asarray(out.outputs[0]), direct)
    assert sampler.stats.trilinear.sum() == x.size


# ----------------------------------------------------------------------------------------------
# Counters and the cache model


def test_counters_texels_match_filter_kinds():
    rng = np.random.default_rng(4)
    pixels = rng.integers(0, 256, (64, 64, 4), dtype=np.uint8)
    x, y = quad_pixels(32, 32)
    seen = {}
    for min_filter, mag in itertools.product(
            ["NEAREST", "LINEAR", "NEAREST_MIPMAP_NEAREST", "LINEAR_MIPMAP_NEAREST",
             "NEAREST_MIPMAP_LINEAR", "LINEAR_MIPMAP_LINEAR"], ["NEAREST", "LINEAR"]):
        tex = rgba8_texture(pixels, min_filter=min_filter, mag_filter=mag, mipmaps=True)
        # The scale grows along x: magnified on the left, minified on the right.
        k = (0.2 + 6 * (x + 0.5) / 32).astype(F32)
        s = ((x + 0.5) / 32 * k).astype(F32)
        t = ((y + 0.5) / 32 * k).astype(F32)
        sampler = TextureSampler({0: tex})
        active = np.ones(x.size, bool)
        active[::7] = False
        req = request(s, t)
        req.active = active
        sampler.sample(req)
        sampler.sample(req)
        stats = sampler.stats
        assert stats_texels_consistent(stats)
        np.testing.assert_array_equal(
            stats.texels_nearest + stats.texels_bilinear + stats.texels_trilinear,
            stats.texels_fetched)
        kinds = sum(getattr(stats, kind) for kind in KINDS)
        np.testing.assert_array_equal(kinds, stats.samples)
        np.testing.assert_array_equal(stats.samples, np.where(active, 2, 0))
        assert (stats.cache_misses <= stats.cache_accesses).all()
        assert (stats.cache_accesses[~active] == 0).all()
        seen.update({kind: True for kind in KINDS if getattr(stats, kind).sum()})
        if min_filter == "LINEAR_MIPMAP_LINEAR" and mag == "LINEAR":
            assert stats.trilinear.sum() and stats.bilinear.sum()
    assert set(seen) == {"nearest", "nearest_mip_linear", "bilinear", "trilinear"}


def reference_lru(keys, tags, ways, state=None):
    """Plain Python LRU per set: hit flags; ``state`` {key: [tags oldest first]}."""
    state = {} if state is None else state
    hits = []
    for key, tag in zip(keys.tolist(), tags.tolist(), strict=True):
        hits.append(lru_touch(state.setdefault(key, []), tag, ways))
    return np.array(hits), state


@pytest.mark.parametrize("ways", [1, 2, 4])
def test_lru_model_is_exact(ways):
    rng = np.random.default_rng(ways)
    cfg = TextureCacheConfig(caches=2, size_bytes=ways * 64 * 4, ways=ways)   # 4 sets each
    sampler = TextureSampler({}, cache=cfg)
    state = None
    for _ in range(3):   # the state carries over between calls
        m = 400
        keys = rng.integers(0, cfg.caches * cfg.sets, m)
        tags = rng.integers(0, 6, m)
        got = sampler._lru(np, keys.astype(np.int64), tags.astype(np.int64))
        want, state = reference_lru(keys, tags, ways, state)
        np.testing.assert_array_equal(got, want)


def test_cache_reuse_between_instructions_and_tiles():
    rng = np.random.default_rng(6)
    pixels = rng.integers(0, 256, (16, 16, 4), dtype=np.uint8)
    tex = rgba8_texture(pixels, min_filter="LINEAR", mag_filter="LINEAR")
    x, y = quad_pixels(16, 16)
    s, t = ((x + 0.5) / 16).astype(F32), ((y + 0.5) / 16).astype(F32)
    sampler = TextureSampler({0: tex}, lane_tile=np.zeros(x.size, int))
    sampler.sample(request(s, t))
    first = sampler.stats.cache_misses.sum()
    # 16x16 RGBA8 = 1 KB = 16 lines of 4x4-texel blocks: the first pass misses each once.
    assert first == 16
    sampler.sample(request(s, t))
    assert sampler.stats.cache_misses.sum() == first       # all hits the second time
    per_tile = sampler.stats.per_tile(np.zeros(x.size, int), 1)
    assert per_tile["cache_misses"][0] == 16 and per_tile["samples"][0] == 2 * x.size
    # Another tile maps to another cache: cold again.
    sampler.begin(lane_tile=np.ones(x.size, int))
    sampler.sample(request(s, t))
    assert sampler.stats.cache_misses.sum() == 16
    sampler.reset_cache()
    sampler.begin(lane_tile=np.ones(x.size, int))
    sampler.sample(request(s, t))
    assert sampler.stats.cache_misses.sum() == 16
    # Accesses coalesce per lane and line: 4 taps inside one 4x4 block are one access.
    assert sampler.stats.cache_accesses.max() <= 4


@pytest.mark.slow
def test_counters_off_keeps_no_stats():
    tex = chain_ok()
    sampler = TextureSampler({0: tex}, counters=False)
    sampler.sample(request([0.3], [0.4]))
    assert sampler.stats is None


def test_record_accesses_gives_addresses():
    tex = chain_ok()
    sampler = TextureSampler({0: tex}, record_accesses=True)
    sampler.sample(request([0.3, 0.6, 0.3, 0.6], [0.4, 0.4, 0.8, 0.8]))
    (instruction, lanes, addresses), = sampler.accesses
    assert lanes.shape == addresses.shape and (addresses % 64 == 0).all()
    assert (addresses >> 40 == tex.uid).all()


@pytest.mark.parametrize("cube", [False, True])
def test_hostile_coordinates_stay_finite(cube):
    rng = np.random.default_rng(11)
    weird = np.array([np.nan, np.inf, -np.inf, 3e38, -3e38, 1e9, -1e9, 0.0, -0.0, 1e-40,
                      0.5, 1.0], F32)
    n = 48
    s, t, r = (rng.choice(weird, n).astype(F32) for _ in range(3))
    pixels = rng.integers(0, 256, (8, 8, 4), dtype=np.uint8)
    filters = ["NEAREST", "LINEAR", "NEAREST_MIPMAP_NEAREST", "LINEAR_MIPMAP_LINEAR"]
    for min_filter, wrap, mode in itertools.product(filters, ("REPEAT", "MIRRORED_REPEAT"),
                                                    ("implicit", BIAS, EXPLICIT, GRADIENT)):
        if cube:
            tex = cube_texture(4, TEXTURE_MIN_FILTER=min_filter)
            if "MIPMAP" in min_filter:
                tex.generate_mipmap()
        else:
            tex = rgba8_texture(pixels, min_filter=min_filter, mag_filter="LINEAR",
                                wrap=(wrap, wrap), mipmaps=True)
        derivs = np.stack([s, t, r, s])
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            out, sampler = sample(tex, s, t, r=r, mode=mode, lod=t, ddx=derivs, ddy=derivs)
        assert np.isfinite(out).all() and (out >= 0).all() and (out <= 1).all()
        assert stats_texels_consistent(sampler.stats)


@pytest.mark.gpu
def test_cupy_samples_like_numpy():
    from tilesim import backend
    from tilesim.backend import to_host

    if "cupy" not in backend.available_backends():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    import cupy

    rng = np.random.default_rng(8)
    pixels = rng.integers(0, 256, (32, 32, 4), dtype=np.uint8)
    x, y = quad_pixels(32, 32)
    k = (0.2 + 6 * (x + 0.5) / 32).astype(F32)
    s, t = ((x + 0.5) / 32 * k).astype(F32), ((y + 0.5) / 32 * k).astype(F32)
    for min_filter, wrap, options in [("LINEAR_MIPMAP_LINEAR", "REPEAT", SamplerOptions()),
                                      ("NEAREST_MIPMAP_LINEAR", "MIRRORED_REPEAT",
                                       SamplerOptions.exact())]:
        tex = rgba8_texture(pixels, min_filter=min_filter, mag_filter="LINEAR",
                            wrap=(wrap, wrap), mipmaps=True)
        host = TextureSampler({0: tex}, options=options, lane_tile=x // 16)
        dev = TextureSampler({0: tex}, options=options, lane_tile=cupy.asarray(x // 16))
        req = request(s, t)
        want = host.sample(req)
        got = dev.sample(TextureRequest(0, "2D", cupy.asarray(req.coords)))
        np.testing.assert_allclose(to_host(got), want, atol=1e-6, equal_nan=False)
        for name in host.stats.FIELDS:
            np.testing.assert_array_equal(to_host(getattr(dev.stats, name)),
                                          getattr(host.stats, name), err_msg=name)
    # A seamless, mipmapped cube map: directions over every face, edge and corner.
    cube = cube_texture(16, rng.integers(0, 256, (6, 16, 16, 4), dtype=np.uint8),
                        TEXTURE_MIN_FILTER="LINEAR_MIPMAP_LINEAR", TEXTURE_MAG_FILTER="LINEAR")
    cube.generate_mipmap()
    angle = (x * 0.7 + y * 0.13).astype(F32)
    req = request(np.cos(angle), np.sin(angle * 1.3), r=np.sin(angle), target="CUBE")
    host = TextureSampler({0: cube}, lane_tile=x // 16)
    dev = TextureSampler({0: cube}, lane_tile=cupy.asarray(x // 16))
    want = host.sample(req)
    got = dev.sample(TextureRequest(0, "CUBE", cupy.asarray(req.coords)))
    np.testing.assert_allclose(to_host(got), want, atol=1e-6, equal_nan=False)
    for name in host.stats.FIELDS:
        np.testing.assert_array_equal(to_host(getattr(dev.stats, name)),
                                      getattr(host.stats, name), err_msg=name)


# ----------------------------------------------------------------------------------------------
# Against Mesa llvmpipe

MESA_TOLERANCE = 2 / 255
SIZE = 64
# Samplers default to lowp in GLSL ES; llvmpipe then returns 16-bit float texels.
FS_2D = """precision highp float;
precision highp sampler2D;
varying vec2 v_uv;
uniform sampler2D tex;
uniform vec2 u_scale;
uniform vec2 u_offset;
void main() {
    vec2 uv = v_uv * (u_scale.x + u_scale.y * v_uv.x) + u_offset;
    gl_FragColor = texture2D(tex, uv);
}
"""
FS_2D_BIAS = FS_2D.replace("uniform vec2 u_offset;", "uniform vec2 u_offset;\n"
                           "uniform float u_bias;").replace("texture2D(tex, uv)",
                                                           "texture2D(tex, uv, u_bias)")
FS_CUBE = """precision highp float;
precision highp samplerCube;
varying vec3 v_dir;
uniform samplerCube tex;
uniform vec2 u_scale;
void main() {
    vec3 d = vec3(v_dir.xy * (u_scale.x + 0.5 * v_dir.x), u_scale.y);
    gl_FragColor = textureCube(tex, d);
}
"""
# A magnified view of the directions around ``u_center`` (a cube edge or corner): the screen
# spans u_du, u_dv scaled by u_scale; the LOD bias u_bias.x + u_bias.y * X sweeps the levels.
FS_CUBE_AT = """precision highp float;
precision highp samplerCube;
varying vec3 v_dir;
uniform samplerCube tex;
uniform vec3 u_center;
uniform vec3 u_du;
uniform vec3 u_dv;
uniform float u_scale;
uniform vec2 u_bias;
void main() {
    vec3 d = u_center + (v_dir.x * u_du + v_dir.y * u_dv) * u_scale;
    gl_FragColor = textureCube(tex, d, u_bias.x + u_bias.y * v_dir.x);
}
"""
SHADERS = {"2d": FS_2D, "2d_bias": FS_2D_BIAS, "cube": FS_CUBE, "cube_at": FS_CUBE_AT}
CUBE_SHADERS = ("cube", "cube_at")
# Views of cube corners and edges: (center, du, dv); odd spans keep pixel centers off the
# face boundaries' rounding ties. The corners and edges touch every face.
CUBE_SPOTS = {
    "corner+++": ((1.0, 1.0, 1.0), (0.23, -0.11, 0.05), (-0.07, 0.17, -0.19)),
    "corner---": ((-1.0, -1.0, -1.0), (0.19, 0.07, -0.13), (-0.05, 0.21, 0.11)),
    "corner-+-": ((-1.0, 1.0, -1.0), (-0.17, 0.09, 0.21), (0.13, -0.23, 0.03)),
    "corner+-+": ((1.0, -1.0, 1.0), (0.11, 0.19, -0.17), (0.21, -0.05, 0.13)),
    "edge+x+y": ((1.0, 1.0, 0.3), (0.27, -0.19, 0.03), (0.02, 0.05, 0.31)),
    "edge-x-z": ((-1.0, 0.35, -1.0), (0.21, 0.04, -0.25), (-0.03, 0.29, 0.06)),
    "edge+y-z": ((0.25, 1.0, -1.0), (0.05, 0.23, 0.19), (0.31, -0.02, 0.04)),
    "edge-y+x": ((1.0, -1.0, -0.4), (-0.22, -0.24, 0.05), (0.04, 0.03, 0.33)),
}
# (min filter, mag filter, bias): u_scale 0.8 gives lambda about -4.3, the bias sweeps take
# it from magnification through every level (16 x 16 faces: levels 0..4) and beyond.
CUBE_SPOT_FILTERS = {
    "LINEAR-LINEAR-mag": ("LINEAR", "LINEAR", (0.0, 0.0)),
    "LINEAR_MIPMAP_LINEAR-LINEAR-sweep": ("LINEAR_MIPMAP_LINEAR", "LINEAR", (4.5, 5.0)),
    "LINEAR_MIPMAP_LINEAR-LINEAR-coarse": ("LINEAR_MIPMAP_LINEAR", "LINEAR", (7.3, 1.1)),
    "NEAREST_MIPMAP_NEAREST-LINEAR-sweep": ("NEAREST_MIPMAP_NEAREST", "LINEAR", (4.5, 5.0)),
    "LINEAR-NEAREST-sweep": ("LINEAR", "NEAREST", (4.5, 5.0)),
}
SCALES = {"mag": (0.37, 0.0), "min": (3.3, 0.0), "sweep": (0.2, 7.0)}
FILTERS_2D = [("NEAREST", "NEAREST"), ("LINEAR", "LINEAR"), ("NEAREST", "LINEAR"),
              ("LINEAR", "NEAREST"), ("NEAREST_MIPMAP_NEAREST", "LINEAR"),
              ("LINEAR_MIPMAP_NEAREST", "NEAREST"), ("NEAREST_MIPMAP_LINEAR", "NEAREST"),
              ("LINEAR_MIPMAP_LINEAR", "LINEAR")]
WRAPS = ("REPEAT", "CLAMP_TO_EDGE", "MIRRORED_REPEAT")


@dataclass
class MesaCase:
    id: str
    shader: str                       # key of SHADERS
    size: tuple[int, int] = (64, 64)  # texture width, height (cube: face size)
    min_filter: str = "LINEAR"
    mag_filter: str = "LINEAR"
    wrap: tuple[str, str] = ("REPEAT", "REPEAT")
    uniforms: dict = field(default_factory=dict)
    npot_extension: bool = False
    seamless: bool = False            # cube maps: GL_TEXTURE_CUBE_MAP_SEAMLESS on

    @property
    def mipmaps(self) -> bool:
        return "MIPMAP" in self.min_filter

    @property
    def cube(self) -> bool:
        return self.shader in CUBE_SHADERS


def mesa_cases() -> list[MesaCase]:
    cases = []
    offset = [0.0371, 0.0213]
    for (mn, mg), wrap, (scale_id, scale) in itertools.product(FILTERS_2D, WRAPS,
                                                               SCALES.items()):
        cases.append(MesaCase(f"2d-{mn}-{mg}-{wrap}-{scale_id}", "2d", min_filter=mn,
                              mag_filter=mg, wrap=(wrap, wrap),
                              uniforms={"u_scale": scale, "u_offset": offset}))
    cases.append(MesaCase("2d-LINEAR_MIPMAP_LINEAR-LINEAR-REPEAT/MIRRORED-sweep", "2d",
                          min_filter="LINEAR_MIPMAP_LINEAR", wrap=("REPEAT", "MIRRORED_REPEAT"),
                          uniforms={"u_scale": SCALES["sweep"], "u_offset": offset}))
    for (mn, mg), bias in itertools.product(
            [("LINEAR_MIPMAP_LINEAR", "LINEAR"), ("NEAREST_MIPMAP_NEAREST", "NEAREST"),
             ("LINEAR", "NEAREST"), ("LINEAR_MIPMAP_NEAREST", "NEAREST")], (-1.5, 0.75, 2.25)):
        cases.append(MesaCase(f"bias{bias}-{mn}-{mg}", "2d_bias", min_filter=mn, mag_filter=mg,
                              uniforms={"u_scale": SCALES["sweep"], "u_offset": offset,
                                        "u_bias": [bias]}))
    npot = (45, 29)
    for mn, mg in [("LINEAR", "LINEAR"), ("NEAREST", "NEAREST"), ("LINEAR", "NEAREST")]:
        cases.append(MesaCase(f"npot-{mn}-{mg}-CLAMP", "2d", size=npot, min_filter=mn,
                              mag_filter=mg, wrap=("CLAMP_TO_EDGE",) * 2,
                              uniforms={"u_scale": SCALES["sweep"], "u_offset": offset}))
    for mn, mg, wrap in [("LINEAR_MIPMAP_LINEAR", "LINEAR", "REPEAT"),
                         ("NEAREST_MIPMAP_LINEAR", "LINEAR", "MIRRORED_REPEAT"),
                         ("NEAREST", "NEAREST", "REPEAT"), ("LINEAR", "LINEAR", "REPEAT")]:
        cases.append(MesaCase(f"npot-ext-{mn}-{mg}-{wrap}", "2d", size=npot, min_filter=mn,
                              mag_filter=mg, wrap=(wrap, wrap), npot_extension=True,
                              uniforms={"u_scale": SCALES["sweep"], "u_offset": offset}))
    for (mn, mg), (direction_id, direction) in itertools.product(
            [("NEAREST", "NEAREST"), ("LINEAR", "LINEAR"), ("LINEAR_MIPMAP_LINEAR", "LINEAR"),
             ("NEAREST_MIPMAP_NEAREST", "LINEAR"), ("LINEAR", "NEAREST"),
             ("NEAREST_MIPMAP_LINEAR", "NEAREST")],
            {"+z-mag": (0.6, 1.0), "-z-min": (5.0, -1.0), "+z-sweep": (2.5, 1.0)}.items()):
        # Seamless with different min and mag image filters: on the cube_at views only. On
        # this view's diagonals |x| = |y| exactly, so s or t is exactly 0 or 1 on the face,
        # where llvmpipe's nearest lanes in a SIMD vector with linear ones take the bilinear
        # tap x0 = -1, which seamless filtering puts on the adjacent face (the detail the
        # sampler does not reproduce, see tilesim.render.pipeline.texture_sampler).
        mixed = mn.startswith("LINEAR") != (mg == "LINEAR")
        for seamless in (False,) if mixed else (False, True):
            cases.append(MesaCase(f"cube-{mn}-{mg}-{direction_id}" + "-seamless" * seamless,
                                  "cube", size=(16, 16), min_filter=mn, mag_filter=mg,
                                  uniforms={"u_scale": direction}, seamless=seamless))
    for (spot_id, (center, du, dv)), (filter_id, (mn, mg, bias)) in itertools.product(
            CUBE_SPOTS.items(), CUBE_SPOT_FILTERS.items()):
        cases.append(MesaCase(f"cube-{spot_id}-{filter_id}-seamless", "cube_at", size=(16, 16),
                              min_filter=mn, mag_filter=mg, seamless=True,
                              uniforms={"u_center": center, "u_du": du, "u_dv": dv,
                                        "u_scale": [0.8], "u_bias": bias}))
    return cases


def case_texels(case: MesaCase) -> np.ndarray:
    """RGBA8 noise: (H, W, 4) for 2D, (6, S, S, 4) for cubes (seeded by the case's size)."""
    rng = np.random.default_rng([case.size[0], case.size[1], case.cube])
    w, h = case.size
    shape = (6, h, w, 4) if case.cube else (h, w, 4)
    return rng.integers(0, 256, shape, dtype=np.uint8)


def our_texture(case: MesaCase) -> Texture:
    pixels = case_texels(case)
    w, h = case.size
    if case.cube:
        tex = Texture("TEXTURE_CUBE_MAP", oes_texture_npot=case.npot_extension)
        for f, face in enumerate(CUBE_FACES):
            tex.tex_image_2d(face, 0, "RGBA", w, h, "RGBA", "UNSIGNED_BYTE",
                             pixels[f].reshape(-1))
    else:
        tex = Texture(oes_texture_npot=case.npot_extension)
        tex.tex_image_2d("TEXTURE_2D", 0, "RGBA", w, h, "RGBA", "UNSIGNED_BYTE",
                         pixels.reshape(-1), unpack_alignment=1)
    if case.mipmaps:
        tex.generate_mipmap()
    tex.parameter("TEXTURE_MIN_FILTER", case.min_filter)
    tex.parameter("TEXTURE_MAG_FILTER", case.mag_filter)
    tex.parameter("TEXTURE_WRAP_S", case.wrap[0])
    tex.parameter("TEXTURE_WRAP_T", case.wrap[1])
    return tex


def geometry(shader: str):
    from tilesim.shaders import mesa_fullscreen as mf

    varyings = mf.parse_varyings(SHADERS[shader])
    if shader in CUBE_SHADERS:   # v_dir = (X, Y, 1)
        coef = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], F32)
        return mf.Geometry(varyings, {"v_dir": coef})
    coef = np.array([[0.5, 0, 0.5], [0, 0.5, 0.5]], F32)   # v_uv = (X, Y) / 2 + 1/2
    return mf.Geometry(varyings, {"v_uv": coef})


@dataclass
class MesaOutcome:
    case: MesaCase
    max_diff: float = float("nan")
    bad: int = 0                    # channel values further than the tolerance, or not finite
    nonfinite: int = 0              # channel values NaN or infinite on either side
    error: str | None = None


def compare_with_mesa(color: np.ndarray, mesa: np.ndarray) -> tuple[float, int, int]:
    """(max |difference|, channel values not within MESA_TOLERANCE, channel values not
    finite on either side) of the interpreter's and llvmpipe's colors. A NaN or infinity
    never agrees: RGBA8 textures sample to [0, 1], so either side outside the finite numbers
    is a failure (and a NaN difference must not slip through a ``diff > tolerance`` test)."""
    color = np.asarray(color, dtype=np.float64)
    mesa = np.asarray(mesa, dtype=np.float64)
    nonfinite = ~np.isfinite(color) | ~np.isfinite(mesa)
    with np.errstate(invalid="ignore"):
        diff = np.abs(color - mesa)
    within = np.isfinite(diff) & (diff <= MESA_TOLERANCE + 1e-6)
    max_diff = float(np.inf) if nonfinite.any() else float(diff.max(initial=0.0))
    return max_diff, int((~within).sum()), int(nonfinite.sum())


def test_mesa_comparison_counts_nan_and_infinity_as_failures():
    mesa = np.full((4, 3), 0.5)
    assert compare_with_mesa(mesa + 1.9 / 255, mesa) == (pytest.approx(1.9 / 255), 0, 0)
    far = mesa.copy()
    far[1, 2] += 2.5 / 255
    assert compare_with_mesa(far, mesa) == (pytest.approx(2.5 / 255), 1, 0)
    for bad in (np.nan, np.inf, -np.inf):
        ours = mesa.copy()
        ours[0, 0] = bad
        assert compare_with_mesa(ours, mesa) == (np.inf, 1, 1), bad
        assert compare_with_mesa(mesa, ours) == (np.inf, 1, 1), bad   # Mesa's side too
        assert compare_with_mesa(ours, ours)[1:] == (1, 1), bad        # NaN == NaN is no pass
    everything = np.full((4, 3), np.nan)
    assert compare_with_mesa(everything, mesa)[1:] == (12, 12)


@functools.cache
def mesa_outcomes() -> dict[str, MesaOutcome]:
    """Render every case with llvmpipe, run the interpreter with TextureSampler, compare."""
    from tilesim.shaders import mesa_fullscreen as mf
    from tilesim.shaders.glsl_compile import ProgramSource, compile_many
    from tilesim.shaders.interpreter import Interpreter
    from tilesim.shaders.parser import parse

    cases = mesa_cases()
    geometries = {key: geometry(key) for key in SHADERS}
    compiled = dict(zip(SHADERS, compile_many(
        [ProgramSource(geometries[key].vertex_shader(), fs, name=f"texture_{key}")
         for key, fs in SHADERS.items()]), strict=True))
    passes, probe_start = [], {}
    for key, g in geometries.items():
        probe_start[key] = len(passes)
        passes += [mf.Pass(g.vertex_shader(), fs) for fs in g.probe_shaders()]
    first_case = len(passes)
    for case in cases:
        w, h = case.size
        pixels = case_texels(case)
        texture = mf.Texture(
            "tex", 0, [] if case.cube else pixels.tolist(),
            target="CUBE" if case.cube else "2D", dtype="u1",
            min_filter=case.min_filter, mag_filter=case.mag_filter, wrap_s=case.wrap[0],
            wrap_t=case.wrap[1], generate_mipmap=case.mipmaps,
            faces=pixels.tolist() if case.cube else None,
            seamless=case.seamless if case.cube else None)
        uniforms = {name: ("float", list(np.ravel(value).astype(float)))
                    for name, value in case.uniforms.items()}
        passes.append(mf.Pass(geometries[case.shader].vertex_shader(),
                              mf.highp_source(SHADERS[case.shader]), uniforms, [texture]))
    rendered = mf.render(passes, SIZE, SIZE)
    x, y = quad_pixels(SIZE, SIZE)
    outcomes = {}
    for i, case in enumerate(cases):
        outcome = MesaOutcome(case)
        outcomes[case.id] = outcome
        if rendered.errors[first_case + i]:
            outcome.error = rendered.errors[first_case + i]
            continue
        g, prog = geometries[case.shader], compiled[case.shader]
        start = probe_start[case.shader]
        probe = Probe.from_images(g.probe_labels(),
                                      rendered.images[start:start + len(g.probe_shaders())])
        program = parse(prog.fragment_tgsi, source=f"texture_{case.shader}")
        inputs, system_values = fragment_inputs(program, prog.interface, probe, SIZE)
        values = {name: np.ravel(value).astype(F32) for name, value in case.uniforms.items()}
        constants = constant_buffer(program, prog.interface, values, SIZE)
        samp = int(prog.interface["samplers"][0]["fragment"]["samplers"][0][5:-1])
        options = SamplerOptions.llvmpipe(cube_seamless=case.seamless)
        sampler = TextureSampler({samp: our_texture(case)}, options=options)
        execution = Interpreter(program).run(inputs, {0: constants}, sampler=sampler,
                                             system_values=system_values)
        color = np.asarray(execution.outputs[0])
        mesa = rendered.images[first_case + i][y, x].T
        outcome.max_diff, outcome.bad, outcome.nonfinite = compare_with_mesa(color, mesa)
    return outcomes


def _mesa_or_skip() -> dict[str, MesaOutcome]:
    from conftest import _unavailable

    from tilesim.shaders import mesa_fullscreen as mf
    from tilesim.shaders.glsl_compile import mesa_available

    ok, why = mesa_available()
    if not ok:
        _unavailable(f"Mesa unavailable: {why}")
    try:
        return mesa_outcomes()
    except mf.MesaUnavailable as exc:
        _unavailable(f"llvmpipe unavailable: {exc}")
        raise


@pytest.mark.mesa
@pytest.mark.slow
@pytest.mark.parametrize("case_id", [c.id for c in mesa_cases()])
def test_sampler_matches_llvmpipe(case_id):
    outcome = _mesa_or_skip()[case_id]
    assert outcome.error is None, outcome.error
    assert outcome.nonfinite == 0, (f"{case_id}: {outcome.nonfinite} channel values are NaN "
                                    "or infinite (ours or llvmpipe's)")
    assert outcome.bad == 0, (f"{case_id}: {outcome.bad} channel values differ from llvmpipe "
                              f"by more than 2/255 (max {outcome.max_diff * 255:.2f}/255)")
    assert 0 <= outcome.max_diff <= MESA_TOLERANCE + 1e-6, outcome.max_diff


if __name__ == "__main__":
    results = mesa_outcomes()
    for outcome in results.values():
        status = outcome.error or (f"max |diff| = {outcome.max_diff:.3g} "
                                   f"({outcome.max_diff * 255:.3f}/255)  bad={outcome.bad}")
        print(f"{outcome.case.id:60s} {status}")
    worst = max(o.max_diff for o in results.values() if o.error is None)
    print(f"{len(results)} cases, worst {worst * 255:.3f}/255")


def test_cache_geometry_has_one_source(tmp_path):
    """The cache model's geometry is read from the GPU configuration file the timing model
    reads ([caches.texture]); the shader core's own copy agrees with it."""
    from tilesim.render.pipeline.texture_sampler import GPU_CONFIG
    from tilesim.timing.config import load_gpu_config
    from tilesim.timing.shader_core.config import load_core_config

    gpu = load_gpu_config()
    cache = TextureCacheConfig.from_gpu_config()
    assert (cache.caches, cache.size_bytes, cache.ways, cache.line_bytes) == (
        gpu["caches.texture.count"], gpu["caches.texture.size"], gpu["caches.texture.ways"],
        gpu["caches.texture.line_size"])
    assert TextureSampler({}).cache == cache
    core = load_core_config()
    assert (core["texture.cache_size"], core["texture.cache_ways"],
            core["texture.cache_line"]) == (cache.size_bytes, cache.ways, cache.line_bytes)
    # a user's file changes the geometry; a broken one is one clear error naming it
    mine = tmp_path / "gpu.toml"
    mine.write_text(GPU_CONFIG.read_text().replace(
        'ways = { value = 2, unit = "ways", source = "Frame Coherence Table 3.1" }\n'
        'size = { value = 8192', 'ways = { value = 4, unit = "ways", source = "mine" }\n'
        'size = { value = 16384', 1))
    assert TextureCacheConfig.from_gpu_config(mine).ways == 4
    assert TextureCacheConfig.from_gpu_config(mine).size_bytes == 16384
    bad = tmp_path / "bad.toml"
    bad.write_text("[caches]\n")
    with pytest.raises(InputError, match="caches.texture"):
        TextureCacheConfig.from_gpu_config(bad)
