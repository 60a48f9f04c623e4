"""A recorded 3D scene and its drawing helpers, shared by the frame-coherence techniques'
tests (tests/techniques/test_techniques.py) and the technique registry's
(tests/techniques/test_technique_registry.py)."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import Recorder

W, H = 96, 64
VS = """attribute vec4 pos; attribute vec4 col; varying vec4 v_col;
void main() { v_col = col; gl_Position = pos; }"""
FS = """precision mediump float; varying vec4 v_col;
void main() { gl_FragColor = v_col; }"""


def quad(x0, y0, x1, y1, z, color):
    """Two triangles (6 vertices) of pos (4) + color (4)."""
    corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y0), (x1, y1), (x0, y1)]
    return np.array([[x, y, z, 1.0, *color] for x, y in corners], dtype=np.float32)


def draw(gl, vertices):
    buf = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", buf)
    gl.bufferData("ARRAY_BUFFER", vertices)
    gl.vertexAttribPointer(0, 4, "FLOAT", False, 32, 0)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 4, "FLOAT", False, 32, 16)
    gl.enableVertexAttribArray(1)
    gl.drawArrays("TRIANGLES", 0, len(vertices))


def coherence_scene(frames: int = 5):
    """A 3D scene drawn back to front (far wall, then a near box covering the right half), a
    box moving on the left, and a translucent HUD bar drawn last without depth test."""
    gl = Recorder(W, H, name="coherence")
    program = gl.createProgram(VS, FS, attrib_locations={"pos": 0, "col": 1})
    for k in range(frames):
        gl.useProgram(program)
        gl.clearColor(0.1, 0.1, 0.15, 1.0)
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.enable("DEPTH_TEST")
        gl.depthFunc("LESS")
        gl.disable("BLEND")
        draw(gl, quad(-1, -1, 1, 1, 0.8, (0.3, 0.5, 0.3, 1)))           # far wall
        draw(gl, quad(0.0, -1, 1, 1, 0.2, (0.8, 0.4, 0.2, 1)))          # near box
        x = -0.9 + 0.1 * k
        draw(gl, quad(x, -0.5, x + 0.3, 0.0, 0.5, (0.2, 0.3, 0.9, 1)))  # moving box
        gl.disable("DEPTH_TEST")
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        draw(gl, quad(-1, 0.75, 1, 1, 0.0, (1, 1, 1, 0.5)))            # HUD
        gl.endFrame()
    return gl.recorded_frames()
