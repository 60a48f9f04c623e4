"""Small traces recorded in tests (no Mesa needed: the program comes precompiled)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tilesim.render.gl.commands import Recorder
from tilesim.render.traces.trace_file import write_trace
from tilesim.render.workloads.bunny import build_program


def sphere_trace(path: Path, frames: int, size=(160, 120), *, segments=(60, 30),
                 scale=(0.5, 0.6), clear_step: float = 0.02, before_clear=None,
                 clear_mask=None) -> Path:
    """A lit sphere turning over ``frames`` frames with glmark2's build program; the clear
    color changes by ``clear_step`` per frame (0: a static background). ``before_clear(gl,
    f)`` records more commands before frame f's clear; ``clear_mask(f)``: the buffers it
    clears (default color and depth)."""
    nu, nv = segments
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, nu + 1), np.linspace(0, np.pi, nv + 1))
    p = np.stack([np.cos(u) * np.sin(v), np.cos(v), np.sin(u) * np.sin(v)], -1).reshape(-1, 3)
    j, i = np.mgrid[0:nv, 0:nu]
    a = (j * (nu + 1) + i).ravel()
    idx = np.stack([a, a + nu + 1, a + 1, a + 1, a + nu + 1, a + nu + 2], 1).astype(np.uint16)
    program = build_program()
    gl = Recorder(*size, name="sphere")
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    gl.bindBuffer("ARRAY_BUFFER", gl.createBuffer())
    gl.bufferData("ARRAY_BUFFER", np.concatenate([p, p], 1).astype(np.float32))
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", gl.createBuffer())
    gl.bufferData("ELEMENT_ARRAY_BUFFER", idx.ravel())
    gl.vertexAttribPointer(0, 3, "FLOAT", False, 24, 0)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 3, "FLOAT", False, 24, 12)
    gl.enableVertexAttribArray(1)
    gl.enable("DEPTH_TEST")
    sx, sy = scale
    for f in range(frames):
        c, s = np.cos(0.3 * f), np.sin(0.3 * f)
        m = np.array([[sx * c, 0, sx * s, 0], [0, sy, 0, 0], [-sx * s, 0, sx * c, 0],
                      [0, 0, 0, 1]], dtype=np.float32)
        for name in ("ModelViewProjectionMatrix", "NormalMatrix"):
            gl.uniformMatrix4fv(gl.getUniformLocation(prog, name), False, m.T.ravel())
        gl.clearColor(0.1, 0.1, 0.2 + clear_step * f, 1.0)
        if before_clear is not None:
            before_clear(gl, f)
        gl.clear(*(("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT") if clear_mask is None
                   else clear_mask(f)))
        gl.drawElements("TRIANGLES", idx.size, "UNSIGNED_SHORT", 0)
        gl.endFrame()
    write_trace(path, gl.recorded_frames(), width=size[0], height=size[1], name=path.stem)
    return path
