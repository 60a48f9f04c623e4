"""The conformance scenes as data: small GLES2 programs, each recorded once with the
WebGL-style :class:`tilesim.render.gl.commands.Recorder`, that ``tilesim conformance``
(:mod:`tilesim.render.studies.conformance`) renders with tilesim and with Mesa and compares.

A scene is a function ``scene_<name>(gl)`` registered in ``SCENES`` with its default size;
its docstring's first line says what it exercises. :func:`record_scene` records one into
frames of commands. They cover the OpenGL ES 2.0 pipeline feature by feature: fill-rule edge
cases, clipping, culling and winding, depth functions and masks, every blend factor and
equation, color masks, scissor, texture filtering, wrapping, mipmaps, formats, cube maps,
render-to-texture, depth textures (a shadow map), copies from the framebuffer into textures,
strips and fans, indexed and client-side arrays, discard, a 70k triangle mesh (glmark2's
bunny), and multi-pass chains (render-to-texture with mipmaps of rendered textures,
post-processing, re-attached textures).

May import: ``render.gl``, ``render.traces``, ``tilesim.shaders`` and the ``tilesim`` base.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.render.gl.commands import BLEND_FACTORS, COMPARE_FUNCS, Command, Recorder
from tilesim.render.workloads.transforms import gl_matrix, look_at, perspective, rotate, translate

GLMARK2 = Path("/usr/share/glmark2")


# --- the scene registry --------------------------------------------------------------------

@dataclass(frozen=True)
class Scene:
    """A conformance scene: ``build(gl)`` records its frames; ``size`` is the default
    (width, height) in pixels; ``covers`` says what it exercises."""

    name: str
    build: Callable[[Recorder], None]
    size: tuple[int, int]
    covers: str


SCENES: dict[str, Scene] = {}


def _scene(name: str, size: tuple[int, int] = (128, 128)):
    def register_scene(fn):
        doc = (fn.__doc__ or "").strip().splitlines()
        SCENES[name] = Scene(name, fn, size, doc[0] if doc else name)
        return fn
    return register_scene


def record_scene(name: str, size: tuple[int, int] | None = None
                 ) -> tuple[list[list[Command]], int, int]:
    """Record scene ``name``: (frames of commands, width, height)."""
    scene = SCENES.get(name)
    if scene is None:
        raise InputError(f"unknown conformance scene {name!r}; scenes: {', '.join(SCENES)}")
    width, height = size or scene.size
    gl = Recorder(width, height, name=f"conformance scene {name}")
    scene.build(gl)
    frames = gl.recorded_frames()
    if not frames:
        raise AssertionError(f"scene {name} recorded no frame")  # pragma: no cover
    return frames, width, height


# --- shaders and helpers used by the scenes ------------------------------------------------

ATTRIBUTES = {"a_position": 0, "a_color": 1, "a_texcoord": 2, "a_normal": 3}

VS_NDC = """
attribute vec4 a_position;
attribute vec4 a_color;
varying vec4 v_color;
void main() {
    v_color = a_color;
    gl_Position = a_position;
}
"""

# Positions in window pixels (x, y from the bottom-left corner of the viewport), z in NDC.
VS_PIXEL = """
attribute vec4 a_position;
attribute vec4 a_color;
uniform vec2 u_size;
varying vec4 v_color;
void main() {
    v_color = a_color;
    gl_Position = vec4(a_position.xy / u_size * 2.0 - 1.0, a_position.z, 1.0);
}
"""

FS_COLOR = """
precision highp float;
varying vec4 v_color;
void main() {
    gl_FragColor = v_color;
}
"""

VS_MVP_TEX = """
attribute vec4 a_position;
attribute vec2 a_texcoord;
uniform mat4 u_mvp;
varying vec2 v_uv;
void main() {
    v_uv = a_texcoord;
    gl_Position = u_mvp * a_position;
}
"""

VS_TEX = """
attribute vec4 a_position;
attribute vec2 a_texcoord;
varying vec2 v_uv;
void main() {
    v_uv = a_texcoord;
    gl_Position = a_position;
}
"""

FS_TEX = """
precision highp float;
uniform sampler2D u_tex;
varying vec2 v_uv;
void main() {
    gl_FragColor = texture2D(u_tex, v_uv);
}
"""


def _program(gl: Recorder, vs: str, fs: str) -> int:
    locations = {name: loc for name, loc in ATTRIBUTES.items() if name in vs}
    program = gl.createProgram(vs, fs, attrib_locations=locations)
    gl.useProgram(program)
    return program


def _pixel_program(gl: Recorder, fs: str = FS_COLOR, size=None) -> int:
    program = _program(gl, VS_PIXEL, fs)
    width, height = size or (gl.width, gl.height)
    gl.uniform2f(gl.getUniformLocation(program, "u_size"), float(width), float(height))
    return program


def _attrib(gl: Recorder, name: str, values, *, size: int | None = None, type_="FLOAT",
            normalized=False, stride=0) -> None:
    """A client-side array for attribute ``name`` (or the constant value if ``values`` is a
    tuple of 4 numbers)."""
    location = ATTRIBUTES[name]
    if isinstance(values, tuple):
        gl.disableVertexAttribArray(location)
        gl.vertexAttrib4f(location, *values)
        return
    array = np.ascontiguousarray(values)
    gl.vertexAttribPointer(location, size or array.shape[-1], type_, normalized, stride, array)
    gl.enableVertexAttribArray(location)


def _draw(gl: Recorder, mode: str, positions, colors=None, *, texcoords=None,
          indices=None, index_type: str = "UNSIGNED_SHORT") -> None:
    """Draw with client-side arrays: positions (N, 2..4), colors (N, 4) or one RGBA tuple."""
    positions = np.asarray(positions, dtype=np.float32)
    _attrib(gl, "a_position", positions)
    if colors is not None:
        if isinstance(colors, tuple):
            _attrib(gl, "a_color", tuple(float(c) for c in colors))
        else:
            _attrib(gl, "a_color", np.asarray(colors, dtype=np.float32))
    if texcoords is not None:
        _attrib(gl, "a_texcoord", np.asarray(texcoords, dtype=np.float32))
    if indices is None:
        gl.drawArrays(mode, 0, len(positions))
    else:
        dtype = {"UNSIGNED_BYTE": np.uint8, "UNSIGNED_SHORT": np.uint16,
                 "UNSIGNED_INT": np.uint32}[index_type]
        idx = np.asarray(indices, dtype=dtype).ravel()
        gl.drawElements(mode, idx.size, index_type, idx)


def _quad(x0, y0, x1, y1, z=0.0) -> np.ndarray:
    """Two triangles (6 vertices) of an axis-aligned rectangle, counter-clockwise."""
    return np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z],
                     [x0, y0, z], [x1, y1, z], [x0, y1, z]], dtype=np.float32)


def _quad_uv(u0=0.0, v0=0.0, u1=1.0, v1=1.0) -> np.ndarray:
    return np.array([[u0, v0], [u1, v0], [u1, v1], [u0, v0], [u1, v1], [u0, v1]],
                    dtype=np.float32)


def _cells(gl: Recorder, cols: int, rows: int):
    """Viewport rectangles of a cols x rows grid, row 0 at the top, in reading order."""
    cw, ch = gl.width // cols, gl.height // rows
    for r in range(rows):
        for c in range(cols):
            yield c * cw, gl.height - (r + 1) * ch, cw, ch


def _hsv(h: float, s: float = 0.8, v: float = 0.9, a: float = 1.0) -> tuple:
    i = int(h * 6) % 6
    f = h * 6 - math.floor(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    rgb = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i]
    return (*rgb, a)


def _set_matrix(gl: Recorder, program: int, name: str, matrix: np.ndarray) -> None:
    gl.uniformMatrix4fv(gl.getUniformLocation(program, name), False, gl_matrix(matrix))


def _texture(gl: Recorder, image: np.ndarray | None, *, fmt: str = "RGBA",
             type_: str = "UNSIGNED_BYTE", min_filter: str = "LINEAR",
             mag_filter: str = "LINEAR", wrap=("REPEAT", "REPEAT"), mipmap: bool = False,
             size: tuple[int, int] | None = None) -> int:
    """A 2D texture from ``image`` ((H, W, C) uint8 rows from t = 0, or raw bytes with
    ``size``), bound to the active unit."""
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    if size is None:
        height, width = image.shape[:2]
    else:
        width, height = size
    gl.texImage2D("TEXTURE_2D", 0, fmt, width, height, 0, fmt, type_, image)
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", min_filter)
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", mag_filter)
    gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_S", wrap[0])
    gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_T", wrap[1])
    if mipmap:
        gl.generateMipmap("TEXTURE_2D")
    return texture


def _glmark2_image(name: str, size: int, fallback_seed: int) -> np.ndarray:
    """A glmark2 texture resized to size x size RGBA (rows from t = 0), or, where glmark2's
    data are not installed, a seeded procedural image of the same kind."""
    path = GLMARK2 / "textures" / name
    if path.exists():
        from PIL import Image

        with Image.open(path) as im:
            im = im.convert("RGBA").resize((size, size), Image.Resampling.BOX)
            return np.asarray(im, dtype=np.uint8)[::-1].copy()
    return _noise_image(size, fallback_seed)


def _noise_image(size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (8, 8, 4)).astype(np.float64)
    yy, xx = np.mgrid[0:size, 0:size] / size * 7
    i, j = np.floor(yy).astype(int), np.floor(xx).astype(int)
    fy, fx = (yy - i)[..., None], (xx - j)[..., None]
    img = (coarse[i, j] * (1 - fx) * (1 - fy) + coarse[i, j + 1] * fx * (1 - fy)
           + coarse[i + 1, j] * (1 - fx) * fy + coarse[i + 1, j + 1] * fx * fy)
    img += rng.integers(-40, 41, (size, size, 4))
    img[..., 3] = 255
    return np.clip(img, 0, 255).astype(np.uint8)


def _checker(size: int, cells: int, a=(255, 255, 255, 255), b=(40, 40, 40, 255)) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size] * cells // size
    odd = ((xx + yy) % 2).astype(bool)
    return np.where(odd[..., None], np.array(b, np.uint8), np.array(a, np.uint8))


def _ramp_texels(width: int, height: int) -> np.ndarray:
    """(H, W, 4) texels: red grows with s, green with t, blue marks the t = 0 row and the
    s = 0 column (so wrapping and mirroring show which edge is which)."""
    t, s = np.mgrid[0:height, 0:width]
    img = np.zeros((height, width, 4), dtype=np.uint8)
    img[..., 0] = 40 + 200 * s // max(width - 1, 1)
    img[..., 1] = 40 + 200 * t // max(height - 1, 1)
    img[..., 2] = np.where((s == 0) | (t == 0), 230, 60)
    img[..., 3] = 255
    return img


# --- fill-rule and rasterization scenes ----------------------------------------------------

def _additive(gl: Recorder) -> None:
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.enable("BLEND")
    gl.blendFunc("ONE", "ONE")


@_scene("fill_fan")
def scene_fill_fan(gl: Recorder) -> None:
    """Triangle fans sharing edges (additive blending: a pixel drawn twice or missed shows)."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    # Fan 1: centre on a pixel centre, rim points on a circle rounded to half pixels.
    cx, cy = w // 4 + 0.5, h // 2 + 0.5
    angles = np.linspace(0, 2 * np.pi, 33)
    radius = min(w, h) * 0.22
    rim = np.stack([np.round((cx + radius * np.cos(angles)) * 2) / 2,
                    np.round((cy + radius * np.sin(angles)) * 2) / 2], axis=1)
    _draw(gl, "TRIANGLE_FAN", np.vstack([[cx, cy], rim]), (0.35, 0.25, 0.15, 1.0))
    # Fan 2: centre on a pixel corner, rim on a square with axis-aligned and diagonal spokes
    # through pixel centres.
    cx, cy = 3 * w // 4, h // 2
    r = int(min(w, h) * 0.2)
    square = []
    for k in range(17):
        t = k / 16 * 4
        side, f = int(t) % 4, t - int(t)
        x, y = [(r, -r + 2 * r * f), (r - 2 * r * f, r), (-r, r - 2 * r * f),
                (-r + 2 * r * f, -r)][side]
        square.append([cx + x + 0.5 * (k % 2), cy + y])
    _draw(gl, "TRIANGLE_FAN", np.vstack([[cx, cy], square]), (0.2, 0.3, 0.4, 1.0))
    # Fan 3 (small, top): many thin wedges meeting at one point.
    cx, cy = w // 2 + 0.25, h - h // 6 + 0.75
    angles = np.linspace(0, np.pi, 25)
    rim = np.stack([cx + 0.18 * w * np.cos(angles), cy - 0.1 * h * np.sin(angles)], axis=1)
    _draw(gl, "TRIANGLE_FAN", np.vstack([[cx, cy], rim]), (0.15, 0.4, 0.2, 1.0))
    gl.endFrame()


def _grid_mesh(x0, y0, nx, ny, step_x, step_y, jitter, rng, diagonal_flip=True):
    """Vertices (on a grid, optionally jittered) and triangle indices of an nx x ny grid."""
    gx, gy = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1))
    pts = np.stack([x0 + gx * step_x, y0 + gy * step_y], axis=-1).astype(np.float64)
    if jitter:
        inner = (gx > 0) & (gx < nx) & (gy > 0) & (gy < ny)
        offsets = np.round(rng.uniform(-jitter, jitter, pts.shape) * 256) / 256
        pts[inner] += offsets[inner]
    pts = pts.reshape(-1, 2)
    tris = []
    for j in range(ny):
        for i in range(nx):
            a = j * (nx + 1) + i
            b, c, d = a + 1, a + nx + 1, a + nx + 2
            if diagonal_flip and (i + j) % 2:
                tris += [[a, b, c], [b, d, c]]
            else:
                tris += [[a, b, d], [a, d, c]]
    return pts, np.asarray(tris)


@_scene("fill_shared_edges")
def scene_fill_shared_edges(gl: Recorder) -> None:
    """Meshes whose vertices lie on pixel centres, on pixel corners and at jittered
    sub-pixel positions; additive blending shows double-covered or missed pixels."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    rng = np.random.default_rng(11)
    # Vertices on pixel centres: edges through centres in every direction (ties).
    pts, tris = _grid_mesh(2.5, 2.5, 6, 6, 3.0, 5.0, 0, rng)
    _draw(gl, "TRIANGLES", pts, (0.3, 0.2, 0.1, 1.0), indices=tris)
    # Vertices on pixel corners: diagonals with slope 1 go through centres.
    pts, tris = _grid_mesh(w // 2, 2, 7, 5, 8.0, 8.0, 0, rng)
    _draw(gl, "TRIANGLES", pts, (0.1, 0.3, 0.2, 1.0), indices=tris)
    # Jittered vertices (multiples of 1/256 px).
    pts, tris = _grid_mesh(3, h // 2 + 2, 9, 7, 6.5, 7.5, 2.5, rng)
    _draw(gl, "TRIANGLES", pts, (0.2, 0.1, 0.35, 1.0), indices=tris)
    # Half-pixel spacing: vertices alternate between centres and corners.
    pts, tris = _grid_mesh(w // 2 + 1, h // 2 + 3, 11, 11, 4.5, 4.5, 0, rng, False)
    _draw(gl, "TRIANGLES", pts, (0.25, 0.25, 0.05, 1.0), indices=tris)
    gl.endFrame()


@_scene("fill_tile_boundaries")
def scene_fill_tile_boundaries(gl: Recorder) -> None:
    """Triangles with vertices and edges exactly on the 16-pixel tile grid (and half a pixel
    off it), large ones spanning tiles and small ones around tile corners."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    t = 16
    # Each tile of a band split by its diagonal, vertices on tile corners.
    pts, tris = _grid_mesh(0, 0, w // t, 2, t, t, 0, None)
    _draw(gl, "TRIANGLES", pts, (0.3, 0.15, 0.1, 1.0), indices=tris)
    # Edges on x = 16k + 0.5 / y = 16k + 0.5 (through pixel centres).
    pts, tris = _grid_mesh(0.5, 2 * t + 0.5, w // t - 1, 2, t, t, 0, None, False)
    _draw(gl, "TRIANGLES", pts, (0.1, 0.3, 0.15, 1.0), indices=tris)
    # Large triangles with vertices on tile corners spanning many tiles.
    big = np.array([[0, 4 * t], [w, 4 * t], [w // 2, h], [t, 5 * t], [3 * t, h - t],
                    [w - t, 5 * t]], dtype=np.float64)
    _draw(gl, "TRIANGLES", big, (0.12, 0.12, 0.3, 1.0))
    # Tiny triangles around tile corners.
    corners = [(x, y) for x in range(t, w, 2 * t) for y in range(5 * t, h, 2 * t)]
    small = []
    for k, (x, y) in enumerate(corners):
        d = 0.5 + 0.25 * (k % 4)
        small += [[x - d, y - d], [x + d, y - d], [x, y + d],
                  [x, y], [x + 2 * d, y], [x, y + 2 * d]]
    _draw(gl, "TRIANGLES", small, (0.35, 0.35, 0.0, 1.0))
    gl.endFrame()


@_scene("tiny_triangles")
def scene_tiny_triangles(gl: Recorder) -> None:
    """Hundreds of sub-pixel and one-pixel triangles, some covering no pixel centre, some
    degenerate after snapping to 1/256 pixel."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    rng = np.random.default_rng(5)
    n = 600
    centre = rng.uniform([2, 2], [w - 2, h - 2], (n, 2))
    scale = rng.choice([0.002, 0.2, 0.5, 0.9, 1.6], n)
    offsets = rng.uniform(-1, 1, (n, 3, 2)) * scale[:, None, None]
    pts = (centre[:, None, :] + offsets).reshape(-1, 2)
    colors = np.repeat(rng.uniform(0.1, 0.5, (n, 4)).astype(np.float32), 3, axis=0)
    colors[:, 3] = 1.0
    _draw(gl, "TRIANGLES", pts, colors)
    gl.endFrame()


@_scene("sliver_triangles")
def scene_sliver_triangles(gl: Recorder) -> None:
    """Long thin triangles (0.02 to 0.7 pixel wide) at many angles, vertices on the
    1/256-pixel grid."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    _additive(gl)
    rng = np.random.default_rng(9)
    n = 90
    # Wholly inside the viewport: llvmpipe clips triangles at the viewport edges (no guard
    # band), and the vertices clipping makes are rounded, which moves a sliver's edges.
    a = rng.uniform([1, 1], [w - 1, h - 1], (n, 2))
    b = rng.uniform([1, 1], [w - 1, h - 1], (n, 2))
    width = rng.choice([0.02, 0.1, 0.3, 0.5, 0.7], n)
    direction = (b - a) / np.linalg.norm(b - a, axis=1, keepdims=True)
    normal = np.stack([-direction[:, 1], direction[:, 0]], axis=1)
    c = (a + b) / 2 + normal * width[:, None]
    # Vertices on the 1/256-pixel grid both rasterizers snap to: with a power-of-two size
    # the vertex transform is exact, so coverage is decided by the same integer edge
    # functions on both sides (at other positions, last-bit differences of the transform
    # move a vertex by 1/256 pixel now and then, which a 0.02-pixel sliver feels).
    pts = np.round(np.stack([a, b, c], axis=1).reshape(-1, 2) * 256) / 256
    colors = np.repeat(rng.uniform(0.15, 0.45, (n, 4)).astype(np.float32), 3, axis=0)
    colors[:, 3] = 1.0
    _draw(gl, "TRIANGLES", pts, colors)
    gl.endFrame()


@_scene("overlap_order")
def scene_overlap_order(gl: Recorder) -> None:
    """Many overlapping triangles in one draw: the last one wins without blending, and the
    submission order shows with alpha blending."""
    w, h = gl.width, gl.height
    _pixel_program(gl)
    gl.clearColor(0.1, 0.1, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    rng = np.random.default_rng(3)
    for half, blend in ((0, False), (1, True)):
        n = 120
        x0 = half * w / 2
        pts = rng.uniform([x0 + 2, 2], [x0 + w / 2 - 2, h - 2], (n * 3, 2))
        colors = rng.uniform(0.0, 1.0, (n * 3, 4)).astype(np.float32)
        colors[:, 3] = 0.55
        if blend:
            gl.enable("BLEND")
            gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        _draw(gl, "TRIANGLES", pts, colors)
    gl.endFrame()


# --- clipping, culling, viewport, depth ----------------------------------------------------

FS_PATTERN = """
precision highp float;
varying vec4 v_color;
varying vec2 v_uv;
void main() {
    vec2 s = 0.5 + 0.5 * sin(v_uv * 6.2831853);
    gl_FragColor = vec4(v_color.rgb * (0.35 + 0.65 * s.x * s.y), 1.0);
}
"""

VS_MVP_PATTERN = """
attribute vec4 a_position;
attribute vec4 a_color;
attribute vec2 a_texcoord;
uniform mat4 u_mvp;
varying vec4 v_color;
varying vec2 v_uv;
void main() {
    v_color = a_color;
    v_uv = a_texcoord;
    gl_Position = u_mvp * a_position;
}
"""


@_scene("near_clip")
def scene_near_clip(gl: Recorder) -> None:
    """Perspective geometry crossing the near plane (and behind the eye, w < 0), with
    perspective-correct varyings and depth testing."""
    program = _program(gl, VS_MVP_PATTERN, FS_PATTERN)
    proj = perspective(60.0, gl.width / gl.height, 1.0, 50.0)
    _set_matrix(gl, program, "u_mvp", proj)
    gl.clearColor(0.05, 0.05, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    # A floor from behind the eye to far away.
    # (Off-centre, so that no edge runs exactly through pixel centres: ties on edges that
    # clipping made are decided by rounding, a fill-rule matter other scenes test.)
    floor = np.array([[-6.13, -1.21, 3], [5.87, -1.21, 3], [5.87, -1.21, -40],
                      [-6.13, -1.21, -40]])
    _draw(gl, "TRIANGLE_FAN", floor, np.array([[1, 0.3, 0.2, 1], [0.2, 1, 0.3, 1],
                                               [0.3, 0.4, 1, 1], [1, 1, 0.2, 1]]),
          texcoords=[[0, 0], [6, 0], [6, 20], [0, 20]])
    # A tilted quad whose near part is cut by the near plane (z = -1 in eye space).
    tilted = np.array([[-0.6, -0.45, -0.4], [0.6, -0.45, -0.4], [0.6, 0.5, -3.2],
                       [-0.6, 0.5, -3.2]])
    _draw(gl, "TRIANGLE_FAN", tilted, np.array([[0.9, 0.9, 0.9, 1], [0.9, 0.5, 0.1, 1],
                                                [0.1, 0.5, 0.9, 1], [0.5, 0.9, 0.5, 1]]),
          texcoords=[[0, 0], [2, 0], [2, 3], [0, 3]])
    # A triangle with one vertex behind the eye.
    tri = np.array([[-2.5, 1.5, -6], [1.0, 0.2, -2.5], [0.4, 0.9, 4.0]])
    _draw(gl, "TRIANGLES", tri, np.array([[0.2, 0.9, 0.9, 1], [0.9, 0.2, 0.9, 1],
                                          [0.9, 0.9, 0.2, 1]]),
          texcoords=[[0, 0], [3, 1], [1, 4]])
    gl.endFrame()


FS_UV_WAVES = """
precision highp float;
varying vec2 v_uv;
void main() {
    vec2 w = 0.5 + 0.5 * sin(v_uv * 50.265482);    // 8 periods per unit
    gl_FragColor = vec4(w, 0.5 + 0.5 * sin((v_uv.x + v_uv.y) * 12.566371), 1.0);
}
"""


@_scene("perspective_varyings")
def scene_perspective_varyings(gl: Recorder) -> None:
    """Perspective-correct interpolation on a plane receding to the horizon, where the
    varyings change fast from pixel to pixel (a smooth function of them is drawn)."""
    program = _program(gl, VS_MVP_TEX, FS_UV_WAVES)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    positions, texcoords = _floor(gl, program, repeat=2.0, tilt=17.0)
    _draw(gl, "TRIANGLE_FAN", positions, texcoords=texcoords)
    gl.endFrame()


FS_FACING = """
precision highp float;
varying vec4 v_color;
void main() {
    gl_FragColor = gl_FrontFacing ? v_color : vec4(v_color.rgb * 0.4, 1.0);
}
"""


@_scene("cull_winding")
def scene_cull_winding(gl: Recorder) -> None:
    """cullFace FRONT / BACK / FRONT_AND_BACK (and culling off) with frontFace CCW and CW,
    on clockwise and counter-clockwise triangles and a strip; gl_FrontFacing shades them."""
    _program(gl, VS_NDC, FS_FACING)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    ccw = np.array([[-0.9, -0.9], [-0.1, -0.9], [-0.5, 0.1]])
    cw = np.array([[0.1, -0.9], [0.5, 0.1], [0.9, -0.9]])
    strip = np.array([[-0.9, 0.3], [-0.9, 0.9], [-0.3, 0.3], [-0.3, 0.9], [0.3, 0.3],
                      [0.3, 0.9], [0.9, 0.3], [0.9, 0.9]])
    strip_colors = np.array([_hsv(k / 8) for k in range(8)], dtype=np.float32)
    combos = [(face, cull) for face in ("CCW", "CW")
              for cull in (None, "FRONT", "BACK", "FRONT_AND_BACK")]
    for (x, y, cw_, ch_), (face, cull) in zip(_cells(gl, 4, 2), combos, strict=True):
        gl.viewport(x, y, cw_, ch_)
        gl.frontFace(face)
        if cull is None:
            gl.disable("CULL_FACE")
        else:
            gl.enable("CULL_FACE")
            gl.cullFace(cull)
        _draw(gl, "TRIANGLES", ccw, (1.0, 0.3, 0.2, 1.0))
        _draw(gl, "TRIANGLES", cw, (0.2, 0.5, 1.0, 1.0))
        _draw(gl, "TRIANGLE_STRIP", strip, strip_colors)
    gl.endFrame()


@_scene("depth_funcs")
def scene_depth_funcs(gl: Recorder) -> None:
    """Every depth function, with depth writes on and off: a slanted triangle crosses a
    quad's depth, a second quad lies at exactly the same depth, and a probe shows what was
    written to the depth buffer."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clearDepthf(1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    combos = [(func, mask) for mask in (True, False) for func in COMPARE_FUNCS]
    for (x, y, cw, ch), (func, mask) in zip(_cells(gl, 4, 4), combos, strict=True):
        gl.viewport(x, y, cw, ch)
        gl.depthFunc("LESS")
        gl.depthMask(True)
        _draw(gl, "TRIANGLES", _quad(-0.9, -0.9, 0.9, 0.9, 0.1), (0.4, 0.4, 0.4, 1.0))
        gl.depthFunc(func)
        gl.depthMask(mask)
        slanted = np.array([[-0.85, -0.85, -0.6], [0.85, -0.85, 0.75], [0.0, 0.15, 0.1]])
        _draw(gl, "TRIANGLES", slanted, np.array([[1, 0.2, 0.2, 1], [1, 0.6, 0.1, 1],
                                                  [0.8, 0.1, 0.6, 1]]))
        _draw(gl, "TRIANGLES", _quad(-0.5, 0.3, 0.5, 0.8, 0.1), (0.2, 1.0, 0.3, 1.0))
        gl.depthFunc("LESS")
        gl.depthMask(True)
        _draw(gl, "TRIANGLES", _quad(-0.95, -0.45, 0.95, -0.15, -0.1), (0.2, 0.3, 1.0, 1.0))
    gl.endFrame()


@_scene("viewport_depth_range")
def scene_viewport_depth_range(gl: Recorder) -> None:
    """Viewports partly off the framebuffer and of odd sizes, depthRangef (narrow and
    reversed) deciding which of two intersecting triangles is in front."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.1, 0.1, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    w, h = gl.width, gl.height
    tri_a = np.array([[-1, -1, -0.8], [1, -0.6, 0.8], [-0.2, 1, 0.0]])
    tri_b = np.array([[1, -1, -0.5], [0.3, 1, 0.6], [-1, 0.2, 0.4]])
    views = [(-w // 8, -h // 8, w // 2, h // 2, 0.0, 1.0),
             (w // 2 + 3, 5, w // 2 - 9, h // 3 + 1, 0.25, 0.75),
             (7, h // 2 + 1, w // 3, h // 2 + 20, 1.0, 0.0),
             (w // 2 - 5, h // 2 - 9, w // 2 + 31, h // 2 + 2, 0.6, 0.4)]
    for x, y, vw, vh, near, far in views:
        gl.viewport(x, y, vw, vh)
        gl.depthRangef(near, far)
        _draw(gl, "TRIANGLES", tri_a, np.array([[1, 0.3, 0.3, 1], [1, 0.8, 0.3, 1],
                                                [0.8, 0.3, 0.3, 1]]))
        _draw(gl, "TRIANGLES", tri_b, np.array([[0.3, 0.4, 1, 1], [0.3, 1, 0.9, 1],
                                                [0.4, 0.3, 0.9, 1]]))
    gl.endFrame()


# --- blending, masks, scissor ---------------------------------------------------------------

def _blend_background(gl: Recorder) -> None:
    """A full-screen gradient (every channel, alpha included) to blend onto."""
    gl.disable("BLEND")
    gl.viewport(0, 0, gl.width, gl.height)
    _draw(gl, "TRIANGLE_STRIP", [[-1, -1], [1, -1], [-1, 1], [1, 1]],
          np.array([[0.9, 0.1, 0.3, 0.2], [0.2, 0.8, 0.1, 0.9], [0.1, 0.3, 0.9, 0.6],
                    [0.8, 0.8, 0.7, 0.35]], dtype=np.float32))


_SOURCE_GRADIENT = np.array([[0.9, 0.6, 0.1, 0.15], [0.1, 0.7, 0.9, 0.85],
                             [0.6, 0.1, 0.8, 0.5], [1.0, 1.0, 0.5, 0.95]], dtype=np.float32)


@_scene("blend_factors", size=(180, 168))
def scene_blend_factors(gl: Recorder) -> None:
    """Every (source, destination) blend factor pair GLES2 allows (15 x 14), with a blend
    colour set, over a background with varying colour and alpha."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _blend_background(gl)
    gl.enable("BLEND")
    gl.blendColor(0.25, 0.5, 0.75, 0.6)
    dst_factors = [f for f in BLEND_FACTORS if f != "SRC_ALPHA_SATURATE"]
    combos = [(s, d) for s in BLEND_FACTORS for d in dst_factors]
    for (x, y, cw, ch), (src, dst) in zip(_cells(gl, 15, 14), combos, strict=True):
        gl.viewport(x, y, cw, ch)
        gl.blendFunc(src, dst)
        _draw(gl, "TRIANGLE_STRIP", [[-0.8, -0.8], [0.8, -0.8], [-0.8, 0.8], [0.8, 0.8]],
              _SOURCE_GRADIENT)
    gl.endFrame()


@_scene("blend_equations", size=(144, 96))
def scene_blend_equations(gl: Recorder) -> None:
    """Every (rgb, alpha) blend equation pair with separate rgb / alpha factors and the
    constant colour; a second pass makes the destination alpha visible."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _blend_background(gl)
    gl.enable("BLEND")
    gl.blendColor(0.8, 0.3, 0.5, 0.25)
    equations = ("FUNC_ADD", "FUNC_SUBTRACT", "FUNC_REVERSE_SUBTRACT")
    factor_sets = [("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA", "ONE", "ONE"),
                   ("ONE", "ONE", "SRC_ALPHA", "DST_ALPHA"),
                   ("DST_COLOR", "CONSTANT_COLOR", "ONE_MINUS_DST_ALPHA", "CONSTANT_ALPHA"),
                   ("SRC_ALPHA_SATURATE", "ONE_MINUS_SRC_COLOR", "ZERO", "ONE"),
                   ("ONE_MINUS_CONSTANT_COLOR", "SRC_COLOR", "ONE_MINUS_CONSTANT_ALPHA",
                    "ONE_MINUS_SRC_ALPHA"),
                   ("CONSTANT_ALPHA", "ONE_MINUS_DST_COLOR", "DST_ALPHA", "SRC_ALPHA")]
    combos = [(eq_rgb, eq_a, factors) for factors in factor_sets
              for eq_rgb in equations for eq_a in equations]
    cells = list(_cells(gl, 9, 6))
    for (x, y, cw, ch), (eq_rgb, eq_a, factors) in zip(cells, combos, strict=True):
        gl.viewport(x, y, cw, ch)
        gl.blendEquationSeparate(eq_rgb, eq_a)
        gl.blendFuncSeparate(*factors)
        _draw(gl, "TRIANGLE_STRIP", [[-0.85, -0.85], [0.85, -0.85], [-0.85, 0.85],
                                     [0.85, 0.85]], _SOURCE_GRADIENT)
    # Show the alpha channel in colour: a grey quad blended by DST_ALPHA on the lower half
    # of every cell.
    gl.blendEquation("FUNC_ADD")
    gl.blendFuncSeparate("DST_ALPHA", "ONE_MINUS_DST_ALPHA", "ZERO", "ONE")
    for x, y, cw, ch in cells:
        gl.viewport(x, y, cw, ch)
        _draw(gl, "TRIANGLES", _quad(-1, -1, 1, -0.3), (0.5, 0.5, 0.5, 1.0))
    gl.endFrame()


@_scene("color_depth_masks", size=(128, 160))
def scene_color_depth_masks(gl: Recorder) -> None:
    """Every colorMask combination for draws and for clears (scissored), and depthMask for
    draws and for depth clears."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.1, 0.2, 0.7, 0.9)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    masks = [tuple(bool(m >> k & 1) for k in range(4)) for m in range(16)]
    cells = list(_cells(gl, 8, 5))
    # Row 0-1: draws under each color mask.
    for (x, y, cw, ch), mask in zip(cells[:16], masks, strict=True):
        gl.viewport(x, y, cw, ch)
        gl.colorMask(*mask)
        _draw(gl, "TRIANGLE_STRIP", [[-0.8, -0.8], [0.8, -0.8], [-0.8, 0.8], [0.8, 0.8]],
              _SOURCE_GRADIENT)
    # Row 2-3: scissored clears under each color mask.
    gl.enable("SCISSOR_TEST")
    gl.clearColor(1.0, 0.9, 0.1, 0.25)
    for (x, y, cw, ch), mask in zip(cells[16:32], masks, strict=True):
        gl.colorMask(*mask)
        gl.scissor(x + 2, y + 3, cw - 5, ch - 4)
        gl.clear("COLOR_BUFFER_BIT")
    gl.disable("SCISSOR_TEST")
    gl.colorMask(True, True, True, True)
    # Row 4: depthMask. The left half writes depth near, a masked depth clear must not
    # clear it; the right half clears depth inside a scissor with the mask on.
    x, y, _, ch = cells[32]
    gl.viewport(0, y, gl.width, ch)
    gl.enable("DEPTH_TEST")
    gl.depthFunc("LESS")
    _draw(gl, "TRIANGLES", _quad(-0.95, -0.9, 0.95, 0.1, -0.5), (0.9, 0.2, 0.2, 1.0))
    gl.depthMask(False)
    gl.clear("DEPTH_BUFFER_BIT")           # no effect: depth writes are masked
    _draw(gl, "TRIANGLES", _quad(-0.9, -0.5, -0.1, 0.9, 0.2), (0.2, 0.9, 0.2, 1.0))
    gl.depthMask(True)
    gl.enable("SCISSOR_TEST")
    gl.scissor(gl.width // 2 + 4, y, gl.width // 4, ch)
    gl.clear("DEPTH_BUFFER_BIT")
    gl.disable("SCISSOR_TEST")
    _draw(gl, "TRIANGLES", _quad(0.1, -0.5, 0.9, 0.9, 0.3), (0.2, 0.4, 1.0, 1.0))
    _draw(gl, "TRIANGLES", _quad(-0.6, -0.2, 0.6, 0.3, 0.4), (1.0, 1.0, 1.0, 1.0))
    gl.endFrame()


@_scene("scissor")
def scene_scissor(gl: Recorder) -> None:
    """Scissored clears (overlapping, partly off-screen, empty) and scissored draws, with the
    scissor different from the viewport."""
    w, h = gl.width, gl.height
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.3, 0.3, 0.3, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.enable("SCISSOR_TEST")
    for rect, color in [((5, 7, w // 2, h // 3), (0.9, 0.1, 0.1, 1.0)),
                        ((w // 3, h // 4, w // 2, h // 2), (0.1, 0.8, 0.2, 1.0)),
                        ((-10, h - 20, 45, 50), (0.1, 0.2, 0.9, 1.0)),
                        ((w - 17, -5, 40, 33), (0.9, 0.9, 0.1, 1.0)),
                        ((20, 20, 0, 0), (1.0, 1.0, 1.0, 1.0))]:
        gl.scissor(*rect)
        gl.clearColor(*color)
        gl.clear("COLOR_BUFFER_BIT")
    gl.scissor(w // 8, h // 2 + 3, w // 2 + 5, h // 4 - 1)
    gl.viewport(0, h // 3, w, 2 * h // 3)
    _draw(gl, "TRIANGLES", [[-1, -1], [1, -1], [0, 1]],
          np.array([[1, 0, 1, 1], [0, 1, 1, 1], [1, 1, 0, 1]], dtype=np.float32))
    gl.scissor(w // 2 + 9, 3, w // 3, h // 2)
    gl.viewport(w // 4, 0, w // 2, h // 2)
    _draw(gl, "TRIANGLE_STRIP", [[-1, -1], [1, -1], [-1, 1], [1, 1]],
          np.array([[0.5, 0.2, 0.1, 1], [0.1, 0.5, 0.2, 1], [0.2, 0.1, 0.5, 1],
                    [0.9, 0.9, 0.9, 1]], dtype=np.float32))
    gl.disable("SCISSOR_TEST")
    gl.viewport(0, 0, w, h)
    _draw(gl, "TRIANGLES", _quad(0.6, 0.6, 0.9, 0.9), (0.0, 0.0, 0.0, 1.0))
    gl.endFrame()


# --- primitives, indices, vertex arrays -----------------------------------------------------

@_scene("strips_fans")
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


@_scene("indexed_draws")
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


@_scene("client_arrays")
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


# --- shader features -----------------------------------------------------------------------

FS_FRAGCOORD = """
precision highp float;
varying vec4 v_color;
void main() {
    vec2 cell = fract(gl_FragCoord.xy / 16.0);
    float face = gl_FrontFacing ? 1.0 : 0.3;
    gl_FragColor = vec4(cell.x * face, cell.y * v_color.g, gl_FragCoord.z, 1.0);
}
"""


@_scene("fragcoord_facing")
def scene_fragcoord_facing(gl: Recorder) -> None:
    """gl_FragCoord (x, y, z) and gl_FrontFacing in the fragment shader."""
    _program(gl, VS_NDC, FS_FRAGCOORD)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _draw(gl, "TRIANGLES", np.array([[-1, -1, -0.9], [0.9, -1, 0.2], [-1, 0.9, 0.9]]),
          (1.0, 0.8, 1.0, 1.0))
    _draw(gl, "TRIANGLES", np.array([[1, 1, 0.5], [1, -0.8, -0.5], [-0.8, 1, 0.0]]),
          (1.0, 0.4, 1.0, 1.0))
    gl.endFrame()


FS_DISCARD = """
precision highp float;
varying vec4 v_color;
varying vec2 v_uv;
void main() {
    if (fract(v_uv.x * 7.0 + v_uv.y * 3.0) < 0.35)
        discard;
    if (length(v_uv - vec2(0.5)) > 0.47)
        discard;
    gl_FragColor = v_color;
}
"""


@_scene("discard")
def scene_discard(gl: Recorder) -> None:
    """A fragment shader that discards (screen-space pattern and a disc), depth-tested late:
    discarded fragments must neither write color nor depth."""
    program = _program(gl, VS_MVP_PATTERN, FS_DISCARD)
    _set_matrix(gl, program, "u_mvp", np.eye(4))
    gl.clearColor(0.1, 0.1, 0.2, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    uv = [[0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]]
    _draw(gl, "TRIANGLES", _quad(-0.9, -0.9, 0.5, 0.5, -0.2), (1.0, 0.5, 0.2, 1.0),
          texcoords=uv)
    _draw(gl, "TRIANGLES", _quad(-0.5, -0.5, 0.9, 0.9, 0.3), (0.2, 0.6, 1.0, 1.0),
          texcoords=uv)
    # Behind both: visible only through the holes.
    _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1, 0.8), (0.3, 0.9, 0.3, 1.0),
          texcoords=[[0.02, 0.02], [0.98, 0.02], [0.98, 0.98], [0.02, 0.02], [0.98, 0.98],
                     [0.02, 0.98]])
    gl.endFrame()


# glmark2's light-basic program (the "build" scene), its constants as glmark2 prepends them.
VS_LIGHT_BASIC = """
const vec4 MaterialDiffuse = vec4(1.000000, 1.000000, 1.000000, 1.000000);
const vec4 LightSourcePosition = vec4(20.000000, 20.000000, 10.000000, 1.000000);
attribute vec3 position;
attribute vec3 normal;

uniform mat4 ModelViewProjectionMatrix;
uniform mat4 NormalMatrix;

varying vec4 Color;

void main(void)
{
    vec3 N = normalize(vec3(NormalMatrix * vec4(normal, 1.0)));
    vec3 L = normalize(LightSourcePosition.xyz);
    float diffuse = max(dot(N, L), 0.0);
    Color = vec4(diffuse * MaterialDiffuse.rgb, MaterialDiffuse.a);
    gl_Position = ModelViewProjectionMatrix * vec4(position, 1.0);
}
"""

FS_LIGHT_BASIC = """
precision highp float;
varying vec4 Color;

void main(void)
{
    gl_FragColor = Color;
}
"""


@_scene("bunny", size=(320, 240))
def scene_bunny(gl: Recorder) -> None:
    """glmark2's bunny (34,835 vertices, 69,666 triangles) with the light-basic per-vertex
    directional lighting, depth-tested, from a u32 element buffer."""
    from tilesim.render.workloads.obj_model import load_obj

    path = GLMARK2 / "models" / "bunny.obj"
    if not path.exists():
        raise InputError("glmark2's bunny model is not installed (Debian package glmark2-data)",
                         source=str(path))
    mesh = load_obj(path)
    program = gl.createProgram(VS_LIGHT_BASIC, FS_LIGHT_BASIC,
                               attrib_locations={"position": 0, "normal": 1})
    gl.useProgram(program)
    lo, hi = mesh.positions.min(axis=0), mesh.positions.max(axis=0)
    centre, extent = (lo + hi) / 2, float((hi - lo).max())
    model = translate(*(-centre)) if extent else np.eye(4)
    model = np.diag([2.0 / extent] * 3 + [1.0]) @ model
    view = translate(0, 0, -2.15) @ rotate("x", 15) @ rotate("y", 35)
    model_view = view @ model
    proj = perspective(60.0, gl.width / gl.height, 1.0, 1024.0)
    _set_matrix(gl, program, "ModelViewProjectionMatrix", proj @ model_view)
    _set_matrix(gl, program, "NormalMatrix", np.linalg.inv(model_view).T)
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", mesh.interleaved())
    ebo = gl.createBuffer()
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ebo)
    gl.bufferData("ELEMENT_ARRAY_BUFFER", mesh.indices.astype(np.uint32))
    gl.vertexAttribPointer(0, 3, "FLOAT", False, 24, 0)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 3, "FLOAT", False, 24, 12)
    gl.enableVertexAttribArray(1)
    gl.enable("DEPTH_TEST")
    gl.enable("CULL_FACE")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.drawElements("TRIANGLES", mesh.indices.size, "UNSIGNED_INT", 0)
    gl.endFrame()


# --- textures ------------------------------------------------------------------------------

def _floor(gl: Recorder, program: int, repeat: float = 6.0, tilt: float = 0.0) -> tuple:
    """A plane receding in perspective: (positions, texcoords) for a TRIANGLE_FAN."""
    proj = perspective(60.0, gl.width / gl.height, 0.5, 100.0)
    view = rotate("x", 22.0) @ rotate("y", tilt)
    _set_matrix(gl, program, "u_mvp", proj @ view)
    positions = np.array([[-6, -1.5, -0.8, 1], [6, -1.5, -0.8, 1], [6, -1.5, -40, 1],
                          [-6, -1.5, -40, 1]], dtype=np.float32)
    texcoords = np.array([[0, 0], [repeat, 0], [repeat, repeat * 3.3], [0, repeat * 3.3]],
                         dtype=np.float32)
    return positions, texcoords


@_scene("tex_min_filters", size=(192, 128))
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


@_scene("tex_mip_explicit", size=(160, 128))
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


@_scene("tex_wrap_modes", size=(192, 96))
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


@_scene("tex_npot")
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


def _rows(data: np.ndarray, alignment: int = 4) -> np.ndarray:
    """Client texel rows (H, row bytes) padded to ``alignment`` bytes, as GL unpacks them."""
    data = np.ascontiguousarray(data)
    rows = data.reshape(data.shape[0], -1).view(np.uint8)
    pad = -rows.shape[1] % alignment
    return np.hstack([rows, np.full((rows.shape[0], pad), 0xAB, dtype=np.uint8)])


@_scene("tex_formats", size=(128, 64))
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


def _sphere(stacks: int = 16, slices: int = 24) -> tuple[np.ndarray, np.ndarray]:
    theta = np.linspace(0, np.pi, stacks + 1)
    phi = np.linspace(0, 2 * np.pi, slices + 1)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    pos = np.stack([np.sin(t) * np.cos(p), np.cos(t), np.sin(t) * np.sin(p)], -1)
    idx = []
    for i in range(stacks):
        for j in range(slices):
            a = i * (slices + 1) + j
            b, c, d = a + 1, a + slices + 1, a + slices + 2
            idx += [[a, c, b], [b, c, d]]
    return pos.reshape(-1, 3).astype(np.float32), np.asarray(idx, dtype=np.uint16)


@_scene("cubemap", size=(160, 80))
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


@_scene("render_to_texture")
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


# --- depth textures and copies from the framebuffer ----------------------------------------

VS_DEPTH_ONLY = """
attribute vec4 a_position;
uniform mat4 u_light_mvp;
void main() {
    gl_Position = u_light_mvp * a_position;
}
"""

FS_WHITE = """
precision mediump float;
void main() {
    gl_FragColor = vec4(1.0);
}
"""

VS_SHADOW_LIT = """
attribute vec4 a_position;
attribute vec3 a_normal;
uniform mat4 u_mvp;
uniform mat4 u_model;
uniform mat4 u_shadow_matrix;
uniform vec3 u_light_dir;
uniform vec4 u_color;
varying vec4 v_shadow;
varying vec4 v_color;
void main() {
    vec3 n = normalize((u_model * vec4(a_normal, 0.0)).xyz);
    float diffuse = max(dot(n, u_light_dir), 0.0);
    v_color = vec4(u_color.rgb * (0.35 + 0.65 * diffuse), 1.0);
    v_shadow = u_shadow_matrix * a_position;
    gl_Position = u_mvp * a_position;
}
"""

# The comparison a GLES2 shadow map needs (no depth comparison mode in ES 2.0), as glmark2's
# shadow scene makes it: the stored depth against the fragment's depth seen from the light.
FS_SHADOW_LIT = """
precision highp float;
uniform highp sampler2D u_shadow;
uniform float u_bias;
varying vec4 v_shadow;
varying vec4 v_color;
void main() {
    vec3 sc = v_shadow.xyz / v_shadow.w;
    float stored = texture2D(u_shadow, sc.xy).x;
    float lit = (v_shadow.w > 0.0 && stored + u_bias < sc.z) ? 0.45 : 1.0;
    gl_FragColor = vec4(v_color.rgb * lit, 1.0);
}
"""

# A depth texture shown as it samples, (d, d, d, 1), its range [lo, lo + 1 / scale] stretched.
FS_DEPTH_VIEW = """
precision highp float;
uniform highp sampler2D u_tex;
uniform float u_lo;
uniform float u_scale;
varying vec2 v_uv;
void main() {
    vec4 d = texture2D(u_tex, v_uv);
    gl_FragColor = vec4((d.xyz - u_lo) * u_scale, d.w);
}
"""


# A whole texture on a quad with its coordinates a little off the texel grid, so that no
# pixel centre falls on a texel boundary (a tie NEAREST would settle by rounding).
OFF_GRID_UV = _quad_uv(0.0031, 0.0047, 0.9969, 0.9953)


def _cube() -> tuple[np.ndarray, np.ndarray]:
    """36 vertices (positions, normals) of the cube [-0.5, 0.5]^3, faces counter-clockwise."""
    positions, normals = [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = np.zeros(3)
            n[axis] = sign
            u, v = np.zeros(3), np.zeros(3)
            u[(axis + 1) % 3], v[(axis + 2) % 3] = 1.0, 1.0
            if sign < 0:
                u, v = v, u
            corners = [0.5 * n + 0.5 * (a * u + b * v)
                       for a, b in ((-1, -1), (1, -1), (1, 1), (-1, -1), (1, 1), (-1, 1))]
            positions += corners
            normals += [n] * 6
    return np.asarray(positions, np.float32), np.asarray(normals, np.float32)


def _shadow_objects() -> list[tuple]:
    """(model matrix, positions, normals, indices or None, colour) of the shadow scenes."""
    ground = np.array([[-3, 0, -3], [3, 0, 3], [3, 0, -3], [-3, 0, -3], [-3, 0, 3],
                       [3, 0, 3]], np.float32)
    cube_positions, cube_normals = _cube()
    sphere, sphere_indices = _sphere(14, 20)
    return [
        (np.eye(4), ground, np.tile(np.float32([0, 1, 0]), (6, 1)), None, (0.8, 0.8, 0.7, 1)),
        (translate(0.7, 0.55, 0.4) @ rotate("y", 30) @ np.diag([1.1, 1.1, 1.1, 1]),
         cube_positions, cube_normals, None, (0.9, 0.4, 0.3, 1)),
        (translate(-0.9, 1.35, -0.5) @ np.diag([0.6, 0.6, 0.6, 1]), sphere, sphere, sphere_indices,
         (0.3, 0.6, 0.9, 1)),
    ]


def _draw_objects(gl: Recorder, program: int, objects, light_vp: np.ndarray,
                  view_proj: np.ndarray | None = None) -> None:
    """Each object drawn with ``program``: the depth pass (``view_proj`` None) or the lit
    pass (u_shadow_matrix maps to the shadow map's [0, 1] coordinates)."""
    bias = translate(0.5, 0.5, 0.5) @ np.diag([0.5, 0.5, 0.5, 1.0])
    for model, positions, normals, indices, colour in objects:
        if view_proj is None:
            _set_matrix(gl, program, "u_light_mvp", light_vp @ model)
        else:
            _set_matrix(gl, program, "u_mvp", view_proj @ model)
            _set_matrix(gl, program, "u_model", model)
            _set_matrix(gl, program, "u_shadow_matrix", bias @ light_vp @ model)
            gl.uniform4f(gl.getUniformLocation(program, "u_color"), *colour)
            _attrib(gl, "a_normal", normals)
        _draw(gl, "TRIANGLES", positions, indices=indices)


def _depth_texture(gl: Recorder, size: int, type_: str, filt: str = "NEAREST") -> int:
    return _texture(gl, None, fmt="DEPTH_COMPONENT", type_=type_, size=(size, size),
                    min_filter=filt, mag_filter=filt, wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))


@_scene("shadow_map", size=(160, 120))
def scene_shadow_map(gl: Recorder) -> None:
    """Shadow mapping as glmark2's shadow scene does it (GL_OES_depth_texture): a depth-only
    framebuffer object renders the scene from the light into a depth texture, then the lit
    scene compares its depth from the light with the texture's in the fragment shader. Frame
    0: 16-bit texture (UNSIGNED_SHORT), color writes masked; frame 1: 24-bit (UNSIGNED_INT),
    color writes on (they go nowhere), polygon offset, LINEAR filtering, the depth texture
    shown in a corner; frame 2: the frame-0 texture attached with a color texture to a new
    framebuffer, drawn into without clearing (depth-tested against what it holds), both
    shown."""
    objects = _shadow_objects()
    light_eye = np.array([2.5, 5.0, 3.0])
    light_vp = perspective(50.0, 1.0, 3.0, 11.0) @ look_at(light_eye, (0, 0.3, 0))
    light_dir = light_eye / np.linalg.norm(light_eye)
    view_proj = (perspective(45.0, gl.width / gl.height, 2.0, 20.0)
                 @ look_at((0.4, 3.6, 6.2), (0, 0.5, 0)))
    depth_program = _program(gl, VS_DEPTH_ONLY, FS_WHITE)
    lit_program = _program(gl, VS_SHADOW_LIT, FS_SHADOW_LIT)
    gl.uniform1i(gl.getUniformLocation(lit_program, "u_shadow"), 0)
    gl.uniform3f(gl.getUniformLocation(lit_program, "u_light_dir"), *light_dir)
    view_program = _program(gl, VS_TEX, FS_DEPTH_VIEW)
    gl.uniform1i(gl.getUniformLocation(view_program, "u_tex"), 0)
    gl.enable("DEPTH_TEST")
    gl.enable("CULL_FACE")

    def depth_pass(fbo: int, size: int, mask_color: bool, offset: bool) -> None:
        gl.bindFramebuffer("FRAMEBUFFER", fbo)
        gl.viewport(0, 0, size, size)
        gl.useProgram(depth_program)
        if mask_color:
            gl.colorMask(False, False, False, False)
        if offset:
            gl.enable("POLYGON_OFFSET_FILL")
            gl.polygonOffset(1.5, 4.0)
        gl.clear("DEPTH_BUFFER_BIT")
        _draw_objects(gl, depth_program, objects, light_vp)
        gl.colorMask(True, True, True, True)
        gl.disable("POLYGON_OFFSET_FILL")

    def lit_pass(texture: int, bias: float) -> None:
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.05, 0.05, 0.1, 1.0)
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.useProgram(lit_program)
        gl.bindTexture("TEXTURE_2D", texture)
        gl.uniform1f(gl.getUniformLocation(lit_program, "u_bias"), bias)
        _draw_objects(gl, lit_program, objects, light_vp, view_proj)

    def show_depth(texture: int, x: int, y: int, size: int, lo: float = 0.6) -> None:
        gl.disable("DEPTH_TEST")
        gl.viewport(x, y, size, size)
        gl.useProgram(view_program)
        gl.bindTexture("TEXTURE_2D", texture)
        gl.uniform1f(gl.getUniformLocation(view_program, "u_lo"), lo)
        gl.uniform1f(gl.getUniformLocation(view_program, "u_scale"), 1.0 / (1.0 - lo))
        _attrib(gl, "a_normal", (0.0, 0.0, 1.0, 0.0))
        _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=OFF_GRID_UV)
        gl.enable("DEPTH_TEST")

    # Frame 0: 16-bit depth texture, depth-only framebuffer, color writes masked.
    depth16 = _depth_texture(gl, 128, "UNSIGNED_SHORT")
    fbo16 = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo16)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", depth16, 0)
    depth_pass(fbo16, 128, mask_color=True, offset=False)
    lit_pass(depth16, 0.02)
    gl.endFrame()

    # Frame 1: 24-bit depth texture, color writes on, polygon offset, LINEAR filtering.
    depth24 = _depth_texture(gl, 256, "UNSIGNED_INT", "LINEAR")
    fbo24 = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo24)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", depth24, 0)
    depth_pass(fbo24, 256, mask_color=False, offset=True)
    lit_pass(depth24, 0.0)
    show_depth(depth24, gl.width - 48, gl.height - 48, 48)
    gl.endFrame()

    # Frame 2: the 16-bit texture keeps its depth; a new framebuffer draws a box into it
    # (and a color texture) without clearing the depth: only its part in front of the
    # objects already there lands.
    colour = _texture(gl, None, size=(128, 128), min_filter="NEAREST", mag_filter="NEAREST",
                      wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    fbo_mixed = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo_mixed)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", colour, 0)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", depth16, 0)
    gl.viewport(0, 0, 128, 128)
    gl.clearColor(0.2, 0.2, 0.2, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.useProgram(depth_program)
    gl.disable("CULL_FACE")
    box_positions, _ = _cube()
    _set_matrix(gl, depth_program, "u_light_mvp",
                light_vp @ translate(-0.2, 0.4, 0.6) @ np.diag([2.4, 0.5, 0.5, 1.0]))
    _draw(gl, "TRIANGLES", box_positions)
    gl.enable("CULL_FACE")
    lit_pass(depth16, 0.02)
    show_depth(depth16, gl.width - 48, gl.height - 48, 48)
    gl.bindTexture("TEXTURE_2D", colour)
    gl.useProgram(view_program)
    gl.uniform1f(gl.getUniformLocation(view_program, "u_lo"), 0.0)
    gl.uniform1f(gl.getUniformLocation(view_program, "u_scale"), 1.0)
    gl.viewport(0, gl.height - 48, 48, 48)
    gl.disable("DEPTH_TEST")
    _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=OFF_GRID_UV)
    gl.endFrame()


@_scene("copy_tex_image")
def scene_copy_tex_image(gl: Recorder) -> None:
    """copyTexSubImage2D and copyTexImage2D from the window (frame 0) and from a framebuffer
    object with an RGB texture (frame 1) into RGBA, RGB, LUMINANCE, LUMINANCE_ALPHA, ALPHA
    and RGB 5_6_5 textures; a copy whose source rectangle leaves the framebuffer changes only
    the texels inside it (as Mesa clips the copy); the textures shown with NEAREST."""
    color_program = _program(gl, VS_PIXEL, FS_COLOR)
    gl.uniform2f(gl.getUniformLocation(color_program, "u_size"), float(gl.width),
                 float(gl.height))
    tex_program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(tex_program, "u_tex"), 0)
    rng = np.random.default_rng(7)

    def pattern(width: int, height: int) -> None:
        """A gradient with random triangles over it, alpha varying, on the bound target."""
        gl.useProgram(color_program)
        gl.uniform2f(gl.getUniformLocation(color_program, "u_size"), float(width),
                     float(height))
        gl.viewport(0, 0, width, height)
        corners = np.array([[0, 0, 0], [width, 0, 0], [width, height, 0], [0, 0, 0],
                            [width, height, 0], [0, height, 0]], np.float32)
        colours = np.array([[0.1, 0.2, 0.9, 0.2], [0.9, 0.2, 0.1, 0.6], [0.9, 0.9, 0.2, 1.0],
                            [0.1, 0.2, 0.9, 0.2], [0.9, 0.9, 0.2, 1.0], [0.1, 0.9, 0.4, 0.8]],
                           np.float32)
        _draw(gl, "TRIANGLES", corners, colours)
        points = rng.uniform(0, 1, (24, 3)).astype(np.float32) * [width, height, 0]
        _draw(gl, "TRIANGLES", points, rng.uniform(0, 1, (24, 4)).astype(np.float32))

    def show(textures, cols: int = 3, rows: int = 2) -> None:
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.clearColor(0.0, 0.0, 0.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(tex_program)
        for (x, y, w, h), texture in zip(_cells(gl, cols, rows), textures, strict=False):
            gl.viewport(x + 1, y + 1, w - 2, h - 2)
            gl.bindTexture("TEXTURE_2D", texture)
            _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=OFF_GRID_UV)

    def nearest(texture: int) -> None:
        gl.bindTexture("TEXTURE_2D", texture)
        for pname, value in (("TEXTURE_MIN_FILTER", "NEAREST"),
                             ("TEXTURE_MAG_FILTER", "NEAREST"),
                             ("TEXTURE_WRAP_S", "CLAMP_TO_EDGE"),
                             ("TEXTURE_WRAP_T", "CLAMP_TO_EDGE")):
            gl.texParameteri("TEXTURE_2D", pname, value)

    # Frame 0: from the window (RGBA8).
    gl.clearColor(0.3, 0.3, 0.3, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    pattern(gl.width, gl.height)
    base = _texture(gl, _checker(48, 6), min_filter="NEAREST", mag_filter="NEAREST")
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 4, 6, 10, 20, 30, 25)
    # Source rectangle 20 x 20 at (118, -6): only its 10 x 14 part inside the window lands.
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 26, 26, gl.width - 10, -6, 20, 20)
    made = []
    for fmt, (x, y, w, h) in (("RGB", (30, 50, 32, 32)), ("LUMINANCE", (60, 10, 40, 24)),
                              ("LUMINANCE_ALPHA", (5, 70, 24, 40)), ("ALPHA", (70, 70, 33, 21)),
                              ("RGBA", (0, 0, gl.width, gl.height))):
        texture = gl.createTexture()
        nearest(texture)
        gl.copyTexImage2D("TEXTURE_2D", 0, fmt, x, y, w, h, 0)
        made.append(texture)
    show([base] + made)
    gl.endFrame()

    # Frame 1: from a framebuffer object whose color buffer is an RGB texture.
    size = 64
    target = _texture(gl, None, fmt="RGB", size=(size, size), min_filter="NEAREST",
                      mag_filter="NEAREST", wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", target, 0)
    gl.clearColor(0.5, 0.1, 0.6, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    pattern(size, size)
    rgb = _texture(gl, np.full((32, 32, 3), 200, np.uint8), fmt="RGB", min_filter="NEAREST",
                   mag_filter="NEAREST")
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 0, 8, 16, 16, 32, 16)
    packed = np.full((32, 32), 0x07E0, np.uint16)     # green in RGB 5_6_5
    rgb565 = _texture(gl, _rows(packed.view(np.uint8).reshape(32, 64), 4), fmt="RGB",
                      type_="UNSIGNED_SHORT_5_6_5", min_filter="NEAREST", mag_filter="NEAREST",
                      size=(32, 32))
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 4, 4, 0, 0, 24, 24)
    lum = gl.createTexture()
    nearest(lum)
    gl.copyTexImage2D("TEXTURE_2D", 0, "LUMINANCE", 8, 8, 48, 48, 0)
    show([target, rgb, rgb565, lum], cols=2, rows=2)
    gl.endFrame()


# --- multi-pass chains: render-to-texture, mipmaps of rendered textures, post-processing ----

# Separable blur: nine taps along u_step (a fraction of a texel apart, as bloom and
# depth-of-field passes use them), weights summing to one.
FS_BLUR9 = """
precision highp float;
uniform sampler2D u_tex;
uniform vec2 u_step;
varying vec2 v_uv;
void main() {
    vec4 sum = texture2D(u_tex, v_uv) * 0.18;
    sum += (texture2D(u_tex, v_uv - u_step) + texture2D(u_tex, v_uv + u_step)) * 0.15;
    sum += (texture2D(u_tex, v_uv - 2.0 * u_step) + texture2D(u_tex, v_uv + 2.0 * u_step)) * 0.12;
    sum += (texture2D(u_tex, v_uv - 3.0 * u_step) + texture2D(u_tex, v_uv + 3.0 * u_step)) * 0.09;
    sum += (texture2D(u_tex, v_uv - 4.0 * u_step) + texture2D(u_tex, v_uv + 4.0 * u_step)) * 0.05;
    gl_FragColor = sum;
}
"""

VS_LIT = """
attribute vec4 a_position;
attribute vec3 a_normal;
uniform mat4 u_mvp;
uniform mat4 u_model;
uniform vec3 u_light_dir;
uniform vec4 u_color;
varying vec4 v_color;
void main() {
    vec3 n = normalize((u_model * vec4(a_normal, 0.0)).xyz);
    v_color = vec4(u_color.rgb * (0.35 + 0.65 * max(dot(n, u_light_dir), 0.0)), 1.0);
    gl_Position = u_mvp * a_position;
}
"""

FS_LUMINANCE = """
precision highp float;
uniform sampler2D u_tex;
varying vec2 v_uv;
void main() {
    vec4 texel = texture2D(u_tex, v_uv);
    float v = dot(texel.rgb, vec3(0.299, 0.587, 0.114));
    gl_FragColor = vec4(v, v, v, texel.a);
}
"""

FS_OPACITY = """
precision highp float;
uniform sampler2D u_tex;
uniform float u_opacity;
varying vec2 v_uv;
void main() {
    gl_FragColor = u_opacity * texture2D(u_tex, v_uv);
}
"""


def _color_target(gl: Recorder, width: int, height: int, *, depth: bool = False
                  ) -> tuple[int, int]:
    """(framebuffer, texture): an RGBA texture of width x height (LINEAR, CLAMP_TO_EDGE)
    as the color attachment of a new framebuffer object, left bound; a 16-bit depth
    renderbuffer too where ``depth``."""
    texture = _texture(gl, None, size=(width, height),
                       wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", texture, 0)
    if depth:
        rb = gl.createRenderbuffer()
        gl.bindRenderbuffer("RENDERBUFFER", rb)
        gl.renderbufferStorage("RENDERBUFFER", "DEPTH_COMPONENT16", width, height)
        gl.framebufferRenderbuffer("FRAMEBUFFER", "DEPTH_ATTACHMENT", "RENDERBUFFER", rb)
    return fbo, texture


def _fullscreen(gl: Recorder, program: int, texture: int, uv=None) -> None:
    """``texture`` on unit 0 through ``program`` (VS_TEX) over the whole viewport."""
    gl.useProgram(program)
    gl.activeTexture(0)
    gl.bindTexture("TEXTURE_2D", texture)
    _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=_quad_uv() if uv is None else uv)


def _stripes(gl: Recorder, program: int, width: int, height: int, phase: float) -> None:
    """Thin diagonal bands of saturated colours (high frequency: minification shows every
    mipmap level) on the bound target, drawn with ``program`` (VS_PIXEL + FS_COLOR)."""
    gl.useProgram(program)
    gl.uniform2f(gl.getUniformLocation(program, "u_size"), float(width), float(height))
    gl.viewport(0, 0, width, height)
    triangles, colours = [], []
    band = 3.0
    for k in range(-int(height / band), int(width / band) + 1):
        x = k * band + phase
        triangles += [[x, 0, 0], [x + band * 0.6, 0, 0], [x + height + band * 0.6, height, 0],
                      [x, 0, 0], [x + height + band * 0.6, height, 0], [x + height, height, 0]]
        colours += [_hsv((k * 0.13) % 1.0, 0.9, 1.0)] * 6
    _draw(gl, "TRIANGLES", np.asarray(triangles, np.float32), np.asarray(colours, np.float32))


@_scene("rtt_mipmap_chain", size=(160, 120))
def scene_rtt_mipmap_chain(gl: Recorder) -> None:
    """glGenerateMipmap on a texture right after rendering into it, with its framebuffer
    still bound (frame 0) and after unbinding (frame 1), then trilinear sampling of it
    minified on a receding plane; frame 2 also replaces part of the rendered texture with
    texSubImage2D while its framebuffer is bound and drawn into, and draws into it again.
    A tile-based renderer must resolve the pending pass before any of these reads."""
    color_program = _program(gl, VS_PIXEL, FS_COLOR)
    tex_program = _program(gl, VS_MVP_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(tex_program, "u_tex"), 0)
    size = 64
    fbo, texture = _color_target(gl, size, size)
    proj = perspective(55.0, gl.width / gl.height, 0.3, 30.0)
    patch = np.zeros((16, 16, 4), np.uint8)
    patch[..., 0], patch[..., 3] = 255, 255
    patch[::4, :, 1] = 255

    for frame, (still_bound, phase) in enumerate(((True, 0.0), (False, 1.3), (True, 2.1))):
        gl.bindFramebuffer("FRAMEBUFFER", fbo)
        gl.clearColor(0.05, 0.05, 0.1, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        _stripes(gl, color_program, size, size, phase)
        if frame == 2:
            gl.bindTexture("TEXTURE_2D", texture)
            gl.texSubImage2D("TEXTURE_2D", 0, 8, 40, 16, 16, "RGBA", "UNSIGNED_BYTE", patch)
            _draw(gl, "TRIANGLES", np.float32([[30, 4, 0], [60, 10, 0], [40, 30, 0]]),
                  (1.0, 1.0, 1.0, 1.0))
        if not still_bound:
            gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.bindTexture("TEXTURE_2D", texture)
        gl.generateMipmap("TEXTURE_2D")
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR_MIPMAP_LINEAR")
        gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_S", "REPEAT")
        gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_T", "REPEAT")
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.2, 0.2, 0.2, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(tex_program)
        _set_matrix(gl, tex_program, "u_mvp",
                    proj @ translate(0, -0.4, -3.0) @ rotate("x", -72 + 4 * frame))
        _draw(gl, "TRIANGLES", _quad(-3, -3, 3, 3), texcoords=_quad_uv(0, 0, 6, 6))
        gl.endFrame()


@_scene("rtt_post_chain", size=(160, 120))
def scene_rtt_post_chain(gl: Recorder) -> None:
    """A post-processing chain through NPOT framebuffer textures, each read in the frame it
    is rendered: a lit, depth-tested 3D pass into an off-screen target, luminance, a
    separable nine-tap blur with sub-texel steps (horizontal then vertical), and a composite
    of the scene, the blurred luminance added (ONE, ONE) and an alpha-blended overlay of the
    blur; two frames, the object turning."""
    width, height = 150, 110
    lit = _program(gl, VS_LIT, FS_COLOR)
    gl.uniform3f(gl.getUniformLocation(lit, "u_light_dir"), 0.3, 0.8, 0.52)
    luminance = _program(gl, VS_TEX, FS_LUMINANCE)
    gl.uniform1i(gl.getUniformLocation(luminance, "u_tex"), 0)
    blur = _program(gl, VS_TEX, FS_BLUR9)
    gl.uniform1i(gl.getUniformLocation(blur, "u_tex"), 0)
    overlay = _program(gl, VS_TEX, FS_OPACITY)
    gl.uniform1i(gl.getUniformLocation(overlay, "u_tex"), 0)
    scene_fbo, scene_tex = _color_target(gl, width, height, depth=True)
    luma_fbo, luma_tex = _color_target(gl, width, height)
    blur_h_fbo, blur_h_tex = _color_target(gl, width, height)
    blur_v_fbo, blur_v_tex = _color_target(gl, width, height)
    sphere, sphere_indices = _sphere(16, 24)
    positions, normals = _cube()
    proj = perspective(50.0, width / height, 0.5, 20.0)

    for frame in range(2):
        gl.bindFramebuffer("FRAMEBUFFER", scene_fbo)
        gl.viewport(0, 0, width, height)
        gl.clearColor(1.0, 1.0, 0.84, 1.0)
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.enable("DEPTH_TEST")
        gl.useProgram(lit)
        view = translate(0, 0, -3.2)
        for model, pos, nrm, idx, colour in (
                (rotate("y", 25 + 30 * frame) @ rotate("x", 20), positions, normals, None,
                 (0.2, 0.7, 0.3, 1)),
                (translate(0.8, 0.3, -0.6) @ np.diag([0.5, 0.5, 0.5, 1]), sphere, sphere,
                 sphere_indices, (0.9, 0.5, 0.2, 1))):
            _set_matrix(gl, lit, "u_mvp", proj @ view @ model)
            _set_matrix(gl, lit, "u_model", model)
            gl.uniform4f(gl.getUniformLocation(lit, "u_color"), *colour)
            _attrib(gl, "a_normal", nrm)
            _draw(gl, "TRIANGLES", pos, indices=idx)
        gl.disable("DEPTH_TEST")
        gl.bindFramebuffer("FRAMEBUFFER", luma_fbo)
        _fullscreen(gl, luminance, scene_tex)
        for fbo, source, step in ((blur_h_fbo, luma_tex, (0.37 / width, 0.0)),
                                  (blur_v_fbo, blur_h_tex, (0.0, 0.41 / height))):
            gl.bindFramebuffer("FRAMEBUFFER", fbo)
            gl.useProgram(blur)
            gl.uniform2f(gl.getUniformLocation(blur, "u_step"), *step)
            _fullscreen(gl, blur, source)
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.0, 0.0, 0.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(overlay)
        gl.uniform1f(gl.getUniformLocation(overlay, "u_opacity"), 1.0)
        _fullscreen(gl, overlay, scene_tex)
        gl.enable("BLEND")
        gl.blendFunc("ONE", "ONE")
        gl.uniform1f(gl.getUniformLocation(overlay, "u_opacity"), 0.25)
        _fullscreen(gl, overlay, blur_v_tex)
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        gl.uniform1f(gl.getUniformLocation(overlay, "u_opacity"), 0.6)
        _fullscreen(gl, overlay, blur_h_tex, uv=_quad_uv(0.1, 0.1, 0.9, 0.9))
        gl.disable("BLEND")
        gl.endFrame()


@_scene("rtt_reattach", size=(128, 96))
def scene_rtt_reattach(gl: Recorder) -> None:
    """One texture re-attached to different framebuffers within a frame (the second with a
    depth buffer, keeping what the first drew), a framebuffer's color attachment switched
    between draws while it is bound, a texture read by the next pass in the frame it is
    rendered, and a texture deleted while attached; NPOT targets."""
    color_program = _program(gl, VS_PIXEL, FS_COLOR)
    tex_program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(tex_program, "u_tex"), 0)
    w, h = 60, 44
    fbo_a, shared = _color_target(gl, w, h)
    fbo_b, other = _color_target(gl, w, h, depth=True)
    rng = np.random.default_rng(11)

    def triangles(count: int, z: bool = False) -> None:
        points = rng.uniform(0, 1, (3 * count, 3)).astype(np.float32) * [w, h, 1.6 if z else 0]
        if z:
            points[:, 2] -= 0.8
        _draw(gl, "TRIANGLES", points, rng.uniform(0, 1, (3 * count, 4)).astype(np.float32))

    for _frame in range(2):
        # Pass 1: into the shared texture through A.
        gl.bindFramebuffer("FRAMEBUFFER", fbo_a)
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", shared, 0)
        gl.clearColor(0.1, 0.3, 0.6, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(color_program)
        gl.uniform2f(gl.getUniformLocation(color_program, "u_size"), float(w), float(h))
        gl.viewport(0, 0, w, h)
        triangles(4)
        # Switch A's attachment while it is bound and draw on: these go to ``other``.
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", other, 0)
        gl.clearColor(0.5, 0.1, 0.1, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        triangles(3)
        # Pass 2: the shared texture re-attached to B (depth-tested), keeping pass 1.
        gl.bindFramebuffer("FRAMEBUFFER", fbo_b)
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", shared, 0)
        gl.clear("DEPTH_BUFFER_BIT")
        gl.enable("DEPTH_TEST")
        triangles(5, z=True)
        gl.disable("DEPTH_TEST")
        # Pass 3: A renders from the shared texture into ``other`` in the same frame.
        gl.bindFramebuffer("FRAMEBUFFER", fbo_a)
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", other, 0)
        gl.viewport(0, 0, w, h)
        _fullscreen(gl, tex_program, shared, uv=_quad_uv(0.0, 0.0, 0.5, 1.0))
        # The window: both textures side by side.
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.0, 0.0, 0.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.viewport(0, 0, gl.width // 2, gl.height)
        _fullscreen(gl, tex_program, shared)
        gl.viewport(gl.width // 2, 0, gl.width // 2, gl.height)
        _fullscreen(gl, tex_program, other)
        gl.endFrame()
    # A texture deleted while attached and its pass pending: GL detaches it from the bound
    # framebuffer (ES 2.0 §4.4.5), so the window shows what was drawn before.
    gl.bindFramebuffer("FRAMEBUFFER", fbo_a)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", other, 0)
    gl.useProgram(color_program)
    gl.viewport(0, 0, w, h)
    triangles(2)
    gl.deleteTexture(other)
    gl.bindFramebuffer("FRAMEBUFFER", 0)
    gl.viewport(0, 0, gl.width, gl.height)
    _fullscreen(gl, tex_program, shared)
    gl.endFrame()


