"""Conformance scenes: strips and fans, indexed draws (u8/u16/u32), client-side arrays."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.conformance_scenes.helpers import (
    FS_COLOR,
    VS_NDC,
    _attrib,
    _cells,
    _draw,
    _hsv,
    _program,
)
from tilesim.render.workloads.conformance_scenes.registry import scene


@scene("strips_fans")
def scene_strips_fans(gl: Recorder) -> None:
    """TRIANGLE_STRIP and TRIANGLE_FAN through drawArrays and drawElements (buffer and client
    indices) with back-face culling on: every strip triangle must keep the first one's
    winding; a reversed strip is culled whole."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.05, 0.05, 0.05, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.enable("CULL_FACE")
    gl.cullFace("BACK")
    n = 14
    xs = np.linspace(-0.95, 0.95, n)
    wave = 0.08 * np.sin(np.arange(n))
    strip = np.stack([np.repeat(xs, 2), np.tile([0.55, 0.9], n) + np.repeat(wave, 2)], 1)
    # A strip whose first triangle is counter-clockwise: (x0, low), (x0, high)? make it so.
    strip_ccw = strip.reshape(n, 2, 2)[:, ::-1].reshape(-1, 2)
    colors = np.array([_hsv(k / (2 * n)) for k in range(2 * n)], dtype=np.float32)
    _draw(gl, "TRIANGLE_STRIP", strip_ccw, colors)
    # The same strip reversed: clockwise, culled.
    _draw(gl, "TRIANGLE_STRIP", strip - [0, 0.15], colors)
    # A fan (convex polygon) through drawArrays.
    angles = np.linspace(0, 2 * np.pi, 19)
    fan = np.vstack([[-0.5, 0.0], np.stack([-0.5 + 0.4 * np.cos(angles),
                                            0.0 + 0.35 * np.sin(angles)], 1)])
    fan_colors = np.array([_hsv(k / 20, 0.6) for k in range(20)], dtype=np.float32)
    _draw(gl, "TRIANGLE_FAN", fan, fan_colors)
    # drawElements: a strip from a u16 element buffer (in a buffer object), vertices in a VBO.
    grid = np.array([[x, y] for y in (-0.9, -0.6) for x in np.linspace(0.05, 0.95, 8)],
                    dtype=np.float32)
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", np.hstack([grid, np.array(
        [_hsv(k / 16, 0.5) for k in range(16)], dtype=np.float32)]))
    gl.vertexAttribPointer(0, 2, "FLOAT", False, 24, 0)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 4, "FLOAT", False, 24, 8)
    gl.enableVertexAttribArray(1)
    ebo = gl.createBuffer()
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ebo)
    strip_idx = np.array([v for k in range(8) for v in (k, k + 8)], dtype=np.uint16)
    gl.bufferData("ELEMENT_ARRAY_BUFFER", np.concatenate([[99, 99], strip_idx]).astype(
        np.uint16))
    gl.drawElements("TRIANGLE_STRIP", strip_idx.size, "UNSIGNED_SHORT", 4)
    # A fan with u8 client-side indices over the same VBO (a ring of the grid).
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", 0)
    fan_idx = np.array([11, 8, 9, 10, 2, 3, 4, 12, 13], dtype=np.uint8)
    gl.vertexAttribPointer(0, 2, "FLOAT", False, 24, 0)
    grid2 = grid + np.array([0.0, 0.45], dtype=np.float32)
    vbo2 = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo2)
    gl.bufferData("ARRAY_BUFFER", grid2)
    gl.vertexAttribPointer(0, 2, "FLOAT", False, 0, 0)
    gl.drawElements("TRIANGLE_FAN", fan_idx.size, "UNSIGNED_BYTE", fan_idx)
    gl.endFrame()


@scene("indexed_draws")
def scene_indexed_draws(gl: Recorder) -> None:
    """drawElements with u8, u16 and u32 indices from element buffers (at byte offsets) and
    from client arrays, shuffled and repeated, over an interleaved vertex buffer."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    rng = np.random.default_rng(21)
    # 6 panels, each a 5x5 grid of vertices; vertex data interleaved [x, y, r, g, b, a].
    rows = []
    panels = list(_cells(gl, 3, 2))
    for p, (x, y, cw, ch) in enumerate(panels):
        gx, gy = np.meshgrid(np.linspace(0, 1, 5), np.linspace(0, 1, 5))
        px = (x + 4 + gx * (cw - 8)) / gl.width * 2 - 1
        py = (y + 4 + gy * (ch - 8)) / gl.height * 2 - 1
        color = np.array([_hsv((p * 25 + k) / 150, 0.7, 0.95) for k in range(25)])
        rows.append(np.hstack([px.reshape(-1, 1), py.reshape(-1, 1), color]))
    vertices = np.vstack(rows).astype(np.float32)
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", vertices)
    gl.vertexAttribPointer(0, 2, "FLOAT", False, 24, 0)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 4, "FLOAT", False, 24, 8)
    gl.enableVertexAttribArray(1)

    def panel_triangles(p):
        tris = []
        for j in range(4):
            for i in range(4):
                a = p * 25 + j * 5 + i
                tris += [[a, a + 1, a + 6], [a, a + 6, a + 5]]
        tris = np.array(tris)
        keep = rng.permutation(len(tris))[: len(tris) - 3]   # leave holes, shuffle order
        return tris[np.sort(keep)][rng.permutation(len(keep))].ravel()

    types = [("UNSIGNED_BYTE", np.uint8), ("UNSIGNED_SHORT", np.uint16),
             ("UNSIGNED_INT", np.uint32)]
    for p, (index_type, dtype) in enumerate(types):
        idx = panel_triangles(p).astype(dtype)
        ebo = gl.createBuffer()
        gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ebo)
        pad = np.zeros(3, dtype=dtype)
        gl.bufferData("ELEMENT_ARRAY_BUFFER", np.concatenate([pad, idx]))
        gl.drawElements("TRIANGLES", idx.size, index_type, 3 * np.dtype(dtype).itemsize)
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", 0)
    for p, (index_type, dtype) in enumerate(types, start=3):
        idx = panel_triangles(p).astype(dtype)
        gl.drawElements("TRIANGLES", idx.size, index_type, idx)
    gl.endFrame()


VS_SCALED = """
attribute vec4 a_position;
attribute vec4 a_color;
attribute vec4 a_texcoord;
attribute vec4 a_normal;
uniform vec4 u_scale;
varying vec4 v_color;
void main() {
    v_color = a_color * a_normal + a_texcoord * 0.25;
    gl_Position = vec4(a_position.xy * u_scale.xy + u_scale.zw, 0.0, 1.0);
}
"""


@scene("client_arrays")
def scene_client_arrays(gl: Recorder) -> None:
    """Client-side vertex arrays of every attribute type (BYTE, UNSIGNED_BYTE, SHORT,
    UNSIGNED_SHORT, FIXED, FLOAT; normalized or not), interleaved with a stride, and a
    constant attribute (array disabled)."""
    program = _program(gl, VS_SCALED, FS_COLOR)
    scale = gl.getUniformLocation(program, "u_scale")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    rng = np.random.default_rng(13)
    n = 30   # triangles per draw
    panels = list(_cells(gl, 3, 2))
    kinds = [("FLOAT", np.float32, 0.0), ("SHORT", np.int16, 0.0), ("BYTE", np.int8, 0.0),
             ("UNSIGNED_SHORT", np.uint16, 0.0), ("UNSIGNED_BYTE", np.uint8, 0.0),
             ("FIXED", np.int32, 0.0)]
    for p, ((x, y, cw, ch), (type_, dtype, _)) in enumerate(zip(panels, kinds, strict=True)):
        gl.viewport(x, y, cw, ch)
        # Positions as integers in [0, 100] (FIXED: 16.16) scaled to NDC by the uniform.
        pos = rng.integers(0, 101, (3 * n, 2))
        if type_ == "FIXED":
            data = (pos * 65536).astype(np.int32)
        elif type_ == "FLOAT":
            data = pos.astype(np.float32)
        else:
            data = pos.astype(dtype)
        gl.uniform4f(scale, 0.019, 0.019, -0.95, -0.95)
        _attrib(gl, "a_position", data, size=2, type_=type_)
        # Colors: normalized unsigned bytes / shorts / signed bytes, interleaved with a pad.
        colors = rng.integers(40, 256, (3 * n, 4))
        if p % 3 == 0:
            inter = np.zeros((3 * n, 8), dtype=np.uint8)
            inter[:, :4] = colors
            _attrib(gl, "a_color", inter, size=4, type_="UNSIGNED_BYTE", normalized=True,
                    stride=8)
        elif p % 3 == 1:
            _attrib(gl, "a_color", (colors * 257).astype(np.uint16), size=4,
                    type_="UNSIGNED_SHORT", normalized=True)
        else:
            _attrib(gl, "a_color", (colors // 2).astype(np.int8), size=4, type_="BYTE",
                    normalized=True)
        # a_normal: a constant attribute (array disabled) multiplying the color.
        _attrib(gl, "a_normal", (1.0, 0.8 + 0.04 * p, 0.9, 1.0))
        # a_texcoord: a signed short normalized 3-component array.
        tex = rng.integers(-32767, 32768, (3 * n, 3)).astype(np.int16)
        _attrib(gl, "a_texcoord", tex, size=3, type_="SHORT", normalized=True)
        gl.drawArrays("TRIANGLES", 0, 3 * n)
    gl.endFrame()


@scene("vertex_array_objects")
def scene_vertex_array_objects(gl: Recorder) -> None:
    """OES_vertex_array_object: two vertex array objects, each with its own interleaved
    buffer, attribute layout and element buffer, drawn in turn with the default object's
    client arrays between; a constant attribute (glVertexAttrib, context state) read while
    an object is bound; an object deleted while bound falls back to the default one."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    rng = np.random.default_rng(31)
    objects = []
    for k, (x0, y0) in enumerate(((-0.95, -0.95), (0.05, -0.95))):
        vao = gl.createVertexArray()
        gl.bindVertexArray(vao)
        grid = np.stack(np.meshgrid(np.linspace(0, 0.9, 7), np.linspace(0, 0.9, 7)), -1)
        xy = grid.reshape(-1, 2) + (x0, y0)
        vertices = np.zeros((len(xy), 6), np.float32)      # x, y, r, g, b, a
        vertices[:, :2] = xy + rng.uniform(-0.03, 0.03, xy.shape)
        vertices[:, 2:5] = rng.uniform(0.2, 1.0, (len(xy), 3))
        vertices[:, 5] = 1.0
        gl.bindBuffer("ARRAY_BUFFER", gl.createBuffer())
        gl.bufferData("ARRAY_BUFFER", vertices)
        gl.vertexAttribPointer(0, 2, "FLOAT", False, 24, 0)
        gl.enableVertexAttribArray(0)
        if k == 0:       # the second object reads a_color from the constant value
            gl.vertexAttribPointer(1, 4, "FLOAT", False, 24, 8)
            gl.enableVertexAttribArray(1)
        j, i = np.mgrid[0:6, 0:6]
        a = (j * 7 + i).ravel()
        quads = np.stack([a, a + 1, a + 8, a, a + 8, a + 7], 1)[(i + j).ravel() % 2 == k]
        gl.bindBuffer("ELEMENT_ARRAY_BUFFER", gl.createBuffer())
        gl.bufferData("ELEMENT_ARRAY_BUFFER", quads.astype(np.uint16).ravel())
        objects.append((vao, quads.size))
    gl.bindVertexArray(0)
    gl.bindBuffer("ARRAY_BUFFER", 0)
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", 0)
    gl.vertexAttrib4f(1, 0.9, 0.6, 0.1, 1.0)
    for vao, count in objects:
        gl.bindVertexArray(vao)
        gl.drawElements("TRIANGLES", count, "UNSIGNED_SHORT", 0)
        # the default object between the two: client arrays, its own state untouched
        gl.bindVertexArray(0)
        _draw(gl, "TRIANGLES", np.array([[-0.9, 0.1], [-0.1, 0.1], [-0.5, 0.9]], np.float32),
              (0.2, 0.4, 1.0, 1.0))
    gl.bindVertexArray(objects[0][0])
    gl.deleteVertexArray(objects[0][0])
    _draw(gl, "TRIANGLES", np.array([[0.1, 0.1], [0.9, 0.1], [0.5, 0.9]], np.float32),
          (1.0, 0.3, 0.5, 1.0))
    gl.endFrame()


@scene("half_float_vertices", size=(128, 96))
def scene_half_float_vertices(gl: Recorder) -> None:
    """OES_vertex_half_float: HALF_FLOAT_OES positions (3 components, 6 bytes, interleaved
    with half-float colors in a 14-byte stride) from a client array and from a buffer object,
    the normalized flag set (which floats ignore), colors beyond 1 clamped by the output."""
    program = _program(gl, VS_SCALED, FS_COLOR)
    scale = gl.getUniformLocation(program, "u_scale")
    gl.uniform4f(scale, 0.019, 0.019, -0.95, -0.95)
    _attrib(gl, "a_normal", (1.0, 1.0, 1.0, 1.0))
    _attrib(gl, "a_texcoord", (0.0, 0.0, 0.0, 0.0))
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    rng = np.random.default_rng(17)
    n = 24
    for k in range(2):
        interleaved = np.zeros((3 * n, 7), np.float16)
        interleaved[:, :2] = rng.uniform(0, 100, (3 * n, 2)) + [0.37, 0.21]
        interleaved[:, 2] = 0.0
        interleaved[:, 3:] = rng.uniform(0.1, 1.3, (3 * n, 4))
        interleaved[:, 6] = 1.0
        raw = interleaved.view(np.uint8).reshape(-1)
        gl.viewport(k * gl.width // 2, 0, gl.width // 2, gl.height)
        if k == 0:
            _attrib(gl, "a_position", raw, size=3, type_="HALF_FLOAT_OES", stride=14)
            _attrib(gl, "a_color", raw[6:], size=4, type_="HALF_FLOAT_OES", normalized=True,
                    stride=14)
        else:
            buffer = gl.createBuffer()
            gl.bindBuffer("ARRAY_BUFFER", buffer)
            gl.bufferData("ARRAY_BUFFER", raw, "STATIC_DRAW")
            for name, size, offset in (("a_position", 3, 0), ("a_color", 4, 6)):
                location = gl.getAttribLocation(program, name)
                gl.vertexAttribPointer(location, size, "HALF_FLOAT_OES", name == "a_color",
                                       14, offset)
                gl.enableVertexAttribArray(location)
            gl.bindBuffer("ARRAY_BUFFER", None)
        gl.drawArrays("TRIANGLES", 0, 3 * n)
    gl.endFrame()
