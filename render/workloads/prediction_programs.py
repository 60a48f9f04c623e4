"""The workloads of the execution-time prediction study (``tilesim predict``, seeds 000 and 003).

Written with the recording API, after the programs the seeds evaluate (Concepts for Execution
Time Prediction of 3D GPU Rendering, seed 003 §VI; Hua Ma's thesis, seed 000 §7.4):

- ``es2gears``: Mesa demos' es2gears: three gears of 20, 10 and 10 teeth, seven triangle
  strips a tooth (280 draws of 2 to 5 triangles a frame, 003 §VI-D), one clear and the swap;
  the gears turn with time (70 degrees a second) so the matrices differ every frame. The
  program is es2gears' own (``shaders/corpus/es2gears-*``).
- ``glmark2-build`` / ``glmark2-shading``: glmark2's build scene (the bunny, light-basic) and the
  shading scene's phong program on the same mesh (glmark2's cat is a .3ds model tilesim does
  not read): one draw a frame, the model turning.
- ``clearspd``: Mesa demos' clearspd as 003 §VI-C changed it: a loop of glClear with a random
  count between 1 and 500 before each glFinish, and (``random_color``) a random clear color
  before every clear.
- ``clearspd-alternating``: 003 §VI-E: two contexts (640x480 and 1920x1080 windows), black,
  300 clears then glFinish, alternating between the contexts every frame. The trace's manifest
  ``source`` holds ``contexts`` and ``frame_context``
  (:mod:`tilesim.prediction.command_groups`).
- ``texture-stream``: a video-like stream of texture uploads (000 §5.5's buffer-size class):
  every frame uploads a new image of random texels, a square of 64 to 1024 texels a side
  chosen at random, with glTexImage2D when the size changes and glTexSubImage2D when it does
  not, generates its mipmaps in frame 0 and then in half of the frames (at random), and
  flushes (one command group of uploads); then a clear, one textured quad turning in front
  of the camera (glmark2's texture program; in frame 0 also with the other filter) and the
  swap.
- ``vertex-stream``: a streaming-vertex program (000 §5.5's buffer-size class for vertex
  data): a waving surface animated on the CPU every frame, as a cloth or water simulation
  is, a grid of 16 to 128 cells a side (at random) drawn as two lit triangles a cell
  (es2gears' program, 24 bytes a vertex, 37 KB to 2.4 MB a frame). Its vertex buffer is
  re-uploaded every frame: glBufferData when the grid's size changes, else glBufferData of
  the same size (orphaning, the usual streaming idiom) or glBufferSubData, at random; then
  glFlush (the upload group, as in ``texture-stream``); then a clear, the draw and the swap.

May import: ``render.traces``, ``render.gl``, ``tilesim.shaders`` and the ``tilesim`` base.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tilesim.render.gl.commands import Command, Recorder
from tilesim.render.workloads.transforms import perspective, rotate, translate

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "shaders" / "corpus"
ES2GEARS_SIZE = (300, 300)      # es2gears' fixed window
GLMARK2_SIZE = (640, 432)       # 000 §7.4: "the window resolution of all applications"
ALTERNATING_SIZES = ((640, 480), (1920, 1080))   # 003 §VI-E


def corpus_program(prefix: str) -> SimpleNamespace:
    """A corpus program (GLSL, TGSI, interface) whose folder starts with ``prefix``; recording
    it needs no Mesa."""
    folder = next(p for p in sorted(CORPUS.glob(f"{prefix}*")))

    def read(name: str) -> str:
        return (folder / name).read_text(encoding="utf-8")

    return SimpleNamespace(vertex_glsl=read("vertex.glsl"), fragment_glsl=read("fragment.glsl"),
                           vertex_tgsi=read("vertex.tgsi"), fragment_tgsi=read("fragment.tgsi"),
                           interface=json.loads(read("interface.json")))


# --- es2gears --------------------------------------------------------------------------------

def gear_strips(inner: float, outer: float, width: float, teeth: int,
                tooth_depth: float) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """es2gears' create_gear: (V, 6) float32 [position, normal] rows and the (first, count)
    of its 7 triangle strips a tooth."""
    r0, r1, r2 = inner, outer - tooth_depth / 2, outer + tooth_depth / 2
    da = 2 * np.pi / teeth / 4
    z = width / 2
    rows: list[list[float]] = []
    strips: list[tuple[int, int]] = []

    def strip(vertices):
        strips.append((len(rows), len(vertices)))
        rows.extend(vertices)

    for i in range(teeth):
        a = i * 2 * np.pi / teeth
        c = [np.cos(a + j * da) for j in range(5)]
        s = [np.sin(a + j * da) for j in range(5)]

        def p(r, k, zz, n, c=c, s=s):
            return [r * c[k], r * s[k], zz, *n]

        for zz, nz in ((z, 1.0), (-z, -1.0)):                      # front and back faces
            n = (0.0, 0.0, nz)
            strip([p(r2, 1, zz, n), p(r2, 2, zz, n), p(r1, 0, zz, n), p(r1, 3, zz, n),
                   p(r0, 0, zz, n), p(r1, 4, zz, n), p(r0, 4, zz, n)])
        for (ra, ka), (rb, kb) in (((r1, 0), (r2, 1)), ((r2, 1), (r2, 2)),
                                   ((r2, 2), (r1, 3)), ((r1, 3), (r1, 4)),
                                   ((r0, 4), (r0, 0))):               # the five side strips
            dx, dy = rb * c[kb] - ra * c[ka], rb * s[kb] - ra * s[ka]
            length = np.hypot(dx, dy) or 1.0
            n = (dy / length, -dx / length, 0.0)
            if ra == r0:
                n = (-c[ka], -s[ka], 0.0)
            strip([p(ra, ka, z, n), p(ra, ka, -z, n), p(rb, kb, z, n), p(rb, kb, -z, n)])
    return np.asarray(rows, dtype=np.float32), strips


GEARS = (  # inner, outer, width, teeth, tooth depth; position; color (es2gears.c)
    ((1.0, 4.0, 1.0, 20, 0.7), (-3.0, -2.0), (0.8, 0.1, 0.0, 1.0), 1.0, 0.0),
    ((0.5, 2.0, 2.0, 10, 0.7), (3.1, -2.0), (0.0, 0.8, 0.2, 1.0), -2.0, -9.0),
    ((1.3, 2.0, 0.5, 10, 0.7), (-3.1, 4.2), (0.2, 0.2, 1.0, 1.0), -2.0, -25.0),
)


def es2gears(width: int = ES2GEARS_SIZE[0], height: int = ES2GEARS_SIZE[1],
             frames: int = 30, seed: int = 0) -> list[list[Command]]:
    """es2gears' frames: 1 clear, 280 draws, the swap (see the module doc)."""
    rng = np.random.default_rng(seed)
    gl = Recorder(width, height, name="es2gears")
    program = corpus_program("es2gears-")
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    mvp_loc = gl.getUniformLocation(prog, "ModelViewProjectionMatrix")
    normal_loc = gl.getUniformLocation(prog, "NormalMatrix")
    color_loc = gl.getUniformLocation(prog, "MaterialColor")
    gl.uniform4f(gl.getUniformLocation(prog, "LightSourcePosition"), 5.0, 5.0, 10.0, 1.0)
    gears = []
    for shape, _, _, _, _ in GEARS:
        rows, strips = gear_strips(*shape)
        vbo = gl.createBuffer()
        gl.bindBuffer("ARRAY_BUFFER", vbo)
        gl.bufferData("ARRAY_BUFFER", rows)
        gears.append((vbo, strips))
    gl.enable("CULL_FACE")
    gl.enable("DEPTH_TEST")
    gl.clearColor(0.0, 0.0, 0.0, 0.0)
    projection = perspective(60.0, width / height, 1.0, 1024.0)
    view = translate(0.0, 0.0, -20.0) @ rotate("x", 20.0) @ rotate("y", 30.0)
    t = 0.0
    for _ in range(frames):
        t += 1 / 60 * (1.0 + 0.2 * rng.standard_normal())   # frame times jitter
        angle = 70.0 * t
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        for (vbo, strips), (_, (x, y), color, speed, phase) in zip(gears, GEARS, strict=True):
            model_view = view @ translate(x, y, 0.0) @ rotate("z", speed * angle + phase)
            normal = np.linalg.inv(model_view).T
            gl.uniformMatrix4fv(mvp_loc, False, (projection @ model_view).astype(np.float32).T
                                .ravel())
            gl.uniformMatrix4fv(normal_loc, False, normal.astype(np.float32).T.ravel())
            gl.uniform4f(color_loc, *color)
            gl.bindBuffer("ARRAY_BUFFER", vbo)
            gl.vertexAttribPointer(0, 3, "FLOAT", False, 24, 0)
            gl.vertexAttribPointer(1, 3, "FLOAT", False, 24, 12)
            gl.enableVertexAttribArray(0)
            gl.enableVertexAttribArray(1)
            for first, count in strips:
                gl.drawArrays("TRIANGLE_STRIP", first, count)
        gl.endFrame()
    return gl.recorded_frames()


# --- glmark2 build and shading -----------------------------------------------------------------

def glmark2(scene: str = "build", width: int = GLMARK2_SIZE[0], height: int = GLMARK2_SIZE[1],
            frames: int = 30, seed: int = 0) -> list[list[Command]]:
    """glmark2's build (light-basic) or shading (phong) program on the bunny: one clear, one
    draw and the swap a frame; the model turns 36 degrees a frame plus a random jitter."""
    from tilesim.render.workloads.bunny import BUNNY, build_program, setup_mesh
    from tilesim.render.workloads.obj_model import load_obj

    rng = np.random.default_rng(seed)
    mesh = load_obj(BUNNY)
    program = build_program() if scene == "build" else corpus_program("glmark2-shading-phong-7")
    gl = Recorder(width, height, name=f"glmark2-{scene}")
    prog = setup_mesh(gl, program, mesh)
    proj = perspective(60.0, width / height, 1.0, 1024.0)
    names = {u["name"] for u in program.interface["uniforms"]}
    angle = 0.0
    for _ in range(frames):
        angle += 12.0 * (1.0 + 0.2 * rng.standard_normal())
        model_view = translate(0.0, 0.0, -2.5) @ rotate("y", angle)
        uniforms = {"ModelViewProjectionMatrix": proj @ model_view,
                    "NormalMatrix": np.linalg.inv(model_view).T, "ModelViewMatrix": model_view}
        for name, value in uniforms.items():
            if name in names:
                gl.uniformMatrix4fv(gl.getUniformLocation(prog, name), False,
                                    value.astype(np.float32).T.ravel())
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.drawElements("TRIANGLES", mesh.indices.size, "UNSIGNED_INT", 0)
        gl.endFrame()
    return gl.recorded_frames()


# --- clearspd --------------------------------------------------------------------------------

def clearspd(width: int = 640, height: int = 480, frames: int = 100, seed: int = 0, *,
             random_count: bool = True, random_color: bool = True,
             clears: int = 300) -> list[list[Command]]:
    """clearspd frames: ``clears`` (random 1..500 with ``random_count``) glClear calls, each
    after a clear color (random with ``random_color``, else black), then glFinish and the
    swap."""
    rng = np.random.default_rng(seed)
    gl = Recorder(width, height, name="clearspd")
    for _ in range(frames):
        count = int(rng.integers(1, 501)) if random_count else clears
        for _ in range(count):
            color = rng.random(3).round(3) if random_color else (0.0, 0.0, 0.0)
            gl.clearColor(float(color[0]), float(color[1]), float(color[2]), 1.0)
            gl.clear("COLOR_BUFFER_BIT")
        gl.finish()
        gl.endFrame()
    return gl.recorded_frames()


def clearspd_alternating(frames: int = 20, sizes=ALTERNATING_SIZES, clears: int = 300
                         ) -> tuple[list[list[Command]], dict]:
    """003 §VI-E: black, ``clears`` clears and glFinish a frame, alternating between the
    contexts of ``sizes``. Returns the frames and the manifest ``source`` naming the contexts."""
    frame_list = []
    for f in range(frames):
        w, h = sizes[f % len(sizes)]
        frame_list.extend(clearspd(w, h, 1, random_count=False, random_color=False,
                                   clears=clears))
    source = {"contexts": [{"width": w, "height": h} for w, h in sizes],
              "frame_context": [f % len(sizes) for f in range(frames)]}
    return frame_list, source


# --- texture-stream -----------------------------------------------------------------------------

TEXTURE_STREAM_SIDES = (64, 128, 256, 512, 1024)


def texture_stream(width: int = GLMARK2_SIZE[0], height: int = GLMARK2_SIZE[1],
                   frames: int = 30, seed: int = 0, sides=TEXTURE_STREAM_SIDES
                   ) -> list[list[Command]]:
    """A texture-upload stream (see the module doc): per frame an upload group (texImage2D or
    texSubImage2D of a random-size image, glGenerateMipmap half of the time, glFlush), then a
    clear, a textured quad and the swap."""
    rng = np.random.default_rng(seed)
    gl = Recorder(width, height, name="texture-stream")
    program = corpus_program("glmark2-texture-texture-filter-nearest-")
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    quad = np.array([[-1, -1, 0, 0, 0, 1, 0, 0], [1, -1, 0, 0, 0, 1, 1, 0],
                     [-1, 1, 0, 0, 0, 1, 0, 1], [1, 1, 0, 0, 0, 1, 1, 1]], np.float32)
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", quad)
    for name, size, offset in (("position", 3, 0), ("normal", 3, 12), ("texcoord", 2, 24)):
        location = gl.getAttribLocation(prog, name)
        gl.vertexAttribPointer(location, size, "FLOAT", False, 32, offset)
        gl.enableVertexAttribArray(location)
    gl.uniform1i(gl.getUniformLocation(prog, "MaterialTexture0"), 0)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", "LINEAR")
    gl.enable("DEPTH_TEST")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    projection = perspective(60.0, width / height, 1.0, 1024.0)
    mvp_loc = gl.getUniformLocation(prog, "ModelViewProjectionMatrix")
    normal_loc = gl.getUniformLocation(prog, "NormalMatrix")
    current = None
    for f in range(frames):
        side = int(rng.choice(sides))
        image = rng.integers(0, 256, (side, side, 4), dtype=np.uint8)
        mipmap = f == 0 or bool(rng.random() < 0.5)
        if side != current:
            gl.texImage2D("TEXTURE_2D", 0, "RGBA", side, side, 0, "RGBA", "UNSIGNED_BYTE",
                          image)
            current = side
        else:
            gl.texSubImage2D("TEXTURE_2D", 0, 0, 0, side, side, "RGBA", "UNSIGNED_BYTE",
                             image)
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER",
                         "LINEAR_MIPMAP_LINEAR" if mipmap else "LINEAR")
        if mipmap:
            gl.generateMipmap("TEXTURE_2D")
        gl.flush()
        model_view = translate(0.0, 0.0, -2.5) @ rotate("y", 20.0 * np.sin(0.3 * f))
        gl.uniformMatrix4fv(mvp_loc, False, (projection @ model_view).astype(np.float32).T
                            .ravel())
        gl.uniformMatrix4fv(normal_loc, False,
                            np.linalg.inv(model_view).T.astype(np.float32).T.ravel())
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        if f == 0:
            # frame 0 draws with both filters: a driver compiles a draw's code for each, and
            # the frames measured after it (000 §7.4 leaves the first three out, run-time
            # calibration learns from frames 1 and 2) should not pay for that
            gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR")
            gl.drawArrays("TRIANGLE_STRIP", 0, 4)
            gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR_MIPMAP_LINEAR")
        gl.drawArrays("TRIANGLE_STRIP", 0, 4)
        gl.endFrame()
    return gl.recorded_frames()


# --- vertex-stream ------------------------------------------------------------------------------

VERTEX_STREAM_CELLS = (16, 32, 64, 128)


def wave_surface(cells: int, t: float) -> np.ndarray:
    """(6 cells^2, 6) float32 [position, normal] rows of the surface
    z = 0.12 sin(3x + t) cos(2y + 0.7t) over [-1, 1]^2, two triangles a cell."""
    axis = np.linspace(-1.0, 1.0, cells + 1)
    x, y = np.meshgrid(axis, axis, indexing="xy")
    z = 0.12 * np.sin(3 * x + t) * np.cos(2 * y + 0.7 * t)
    dzdx = 0.36 * np.cos(3 * x + t) * np.cos(2 * y + 0.7 * t)
    dzdy = -0.24 * np.sin(3 * x + t) * np.sin(2 * y + 0.7 * t)
    normal = np.stack([-dzdx, -dzdy, np.ones_like(z)], axis=-1)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    grid = np.concatenate([np.stack([x, y, z], axis=-1), normal], axis=-1).reshape(-1, 6)
    corner = (np.arange(cells)[None, :] + (cells + 1) * np.arange(cells)[:, None]).ravel()
    row = cells + 1
    # counter-clockwise seen from +z: (0, 1, row + 1) and (0, row + 1, row)
    triangles = np.stack([corner, corner + 1, corner + row + 1,
                          corner, corner + row + 1, corner + row], axis=1).ravel()
    return grid[triangles].astype(np.float32)


def vertex_stream(width: int = GLMARK2_SIZE[0], height: int = GLMARK2_SIZE[1],
                  frames: int = 30, seed: int = 0, cells=VERTEX_STREAM_CELLS
                  ) -> list[list[Command]]:
    """A vertex-upload stream (see the module doc): per frame an upload group (bufferData
    or bufferSubData of the animated surface, glFlush), then a clear, the draw and the
    swap."""
    rng = np.random.default_rng(seed)
    gl = Recorder(width, height, name="vertex-stream")
    program = corpus_program("es2gears-")
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.vertexAttribPointer(gl.getAttribLocation(prog, "position"), 3, "FLOAT", False, 24, 0)
    gl.vertexAttribPointer(gl.getAttribLocation(prog, "normal"), 3, "FLOAT", False, 24, 12)
    gl.enableVertexAttribArray(gl.getAttribLocation(prog, "position"))
    gl.enableVertexAttribArray(gl.getAttribLocation(prog, "normal"))
    gl.uniform4f(gl.getUniformLocation(prog, "LightSourcePosition"), 5.0, 5.0, 10.0, 1.0)
    gl.uniform4f(gl.getUniformLocation(prog, "MaterialColor"), 0.2, 0.5, 0.8, 1.0)
    gl.enable("DEPTH_TEST")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    projection = perspective(60.0, width / height, 1.0, 1024.0)
    mvp_loc = gl.getUniformLocation(prog, "ModelViewProjectionMatrix")
    normal_loc = gl.getUniformLocation(prog, "NormalMatrix")
    model_view = translate(0.0, 0.0, -2.6) @ rotate("x", -50.0)
    gl.uniformMatrix4fv(mvp_loc, False, (projection @ model_view).astype(np.float32).T.ravel())
    gl.uniformMatrix4fv(normal_loc, False,
                        np.linalg.inv(model_view).T.astype(np.float32).T.ravel())
    current = None
    for f in range(frames):
        side = int(rng.choice(cells))
        vertices = wave_surface(side, 0.15 * f)
        orphan = bool(rng.random() < 0.5)
        if side != current or orphan:
            gl.bufferData("ARRAY_BUFFER", vertices, "STREAM_DRAW")
            current = side
        else:
            gl.bufferSubData("ARRAY_BUFFER", 0, vertices)
        gl.flush()
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.drawArrays("TRIANGLES", 0, len(vertices))
        gl.endFrame()
    return gl.recorded_frames()


# --- registry --------------------------------------------------------------------------------

PREDICTION_WORKLOADS = ("es2gears", "glmark2-build", "glmark2-shading", "clearspd",
                        "clearspd-alternating", "texture-stream", "vertex-stream")


def write_prediction_workload(name: str, path: str | os.PathLike, frames: int, seed: int = 0,
                              size: tuple[int, int] | None = None) -> Path:
    """Build prediction workload ``name`` (``PREDICTION_WORKLOADS``) and write it as a trace."""
    from tilesim.render.traces.trace_file import write_trace

    source = {"generator": f"{__name__}:{name}", "seed": int(seed), "frames": int(frames)}
    if name == "es2gears":
        width, height = size or ES2GEARS_SIZE
        commands = es2gears(width, height, frames, seed)
    elif name in ("glmark2-build", "glmark2-shading"):
        width, height = size or GLMARK2_SIZE
        commands = glmark2(name.split("-")[1], width, height, frames, seed)
    elif name == "clearspd":
        width, height = size or (640, 480)
        commands = clearspd(width, height, frames, seed)
    elif name == "texture-stream":
        width, height = size or GLMARK2_SIZE
        commands = texture_stream(width, height, frames, seed)
    elif name == "vertex-stream":
        width, height = size or GLMARK2_SIZE
        commands = vertex_stream(width, height, frames, seed)
    elif name == "clearspd-alternating":
        sizes = ALTERNATING_SIZES if size is None else (size, ALTERNATING_SIZES[1])
        commands, contexts = clearspd_alternating(frames, sizes)
        source.update(contexts)
        width, height = sizes[0]
    else:
        raise KeyError(f"unknown prediction workload {name!r} (known: "
                       f"{', '.join(PREDICTION_WORKLOADS)})")
    return write_trace(path, commands, width=width, height=height, name=name, source=source)
