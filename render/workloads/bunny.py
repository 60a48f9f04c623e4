"""glmark2's "build" scene as a workload: the bunny (about 70k triangles), light-basic shading.

The program is glmark2's own (the corpus entry captured from glmark2-es2: GLSL, TGSI and
interface), so recording needs no Mesa; the camera follows glmark2 build's (60 degree
perspective, the model turning about y). Used by the bundled default trace and the bunny
benchmark.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tilesim.render.workloads.transforms import perspective, rotate, translate

ROOT = Path(__file__).resolve().parents[2]
BUNNY = Path("/usr/share/glmark2/models/bunny.obj")


def build_program():
    folder = next(p for p in sorted((ROOT / "shaders" / "corpus").glob("glmark2-build-*")))

    def read(name: str) -> str:
        return (folder / name).read_text(encoding="utf-8")

    return SimpleNamespace(vertex_glsl=read("vertex.glsl"), fragment_glsl=read("fragment.glsl"),
                           vertex_tgsi=read("vertex.tgsi"), fragment_tgsi=read("fragment.tgsi"),
                           interface=json.loads(read("interface.json")))


def matrices(frame: int, width: int, height: int):
    """glmark2 build's camera: perspective 60 degrees, the model rotating about y."""
    proj = perspective(60.0, width / height, 1.0, 1024.0)
    model_view = translate(0.0, 0.0, -2.5) @ rotate("y", 36.0 * frame)
    normal = np.linalg.inv(model_view).T
    return (proj @ model_view).astype(np.float32), normal.astype(np.float32)


def setup_mesh(gl, program, mesh) -> int:
    """glmark2's set-up of a model scene: ``program`` (compiled) in use, the mesh's
    interleaved positions and normals and its indices in buffers, the depth test on, a black
    clear color. Returns the program name."""
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", mesh.interleaved())
    ibo = gl.createBuffer()
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
    gl.bufferData("ELEMENT_ARRAY_BUFFER", mesh.indices)
    gl.vertexAttribPointer(0, 3, "FLOAT", False, 24, 0)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 3, "FLOAT", False, 24, 12)
    gl.enableVertexAttribArray(1)
    gl.enable("DEPTH_TEST")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    return prog


def record(frames: int, width: int, height: int):
    from tilesim.render.gl.commands import Recorder
    from tilesim.render.workloads.obj_model import load_obj

    mesh = load_obj(BUNNY)
    program = build_program()
    gl = Recorder(width, height, name="bunny")
    prog = setup_mesh(gl, program, mesh)
    for frame in range(frames):
        mvp, normal = matrices(frame, width, height)
        gl.uniformMatrix4fv(gl.getUniformLocation(prog, "ModelViewProjectionMatrix"), False,
                            mvp.T.ravel())
        gl.uniformMatrix4fv(gl.getUniformLocation(prog, "NormalMatrix"), False,
                            normal.T.ravel())
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.drawElements("TRIANGLES", mesh.indices.size, "UNSIGNED_INT", 0)
        gl.endFrame()
    return gl.recorded_frames(), mesh, program


