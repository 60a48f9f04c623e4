"""Conformance scenes: texture filtering, mipmaps, wrap modes, non-power-of-two sizes,
formats, cube maps, render-to-texture."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.conformance_scenes.helpers import (
    FS_COLOR,
    FS_TEX,
    VS_MVP_TEX,
    VS_NDC,
    VS_TEX,
    _cells,
    _checker,
    _draw,
    _floor,
    _glmark2_image,
    _hsv,
    _program,
    _quad,
    _quad_uv,
    _ramp_texels,
    _rows,
    _set_matrix,
    _sphere,
    _texture,
)
from tilesim.render.workloads.conformance_scenes.registry import scene
from tilesim.render.workloads.transforms import perspective, rotate, translate


@scene("tex_min_filters", size=(192, 128))
def scene_tex_min_filters(gl: Recorder) -> None:
    """A textured plane receding in perspective, one strip per minification filter (NEAREST,
    LINEAR and the four mipmap filters) with glGenerateMipmap; magnification LINEAR."""
    program = _program(gl, VS_MVP_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    image = _glmark2_image("crate-base.png", 256, fallback_seed=1)
    _texture(gl, image, min_filter="LINEAR", mag_filter="LINEAR", mipmap=True)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    # Turned about y so that no row of pixels has one t (a row whose t * size falls on a
    # texel boundary would be decided by last-bit rounding all along).
    positions, texcoords = _floor(gl, program, tilt=17.0)
    gl.enable("SCISSOR_TEST")
    filters = ("NEAREST", "LINEAR", "NEAREST_MIPMAP_NEAREST", "LINEAR_MIPMAP_NEAREST",
               "NEAREST_MIPMAP_LINEAR", "LINEAR_MIPMAP_LINEAR")
    strip = gl.width // len(filters)
    for k, min_filter in enumerate(filters):
        gl.scissor(k * strip, 0, strip, gl.height)
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", min_filter)
        _draw(gl, "TRIANGLE_FAN", positions, texcoords=texcoords)
    gl.endFrame()


def _level_image(size: int, level: int) -> np.ndarray:
    """Mip level ``level`` (size x size): a solid colour per level with a 2x2 checker."""
    base = np.array(_hsv(level / 8, 0.85, 0.95)) * 255
    dark = base * 0.55
    if size == 1:
        return base.astype(np.uint8)[None, None]
    return _checker(size, 2, tuple(base.astype(int)), tuple(dark.astype(int)))


@scene("tex_mip_explicit", size=(160, 128))
def scene_tex_mip_explicit(gl: Recorder) -> None:
    """Explicitly uploaded mip levels of distinct colours on a receding plane (wrap
    MIRRORED_REPEAT): which level, and which blend of two, every pixel samples, in one strip
    per mipmap filter."""
    program = _program(gl, VS_MVP_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    size, level = 64, 0
    while size >= 1:
        gl.texImage2D("TEXTURE_2D", level, "RGBA", size, size, 0, "RGBA", "UNSIGNED_BYTE",
                      _level_image(size, level))
        size //= 2
        level += 1
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", "NEAREST")
    gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_S", "MIRRORED_REPEAT")
    gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_T", "MIRRORED_REPEAT")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    positions, texcoords = _floor(gl, program, repeat=3.0, tilt=12.0)
    gl.enable("SCISSOR_TEST")
    filters = ("NEAREST_MIPMAP_NEAREST", "LINEAR_MIPMAP_NEAREST", "NEAREST_MIPMAP_LINEAR",
               "LINEAR_MIPMAP_LINEAR")
    strip = gl.width // len(filters)
    for k, min_filter in enumerate(filters):
        gl.scissor(k * strip, 0, strip, gl.height)
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", min_filter)
        _draw(gl, "TRIANGLE_FAN", positions, texcoords=texcoords)
    gl.endFrame()


@scene("tex_wrap_modes", size=(192, 96))
def scene_tex_wrap_modes(gl: Recorder) -> None:
    """REPEAT, CLAMP_TO_EDGE and MIRRORED_REPEAT for s and t (all 9 pairs), texture
    coordinates from -1.25 to 2.25, with NEAREST and with LINEAR filtering."""
    program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    texture = _texture(gl, _ramp_texels(8, 8), min_filter="NEAREST", mag_filter="NEAREST")
    gl.bindTexture("TEXTURE_2D", texture)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    wraps = ("REPEAT", "CLAMP_TO_EDGE", "MIRRORED_REPEAT")
    combos = [(flt, s, t) for flt in ("NEAREST", "LINEAR") for s in wraps for t in wraps]
    for (x, y, cw, ch), (flt, s, t) in zip(_cells(gl, 6, 3), combos, strict=True):
        gl.viewport(x, y, cw, ch)
        for pname, value in (("TEXTURE_MIN_FILTER", flt), ("TEXTURE_MAG_FILTER", flt),
                             ("TEXTURE_WRAP_S", s), ("TEXTURE_WRAP_T", t)):
            gl.texParameteri("TEXTURE_2D", pname, value)
        _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=_quad_uv(-1.25, -1.25, 2.25,
                                                                         2.25))
    gl.endFrame()


@scene("tex_npot")
def scene_tex_npot(gl: Recorder) -> None:
    """A non-power-of-two texture (37 x 23, CLAMP_TO_EDGE, no mipmaps) magnified and
    minified with NEAREST and LINEAR, on axis-aligned and rotated quads."""
    program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    rng = np.random.default_rng(17)
    image = rng.integers(0, 256, (23, 37, 4)).astype(np.uint8)
    image[..., 3] = 255
    image[::5] = (250, 250, 250, 255)
    texture = _texture(gl, image, min_filter="NEAREST", mag_filter="NEAREST",
                       wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    gl.bindTexture("TEXTURE_2D", texture)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    rotated = np.array([[-0.1, -0.8], [0.6, -0.45], [0.25, 0.25], [-0.45, -0.1]])
    for k, flt in enumerate(("NEAREST", "LINEAR")):
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", flt)
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", flt)
        x = -1.0 + k
        _draw(gl, "TRIANGLES", _quad(x + 0.02, 0.05, x + 0.98, 0.98),
              texcoords=_quad_uv(-0.1, -0.1, 1.1, 1.1))
        # Minified: 37 x 23 texels onto about 17 x 11 pixels.
        _draw(gl, "TRIANGLES", _quad(x + 0.1, -0.95, x + 0.1 + 34 / gl.width,
                                     -0.95 + 22 / gl.height),
              texcoords=_quad_uv())
        fan = rotated * 0.9 + [x + 0.55, -0.05]
        _draw(gl, "TRIANGLE_FAN", fan, texcoords=[[0, 0], [1, 0], [1, 1], [0, 1]])
    gl.endFrame()


FS_FORMAT = """
precision highp float;
uniform sampler2D u_tex;
varying vec2 v_uv;
void main() {
    vec4 t = texture2D(u_tex, v_uv);
    vec3 background = vec3(0.9 - 0.7 * v_uv.x, 0.2 + 0.7 * v_uv.y, 0.6);
    gl_FragColor = vec4(mix(background, t.rgb, t.a), t.a);
}
"""


@scene("tex_formats", size=(128, 64))
def scene_tex_formats(gl: Recorder) -> None:
    """Texture formats RGBA, RGB, LUMINANCE, ALPHA, LUMINANCE_ALPHA (UNSIGNED_BYTE) and
    RGB 5_6_5, RGBA 4_4_4_4, RGBA 5_5_5_1, 5x3 texels with row padding (UNPACK_ALIGNMENT 4,
    and 1 for one upload)."""
    program = _program(gl, VS_TEX, FS_FORMAT)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    rng = np.random.default_rng(23)
    w, h = 5, 3
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    u8 = lambda c: rng.integers(0, 256, (h, w, c)).astype(np.uint8)  # noqa: E731
    u16 = lambda hi: rng.integers(0, hi, (h, w)).astype(np.uint16)  # noqa: E731
    uploads = [("RGBA", "UNSIGNED_BYTE", u8(4), 4), ("RGB", "UNSIGNED_BYTE", u8(3), 4),
               ("LUMINANCE", "UNSIGNED_BYTE", u8(1), 4), ("ALPHA", "UNSIGNED_BYTE", u8(1), 4),
               ("LUMINANCE_ALPHA", "UNSIGNED_BYTE", u8(2), 1),
               ("RGB", "UNSIGNED_SHORT_5_6_5", u16(1 << 16), 4),
               ("RGBA", "UNSIGNED_SHORT_4_4_4_4", u16(1 << 16), 4),
               ("RGBA", "UNSIGNED_SHORT_5_5_5_1", u16(1 << 16), 4)]
    for (x, y, cw, ch), (fmt, type_, texels, align) in zip(_cells(gl, 4, 2), uploads,
                                                           strict=True):
        gl.viewport(x, y, cw, ch)
        gl.pixelStorei("UNPACK_ALIGNMENT", align)
        texture = gl.createTexture()
        gl.bindTexture("TEXTURE_2D", texture)
        gl.texImage2D("TEXTURE_2D", 0, fmt, w, h, 0, fmt, type_, _rows(texels, align))
        for pname, value in (("TEXTURE_MIN_FILTER", "NEAREST"),
                             ("TEXTURE_MAG_FILTER", "NEAREST"),
                             ("TEXTURE_WRAP_S", "CLAMP_TO_EDGE"),
                             ("TEXTURE_WRAP_T", "CLAMP_TO_EDGE")):
            gl.texParameteri("TEXTURE_2D", pname, value)
        _draw(gl, "TRIANGLES", _quad(-0.9, -0.9, 0.9, 0.9), texcoords=_quad_uv())
    gl.pixelStorei("UNPACK_ALIGNMENT", 4)
    gl.endFrame()


VS_CUBE = """
attribute vec4 a_position;
uniform mat4 u_mvp;
uniform mat4 u_model;
varying vec3 v_dir;
void main() {
    v_dir = (u_model * vec4(a_position.xyz, 0.0)).xyz;
    gl_Position = u_mvp * a_position;
}
"""

FS_CUBE = """
precision highp float;
uniform samplerCube u_cube;
varying vec3 v_dir;
void main() {
    gl_FragColor = textureCube(u_cube, v_dir);
}
"""


@scene("cubemap", size=(160, 80))
def scene_cubemap(gl: Recorder) -> None:
    """A cube map (six 16 x 16 faces, each its own colour and grid) sampled with
    textureCube on spheres: NEAREST on the left, LINEAR on the right."""
    program = _program(gl, VS_CUBE, FS_CUBE)
    gl.uniform1i(gl.getUniformLocation(program, "u_cube"), 0)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_CUBE_MAP", texture)
    for k, face in enumerate(("TEXTURE_CUBE_MAP_POSITIVE_X", "TEXTURE_CUBE_MAP_NEGATIVE_X",
                              "TEXTURE_CUBE_MAP_POSITIVE_Y", "TEXTURE_CUBE_MAP_NEGATIVE_Y",
                              "TEXTURE_CUBE_MAP_POSITIVE_Z", "TEXTURE_CUBE_MAP_NEGATIVE_Z")):
        base = np.array(_hsv(k / 6, 0.8, 0.95)) * 255
        img = _checker(16, 4, tuple(base.astype(int)), tuple((base * 0.5).astype(int)))
        img[0, :] = img[:, 0] = (255, 255, 255, 255)      # mark row 0 / column 0
        gl.texImage2D(face, 0, "RGBA", 16, 16, 0, "RGBA", "UNSIGNED_BYTE", img)
    for pname, value in (("TEXTURE_WRAP_S", "CLAMP_TO_EDGE"),
                         ("TEXTURE_WRAP_T", "CLAMP_TO_EDGE")):
        gl.texParameteri("TEXTURE_CUBE_MAP", pname, value)
    positions, indices = _sphere()
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    gl.enable("CULL_FACE")
    proj = perspective(45.0, gl.width / 2 / gl.height, 0.5, 20.0)
    for k, flt in enumerate(("NEAREST", "LINEAR")):
        gl.viewport(k * gl.width // 2, 0, gl.width // 2, gl.height)
        gl.texParameteri("TEXTURE_CUBE_MAP", "TEXTURE_MIN_FILTER", flt)
        gl.texParameteri("TEXTURE_CUBE_MAP", "TEXTURE_MAG_FILTER", flt)
        model = rotate("y", 30 + 40 * k) @ rotate("x", 25)
        _set_matrix(gl, program, "u_model", model)
        # Off the view axis: centred on it, the face boundaries |x| = |y| would project onto
        # the screen diagonals, through pixel centres, where the face is a rounding tie.
        _set_matrix(gl, program, "u_mvp", proj @ translate(0.113, -0.071, -2.6) @ model)
        _draw(gl, "TRIANGLES", positions, indices=indices)
    gl.endFrame()


@scene("render_to_texture")
def scene_render_to_texture(gl: Recorder) -> None:
    """Render into a texture through a framebuffer object with a depth renderbuffer, then
    sample it on a perspective quad (frame 0); mipmaps generated from the rendered texture
    and sampled minified (frame 1)."""
    color_program = _program(gl, VS_NDC, FS_COLOR)
    tex_program = _program(gl, VS_MVP_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(tex_program, "u_tex"), 0)
    size = 64
    texture = _texture(gl, None, size=(size, size), min_filter="LINEAR",
                       mag_filter="LINEAR", wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    depth = gl.createRenderbuffer()
    gl.bindRenderbuffer("RENDERBUFFER", depth)
    gl.renderbufferStorage("RENDERBUFFER", "DEPTH_COMPONENT16", size, size)
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", texture, 0)
    gl.framebufferRenderbuffer("FRAMEBUFFER", "DEPTH_ATTACHMENT", "RENDERBUFFER", depth)

    # Frame 0: two intersecting triangles, depth-tested, into the texture.
    gl.viewport(0, 0, size, size)
    gl.useProgram(color_program)
    gl.clearColor(0.9, 0.9, 0.8, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    _draw(gl, "TRIANGLES", np.array([[-0.9, -0.9, -0.5], [0.9, -0.6, 0.5], [-0.3, 0.9, 0.0]]),
          np.array([[1, 0, 0, 1], [1, 1, 0, 1], [1, 0, 1, 1]], dtype=np.float32))
    _draw(gl, "TRIANGLES", np.array([[0.9, -0.9, -0.4], [0.4, 0.9, 0.4], [-0.9, 0.1, 0.3]]),
          np.array([[0, 0, 1, 1], [0, 1, 1, 1], [0, 1, 0, 1]], dtype=np.float32))
    gl.disable("DEPTH_TEST")
    gl.bindFramebuffer("FRAMEBUFFER", 0)
    gl.viewport(0, 0, gl.width, gl.height)
    gl.useProgram(tex_program)
    gl.clearColor(0.1, 0.1, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    proj = perspective(50.0, gl.width / gl.height, 0.5, 20.0)
    _set_matrix(gl, tex_program, "u_mvp",
                proj @ translate(0, 0, -2.2) @ rotate("y", 35) @ rotate("x", -20))
    _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=_quad_uv())
    gl.endFrame()

    # Frame 1: mipmaps of the rendered texture, minified on a smaller receding quad.
    gl.clear("COLOR_BUFFER_BIT")
    gl.generateMipmap("TEXTURE_2D")
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR_MIPMAP_LINEAR")
    gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_S", "REPEAT")
    gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_T", "REPEAT")
    _set_matrix(gl, tex_program, "u_mvp",
                proj @ translate(0, -0.3, -4.0) @ rotate("x", -65))
    _draw(gl, "TRIANGLES", _quad(-2, -2, 2, 2), texcoords=_quad_uv(0, 0, 4, 4))
    gl.endFrame()


@scene("unpack_subimage", size=(128, 96))
def scene_unpack_subimage(gl: Recorder) -> None:
    """EXT_unpack_subimage: texImage2D and texSubImage2D of sub-rectangles of a larger client
    image (UNPACK_ROW_LENGTH, UNPACK_SKIP_ROWS, UNPACK_SKIP_PIXELS) in RGBA and in RGB with
    UNPACK_ALIGNMENT 1 and 8, then the state reset to 0."""
    program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    client = _ramp_texels(37, 29)                       # (29, 37, 4) RGBA, every texel distinct
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    cases = (("RGBA", 4, (37, 3, 5), (37, 8, 11), (16, 12)),
             ("RGB", 1, (37, 7, 2), (37, 1, 20), (13, 11)),
             ("RGB", 8, (33, 2, 9), (35, 14, 1), (15, 10)))
    for k, (fmt, alignment, whole, part, (w, h)) in enumerate(cases):
        pixels = client[..., :len(fmt)]
        row_length = max(whole[0], part[0])
        stride = -(-row_length * len(fmt) // alignment) * alignment
        memory = np.zeros((29, stride), np.uint8)
        memory[:, :37 * len(fmt)] = pixels.reshape(29, -1)
        gl.pixelStorei("UNPACK_ALIGNMENT", alignment)
        texture = gl.createTexture()
        gl.bindTexture("TEXTURE_2D", texture)
        for name, value in zip(("UNPACK_ROW_LENGTH", "UNPACK_SKIP_ROWS", "UNPACK_SKIP_PIXELS"),
                               whole, strict=True):
            gl.pixelStorei(name, value)
        gl.texImage2D("TEXTURE_2D", 0, fmt, w, h, 0, fmt, "UNSIGNED_BYTE", memory.reshape(-1))
        for name, value in zip(("UNPACK_ROW_LENGTH", "UNPACK_SKIP_ROWS", "UNPACK_SKIP_PIXELS"),
                               part, strict=True):
            gl.pixelStorei(name, value)
        gl.texSubImage2D("TEXTURE_2D", 0, 3, 2, 6, 5, fmt, "UNSIGNED_BYTE", memory.reshape(-1))
        for name in ("UNPACK_ROW_LENGTH", "UNPACK_SKIP_ROWS", "UNPACK_SKIP_PIXELS"):
            gl.pixelStorei(name, 0)
        for pname in ("TEXTURE_MIN_FILTER", "TEXTURE_MAG_FILTER"):
            gl.texParameteri("TEXTURE_2D", pname, "NEAREST")
        for pname in ("TEXTURE_WRAP_S", "TEXTURE_WRAP_T"):
            gl.texParameteri("TEXTURE_2D", pname, "CLAMP_TO_EDGE")
        x0 = -1.0 + k * 2 / 3
        _draw(gl, "TRIANGLES", _quad(x0 + 0.02, -0.9, x0 + 2 / 3 - 0.02, 0.9),
              texcoords=_quad_uv())
    gl.pixelStorei("UNPACK_ALIGNMENT", 4)
    gl.endFrame()


def _draw_panels(gl: Recorder, panels) -> None:
    """Each texture of ``panels`` on its own quad across the window, the fourth (mipmapped)
    one minified; off the pixel grid, so that no row or column of pixel centers falls on a
    texel boundary (where NEAREST is decided by the last bit of rounding)."""
    for k, texture in enumerate(panels):
        gl.bindTexture("TEXTURE_2D", texture)
        x0 = -1.0 + k * 0.5
        scale = 0.3 if k == 3 else 1.0                    # the mipmapped one, minified
        _draw(gl, "TRIANGLES", _quad(x0 + 0.031, -0.45 * scale - 0.213,
                                     x0 + 0.031 + 0.437 * scale, 0.443 * scale - 0.213),
              texcoords=_quad_uv())


@scene("bgra_textures", size=(160, 96))
def scene_bgra_textures(gl: Recorder) -> None:
    """EXT_texture_format_BGRA8888: GL_BGRA_EXT textures (B, G, R, A bytes) uploaded whole,
    by sub-rectangles of a larger BGRA client image (EXT_unpack_subimage, as compositors
    upload damage), sampled NEAREST beside RGBA, and LINEAR with glGenerateMipmap."""
    program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    rgba = _ramp_texels(16, 16)
    bgra = np.ascontiguousarray(rgba[..., [2, 1, 0, 3]])
    bgra[5:11, 3:9, 3] = 128                              # some translucent texels
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.enable("BLEND")
    gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
    panels = []
    for fmt, image in (("RGBA", rgba), ("BGRA_EXT", bgra)):
        panels.append(_texture(gl, image, fmt=fmt, min_filter="NEAREST", mag_filter="NEAREST",
                               wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE")))
    # A 16x16 BGRA texture assembled from two rectangles of a 40x30 BGRA client image.
    client = np.ascontiguousarray(_ramp_texels(40, 30)[..., [2, 1, 0, 3]])
    texture = _texture(gl, None, fmt="BGRA_EXT", size=(16, 16), min_filter="NEAREST",
                       mag_filter="NEAREST", wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    gl.pixelStorei("UNPACK_ROW_LENGTH", 40)
    for (x, y, w, h), (skip_pixels, skip_rows) in (((0, 0, 16, 9), (20, 4)),
                                                    ((2, 9, 11, 7), (3, 21))):
        gl.pixelStorei("UNPACK_SKIP_PIXELS", skip_pixels)
        gl.pixelStorei("UNPACK_SKIP_ROWS", skip_rows)
        gl.texSubImage2D("TEXTURE_2D", 0, x, y, w, h, "BGRA_EXT", "UNSIGNED_BYTE",
                         client.reshape(-1))
    for name in ("UNPACK_ROW_LENGTH", "UNPACK_SKIP_PIXELS", "UNPACK_SKIP_ROWS"):
        gl.pixelStorei(name, 0)
    panels.append(texture)
    panels.append(_texture(gl, bgra, fmt="BGRA_EXT", min_filter="LINEAR_MIPMAP_LINEAR",
                           mag_filter="LINEAR", mipmap=True))
    _draw_panels(gl, panels)
    gl.disable("BLEND")
    gl.endFrame()


def _etc1_blocks(width: int, height: int, seed: int) -> np.ndarray:
    """Random ETC1 blocks for a ``width`` x ``height`` image: every bit pattern is a block
    (individual and differential mode, both flips, every codeword and index; differential
    base colors that overflow 0..31 too, which the spec leaves undefined and Mesa decodes
    by byte arithmetic)."""
    blocks = -(-width // 4) * -(-height // 4)
    return np.random.default_rng(seed).integers(0, 256, blocks * 8, dtype=np.uint8)


@scene("etc1_textures", size=(160, 96))
def scene_etc1_textures(gl: Recorder) -> None:
    """OES_compressed_ETC1_RGB8_texture: glCompressedTexImage2D of random ETC1 blocks,
    decoded as Mesa decodes them, with rectangles replaced by glCompressedTexSubImage2D
    (EXT_compressed_ETC1_RGB8_sub_texture): a 16x16 texture magnified NEAREST (each texel
    several pixels, so every decoded value shows), a 13x10 one whose edge blocks are partial
    (CLAMP_TO_EDGE), and a 32x32 one with every mip level uploaded compressed, minified with
    LINEAR_MIPMAP_LINEAR."""
    program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    panels = []
    for seed, (width, height) in ((31, (16, 16)), (32, (13, 10))):
        texture = gl.createTexture()
        gl.bindTexture("TEXTURE_2D", texture)
        gl.compressedTexImage2D("TEXTURE_2D", 0, "ETC1_RGB8_OES", width, height, 0,
                                _etc1_blocks(width, height, seed))
        # EXT_compressed_ETC1_RGB8_sub_texture: whole blocks, and a partial block at the edge
        rects = ((4, 8, 8, 4),) if width == 16 else ((0, 4, 8, 4), (12, 8, 1, 2))
        for k, (x, y, w, h) in enumerate(rects):
            gl.compressedTexSubImage2D("TEXTURE_2D", 0, x, y, w, h, "ETC1_RGB8_OES",
                                       _etc1_blocks(w, h, seed + 100 + k))
        for pname, value in (("TEXTURE_MIN_FILTER", "NEAREST"),
                             ("TEXTURE_MAG_FILTER", "NEAREST"),
                             ("TEXTURE_WRAP_S", "CLAMP_TO_EDGE"),
                             ("TEXTURE_WRAP_T", "CLAMP_TO_EDGE")):
            gl.texParameteri("TEXTURE_2D", pname, value)
        panels.append(texture)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    size, level = 32, 0
    while size >= 1:
        gl.compressedTexImage2D("TEXTURE_2D", level, "ETC1_RGB8_OES", size, size, 0,
                                _etc1_blocks(size, size, 40 + level))
        size, level = size // 2, level + 1
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR_MIPMAP_LINEAR")
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", "LINEAR")
    panels.append(texture)
    for k, texture in enumerate(panels):
        gl.bindTexture("TEXTURE_2D", texture)
        x0 = -1.0 + k * 0.66
        scale = 0.35 if k == 2 else 1.0                   # the mipmapped one, minified
        # Off the pixel grid, so that no pixel center falls on a texel boundary.
        _draw(gl, "TRIANGLES", _quad(x0 + 0.031, -0.45 * scale - 0.113,
                                     x0 + 0.031 + 0.61 * scale, 0.843 * scale - 0.113),
              texcoords=_quad_uv())
    gl.endFrame()


# A texture's RGB (u_alpha 0) or its alpha as gray (u_alpha 1), opaque either way, so that
# the image shows every decoded component.
FS_TEX_RGB_OR_ALPHA = """
precision highp float;
uniform sampler2D u_tex;
uniform float u_alpha;
varying vec2 v_uv;
void main() {
    vec4 t = texture2D(u_tex, v_uv);
    gl_FragColor = vec4(mix(t.rgb, vec3(t.a), u_alpha), 1.0);
}
"""

S3TC_SCENE_FORMATS = ("COMPRESSED_RGB_S3TC_DXT1_EXT", "COMPRESSED_RGBA_S3TC_DXT1_EXT",
                      "COMPRESSED_RGBA_S3TC_DXT3_EXT", "COMPRESSED_RGBA_S3TC_DXT5_EXT")


def _s3tc_blocks(fmt: str, width: int, height: int, seed: int) -> np.ndarray:
    """Random S3TC blocks for a ``width`` x ``height`` image of ``fmt``: every bit pattern is
    a block, so DXT1's four- and three-color modes (color0 > color1 or not) and DXT5's
    seven- and five-step alpha modes all occur, with every index."""
    size = 16 if fmt.endswith(("DXT3_EXT", "DXT5_EXT")) else 8
    blocks = -(-width // 4) * -(-height // 4)
    return np.random.default_rng(seed).integers(0, 256, blocks * size, dtype=np.uint8)


@scene("s3tc_textures", size=(256, 192))
def scene_s3tc_textures(gl: Recorder) -> None:
    """EXT_texture_compression_s3tc (DXT1 RGB / RGBA, DXT3, DXT5): random blocks of each
    format, decoded as llvmpipe decodes them, shown as RGB (top of each pair of rows) and as
    alpha in gray (bottom). Columns: the four formats. Rows 1-2: a 16x16 texture magnified
    NEAREST (each texel several pixels) with an 8x4 rectangle replaced by
    glCompressedTexSubImage2D; rows 3-4: a 13x10 texture whose edge blocks are partial
    (CLAMP_TO_EDGE, LINEAR) for the DXT1 formats, and a 32x32 one with every mip level
    uploaded compressed, minified LINEAR_MIPMAP_LINEAR, for DXT3 / DXT5."""
    program = _program(gl, VS_TEX, FS_TEX_RGB_OR_ALPHA)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    show_alpha = gl.getUniformLocation(program, "u_alpha")
    gl.clearColor(0.0, 0.0, 0.3, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    for column, fmt in enumerate(S3TC_SCENE_FORMATS):
        seed = 60 + 10 * column
        magnified = gl.createTexture()
        gl.bindTexture("TEXTURE_2D", magnified)
        gl.compressedTexImage2D("TEXTURE_2D", 0, fmt, 16, 16, 0, _s3tc_blocks(fmt, 16, 16, seed))
        gl.compressedTexSubImage2D("TEXTURE_2D", 0, 4, 8, 8, 4, fmt,
                                   _s3tc_blocks(fmt, 8, 4, seed + 1))
        for pname, value in (("TEXTURE_MIN_FILTER", "NEAREST"),
                             ("TEXTURE_MAG_FILTER", "NEAREST")):
            gl.texParameteri("TEXTURE_2D", pname, value)
        second = gl.createTexture()
        gl.bindTexture("TEXTURE_2D", second)
        if column < 2:
            gl.compressedTexImage2D("TEXTURE_2D", 0, fmt, 13, 10, 0,
                                    _s3tc_blocks(fmt, 13, 10, seed + 2))
            gl.compressedTexSubImage2D("TEXTURE_2D", 0, 12, 8, 1, 2, fmt,
                                       _s3tc_blocks(fmt, 1, 2, seed + 3))
            for pname, value in (("TEXTURE_MIN_FILTER", "LINEAR"),
                                 ("TEXTURE_MAG_FILTER", "LINEAR"),
                                 ("TEXTURE_WRAP_S", "CLAMP_TO_EDGE"),
                                 ("TEXTURE_WRAP_T", "CLAMP_TO_EDGE")):
                gl.texParameteri("TEXTURE_2D", pname, value)
        else:
            size, level = 32, 0
            while size >= 1:
                gl.compressedTexImage2D("TEXTURE_2D", level, fmt, size, size, 0,
                                        _s3tc_blocks(fmt, size, size, seed + 4 + level))
                size, level = size // 2, level + 1
            gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR_MIPMAP_LINEAR")
            gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", "LINEAR")
        x0 = -1.0 + column * 0.5 + 0.021
        for row, (texture, alpha) in enumerate(((magnified, 0.0), (magnified, 1.0),
                                                (second, 0.0), (second, 1.0))):
            gl.bindTexture("TEXTURE_2D", texture)
            gl.uniform1f(show_alpha, alpha)
            y1 = 1.0 - row * 0.5 - 0.017
            width = 0.46 if texture == magnified or column < 2 else 0.17
            # Off the pixel grid, so that no pixel center falls on a texel boundary.
            _draw(gl, "TRIANGLES", _quad(x0, y1 - width, x0 + width, y1),
                  texcoords=_quad_uv())
    gl.endFrame()


# Half-float texels beyond [0, 1] shown in range: v * 0.25 + 0.375 maps -1.5..2.5 to 0..1.
FS_TEX_RANGE = """
precision highp float;
uniform sampler2D u_tex;
varying vec2 v_uv;
void main() {
    gl_FragColor = texture2D(u_tex, v_uv) * 0.25 + 0.375;
}
"""


def _half_texels(width: int, height: int, channels: int, seed: int) -> np.ndarray:
    """(H, W, C) float16 texels in -1.5..2.5 (beyond unorm's range on either side), smooth
    enough that LINEAR filtering shows, with a few random spikes."""
    t, s = np.mgrid[0:height, 0:width].astype(np.float32)
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 6, channels)
    values = np.stack([2.0 * np.sin(s / max(width - 1, 1) * 4 + t / max(height - 1, 1) * 3
                                    + p) + 0.5 for p in phase], -1)
    spikes = rng.random((height, width, channels)) < 0.08
    values[spikes] = rng.uniform(-1.5, 2.5, int(spikes.sum()))
    return values.astype(np.float16)


@scene("half_float_textures", size=(160, 96))
def scene_half_float_textures(gl: Recorder) -> None:
    """OES_texture_half_float (+ _linear): HALF_FLOAT_OES textures holding values beyond
    [0, 1] (shown by the shader as v / 4 + 3 / 8): RGBA magnified NEAREST and LINEAR, an RGB
    one with a texSubImage2D rectangle, and a LUMINANCE_ALPHA one with every mip level
    uploaded, minified LINEAR_MIPMAP_LINEAR (blended by its alpha)."""
    program = _program(gl, VS_TEX, FS_TEX_RANGE)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    gl.clearColor(0.1, 0.1, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    panels = []
    rgba = _half_texels(8, 8, 4, seed=1)
    for filt in ("NEAREST", "LINEAR"):
        panels.append(_texture(gl, rgba, fmt="RGBA", type_="HALF_FLOAT_OES", min_filter=filt,
                               mag_filter=filt, wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE")))
    # RGB rows of 5 texels are 30 bytes: UNPACK_ALIGNMENT 2 reads them unpadded
    gl.pixelStorei("UNPACK_ALIGNMENT", 2)
    panels.append(_texture(gl, _half_texels(5, 6, 3, seed=2), fmt="RGB",
                           type_="HALF_FLOAT_OES", min_filter="NEAREST", mag_filter="LINEAR",
                           wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE")))
    gl.texSubImage2D("TEXTURE_2D", 0, 1, 2, 3, 2, "RGB", "HALF_FLOAT_OES",
                     np.full((2, 3, 3), -1.0, np.float16))
    gl.pixelStorei("UNPACK_ALIGNMENT", 4)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    size, level = 32, 0
    while size >= 1:
        gl.texImage2D("TEXTURE_2D", level, "LUMINANCE_ALPHA", size, size, 0, "LUMINANCE_ALPHA",
                      "HALF_FLOAT_OES", _half_texels(size, size, 2, seed=10 + level))
        size, level = size // 2, level + 1
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR_MIPMAP_LINEAR")
    panels.append(texture)
    gl.enable("BLEND")
    gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
    _draw_panels(gl, panels)
    gl.disable("BLEND")
    gl.endFrame()


@scene("anisotropic_parameter", size=(160, 96))
def scene_anisotropic_parameter(gl: Recorder) -> None:
    """EXT_texture_filter_anisotropic: TEXTURE_MAX_ANISOTROPY_EXT set (16, 4) on textures
    of every filter kind and set back to 1 before they are drawn on a receding quad: the
    parameter is accepted, recorded and replayed on both sides, and a value back at 1 filters
    as ES 2.0 does (``anisotropic_filtering`` draws with values above 1)."""
    program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    image = _glmark2_image("crate-base.png", 128, fallback_seed=7)
    panels = ((_texture(gl, image[40:56, 40:56].copy(), min_filter="LINEAR",
                        mag_filter="LINEAR"), 0.9),          # magnified
              (_texture(gl, image, min_filter="LINEAR", mag_filter="LINEAR"), 0.55),
              (_texture(gl, image, min_filter="NEAREST", mag_filter="NEAREST"), 0.3),
              (_texture(gl, image, min_filter="LINEAR_MIPMAP_LINEAR", mag_filter="LINEAR",
                        mipmap=True), 0.3))
    for k, (texture, scale) in enumerate(panels):
        gl.bindTexture("TEXTURE_2D", texture)
        gl.texParameterf("TEXTURE_2D", "TEXTURE_MAX_ANISOTROPY_EXT", 16.0 if k % 2 else 4.0)
        gl.texParameterf("TEXTURE_2D", "TEXTURE_MAX_ANISOTROPY_EXT", 1.0)
        x0 = -1.0 + k * 0.5
        _draw(gl, "TRIANGLES", _quad(x0 + 0.031, -0.7 * scale - 0.013,
                                     x0 + 0.031 + 0.45 * scale, 0.75 * scale - 0.013),
              texcoords=_quad_uv())
    gl.endFrame()


# OES_texture_3D: coordinates (u, v, r) with r from a uniform plus a slope along the quad;
# texture3DProj divides by q = u_q (1: the same coordinates), and a bias is added.
FS_TEX3D = """
#extension GL_OES_texture_3D : require
precision highp float;
uniform mediump sampler3D u_tex3d;
uniform vec3 u_scale;
uniform float u_r;
uniform float u_q;
uniform float u_bias;
varying vec2 v_uv;
void main() {
    vec3 p = vec3(v_uv, u_r + 0.5 * (v_uv.x - v_uv.y)) * u_scale;
    vec4 a = texture3D(u_tex3d, p, u_bias);
    vec4 b = texture3DProj(u_tex3d, vec4(p * u_q, u_q));
    gl_FragColor = mix(a, b, step(1.5, u_q));
}
"""


def _texels_3d(width: int, height: int, depth: int, seed: int) -> np.ndarray:
    """(D * H, W, 4) uint8: random texels, slice after slice (each slice its own colors)."""
    return np.random.default_rng(seed).integers(0, 256, (depth * height, width, 4),
                                                dtype=np.uint8)


@scene("texture_3d", size=(192, 128))
def scene_texture_3d(gl: Recorder) -> None:
    """OES_texture_3D: random 3D textures drawn on quads whose r coordinate varies across
    them. Top row: an 8x8x4 texture magnified NEAREST with each wrap mode on r (REPEAT,
    CLAMP_TO_EDGE, MIRRORED_REPEAT; r beyond [0, 1]) and a box replaced by glTexSubImage3DOES;
    LINEAR magnified (8.8 fixed point in llvmpipe: REPEAT / CLAMP_TO_EDGE) and through
    texture3DProj (q 2). Bottom row: a 16x16x16 texture with all 5 levels uploaded, minified
    LINEAR_MIPMAP_LINEAR and NEAREST_MIPMAP_NEAREST (the LOD of three dimensions), with a
    bias, an RGB 5x3x2 non-power-of-two texture LINEAR with MIRRORED_REPEAT (filtered in
    float), and slice 1 of a 16x16x2 texture filled by glCopyTexSubImage3DOES from the
    window."""
    gl.clearColor(0.1, 0.1, 0.2, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    # What glCopyTexSubImage3DOES copies: a gradient triangle, drawn first.
    _program(gl, VS_NDC, FS_COLOR)
    _draw(gl, "TRIANGLES", [[-1, -1], [-0.75, -1], [-1, -0.7]],
          np.array([[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1]], np.float32))
    program = _program(gl, VS_TEX, FS_TEX3D)
    location = {name: gl.getUniformLocation(program, name)
                for name in ("u_tex3d", "u_scale", "u_r", "u_q", "u_bias")}
    gl.uniform1i(location["u_tex3d"], 0)

    def texture(width, height, depth, filters, wraps, seed, fmt="RGBA", levels=1):
        ident = gl.createTexture()
        gl.bindTexture("TEXTURE_3D_OES", ident)
        gl.pixelStorei("UNPACK_ALIGNMENT", 1)
        for level in range(levels):
            w, h, d = (max(1, v >> level) for v in (width, height, depth))
            texels = _texels_3d(w, h, d, seed + level)
            if fmt == "RGB":
                texels = np.ascontiguousarray(texels[..., :3])
            gl.texImage3D("TEXTURE_3D_OES", level, fmt, w, h, d, 0, fmt, "UNSIGNED_BYTE",
                          texels)
        for pname, value in zip(("TEXTURE_MIN_FILTER", "TEXTURE_MAG_FILTER"), filters,
                                strict=True):
            gl.texParameteri("TEXTURE_3D_OES", pname, value)
        for pname, value in zip(("TEXTURE_WRAP_S", "TEXTURE_WRAP_T", "TEXTURE_WRAP_R_OES"),
                                wraps, strict=True):
            gl.texParameteri("TEXTURE_3D_OES", pname, value)
        return ident

    small = [texture(8, 8, 4, ("NEAREST", "NEAREST"), ("REPEAT", "REPEAT", wrap), 300 + k)
             for k, wrap in enumerate(("REPEAT", "CLAMP_TO_EDGE", "MIRRORED_REPEAT"))]
    gl.bindTexture("TEXTURE_3D_OES", small[0])
    gl.texSubImage3D("TEXTURE_3D_OES", 0, 2, 3, 1, 4, 3, 2, "RGBA", "UNSIGNED_BYTE",
                     np.full((2 * 3, 4, 4), (255, 255, 0, 255), np.uint8))
    linear = texture(8, 8, 4, ("LINEAR", "LINEAR"), ("REPEAT", "CLAMP_TO_EDGE", "REPEAT"), 310)
    mipmapped = texture(16, 16, 16, ("LINEAR_MIPMAP_LINEAR", "LINEAR"),
                        ("REPEAT", "REPEAT", "REPEAT"), 320, levels=5)
    nearest_mip = texture(16, 16, 16, ("NEAREST_MIPMAP_NEAREST", "NEAREST"),
                          ("REPEAT", "REPEAT", "CLAMP_TO_EDGE"), 330, levels=5)
    npot = texture(5, 3, 2, ("LINEAR", "LINEAR"),
                   ("MIRRORED_REPEAT", "CLAMP_TO_EDGE", "MIRRORED_REPEAT"), 340, fmt="RGB")
    copied = texture(16, 16, 2, ("NEAREST", "NEAREST"), ("CLAMP_TO_EDGE",) * 3, 350)
    gl.copyTexSubImage3D("TEXTURE_3D_OES", 0, 2, 1, 1, 0, 0, 14, 12)
    # (texture, scale of (u, v, r), r offset, q, bias, row, column)
    panels = [(small[0], (1.0, 1.0, 1.0), 0.3, 1.0, 0.0, 0, 0),
              (small[1], (1.0, 1.0, 2.0), 0.2, 1.0, 0.0, 0, 1),
              (small[2], (1.0, 1.0, 2.0), 0.2, 1.0, 0.0, 0, 2),
              (linear, (1.0, 1.0, 1.5), 0.1, 1.0, 0.0, 0, 3),
              (linear, (1.3, 1.0, 1.0), 0.4, 2.0, 0.0, 0, 4),
              (mipmapped, (4.0, 3.0, 2.0), 0.1, 1.0, 0.0, 1, 0),
              (mipmapped, (2.0, 2.0, 6.0), 0.3, 1.0, 0.7, 1, 1),
              (nearest_mip, (5.0, 2.0, 3.0), 0.2, 1.0, 0.0, 1, 2),
              (npot, (1.7, 1.2, 1.9), -0.3, 1.0, 0.0, 1, 3),
              (copied, (1.0, 1.0, 1.0), 0.75, 1.0, 0.0, 1, 4)]
    for ident, scale, r, q, bias, row, column in panels:
        gl.bindTexture("TEXTURE_3D_OES", ident)
        gl.uniform3f(location["u_scale"], *scale)
        gl.uniform1f(location["u_r"], r)
        gl.uniform1f(location["u_q"], q)
        gl.uniform1f(location["u_bias"], bias)
        x0 = -1.0 + column * 0.4 + 0.023
        y1 = 0.98 - row * 1.0
        # Off the pixel grid, so that no pixel center falls on a texel boundary.
        _draw(gl, "TRIANGLES", _quad(x0, y1 - 0.86, x0 + 0.36, y1 - 0.017),
              texcoords=_quad_uv())
    gl.endFrame()


# EXT_shader_texture_lod: one lookup per program, selected by the scene; the LOD and the
# gradients vary across each quad (v_uv), so every level and blend between levels shows.
_LOD_LOOKUPS = {
    "lod": "texture2DLodEXT(u_tex, v_uv * u_scale, v_uv.x * 6.0 - 0.5)",
    "proj_lod": "texture2DProjLodEXT(u_tex, vec3(v_uv * u_scale * 1.7, 1.7), v_uv.y * 5.0)",
    "proj4_lod": "texture2DProjLodEXT(u_tex, vec4(v_uv * u_scale * 0.6, 0.3, 0.6), "
                 "4.5 - v_uv.x * 5.0)",
    "grad": "texture2DGradEXT(u_tex, v_uv * u_scale, vec2(0.02 + 0.5 * v_uv.x, 0.01), "
            "vec2(0.0, 0.03 + 0.2 * v_uv.y))",
    "proj_grad": "texture2DProjGradEXT(u_tex, vec4(v_uv * u_scale * 2.0, 0.0, 2.0), "
                 "vec2(0.25 * v_uv.y, 0.0), vec2(0.01, 0.2 * v_uv.x))",
    "cube_lod": "textureCubeLodEXT(u_cube, vec3(v_uv * 2.0 - 1.0, 0.7 - 0.4 * v_uv.x), "
                "v_uv.y * 4.5)",
    "cube_grad": "textureCubeGradEXT(u_cube, vec3(0.8, v_uv * 2.0 - 1.0), "
                 "vec3(0.0, 0.3 * v_uv.x, 0.0), vec3(0.0, 0.0, 0.2 * v_uv.y))",
}
FS_TEXTURE_LOD = """
#extension GL_EXT_shader_texture_lod : require
precision highp float;
uniform sampler2D u_tex;
uniform samplerCube u_cube;
uniform vec2 u_scale;
varying vec2 v_uv;
void main() {
    gl_FragColor = LOOKUP;
}
"""


def _mip_chain(gl: Recorder, target: str, size: int, seed: int) -> None:
    """Every level of ``target`` (TEXTURE_2D or a cube face): random texels tinted by the
    level, so that the level a lookup reads shows."""
    rng = np.random.default_rng(seed)
    level = 0
    while size >= 1:
        tint = np.array(_hsv(level / 7, 0.9, 1.0))
        texels = (rng.integers(64, 256, (size, size, 4)) * tint).astype(np.uint8)
        texels[..., 3] = 255
        gl.texImage2D(target, level, "RGBA", size, size, 0, "RGBA", "UNSIGNED_BYTE", texels)
        size, level = size // 2, level + 1


@scene("shader_texture_lod", size=(224, 96))
def scene_shader_texture_lod(gl: Recorder) -> None:
    """EXT_shader_texture_lod in fragment shaders: texture2DLodEXT, texture2DProjLodEXT
    (vec3 and vec4 coordinates), texture2DGradEXT, texture2DProjGradEXT, textureCubeLodEXT
    and textureCubeGradEXT, with the LOD or gradients varying across each quad, on a 32x32
    texture and a 16x16 cube map whose levels differ in color: top row trilinear
    (LINEAR_MIPMAP_LINEAR), bottom row NEAREST_MIPMAP_NEAREST with LINEAR magnification (the
    magnification switch-over at the explicit LOD)."""
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    _mip_chain(gl, "TEXTURE_2D", 32, 400)
    gl.activeTexture(1)
    cube = gl.createTexture()
    gl.bindTexture("TEXTURE_CUBE_MAP", cube)
    for k in range(6):
        _mip_chain(gl, f"TEXTURE_CUBE_MAP_{('POSITIVE', 'NEGATIVE')[k % 2]}_"
                   f"{'XYZ'[k // 2]}", 16, 410 + k)
    gl.activeTexture(0)
    for row, (min_filter, mag_filter) in enumerate((("LINEAR_MIPMAP_LINEAR", "LINEAR"),
                                                   ("NEAREST_MIPMAP_NEAREST", "LINEAR"))):
        for unit, (target, ident) in enumerate((("TEXTURE_2D", texture),
                                                ("TEXTURE_CUBE_MAP", cube))):
            gl.activeTexture(unit)
            gl.bindTexture(target, ident)
            gl.texParameteri(target, "TEXTURE_MIN_FILTER", min_filter)
            gl.texParameteri(target, "TEXTURE_MAG_FILTER", mag_filter)
        gl.activeTexture(0)
        for column, lookup in enumerate(_LOD_LOOKUPS.values()):
            program = _program(gl, VS_TEX, FS_TEXTURE_LOD.replace("LOOKUP", lookup))
            gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
            gl.uniform1i(gl.getUniformLocation(program, "u_cube"), 1)
            gl.uniform2f(gl.getUniformLocation(program, "u_scale"), 3.0, 2.0)
            x0 = -1.0 + column * (2.0 / 7) + 0.017
            y1 = 0.98 - row * 1.0
            _draw(gl, "TRIANGLES", _quad(x0, y1 - 0.9, x0 + 2.0 / 7 - 0.04, y1 - 0.013),
                  texcoords=_quad_uv())
    gl.endFrame()


@scene("anisotropic_filtering", size=(192, 128))
def scene_anisotropic_filtering(gl: Recorder) -> None:
    """EXT_texture_filter_anisotropic drawn with: the receding plane of ``tex_min_filters``
    in four strips, TEXTURE_MAX_ANISOTROPY_EXT 16 with LINEAR_MIPMAP_LINEAR (mipmaps made by
    glGenerateMipmap), 4 with LINEAR_MIPMAP_NEAREST, 16 with LINEAR (one level) and 2 with
    NEAREST: llvmpipe filters each through its elliptical footprint (any filter), which
    tilesim reproduces (render/pipeline/texture_sampler.py, _anisotropic)."""
    program = _program(gl, VS_MVP_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    image = _glmark2_image("crate-base.png", 128, fallback_seed=11)
    mipmapped = _texture(gl, image, min_filter="LINEAR", mag_filter="LINEAR", mipmap=True)
    single = _texture(gl, image, min_filter="LINEAR", mag_filter="LINEAR")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    positions, texcoords = _floor(gl, program, tilt=17.0)
    gl.enable("SCISSOR_TEST")
    strips = ((mipmapped, "LINEAR_MIPMAP_LINEAR", "LINEAR", 16.0),
              (mipmapped, "LINEAR_MIPMAP_NEAREST", "LINEAR", 4.0),
              (single, "LINEAR", "LINEAR", 16.0),
              (single, "NEAREST", "NEAREST", 2.0))
    width = gl.width // len(strips)
    for k, (texture, min_filter, mag_filter, anisotropy) in enumerate(strips):
        gl.scissor(k * width, 0, width, gl.height)
        gl.bindTexture("TEXTURE_2D", texture)
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", min_filter)
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", mag_filter)
        gl.texParameterf("TEXTURE_2D", "TEXTURE_MAX_ANISOTROPY_EXT", anisotropy)
        _draw(gl, "TRIANGLE_FAN", positions, texcoords=texcoords)
    gl.disable("SCISSOR_TEST")
    gl.endFrame()
