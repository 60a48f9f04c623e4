"""Shaders and helpers the conformance scenes share: programs, vertex arrays, draws,
quads, colors, matrices, textures and test images."""

from __future__ import annotations

import math

import numpy as np

from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.conformance_scenes.registry import GLMARK2
from tilesim.render.workloads.transforms import gl_matrix, perspective, rotate

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


def _rows(data: np.ndarray, alignment: int = 4) -> np.ndarray:
    """Client texel rows (H, row bytes) padded to ``alignment`` bytes, as GL unpacks them."""
    data = np.ascontiguousarray(data)
    rows = data.reshape(data.shape[0], -1).view(np.uint8)
    pad = -rows.shape[1] % alignment
    return np.hstack([rows, np.full((rows.shape[0], pad), 0xAB, dtype=np.uint8)])


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
