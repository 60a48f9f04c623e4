"""The GL replayer: recorded scenes replayed on Mesa llvmpipe give pixels computed by hand."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from conftest import require_mesa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilesim.errors import InputError
from tilesim.render.gl.commands import SCHEMA, Recorder, Uniform, make_command
from tilesim.render.reference.replay_gl import (
    FORMAT_CHANNELS,
    GL_ENUMS,
    GLReplayer,
    reference_frames,
    replay,
    texel_bytes,
)
from tilesim.render.traces.trace_file import write_trace

VS = """attribute vec4 pos;
void main() { gl_Position = pos; gl_PointSize = 4.0; }
"""
FS = """precision mediump float;
uniform vec4 color;
void main() { gl_FragColor = color; }
"""
VS_TEX = """attribute vec4 pos;
attribute vec2 uv;
varying vec2 v_uv;
void main() { v_uv = uv; gl_Position = pos; }
"""
FS_TEX = """precision mediump float;
uniform sampler2D tex;
varying vec2 v_uv;
void main() { gl_FragColor = texture2D(tex, v_uv); }
"""
VS_COLOR = """attribute vec4 pos;
attribute vec4 color;
varying vec4 v_color;
void main() { v_color = color; gl_Position = pos; }
"""
FS_COLOR = """precision mediump float;
varying vec4 v_color;
void main() { gl_FragColor = v_color; }
"""
FS_CUBE = """precision mediump float;
uniform samplerCube cube;
uniform vec3 dir;
void main() { gl_FragColor = textureCube(cube, dir); }
"""


@dataclass
class FakeCompiled:
    """Only what replay uses of a CompiledProgram: the attribute locations of the link."""

    attributes: list[str]
    vertex_tgsi: str = ""
    fragment_tgsi: str = ""
    interface: dict = field(default_factory=dict)

    def __post_init__(self):
        self.interface = {"attributes": [{"name": n, "location": i}
                                         for i, n in enumerate(self.attributes)]}


def program(gl: Recorder, vs: str = VS, fs: str = FS, attributes=("pos",)) -> int:
    ident = gl.createProgram(vs, fs, compiled=FakeCompiled(list(attributes)))
    gl.useProgram(ident)
    return ident


def quad(x0, y0, x1, y1, z=0.0) -> np.ndarray:
    """Two counter-clockwise triangles over an NDC rectangle: (6, 3) float32."""
    return np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z],
                     [x0, y0, z], [x1, y1, z], [x0, y1, z]], dtype=np.float32)


def draw_quad(gl: Recorder, prog: int, rect, color=None, z=0.0) -> None:
    """A client-array quad at NDC ``rect`` with uniform ``color`` (0..1 floats)."""
    if color is not None:
        gl.uniform4f(Uniform(prog, "color"), *color)
    gl.vertexAttribPointer(0, 3, gl.FLOAT, False, 0, quad(*rect, z=z))
    gl.enableVertexAttribArray(0)
    gl.drawArrays(gl.TRIANGLES, 0, 6)


def textured_quad(gl: Recorder, rect=(-1, -1, 1, 1)) -> None:
    """pos at location 0, uv at 1 (0,0 at the bottom-left corner), one interleaved array."""
    x0, y0, x1, y1 = rect
    data = np.array([[x0, y0, 0, 0], [x1, y0, 1, 0], [x1, y1, 1, 1],
                     [x0, y0, 0, 0], [x1, y1, 1, 1], [x0, y1, 0, 1]], dtype=np.float32)
    gl.vertexAttribPointer(0, 2, gl.FLOAT, False, 16, data)
    gl.vertexAttribPointer(1, 2, gl.FLOAT, False, 0, data[:, 2:].copy())
    gl.enableVertexAttribArray(0)
    gl.enableVertexAttribArray(1)
    gl.drawArrays(gl.TRIANGLES, 0, 6)


def texture(gl: Recorder, width, height, texels, fmt="RGBA", type_="UNSIGNED_BYTE",
            filt="NEAREST") -> int:
    tex = gl.createTexture()
    gl.bindTexture(gl.TEXTURE_2D, tex)
    gl.texImage2D(gl.TEXTURE_2D, 0, fmt, width, height, 0, fmt, type_, texels)
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, filt)
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, "NEAREST")
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE)
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE)
    return tex


def close(pixel, expected, tolerance=1) -> bool:
    return bool(np.all(np.abs(np.asarray(pixel, int) - np.asarray(expected, int)) <= tolerance))


@pytest.fixture(autouse=True)
def _mesa(request):
    if request.node.get_closest_marker("mesa"):
        require_mesa()


# --- no Mesa needed ----------------------------------------------------------------------------


def test_every_enumerant_and_command_is_mapped():
    for op, spec in SCHEMA.items():
        if op != "endFrame":
            assert callable(getattr(GLReplayer, f"_{op}", None)), op
        for kind in spec.values():
            if isinstance(kind, tuple):
                for name in kind[1]:
                    assert name in GL_ENUMS or op == "uniform", (op, name)


def test_texel_bytes():
    assert texel_bytes(3, 2, "RGB", "UNSIGNED_BYTE", 4) == 12 + 9
    assert texel_bytes(3, 2, "RGB", "UNSIGNED_BYTE", 1) == 18
    assert texel_bytes(3, 3, "LUMINANCE", "UNSIGNED_BYTE", 8) == 8 * 2 + 3
    assert texel_bytes(5, 1, "RGB", "UNSIGNED_SHORT_5_6_5", 4) == 10
    assert texel_bytes(0, 7, "RGBA", "UNSIGNED_BYTE", 4) == 0
    assert set(FORMAT_CHANNELS) == set(SCHEMA["texImage2D"]["format"][1])


# --- scenes on llvmpipe ------------------------------------------------------------------------

@pytest.mark.mesa
def test_triangle_color_and_row_order():
    gl = Recorder(16, 12)
    gl.clearColor(0, 0, 1, 1)
    gl.clear(gl.COLOR_BUFFER_BIT)
    prog = program(gl)
    draw_quad(gl, prog, (-1, 0, 1, 1), (1, 0, 0, 1))          # the upper half of the window
    gl.endFrame()
    result = replay(gl)
    assert result.renderer.startswith("llvmpipe") and "OpenGL ES 2.0" in result.version
    (image,) = result.images
    assert image.shape == (12, 16, 4) and image.dtype == np.uint8
    assert (image[:6] == [255, 0, 0, 255]).all()              # row 0 is the top of the image
    assert (image[6:] == [0, 0, 255, 255]).all()


@pytest.mark.mesa
def test_textured_quad_with_mipmaps():
    gl = Recorder(16, 16)
    prog = program(gl, VS_TEX, FS_TEX, ("pos", "uv"))
    gl.uniform1i(Uniform(prog, "tex"), 0)
    colors = [(255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255), (255, 255, 255, 255)]
    tex = texture(gl, 8, 8, np.full((8, 8, 4), colors[0], np.uint8),
                  filt="NEAREST_MIPMAP_NEAREST")
    for level in (1, 2, 3):
        size = 8 >> level
        gl.texImage2D(gl.TEXTURE_2D, level, "RGBA", size, size, 0, "RGBA", "UNSIGNED_BYTE",
                      np.full((size, size, 4), colors[level], np.uint8))
    # 8 texels over 8, 4, 2, 1 pixels: LOD 0, 1, 2, 3
    for x, size in ((0, 8), (8, 4), (12, 2), (14, 1)):
        gl.viewport(x, 0, size, size)
        textured_quad(gl)
    gl.endFrame()
    # frame 1: generateMipmap of a checkerboard; level 1 is mid-gray
    checker = (np.indices((8, 8)).sum(axis=0) % 2 * 255).astype(np.uint8)
    gl.bindTexture(gl.TEXTURE_2D, tex)
    gl.texImage2D(gl.TEXTURE_2D, 0, "LUMINANCE", 8, 8, 0, "LUMINANCE", "UNSIGNED_BYTE",
                  checker)
    gl.generateMipmap(gl.TEXTURE_2D)
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, "LINEAR_MIPMAP_NEAREST")
    gl.viewport(0, 0, 8, 8)
    textured_quad(gl)
    gl.viewport(8, 0, 4, 4)
    textured_quad(gl)
    gl.endFrame()
    first, second = reference_frames(gl)
    assert (first[8:16, 0:8] == colors[0]).all()    # the bottom rows of the image
    assert (first[12:16, 8:12] == colors[1]).all()
    assert (first[14:16, 12:14] == colors[2]).all()
    assert (first[15, 14] == colors[3]).all()
    # level 0 at 1:1: texel (s, t) = (x, 7 - row) of the checkerboard, t = 0 at the bottom
    for row in range(8, 16):
        for x in range(8):
            value = checker[15 - row, x]
            assert (second[row, x] == [value, value, value, 255]).all()
    assert all(close(second[r, c, :3], [128] * 3, 2) for r in range(12, 16) for c in range(8, 12))


@pytest.mark.mesa
def test_blending():
    gl = Recorder(12, 4)
    gl.clearColor(0, 0, 1, 1)
    gl.clear(gl.COLOR_BUFFER_BIT)
    prog = program(gl)
    gl.enable(gl.BLEND)
    gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA)
    draw_quad(gl, prog, (-1, -1, -1 / 3, 1), (1, 0, 0, 0.5))
    gl.blendFuncSeparate(gl.CONSTANT_COLOR, gl.ZERO, gl.ONE, gl.ZERO)
    gl.blendColor(0.25, 0.5, 0.75, 1)
    draw_quad(gl, prog, (-1 / 3, -1, 1 / 3, 1), (1, 1, 1, 1))
    gl.blendFunc(gl.ONE, gl.ONE)
    gl.blendEquation(gl.FUNC_REVERSE_SUBTRACT)
    draw_quad(gl, prog, (1 / 3, -1, 1, 1), (0, 0, 0.5, 0))
    gl.endFrame()
    (image,) = reference_frames(gl)
    assert close(image[2, 1], [128, 0, 127, 191])
    assert close(image[2, 5], [64, 128, 191, 255])
    assert close(image[2, 10], [0, 0, 127, 255])


@pytest.mark.mesa
def test_depth_test_and_mask():
    gl = Recorder(8, 4)
    gl.enable(gl.DEPTH_TEST)
    gl.depthFunc(gl.LESS)
    gl.clearDepthf(1.0)
    gl.clear(gl.COLOR_BUFFER_BIT, gl.DEPTH_BUFFER_BIT)
    prog = program(gl)
    draw_quad(gl, prog, (-1, -1, 1, 1), (0, 1, 0, 1), z=-0.5)    # near: green
    draw_quad(gl, prog, (-1, -1, 1, 1), (1, 0, 0, 1), z=0.5)     # far: hidden
    gl.depthMask(False)
    draw_quad(gl, prog, (-1, -1, 0, 1), (0, 0, 1, 1), z=-0.9)    # drawn, depth not written
    gl.depthMask(True)
    draw_quad(gl, prog, (-1, -1, 0, 1), (1, 1, 0, 1), z=-0.7)    # passes against green
    gl.depthFunc(gl.GREATER)
    draw_quad(gl, prog, (0, -1, 1, 1), (1, 0, 1, 1), z=-0.6)     # -0.6 > -0.5? no: hidden
    gl.endFrame()
    (image,) = reference_frames(gl)
    assert (image[:, :4] == [255, 255, 0, 255]).all()
    assert (image[:, 4:] == [0, 255, 0, 255]).all()


@pytest.mark.mesa
def test_framebuffer_object_render_to_texture():
    gl = Recorder(16, 16)
    target = texture(gl, 8, 8, None)
    depth = gl.createRenderbuffer()
    gl.bindRenderbuffer("RENDERBUFFER", depth)
    gl.renderbufferStorage("RENDERBUFFER", "DEPTH_COMPONENT16", 8, 8)
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", target, 0)
    gl.framebufferRenderbuffer("FRAMEBUFFER", "DEPTH_ATTACHMENT", "RENDERBUFFER", depth)
    gl.viewport(0, 0, 8, 8)
    gl.clearColor(1, 1, 0, 1)
    gl.clear(gl.COLOR_BUFFER_BIT, gl.DEPTH_BUFFER_BIT)
    gl.enable(gl.DEPTH_TEST)
    prog = program(gl)
    draw_quad(gl, prog, (-1, -1, 0, 1), (1, 0, 0, 1))
    gl.bindFramebuffer("FRAMEBUFFER", None)
    gl.disable(gl.DEPTH_TEST)
    gl.viewport(0, 0, 16, 16)
    tex_prog = program(gl, VS_TEX, FS_TEX, ("pos", "uv"))
    gl.uniform1i(Uniform(tex_prog, "tex"), 0)
    gl.bindTexture(gl.TEXTURE_2D, target)
    textured_quad(gl)
    gl.endFrame()
    (image,) = reference_frames(gl)
    assert (image[:, :8] == [255, 0, 0, 255]).all()
    assert (image[:, 8:] == [255, 255, 0, 255]).all()


@pytest.mark.mesa
def test_indexed_draws_u8_u16_u32_and_client_indices():
    gl = Recorder(8, 8)
    prog = program(gl)
    corners = [(-1, -1), (0, -1), (-1, 0), (0, 0)]  # bottom-left corner of each quadrant
    vertices = np.concatenate([[[x, y], [x + 1, y], [x + 1, y + 1], [x, y + 1]]
                               for x, y in corners]).astype(np.float32)
    vbo = gl.createBuffer()
    gl.bindBuffer(gl.ARRAY_BUFFER, vbo)
    gl.bufferData(gl.ARRAY_BUFFER, vertices.nbytes, gl.STATIC_DRAW)
    gl.bufferSubData(gl.ARRAY_BUFFER, 0, vertices)
    gl.vertexAttribPointer(0, 2, gl.FLOAT, False, 0, 0)
    gl.enableVertexAttribArray(0)
    colors = [(1, 0, 0, 1), (0, 1, 0, 1), (0, 0, 1, 1), (1, 1, 1, 1)]
    for k, dtype in enumerate((np.uint8, np.uint16, np.uint32)):
        indices = (np.array([0, 1, 2, 0, 2, 3]) + 4 * k).astype(dtype)
        ebo = gl.createBuffer()
        gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, ebo)
        # the indices after 4 junk bytes: a non-zero offset
        gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, np.concatenate(
            [np.zeros(4, np.uint8), indices.view(np.uint8)]), gl.STATIC_DRAW)
        gl.uniform4f(Uniform(prog, "color"), *colors[k])
        gl.drawElements(gl.TRIANGLES, 6, ["UNSIGNED_BYTE", "UNSIGNED_SHORT",
                                          "UNSIGNED_INT"][k], 4)
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, None)
    gl.uniform4f(Uniform(prog, "color"), *colors[3])
    gl.drawElements(gl.TRIANGLE_FAN, 4, gl.UNSIGNED_SHORT,
                    np.array([12, 13, 14, 15], np.uint16))
    gl.endFrame()
    (image,) = reference_frames(gl)
    expected = {(7, 0): colors[0], (7, 7): colors[1], (0, 0): colors[2], (0, 7): colors[3]}
    for (row, x), color in expected.items():
        assert (image[row, x] == np.array(color) * 255).all(), (row, x)


@pytest.mark.mesa
def test_client_arrays_strides_and_constant_attribute():
    gl = Recorder(8, 4)
    program(gl, VS_COLOR, FS_COLOR, ("pos", "color"))
    # interleaved: 2 floats of position, 1 float of padding; read with stride 12 and offset 0
    left = np.concatenate([quad(-1, -1, 0, 1)[:, :2], np.full((6, 1), 7.0)], axis=1)
    gl.vertexAttribPointer(0, 2, gl.FLOAT, False, 12, left.astype(np.float32))
    gl.enableVertexAttribArray(0)
    gl.disableVertexAttribArray(1)
    gl.vertexAttrib4f(1, 0.0, 1.0, 1.0, 1.0)                     # constant cyan
    gl.drawArrays(gl.TRIANGLES, 0, 6)
    # per-vertex colors as normalized unsigned bytes
    gl.vertexAttribPointer(0, 3, gl.FLOAT, False, 0, quad(0, -1, 1, 1))
    gl.vertexAttribPointer(1, 4, gl.UNSIGNED_BYTE, True, 0,
                           np.tile(np.array([255, 0, 255, 255], np.uint8), 6))
    gl.enableVertexAttribArray(1)
    gl.drawArrays(gl.TRIANGLES, 0, 6)
    gl.endFrame()
    (image,) = reference_frames(gl)
    assert (image[:, :4] == [0, 255, 255, 255]).all()
    assert (image[:, 4:] == [255, 0, 255, 255]).all()


@pytest.mark.mesa
def test_texture_formats_types_and_unpack_alignment():
    gl = Recorder(18, 4)
    prog = program(gl, VS_TEX, FS_TEX, ("pos", "uv"))
    gl.uniform1i(Uniform(prog, "tex"), 0)
    cases = [
        ("LUMINANCE", "UNSIGNED_BYTE", np.array([200], np.uint8), (200, 200, 200, 255)),
        ("ALPHA", "UNSIGNED_BYTE", np.array([100], np.uint8), (0, 0, 0, 100)),
        ("LUMINANCE_ALPHA", "UNSIGNED_BYTE", np.array([50, 60], np.uint8), (50, 50, 50, 60)),
        ("RGB", "UNSIGNED_SHORT_5_6_5", np.array([0xF800], np.uint16), (255, 0, 0, 255)),
        ("RGBA", "UNSIGNED_SHORT_4_4_4_4", np.array([0x0F0F], np.uint16), (0, 255, 0, 255)),
        ("RGBA", "UNSIGNED_SHORT_5_5_5_1", np.array([0x003F], np.uint16), (0, 0, 255, 255)),
        ("BGRA_EXT", "UNSIGNED_BYTE", np.array([10, 20, 30, 255], np.uint8), (30, 20, 10, 255)),
    ]
    gl.pixelStorei("UNPACK_ALIGNMENT", 1)
    for k, (fmt, type_, texels, _) in enumerate(cases):
        texture(gl, 1, 1, texels, fmt, type_)
        gl.viewport(2 * k, 0, 2, 4)
        textured_quad(gl)
    # 2x2 RGB with the default UNPACK_ALIGNMENT 4: each row padded to 8 bytes
    gl.pixelStorei("UNPACK_ALIGNMENT", 4)
    rgb = np.array([10, 20, 30, 40, 50, 60, 0, 0, 70, 80, 90, 100, 110, 120, 0, 0], np.uint8)
    texture(gl, 2, 2, rgb, "RGB")
    gl.viewport(14, 0, 4, 4)
    textured_quad(gl)
    gl.endFrame()
    (image,) = reference_frames(gl)
    for k, (*_, expected) in enumerate(cases):
        assert (image[:, 2 * k:2 * k + 2] == expected).all(), cases[k][:2]
    assert (image[2:, 14:16] == [10, 20, 30, 255]).all()     # texel (0, 0): bottom-left
    assert (image[2:, 16:18] == [40, 50, 60, 255]).all()
    assert (image[:2, 14:16] == [70, 80, 90, 255]).all()     # row 1 starts after the padding
    assert (image[:2, 16:18] == [100, 110, 120, 255]).all()


@pytest.mark.mesa
def test_cube_map_faces():
    gl = Recorder(6, 2)
    prog = program(gl, VS, FS_CUBE)
    cube = gl.createTexture()
    gl.activeTexture(0x84C0 + 3)
    gl.bindTexture(gl.TEXTURE_CUBE_MAP, cube)
    faces = ["TEXTURE_CUBE_MAP_POSITIVE_X", "TEXTURE_CUBE_MAP_NEGATIVE_X",
             "TEXTURE_CUBE_MAP_POSITIVE_Y", "TEXTURE_CUBE_MAP_NEGATIVE_Y",
             "TEXTURE_CUBE_MAP_POSITIVE_Z", "TEXTURE_CUBE_MAP_NEGATIVE_Z"]
    colors = [(40 * k, 255 - 40 * k, 7 * k, 255) for k in range(6)]
    for face, color in zip(faces, colors, strict=True):
        gl.texImage2D(face, 0, "RGBA", 1, 1, 0, "RGBA", "UNSIGNED_BYTE", np.array(color, np.uint8))
    gl.texParameteri(gl.TEXTURE_CUBE_MAP, gl.TEXTURE_MIN_FILTER, gl.NEAREST)
    gl.uniform1i(Uniform(prog, "cube"), 3)
    directions = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
    for k, d in enumerate(directions):
        gl.uniform3f(Uniform(prog, "dir"), *d)
        draw_quad(gl, prog, (-1 + k / 3, -1, -1 + (k + 1) / 3, 1))
    gl.endFrame()
    (image,) = reference_frames(gl)
    for k, color in enumerate(colors):
        assert (image[:, k] == color).all(), faces[k]


@pytest.mark.mesa
def test_points_lines_culling_scissor_color_mask_stencil():
    gl = Recorder(16, 16)
    gl.clear(gl.COLOR_BUFFER_BIT)
    prog = program(gl)
    gl.uniform4f(Uniform(prog, "color"), 1, 1, 1, 1)
    gl.vertexAttribPointer(0, 2, gl.FLOAT, False, 0, np.array([0.5, 0.5], np.float32))
    gl.enableVertexAttribArray(0)
    gl.drawArrays(gl.POINTS, 0, 1)              # 4x4 pixels around window (12, 12)
    row_y = (2.5 / 16) * 2 - 1                  # through the centers of window row 2
    gl.vertexAttribPointer(0, 2, gl.FLOAT, False, 0, np.array([-1, row_y, 1, row_y],
                                                              np.float32))
    gl.drawArrays(gl.LINES, 0, 2)
    gl.enable(gl.CULL_FACE)                     # back faces culled; CCW is front
    cw = quad(-1, -1, 0, 0)[[0, 2, 1, 3, 5, 4]]
    gl.uniform4f(Uniform(prog, "color"), 1, 0, 0, 1)
    gl.vertexAttribPointer(0, 3, gl.FLOAT, False, 0, cw)
    gl.drawArrays(gl.TRIANGLES, 0, 6)           # culled
    gl.frontFace(gl.CW)
    gl.vertexAttribPointer(0, 3, gl.FLOAT, False, 0, cw + np.float32([0, 1, 0]))
    gl.drawArrays(gl.TRIANGLES, 0, 6)           # now front-facing: drawn at upper left
    gl.disable(gl.CULL_FACE)
    gl.endFrame()
    gl.enable(gl.SCISSOR_TEST)
    gl.scissor(0, 0, 4, 4)
    gl.clearColor(0, 0, 1, 1)
    gl.clear(gl.COLOR_BUFFER_BIT)
    gl.disable(gl.SCISSOR_TEST)
    gl.colorMask(False, True, False, True)
    gl.clearColor(1, 1, 0, 1)
    gl.clear(gl.COLOR_BUFFER_BIT)
    gl.colorMask(True, True, True, True)
    # stencil: mark the right half, then draw green only where marked
    gl.clearStencil(0)
    gl.clear(gl.STENCIL_BUFFER_BIT)
    gl.enable(gl.STENCIL_TEST)
    gl._emit("stencilFuncSeparate", face="FRONT_AND_BACK", func="ALWAYS", ref=1, mask=255)
    gl._emit("stencilOpSeparate", face="FRONT_AND_BACK", fail="KEEP", zfail="KEEP",
             zpass="REPLACE")
    gl.colorMask(False, False, False, False)
    draw_quad(gl, prog, (0, -1, 1, 1))
    gl.colorMask(True, True, True, True)
    gl._emit("stencilFuncSeparate", face="FRONT_AND_BACK", func="EQUAL", ref=1, mask=255)
    draw_quad(gl, prog, (-1, -1, 1, 1), (0, 1, 0, 1))
    gl.endFrame()
    first, second = replay(gl.recorded_frames(), width=16, height=16, stencil_bits=8).images
    white = [255, 255, 255, 255]
    # the point: 4x4 pixels centered on window (12, 12): window x, y 10..13 = image rows 2..5
    lit = np.argwhere((first[:8, 8:] == white).all(axis=2)) + [0, 8]
    assert lit.min(axis=0).tolist() == [2, 10] and lit.max(axis=0).tolist() == [5, 13]
    assert len(lit) == 16
    assert (first[13] == white).all()                           # the line: window row 2
    assert (first[0:8, 0:8] == [255, 0, 0, 255]).all()          # CW quad once CW is front
    assert (first[8:13, 0:8] == 0).all() and (first[14:, 0:8] == 0).all()  # the culled one
    # frame 2: scissored clear to blue at the window's lower-left 4x4, then a clear with red
    # and blue masked, then green wherever the stencil was marked (the right half)
    assert (second[:, 8:] == [0, 255, 0, 255]).all()
    assert (second[12:16, 0:4] == [0, 255, 255, 255]).all()
    left = second[:, :8]
    keep = np.ones((16, 8), bool)
    keep[12:16, 0:4] = False
    assert (left[keep][:, [0, 2]] == first[:, :8][keep][:, [0, 2]]).all()
    assert (left[..., [1, 3]] == 255).all()


@pytest.mark.mesa
def test_remaining_commands_run_cleanly():
    """Every other command of the schema, each once, without a GL error; copyTexImage2D,
    texSubImage2D, depthRangef and polygonOffset checked on pixels."""
    gl = Recorder(8, 8)
    gl.hint("GENERATE_MIPMAP_HINT", "NICEST")
    gl.hint("FRAGMENT_SHADER_DERIVATIVE_HINT", "FASTEST")
    gl.lineWidth(2.0)
    for cap in ("DITHER", "SAMPLE_COVERAGE", "SAMPLE_ALPHA_TO_COVERAGE"):
        gl.enable(cap)
        gl.disable(cap)
    gl._emit("stencilMaskSeparate", face="BACK", mask=0xFFFFFFFF)
    for fmt in ("RGBA4", "RGB565", "RGB5_A1", "RGBA8", "RGB8", "DEPTH_COMPONENT16",
                "DEPTH_COMPONENT24", "STENCIL_INDEX8", "DEPTH24_STENCIL8"):
        rb = gl.createRenderbuffer()
        gl.bindRenderbuffer("RENDERBUFFER", rb)
        gl.renderbufferStorage("RENDERBUFFER", fmt, 4, 4)
        gl.deleteRenderbuffer(rb)
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo)
    gl.deleteFramebuffer(fbo)                   # bound: GL falls back to the window
    gl.clearColor(0, 0.5, 0, 1)
    gl.clear(gl.COLOR_BUFFER_BIT)               # ... so this clears the window
    # copy the window's lower-left 2x2 into a texture, patch one texel, draw it back on top
    prog = program(gl, VS_TEX, FS_TEX, ("pos", "uv"))
    gl.uniform1i(Uniform(prog, "tex"), 0)
    tex = texture(gl, 2, 2, None)
    gl.copyTexImage2D(gl.TEXTURE_2D, 0, "RGB", 0, 0, 2, 2)
    gl.texSubImage2D(gl.TEXTURE_2D, 0, 1, 1, 1, 1, "RGB", "UNSIGNED_BYTE",
                     np.array([255, 0, 255], np.uint8))
    gl.viewport(4, 4, 4, 4)
    textured_quad(gl)
    gl.deleteTexture(tex)
    gl.deleteProgram(prog)
    gl.useProgram(None)
    # depthRangef and polygonOffset: a quad at z = 0 lands at window depth 0.5 of [0.25, 0.75]
    prog = program(gl)
    gl.enable(gl.DEPTH_TEST)
    gl.clear(gl.DEPTH_BUFFER_BIT)
    gl.depthRangef(0.25, 0.75)
    gl.viewport(0, 0, 4, 4)
    draw_quad(gl, prog, (-1, -1, 1, 1), (1, 0, 0, 1), z=0.0)
    gl.depthFunc(gl.LESS)
    gl.enable(gl.POLYGON_OFFSET_FILL)
    gl.polygonOffset(0.0, -4.0)                 # pulled toward the viewer: passes LESS
    draw_quad(gl, prog, (-1, -1, 1, 1), (0, 0, 1, 1), z=0.0)
    gl.disable(gl.POLYGON_OFFSET_FILL)
    draw_quad(gl, prog, (-1, -1, 1, 1), (1, 1, 1, 1), z=0.0)  # equal depth: fails LESS
    vbo = gl.createBuffer()
    gl.deleteBuffer(vbo)
    gl.flush()
    gl.finish()
    gl.endFrame()
    (image,) = reference_frames(gl)
    assert (image[0:2, 4:6] == [0, 128, 0, 255]).all()      # texel (0, 1): copied
    assert (image[0:2, 6:8] == [255, 0, 255, 255]).all()    # texel (1, 1): texSubImage2D
    assert (image[2:4, 4:8] == [0, 128, 0, 255]).all()
    assert (image[4:8, 0:4] == [0, 0, 255, 255]).all()
    assert (image[0:4, 0:4] == [0, 128, 0, 255]).all()


@pytest.mark.mesa
@pytest.mark.slow
def test_frames_subset_and_file_equals_memory(tmp_path):
    gl = Recorder(4, 4)
    for f in range(3):
        gl.clearColor(f / 2, 0, 0, 1)
        gl.clear(gl.COLOR_BUFFER_BIT)
        gl.endFrame()
    frames = gl.recorded_frames()
    path = write_trace(tmp_path / "t.tsim", frames, width=4, height=4)
    from_file = replay(path)
    from_memory = replay(frames, width=4, height=4)
    assert from_file.frames == from_memory.frames == [0, 1, 2]
    for a, b in zip(from_file.images, from_memory.images, strict=True):
        assert np.array_equal(a, b)
    assert [int(i[0, 0, 0]) for i in from_file.images] == [0, 128, 255]
    only = replay(path, frames=[1])
    assert only.frames == [1] and np.array_equal(only.images[0], from_file.images[1])


@pytest.mark.mesa
def test_command_timing():
    gl = Recorder(4, 4)
    gl.clear(gl.COLOR_BUFFER_BIT)
    gl.endFrame()
    gl.clear(gl.COLOR_BUFFER_BIT)
    gl.finish()
    gl.endFrame()
    result = replay(gl, time_commands=True)
    assert [len(s) for s in result.command_seconds] == [2, 3]
    assert all(t >= 0 for s in result.command_seconds for t in s)


@pytest.mark.mesa
def test_softpipe_driver():
    gl = Recorder(4, 4)
    gl.clearColor(0, 1, 0, 1)
    gl.clear(gl.COLOR_BUFFER_BIT)
    gl.endFrame()
    result = replay(gl, driver="softpipe")
    assert result.renderer == "softpipe" and (result.images[0] == [0, 255, 0, 255]).all()


@pytest.mark.mesa
def test_real_compiled_program():
    from tilesim.render.gl.commands import compile_cached

    gl = Recorder(4, 4)
    prog = gl.createProgram(VS_COLOR, FS_COLOR, compiled=compile_cached(
        VS_COLOR, FS_COLOR, {"color": 0, "pos": 1}))
    gl.useProgram(prog)
    assert gl.getAttribLocation(prog, "pos") == 1
    gl.vertexAttribPointer(1, 3, gl.FLOAT, False, 0, quad(-1, -1, 1, 1))
    gl.enableVertexAttribArray(1)
    gl.vertexAttrib4f(0, 1, 0.5, 0, 1)
    gl.drawArrays(gl.TRIANGLES, 0, 6)
    gl.endFrame()
    (image,) = reference_frames(gl)
    assert close(image, [255, 128, 0, 255])


# --- errors name the frame and command -------------------------------------------------------


def _error(gl: Recorder, pattern: str, **options) -> InputError:
    with pytest.raises(InputError, match=pattern) as info:
        replay(gl, **options)
    return info.value


@pytest.mark.slow
@pytest.mark.mesa
def test_errors_name_frame_and_command():
    gl = Recorder(4, 4)
    gl.endFrame()
    gl.clear(gl.COLOR_BUFFER_BIT)
    gl.bindBuffer(gl.ARRAY_BUFFER, 7)
    gl.endFrame()
    _error(gl, r"^recorded: frame 1, command 1: bindBuffer: buffer 7 was never created")

    gl = Recorder(4, 4)
    gl.createProgram(VS, "void main() { gl_FragColor = vec4(undefined_thing); }",
                     compiled=FakeCompiled(["pos"]))
    gl.endFrame()
    _error(gl, r"frame 0, command 0: createProgram: the fragment shader does not compile "
               r"on Mesa:\n.*undefined_thing")

    gl = Recorder(4, 4)
    program(gl)
    gl.vertexAttribPointer(0, 3, gl.FLOAT, False, 0, quad(-1, -1, 1, 1)[:5])
    gl.enableVertexAttribArray(0)
    gl.drawArrays(gl.TRIANGLES, 0, 6)
    gl.endFrame()
    _error(gl, r"frame 0, command 4: drawArrays: vertex 5 of attribute 0 needs 72 bytes, "
               r"its client array holds 60")

    gl = Recorder(4, 4)
    program(gl)
    vbo = gl.createBuffer()
    gl.bindBuffer(gl.ARRAY_BUFFER, vbo)
    gl.bufferData(gl.ARRAY_BUFFER, quad(-1, -1, 1, 1), gl.STATIC_DRAW)
    gl.vertexAttribPointer(0, 3, gl.FLOAT, False, 0, 0)
    gl.enableVertexAttribArray(0)
    gl.drawElements(gl.TRIANGLES, 3, gl.UNSIGNED_BYTE, np.array([0, 1, 6], np.uint8))
    gl.endFrame()
    _error(gl, r"command 7: drawElements: vertex 6 of attribute 0 needs 84 bytes, buffer 1 "
               r"holds 72")

    gl = Recorder(4, 4)
    tex = gl.createTexture()
    gl.bindTexture(gl.TEXTURE_2D, tex)
    gl.texImage2D(gl.TEXTURE_2D, 0, "RGB", 3, 2, 0, "RGB", "UNSIGNED_BYTE",
                  np.zeros(18, np.uint8))
    gl.endFrame()
    _error(gl, r"command 2: texImage2D: a 3x2 RGB UNSIGNED_BYTE image with UNPACK_ALIGNMENT 4 "
               r"needs 21 bytes, the data holds 18")

    gl = Recorder(4, 4)
    gl.vertexAttribPointer(0, 2, gl.FLOAT, False, 0, 0)
    gl.enableVertexAttribArray(0)
    program(gl)
    gl.drawArrays(gl.TRIANGLES, 0, 3)
    gl.endFrame()
    _error(gl, r"command 4: drawArrays: attribute array 0 is enabled but has neither")

    gl = Recorder(4, 4)
    gl.drawArrays(gl.TRIANGLES, 0, 3)
    gl.endFrame()
    _error(gl, r"command 0: drawArrays: no program in use")

    gl = Recorder(4, 4)
    tex = gl.createTexture()
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", tex, 0)
    gl.endFrame()
    _error(gl, r"command 1: framebufferTexture2D: framebuffer 0 \(the window\) is bound")


@pytest.mark.mesa
def test_gl_errors_strict_and_lenient():
    gl = Recorder(4, 4)
    tex = gl.createTexture()
    gl.bindTexture(gl.TEXTURE_2D, tex)
    gl.texImage2D(gl.TEXTURE_2D, 0, "RGB", 1, 1, 0, "RGBA", "UNSIGNED_BYTE",
                  np.zeros(4, np.uint8))
    gl.clearColor(0, 0, 1, 1)
    gl.clear(gl.COLOR_BUFFER_BIT)
    gl.endFrame()
    _error(gl, r"frame 0, command 2: texImage2D: GL error INVALID_OPERATION from Mesa")
    result = replay(gl, strict=False)
    assert len(result.warnings) == 1 and "command 2: texImage2D" in result.warnings[0]
    assert (result.images[0] == [0, 0, 255, 255]).all()


@pytest.mark.mesa
def test_bad_trace_file_is_input_error(tmp_path):
    path = tmp_path / "bad.tsim"
    path.write_bytes(b"junk")
    with pytest.raises(InputError, match="not a readable ZIP"):
        replay(path)


# --- property: random command streams never crash the driver ---------------------------------

_PROGRAMS = [(VS, FS, ["pos"]), (VS_TEX, FS_TEX, ["pos", "uv"]), (VS, FS_CUBE, ["pos"]),
             (VS_COLOR, FS_COLOR, ["pos", "color"])]


def _arg(kind):
    if kind == "int":
        return st.one_of(st.integers(-2, 12), st.integers(0, 300), st.sampled_from([2 ** 31]))
    if kind == "float":
        return st.floats(-2, 2)
    if kind == "bool":
        return st.booleans()
    if kind == "str":
        return st.sampled_from(["pos", "color", "tex", "cube", "dir", "uv", "nothing"])
    if kind == "floats":
        return st.lists(st.floats(-2, 2), max_size=17)
    if kind in ("blob", "blob?"):
        blob = st.binary(max_size=80).map(lambda b: np.frombuffer(b, np.uint8).copy())
        return blob if kind == "blob" else st.none() | blob
    if kind[0] == "enum":
        return st.sampled_from(kind[1])
    return st.lists(st.sampled_from(kind[1]), max_size=3, unique=True)  # "enums"


@st.composite
def _command(draw):
    op = draw(st.sampled_from(sorted(set(SCHEMA) - {"endFrame"})))
    if op == "createProgram":
        vs, fs, attributes = draw(st.sampled_from(_PROGRAMS))
        compiled = FakeCompiled(attributes)
        return make_command(op, {"id": draw(st.integers(1, 3)), "vertex_glsl": vs,
                                 "fragment_glsl": fs, "vertex_tgsi": "", "fragment_tgsi": "",
                                 "interface": compiled.interface})
    args = {}
    for name, kind in SCHEMA[op].items():
        if name in ("id", "texture", "renderbuffer") and kind == "int":
            args[name] = draw(st.integers(0, 3))
        else:
            args[name] = draw(_arg(kind))
    return make_command(op, args)


@pytest.mark.slow
@pytest.mark.mesa
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=st.lists(st.lists(_command(), min_size=1, max_size=60), min_size=1, max_size=2))
def test_random_streams_replay_or_refuse(frames):
    require_mesa()
    end = make_command("endFrame", {})
    try:
        result = replay([frame + [end] for frame in frames], width=8, height=8, strict=False)
    except InputError:
        return
    assert len(result.images) == len(frames)
