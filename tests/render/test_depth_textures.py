"""Depth textures (GL_OES_depth_texture) and copies from the framebuffer
(copyTexImage2D / copyTexSubImage2D) in the texture model and the renderer.

What Mesa does, which these tests pin (checked against llvmpipe; the conformance scenes
``shadow_map`` and ``copy_tex_image`` compare whole images): a depth texture samples as
(d, d, d, 1); UNSIGNED_SHORT keeps 16 bits, UNSIGNED_INT 24 (client values u >> 8);
copies into packed formats truncate the 8-bit framebuffer values (c >> 3 for 5 bits);
copyTexSubImage2D leaves the texels whose source lies outside the framebuffer unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.errors import InputError
from tilesim.render.gl.commands import Recorder
from tilesim.render.gl.textures import Texture
from tilesim.render.pipeline.renderer import Renderer

VS = """attribute vec4 pos;
void main() { gl_Position = pos; }"""
FS = """precision mediump float;
void main() { gl_FragColor = vec4(0.2, 0.4, 0.6, 1.0); }"""
VS_TEX = """attribute vec4 pos; attribute vec2 uv; varying vec2 v_uv;
void main() { v_uv = uv; gl_Position = pos; }"""
FS_TEX = """precision highp float; uniform highp sampler2D tex; varying vec2 v_uv;
void main() { gl_FragColor = texture2D(tex, v_uv); }"""


# --- the texture model (no Mesa needed) ------------------------------------------------------

def _depth_texture(type_: str, values=None, size=(4, 2)) -> Texture:
    texture = Texture("TEXTURE_2D")
    texture.tex_image_2d("TEXTURE_2D", 0, "DEPTH_COMPONENT", *size, "DEPTH_COMPONENT", type_,
                         values)
    return texture


def test_unsigned_short_depth_keeps_16_bits_and_samples_as_d_d_d_1():
    values = np.array([0, 1, 32768, 65535, 7, 8, 9, 10], np.uint16)
    texture = _depth_texture("UNSIGNED_SHORT", values)
    image = texture.image(0, 0)
    assert image.bits == (16,) and image.bytes_per_texel == 2
    assert texture.level_depth("TEXTURE_2D", 0).ravel().tolist() == values.tolist()
    d = values.astype(np.float32) * np.float32(1 / 65535)
    texels = image.texels.reshape(-1, 4)
    assert np.array_equal(texels[:, 0], d) and np.array_equal(texels[:, 2], d)
    assert (texels[:, 3] == 1).all()
    assert texture.is_depth and not texture.is_complete()  # a mipmapping min filter
    texture.parameter("TEXTURE_MIN_FILTER", "NEAREST")
    assert texture.is_complete()


def test_unsigned_int_depth_keeps_24_bits_truncating_the_client_values():
    values = np.array([0, 0xFF, 0x100, 0x123456FF, 0x80000000, 0xFFFFFFFF, 5, 6], np.uint32)
    texture = _depth_texture("UNSIGNED_INT", values)
    assert texture.image(0, 0).bits == (24,)
    assert texture.level_depth("TEXTURE_2D", 0).ravel().tolist() == (values >> 8).tolist()
    assert texture.image(0, 0).texels.reshape(-1, 4)[5, 0] == np.float32(1.0)


def test_depth_texture_without_data_is_zero_and_stores_rendered_depth():
    texture = _depth_texture("UNSIGNED_INT", None, size=(3, 2))
    assert not texture.level_depth("TEXTURE_2D", 0).any()
    version = texture.version
    texture.store_depth("TEXTURE_2D", 0, np.array([[65535, 0], [1, 2]]), 16)
    assert texture.version > version
    stored = texture.level_depth("TEXTURE_2D", 0)
    assert stored[:, :2].tolist() == [[0xFFFFFF, 0], [256, 512]]  # 16 -> 24 bits, rounded
    assert stored[:, 2].tolist() == [0, 0]


@pytest.mark.parametrize("fmt, type_, message", [
    ("DEPTH_COMPONENT", "UNSIGNED_BYTE", "DEPTH_COMPONENT needs type"),
    ("RGBA", "UNSIGNED_INT", "goes with format DEPTH_COMPONENT"),
    ("LUMINANCE", "UNSIGNED_SHORT", "goes with format DEPTH_COMPONENT"),
])
def test_bad_depth_format_type_pairs_are_errors_naming_the_command(fmt, type_, message):
    texture = Texture("TEXTURE_2D")
    with pytest.raises(InputError, match=f"texImage2D: .*{message}"):
        texture.tex_image_2d("TEXTURE_2D", 0, fmt, 2, 2, fmt, type_, None)


def test_depth_textures_refuse_mipmaps_and_color_copies():
    texture = _depth_texture("UNSIGNED_SHORT")
    with pytest.raises(InputError, match="generateMipmap: .*depth texture"):
        texture.generate_mipmap()
    framebuffer = np.zeros((4, 4, 4), np.uint8)
    with pytest.raises(InputError, match="copyTexSubImage2D: .*depth texture"):
        texture.copy_tex_sub_image_2d("TEXTURE_2D", 0, 0, 0, 0, 0, 2, 2, framebuffer)
    with pytest.raises(InputError, match="depth texture"):
        texture.write_rgba("TEXTURE_2D", 0, np.zeros((2, 4, 4)))


def _framebuffer(height=6, width=8) -> np.ndarray:
    """(H, W, 4) uint8 with distinct values: R = 10 x + 3, G = 20 y + 1, B = 200, A = 77."""
    ys, xs = np.mgrid[0:height, 0:width]
    return np.stack([10 * xs + 3, 20 * ys + 1, np.full_like(xs, 200), np.full_like(xs, 77)],
                    -1).astype(np.uint8)


def test_copy_tex_image_2d_converts_to_the_format_and_zeroes_pixels_outside():
    fb = _framebuffer()
    texture = Texture("TEXTURE_2D")
    texture.copy_tex_image_2d("TEXTURE_2D", 0, "LUMINANCE_ALPHA", 6, 4, 4, 3, fb)
    image = texture.image(0, 0)
    assert (image.width, image.height, image.format) == (4, 3, "LUMINANCE_ALPHA")
    # Source x 6..9, y 4..6 of an 8 x 6 framebuffer: x 6, 7 and y 4, 5 inside.
    assert image.stored[:2, :2, 0].tolist() == [[63, 73], [63, 73]]
    assert image.stored[:2, :2, 1].tolist() == [[77, 77], [77, 77]]
    assert not image.stored[2:].any() and not image.stored[:, 2:].any()


def test_copy_tex_sub_image_2d_clips_and_keeps_texels_outside_the_framebuffer():
    fb = _framebuffer()
    texture = Texture("TEXTURE_2D")
    texture.tex_image_2d("TEXTURE_2D", 0, "RGB", 5, 5, "RGB", "UNSIGNED_BYTE",
                         np.full((5, 5, 3), 9, np.uint8), unpack_alignment=1)
    texture.copy_tex_sub_image_2d("TEXTURE_2D", 0, 1, 1, -1, 4, 3, 3, fb)
    stored = texture.image(0, 0).stored
    # Source x -1..1, y 4..6: x 0, 1 and y 4, 5 inside -> texels x 2, 3, y 1, 2.
    assert stored[1:3, 2:4].tolist() == [[[3, 81, 200], [13, 81, 200]],
                                         [[3, 101, 200], [13, 101, 200]]]
    kept = np.ones((5, 5), bool)
    kept[1:3, 2:4] = False
    assert (stored[kept] == 9).all()


def test_copies_into_packed_formats_truncate_as_mesa_packs():
    fb = np.array([[[255, 7, 8, 0], [9, 250, 131, 255]]], np.uint8)
    texture = Texture("TEXTURE_2D")
    texture.tex_image_2d("TEXTURE_2D", 0, "RGB", 2, 1, "RGB", "UNSIGNED_SHORT_5_6_5",
                         np.zeros(4, np.uint8))
    texture.copy_tex_sub_image_2d("TEXTURE_2D", 0, 0, 0, 0, 0, 2, 1, fb)
    assert texture.image(0, 0).stored[0].tolist() == [[31, 1, 1], [1, 62, 16]]


def test_copies_needing_alpha_from_a_framebuffer_without_it_are_errors():
    texture = Texture("TEXTURE_2D")
    with pytest.raises(InputError, match="copyTexImage2D: format ALPHA needs alpha"):
        texture.copy_tex_image_2d("TEXTURE_2D", 0, "ALPHA", 0, 0, 2, 2, _framebuffer(),
                                  framebuffer_alpha=False)
    texture.tex_image_2d("TEXTURE_2D", 0, "RGB", 2, 2, "RGB", "UNSIGNED_BYTE", None)
    with pytest.raises(InputError, match="copyTexSubImage2D: rectangle 3x1 at"):
        texture.copy_tex_sub_image_2d("TEXTURE_2D", 0, 0, 0, 0, 0, 3, 1, _framebuffer())


# --- the renderer (programs compile through Mesa) ---------------------------------------------

def _quad(z: float) -> np.ndarray:
    return np.array([[-1, -1, z, 1], [1, -1, z, 1], [1, 1, z, 1],
                     [-1, -1, z, 1], [1, 1, z, 1], [-1, 1, z, 1]], np.float32)


def _draw_quad(gl: Recorder, z: float, x0=-1.0, x1=1.0) -> None:
    positions = _quad(z)
    positions[:, 0] = np.where(positions[:, 0] < 0, x0, x1)
    gl.vertexAttribPointer(0, 4, "FLOAT", False, 0, positions)
    gl.enableVertexAttribArray(0)
    gl.drawArrays("TRIANGLES", 0, 6)


def _depth_fbo(gl: Recorder, type_: str, size: int = 16) -> tuple[int, int]:
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    gl.texImage2D("TEXTURE_2D", 0, "DEPTH_COMPONENT", size, size, 0, "DEPTH_COMPONENT", type_,
                  None)
    for pname in ("TEXTURE_MIN_FILTER", "TEXTURE_MAG_FILTER"):
        gl.texParameteri("TEXTURE_2D", pname, "NEAREST")
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer(fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", texture, 0)
    return texture, fbo


@pytest.mark.mesa
@pytest.mark.parametrize("type_, bits", [("UNSIGNED_SHORT", 16), ("UNSIGNED_INT", 24)])
def test_depth_only_framebuffer_renders_into_the_depth_texture(mesa, type_, bits):
    gl = Recorder(16, 16)
    program = gl.createProgram(VS, FS, attrib_locations={"pos": 0})
    gl.useProgram(program)
    texture, _ = _depth_fbo(gl, type_)
    gl.viewport(0, 0, 16, 16)
    gl.enable("DEPTH_TEST")
    gl.clear("DEPTH_BUFFER_BIT")
    _draw_quad(gl, 0.25, -1.0, 0.0)   # left half at window depth 0.625
    gl.bindFramebuffer(0)
    gl.endFrame()
    renderer = Renderer(16, 16)
    (result,) = renderer.render(gl.recorded_frames())
    depth = renderer.state.textures[texture].level_depth("TEXTURE_2D", 0)
    top = (1 << bits) - 1
    assert (depth[:, :8] == int(np.floor(0.625 * top + 0.5))).all()
    assert (depth[:, 8:] == top).all()
    (fbo_pass,) = result.counters.passes
    assert fbo_pass.target == "fbo1"
    tiles = fbo_pass.tiles
    assert tiles["color_writes"].sum() == 0 and tiles["color_flush_bytes"].sum() == 0
    assert tiles["depth_writes"].sum() == 128
    assert tiles["depth_flush_bytes"].sum() == 256 * (2 if bits == 16 else 4)


@pytest.mark.mesa
def test_depth_texture_keeps_its_values_in_another_framebuffer_and_samples_as_d_d_d_1(mesa):
    gl = Recorder(16, 16)
    program = gl.createProgram(VS, FS, attrib_locations={"pos": 0})
    gl.useProgram(program)
    depth, _ = _depth_fbo(gl, "UNSIGNED_SHORT")
    gl.viewport(0, 0, 16, 16)
    gl.enable("DEPTH_TEST")
    gl.clear("DEPTH_BUFFER_BIT")
    _draw_quad(gl, 0.0, -1.0, 0.0)            # left half at depth 0.5
    # A second framebuffer: a color texture with the same depth texture, not cleared.
    color = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", color)
    gl.texImage2D("TEXTURE_2D", 0, "RGBA", 16, 16, 0, "RGBA", "UNSIGNED_BYTE", None)
    fbo2 = gl.createFramebuffer()
    gl.bindFramebuffer(fbo2)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", color, 0)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", depth, 0)
    _draw_quad(gl, 0.5)                        # depth 0.75: behind the left half only
    gl.bindFramebuffer(0)
    sampler = gl.createProgram(VS_TEX, FS_TEX, attrib_locations={"pos": 0, "uv": 1})
    gl.useProgram(sampler)
    gl.uniform1i(gl.getUniformLocation(sampler, "tex"), 0)
    gl.bindTexture("TEXTURE_2D", depth)
    gl.disable("DEPTH_TEST")
    gl.vertexAttribPointer(1, 2, "FLOAT", False, 0,
                           np.array([[0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]],
                                    np.float32))
    gl.enableVertexAttribArray(1)
    _draw_quad(gl, 0.0)
    gl.endFrame()
    renderer = Renderer(16, 16)
    (result,) = renderer.render(gl.recorded_frames())
    written = renderer.state.textures[color].level_rgba("TEXTURE_2D", 0)
    assert (written[:, :8, 3] == 0).all()              # occluded by the loaded depth
    assert np.allclose(written[:, 8:], [0.2, 0.4, 0.6, 1.0], atol=1 / 255)
    image = result.image[::-1].astype(int)             # row 0 = window y 0
    d_left, d_right = round(0.5 * 65535) / 65535, round(0.75 * 65535) / 65535
    assert (image[:, :8] == [round(255 * d_left)] * 3 + [255]).all()
    assert (image[:, 8:] == [round(255 * d_right)] * 3 + [255]).all()


@pytest.mark.mesa
def test_copy_commands_read_the_bound_framebuffer_and_need_a_color_buffer(mesa):
    gl = Recorder(8, 8)
    gl.clearColor(1.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    gl.copyTexImage2D("TEXTURE_2D", 0, "RGB", 2, 2, 4, 4)
    _depth_fbo(gl, "UNSIGNED_SHORT", 8)
    gl.bindTexture("TEXTURE_2D", texture)
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 0, 0, 0, 0, 2, 2)
    gl.endFrame()
    renderer = Renderer(8, 8)
    with pytest.raises(InputError, match=r"\(copyTexSubImage2D\).*no color attachment"):
        list(renderer.render(gl.recorded_frames()))
    image = renderer.state.textures[texture].image(0, 0)
    assert (image.width, image.height) == (4, 4)
    assert (image.stored == [255, 0, 0]).all()
