"""Shared pieces of the game-like workloads: matrices, procedural textures, a glyph font,
sprite batches, meshes, and the shaders several workloads use.

Everything here is deterministic: randomness comes only from ``numpy.random.Generator``
objects the caller makes from its seed (:func:`rng_for`). Images are (H, W, C) uint8 arrays
whose row 0 is the first row uploaded (texture t = 0); the 2D workloads draw with y pointing
down, so row 0 shows at the top of a sprite. Vertex data are interleaved, as mobile engines
upload them.
"""

from __future__ import annotations

import numpy as np

from tilesim.render.workloads.transforms import gl_matrix, normal_matrix

# --- randomness and limits -------------------------------------------------------------------

MAX_FRAMES = 1000  # the longest build; levels and courses are laid out for this many frames


def check_request(name: str, width: int, height: int, frames: int) -> None:
    """ValueError unless 1 <= frames <= MAX_FRAMES and the size is at least 16x16."""
    if not 1 <= int(frames) <= MAX_FRAMES:
        raise ValueError(f"{name}: frames must be in 1..{MAX_FRAMES}, got {frames}")
    if int(width) < 16 or int(height) < 16:
        raise ValueError(f"{name}: size must be at least 16x16, got {width}x{height}")



def rng_for(seed: int, *stream: int) -> np.random.Generator:
    """A generator for one purpose (``stream`` numbers) of a workload seeded with ``seed``."""
    return np.random.default_rng([int(seed), *[int(s) for s in stream]])


# --- matrices (column vectors; upload with gl_matrix) -----------------------------------------


def ortho(left: float, right: float, bottom: float, top: float, near: float = -1.0,
          far: float = 1.0) -> np.ndarray:
    """glOrtho's matrix, (4, 4) float64."""
    m = np.eye(4)
    m[0, 0] = 2 / (right - left)
    m[1, 1] = 2 / (top - bottom)
    m[2, 2] = -2 / (far - near)
    m[0, 3] = -(right + left) / (right - left)
    m[1, 3] = -(top + bottom) / (top - bottom)
    m[2, 3] = -(far + near) / (far - near)
    return m


def pixels_ortho(width: int, height: int) -> np.ndarray:
    """Window pixels to clip space, origin at the top left, y down (2D games' convention)."""
    return ortho(0, width, height, 0)


def smoothstep(t):
    t = np.clip(t, 0.0, 1.0)
    return t * t * (3 - 2 * t)


# --- procedural images ------------------------------------------------------------------------


def _periodic_upsample(grid: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear, wrapping (tileable) upsampling of a (h, w) grid to (height, width)."""
    gh, gw = grid.shape
    y = (np.arange(height) + 0.5) * gh / height - 0.5
    x = (np.arange(width) + 0.5) * gw / width - 0.5
    y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
    fy, fx = smoothstep(y - y0)[:, None], smoothstep(x - x0)[None, :]
    y0, y1 = y0 % gh, (y0 + 1) % gh
    x0, x1 = x0 % gw, (x0 + 1) % gw
    top = grid[y0][:, x0] * (1 - fx) + grid[y0][:, x1] * fx
    bottom = grid[y1][:, x0] * (1 - fx) + grid[y1][:, x1] * fx
    return top * (1 - fy) + bottom * fy


def value_noise(rng: np.random.Generator, height: int, width: int, *, cells: int = 4,
                octaves: int = 4, persistence: float = 0.5) -> np.ndarray:
    """Tileable fractal value noise in [0, 1], (height, width) float64."""
    out = np.zeros((height, width))
    amplitude, total = 1.0, 0.0
    for octave in range(octaves):
        n = cells << octave
        gh, gw = max(1, n * height // max(height, width)), max(1, n * width // max(height, width))
        out += amplitude * _periodic_upsample(rng.random((gh, gw)), height, width)
        total += amplitude
        amplitude *= persistence
    out /= total
    lo, hi = out.min(), out.max()
    return (out - lo) / (hi - lo) if hi > lo else out


def to_u8(image) -> np.ndarray:
    return np.floor(np.clip(image, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def rgba_image(rgb, alpha=None) -> np.ndarray:
    """(H, W, 3) floats in [0, 1] (and optional (H, W) alpha) as (H, W, 4) uint8."""
    rgb = np.asarray(rgb, dtype=np.float64)
    alpha = np.ones(rgb.shape[:2]) if alpha is None else np.asarray(alpha, dtype=np.float64)
    return to_u8(np.concatenate([rgb, alpha[..., None]], axis=2))


def gradient(colors: list[tuple[float, float, float]], n: int) -> np.ndarray:
    """(n, 3) colors interpolated linearly between the stops."""
    stops = np.linspace(0, 1, len(colors))
    t = np.linspace(0, 1, n)
    c = np.asarray(colors, dtype=np.float64)
    return np.stack([np.interp(t, stops, c[:, k]) for k in range(3)], axis=1)


def coverage(distance: np.ndarray) -> np.ndarray:
    """Anti-aliased coverage of a signed distance field (pixels, negative inside)."""
    return np.clip(0.5 - distance, 0.0, 1.0)


def grid_coords(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-center coordinates (y, x) in [-1, 1] of a size x size cell."""
    c = (np.arange(size) + 0.5) / size * 2 - 1
    return np.meshgrid(c, c, indexing="ij")


def shape_distance(kind: str, size: int, radius: float = 0.8) -> np.ndarray:
    """Signed distance in pixels to a shape centered in a size x size cell (negative inside).

    kinds: circle, square (rounded), diamond, triangle, hexagon, star, ring.
    """
    y, x = grid_coords(size)
    r = np.hypot(x, y)
    if kind == "circle":
        d = r - radius
    elif kind == "square":
        q = np.maximum(np.abs(x), np.abs(y)) - radius * 0.85
        d = q
    elif kind == "diamond":
        d = (np.abs(x) + np.abs(y)) / np.sqrt(2) - radius * 0.7
    elif kind == "triangle":
        yy = -y - radius * 0.25  # apex up (row 0 is the top)
        d = np.maximum(np.abs(x) * 0.866 + yy * 0.5, -yy) - radius * 0.55
    elif kind == "hexagon":
        ax, ay = np.abs(x), np.abs(y)
        d = np.maximum(ax * 0.866 + ay * 0.5, ay) - radius * 0.82
    elif kind == "star":
        angle = np.arctan2(y, x)
        d = r - radius * (0.62 + 0.3 * np.cos(5 * angle + np.pi / 2))
    elif kind == "ring":
        d = np.abs(r - radius * 0.85) - radius * 0.1
    else:
        raise ValueError(f"unknown shape {kind!r}")
    return d * size / 2


def shaded_sprite(kind: str, size: int, color, *, outline=(0.1, 0.1, 0.15),
                  radius: float = 0.8) -> np.ndarray:
    """A shiny sprite: the shape filled with ``color``, a dark outline, a highlight and a
    soft drop shadow; (size, size, 4) uint8 with alpha."""
    d = shape_distance(kind, size, radius)
    y, x = grid_coords(size)
    fill = coverage(d + 2.5)
    inner = coverage(d + size * 0.04 + 2.5)
    base = np.asarray(color, dtype=np.float64)
    light = np.clip(0.75 - 0.35 * y - 0.15 * x, 0.3, 1.2)[..., None]
    rgb = base[None, None] * light
    spot = np.exp(-((x + 0.3) ** 2 + (y + 0.35) ** 2) / 0.05)[..., None]
    rgb = rgb * (1 - 0.7 * spot) + 0.7 * spot
    rgb = inner[..., None] * rgb + (1 - inner[..., None]) * np.asarray(outline)[None, None]
    shift = max(1, size // 24)
    shadow = np.roll(np.roll(fill, shift, axis=0), shift, axis=1) * 0.35
    alpha = np.maximum(fill, shadow * (1 - fill))
    rgb = np.where(fill[..., None] > 0, rgb, 0.0)
    return rgba_image(rgb, alpha)


def mip_friendly(size: int) -> int:
    """The largest power of two <= size."""
    return 1 << (int(size).bit_length() - 1)


# --- glyphs ------------------------------------------------------------------------------------

# A 5x7 bitmap font for what the HUDs print ('#' = ink).
_FONT = {
    "0": (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."),
    "1": ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "2": (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    "3": ("#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."),
    "4": ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."),
    "5": ("#####", "#....", "####.", "....#", "....#", "#...#", ".###."),
    "6": ("..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."),
    "7": ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."),
    "8": (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."),
    "9": (".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."),
    ":": (".....", "..#..", "..#..", ".....", "..#..", "..#..", "....."),
    "x": (".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#"),
    "/": ("....#", "...#.", "...#.", "..#..", ".#...", ".#...", "#...."),
    "m": (".....", ".....", "##.#.", "#.#.#", "#.#.#", "#...#", "#...#"),
    "A": (".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "C": (".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."),
    "D": ("####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."),
    "E": ("#####", "#....", "#....", "####.", "#....", "#....", "#####"),
    "G": (".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"),
    "I": (".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "L": ("#....", "#....", "#....", "#....", "#....", "#....", "#####"),
    "M": ("#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"),
    "N": ("#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#", "#...#"),
    "O": (".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "P": ("####.", "#...#", "#...#", "####.", "#....", "#....", "#...."),
    "R": ("####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"),
    "S": (".####", "#....", "#....", ".###.", "....#", "....#", "####."),
    "T": ("#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."),
    "V": ("#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."),
    "Y": ("#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."),
}
GLYPH_CELL = 32            # pixels per glyph cell in the atlas
GLYPH_COLUMNS = 16
GLYPHS = "".join(sorted(_FONT))


def glyph_atlas() -> tuple[np.ndarray, dict[str, tuple[float, float, float, float]]]:
    """A white-on-transparent font atlas (RGBA, 16 glyphs of 32 x 32 pixels per row, power-of-
    two height; anti-aliased, with a dark halo for legibility) and each glyph's uv rectangle
    (u0, v0, du, dv)."""
    rows = -(-len(GLYPHS) // GLYPH_COLUMNS)
    height = mip_friendly(max(rows * GLYPH_CELL, 1) * 2 - 1)
    atlas = np.zeros((height, GLYPH_COLUMNS * GLYPH_CELL, 4), dtype=np.float64)
    uv = {}
    scale_ = 4  # 5x7 cells of 4x4 pixels: 20 x 28 glyphs in 32 x 32 cells
    for k, ch in enumerate(GLYPHS):
        bitmap = np.array([[c == "#" for c in row] for row in _FONT[ch]], dtype=np.float64)
        big = np.kron(bitmap, np.ones((scale_, scale_)))
        ink = np.zeros((GLYPH_CELL, GLYPH_CELL))
        oy, ox = (GLYPH_CELL - big.shape[0]) // 2, (GLYPH_CELL - big.shape[1]) // 2
        ink[oy:oy + big.shape[0], ox:ox + big.shape[1]] = big
        soft = _blur(ink, 1)
        halo = np.clip(_blur(ink, 3) * 3, 0, 1)
        alpha = np.maximum(soft, 0.8 * halo)
        rgb = np.clip(soft / np.maximum(alpha, 1e-6), 0, 1)
        r, c = divmod(k, GLYPH_COLUMNS)
        cell = atlas[r * GLYPH_CELL:(r + 1) * GLYPH_CELL, c * GLYPH_CELL:(c + 1) * GLYPH_CELL]
        cell[..., :3] = rgb[..., None]
        cell[..., 3] = alpha
        uv[ch] = (c * GLYPH_CELL / atlas.shape[1], r * GLYPH_CELL / atlas.shape[0],
                  GLYPH_CELL / atlas.shape[1], GLYPH_CELL / atlas.shape[0])
    return to_u8(atlas), uv


def _blur(image: np.ndarray, radius: int) -> np.ndarray:
    """Box blur (separable, zero outside), same shape."""
    k = 2 * radius + 1
    padded = np.pad(image, radius)
    c = np.cumsum(np.pad(padded, ((1, 0), (0, 0))), axis=0)
    rows = (c[k:] - c[:-k]) / k
    c = np.cumsum(np.pad(rows, ((0, 0), (1, 0))), axis=1)
    return (c[:, k:] - c[:, :-k]) / k


# --- sprite batches ----------------------------------------------------------------------------

SPRITE_STRIDE = 20  # x, y, u, v float32 + r, g, b, a uint8
SPRITE_ATTRIBS = {"a_pos": 0, "a_uv": 1, "a_color": 2}


def quad_batch(rects, uvs, colors=None) -> np.ndarray:
    """Interleaved vertices of axis-aligned quads: (4 * n * 20,) uint8.

    rects: (n, 4) x, y, w, h in pixels (y down); uvs: (n, 4) u0, v0, du, dv; colors: (n, 4)
    floats in [0, 1] (default white). Corners in the order TL, TR, BR, BL (see
    :func:`quad_indices`).
    """
    rects = np.asarray(rects, dtype=np.float64).reshape(-1, 4)
    uvs = np.asarray(uvs, dtype=np.float64).reshape(-1, 4)
    n = rects.shape[0]
    colors = np.ones((n, 4)) if colors is None else np.asarray(colors, np.float64).reshape(-1, 4)
    cx = np.array([0, 1, 1, 0], dtype=np.float64)
    cy = np.array([0, 0, 1, 1], dtype=np.float64)
    pos = np.stack([rects[:, None, 0] + cx * rects[:, None, 2],
                    rects[:, None, 1] + cy * rects[:, None, 3]], axis=2)
    tex = np.stack([uvs[:, None, 0] + cx * uvs[:, None, 2],
                    uvs[:, None, 1] + cy * uvs[:, None, 3]], axis=2)
    floats = np.concatenate([pos, tex], axis=2).astype(np.float32).reshape(-1, 4)
    color = np.repeat(to_u8(colors), 4, axis=0)
    out = np.empty((4 * n, SPRITE_STRIDE), dtype=np.uint8)
    out[:, :16] = floats.view(np.uint8).reshape(-1, 16)
    out[:, 16:] = color
    return out.ravel()


def quad_indices(n: int) -> np.ndarray:
    """uint16 indices of n quads (two counter-clockwise-on-screen triangles each)."""
    base = (np.arange(n, dtype=np.uint32) * 4)[:, None]
    return (base + np.array([0, 3, 2, 2, 1, 0], dtype=np.uint32)).astype(np.uint16).ravel()


def text_quads(text: str, x: float, y: float, size: float, uv: dict, *,
               color=(1, 1, 1, 1), advance: float = 0.7) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """(rects, uvs, colors) for a string drawn with the glyph atlas (spaces skip)."""
    rects, uvs = [], []
    for k, ch in enumerate(text):
        if ch == " ":
            continue
        rects.append((x + k * size * advance, y, size, size))
        uvs.append(uv[ch])
    n = len(rects)
    return (np.asarray(rects, dtype=np.float64).reshape(n, 4),
            np.asarray(uvs, dtype=np.float64).reshape(n, 4), np.tile(color, (n, 1)))


def setup_sprite_arrays(gl, offset: int = 0) -> None:
    """vertexAttribPointer for the bound sprite VBO (a_pos, a_uv, a_color)."""
    gl.vertexAttribPointer(0, 2, "FLOAT", False, SPRITE_STRIDE, offset)
    gl.vertexAttribPointer(1, 2, "FLOAT", False, SPRITE_STRIDE, offset + 8)
    gl.vertexAttribPointer(2, 4, "UNSIGNED_BYTE", True, SPRITE_STRIDE, offset + 16)


# The sprite program of the 2D workloads: pixel-space quads, per-draw rectangle and uv
# rectangle (one unit quad serves every single sprite), per-vertex and per-draw color.
SPRITE_VS = """\
attribute vec2 a_pos;
attribute vec2 a_uv;
attribute vec4 a_color;
uniform mat4 u_proj;
uniform vec4 u_rect;
uniform vec4 u_uvrect;
varying vec2 v_uv;
varying vec4 v_color;
void main() {
    v_uv = u_uvrect.xy + a_uv * u_uvrect.zw;
    v_color = a_color;
    gl_Position = u_proj * vec4(u_rect.xy + a_pos * u_rect.zw, 0.0, 1.0);
}
"""
SPRITE_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform vec4 u_tint;
varying vec2 v_uv;
varying vec4 v_color;
void main() {
    gl_FragColor = texture2D(u_tex, v_uv) * v_color * u_tint;
}
"""


class Sprites:
    """The sprite program and its buffers: a unit quad for single sprites and a shared
    quad index buffer. ``draw_one`` is how 2D engines draw a moving sprite (one draw,
    uniforms per draw); ``draw_batch`` draws n quads from the bound batch buffer."""

    MAX_QUADS = 2048

    def __init__(self, gl, width: int, height: int):
        self.gl = gl
        self.program = gl.createProgram(SPRITE_VS, SPRITE_FS, attrib_locations=SPRITE_ATTRIBS)
        self.loc = {name: gl.getUniformLocation(self.program, name)
                    for name in ("u_proj", "u_rect", "u_uvrect", "u_tex", "u_tint")}
        self.unit = gl.createBuffer()
        gl.bindBuffer("ARRAY_BUFFER", self.unit)
        gl.bufferData("ARRAY_BUFFER", quad_batch([(0, 0, 1, 1)], [(0, 0, 1, 1)]), "STATIC_DRAW")
        self.indices = gl.createBuffer()
        gl.bindBuffer("ELEMENT_ARRAY_BUFFER", self.indices)
        gl.bufferData("ELEMENT_ARRAY_BUFFER", quad_indices(self.MAX_QUADS), "STATIC_DRAW")
        self.proj = pixels_ortho(width, height)
        self._bound: int | None = None

    def use(self) -> None:
        """useProgram, the quad index buffer, the per-program uniforms (projection, sampler
        unit 0) and the attribute arrays."""
        gl = self.gl
        gl.useProgram(self.program)
        gl.bindBuffer("ELEMENT_ARRAY_BUFFER", self.indices)
        gl.uniformMatrix4fv(self.loc["u_proj"], False, gl_matrix(self.proj))
        gl.uniform1i(self.loc["u_tex"], 0)
        for k in range(3):
            gl.enableVertexAttribArray(k)
        self._bound = None

    def bind(self, buffer: int) -> None:
        if self._bound != buffer:
            self.gl.bindBuffer("ARRAY_BUFFER", buffer)
            setup_sprite_arrays(self.gl)
            self._bound = buffer

    def draw_one(self, rect, uvrect=(0, 0, 1, 1), tint=(1, 1, 1, 1)) -> None:
        gl = self.gl
        self.bind(self.unit)
        gl.uniform4f(self.loc["u_rect"], *[float(v) for v in rect])
        gl.uniform4f(self.loc["u_uvrect"], *[float(v) for v in uvrect])
        gl.uniform4f(self.loc["u_tint"], *[float(v) for v in tint])
        gl.drawElements("TRIANGLES", 6, "UNSIGNED_SHORT", 0)

    def draw_batch(self, buffer: int, quads: int, tint=(1, 1, 1, 1), first: int = 0) -> None:
        if quads <= 0:
            return
        gl = self.gl
        self.bind(buffer)
        gl.uniform4f(self.loc["u_rect"], 0.0, 0.0, 1.0, 1.0)
        gl.uniform4f(self.loc["u_uvrect"], 0.0, 0.0, 1.0, 1.0)
        gl.uniform4f(self.loc["u_tint"], *[float(v) for v in tint])
        gl.drawElements("TRIANGLES", 6 * quads, "UNSIGNED_SHORT", 12 * first)


class DynamicBatch:
    """A DYNAMIC_DRAW vertex buffer of up to ``capacity`` quads, re-uploaded (bufferSubData)
    only when its contents change, as engines do for text and sprite batches."""

    def __init__(self, gl, capacity: int):
        self.gl, self.capacity = gl, capacity
        self.buffer = gl.createBuffer()
        gl.bindBuffer("ARRAY_BUFFER", self.buffer)
        gl.bufferData("ARRAY_BUFFER", capacity * 4 * SPRITE_STRIDE, "DYNAMIC_DRAW")
        self.quads = 0
        self._last: bytes | None = None

    def update(self, sprites, data: np.ndarray) -> bool:
        """Upload ``data`` (from :func:`quad_batch`) if it differs; returns whether it did."""
        quads = data.size // (4 * SPRITE_STRIDE)
        if quads > self.capacity:
            raise ValueError(f"batch of {quads} quads exceeds its capacity {self.capacity}")
        raw = data.tobytes()
        self.quads = quads
        if raw == self._last or quads == 0:
            return False
        self._last = raw
        sprites.bind(self.buffer)
        self.gl.bufferSubData("ARRAY_BUFFER", 0, data)
        return True


def upload_texture(gl, image: np.ndarray, *, min_filter: str = "LINEAR",
                   mag_filter: str = "LINEAR", wrap_s: str = "CLAMP_TO_EDGE",
                   wrap_t: str = "CLAMP_TO_EDGE", mipmap: bool = False) -> int:
    """createTexture + texImage2D (RGBA or RGB by channels) + parameters (+ generateMipmap)."""
    fmt = {4: "RGBA", 3: "RGB", 1: "LUMINANCE"}[image.shape[2] if image.ndim == 3 else 1]
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    if fmt != "RGBA" and (image.shape[1] * image.shape[2 if image.ndim == 3 else 1]) % 4:
        gl.pixelStorei("UNPACK_ALIGNMENT", 1)
    gl.texImage2D("TEXTURE_2D", 0, fmt, image.shape[1], image.shape[0], 0, fmt,
                  "UNSIGNED_BYTE", np.ascontiguousarray(image))
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", min_filter)
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", mag_filter)
    gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_S", wrap_s)
    gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_T", wrap_t)
    if mipmap:
        gl.generateMipmap("TEXTURE_2D")
    return texture


# --- meshes (3D workloads) ---------------------------------------------------------------------

MESH_STRIDE = 32  # position (3), normal (3), uv (2) float32


class Mesh:
    """Interleaved vertices (V, 8) float32 [x y z nx ny nz u v] and uint16 triangle indices."""

    def __init__(self, vertices: np.ndarray, indices: np.ndarray):
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float32)
        self.indices = np.ascontiguousarray(indices, dtype=np.uint16).ravel()

    @staticmethod
    def merge(meshes: list[Mesh]) -> tuple[Mesh, list[tuple[int, int]]]:
        """One mesh of several (one buffer), with each part's (first index, index count)."""
        vertices, indices, ranges, base, start = [], [], [], 0, 0
        for mesh in meshes:
            vertices.append(mesh.vertices)
            indices.append(mesh.indices.astype(np.uint32) + base)
            ranges.append((start, mesh.indices.size))
            base += len(mesh.vertices)
            start += mesh.indices.size
        return Mesh(np.concatenate(vertices), np.concatenate(indices)), ranges


def transformed(mesh: Mesh, matrix: np.ndarray, uv_rect=(0.0, 0.0, 1.0, 1.0)) -> Mesh:
    """``mesh`` moved by a (4, 4) matrix (normals by its inverse transpose), its uvs mapped
    into ``uv_rect`` (u0, v0, du, dv; a negative size flips)."""
    v = mesh.vertices.astype(np.float64).copy()
    v[:, :3] = v[:, :3] @ matrix[:3, :3].T + matrix[:3, 3]
    n = v[:, 3:6] @ normal_matrix(matrix).T
    v[:, 3:6] = n / np.linalg.norm(n, axis=1, keepdims=True)
    v[:, 6] = uv_rect[0] + v[:, 6] * uv_rect[2]
    v[:, 7] = uv_rect[1] + v[:, 7] * uv_rect[3]
    return Mesh(v, mesh.indices)


def box(sx: float = 1.0, sy: float = 1.0, sz: float = 1.0, uv_scale=(1.0, 1.0)) -> Mesh:
    """An axis-aligned box centered at the origin, 24 vertices (flat normals), CCW outside."""
    faces = []
    # (normal, u axis, v axis) per face
    axes = [((1, 0, 0), (0, 0, -1), (0, 1, 0)), ((-1, 0, 0), (0, 0, 1), (0, 1, 0)),
            ((0, 1, 0), (1, 0, 0), (0, 0, -1)), ((0, -1, 0), (1, 0, 0), (0, 0, 1)),
            ((0, 0, 1), (1, 0, 0), (0, 1, 0)), ((0, 0, -1), (-1, 0, 0), (0, 1, 0))]
    half = np.array([sx, sy, sz]) / 2
    for n, u, v in axes:
        n, u, v = (np.asarray(a, dtype=np.float64) for a in (n, u, v))
        for cu, cv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            p = (n + cu * u + cv * v) * half
            faces.append([*p, *n, (cu + 1) / 2 * uv_scale[0], (cv + 1) / 2 * uv_scale[1]])
    idx = np.concatenate([np.array([0, 1, 2, 2, 3, 0]) + 4 * f for f in range(6)])
    return Mesh(np.asarray(faces), idx)


def grid(size_x: float, size_z: float, nx: int, nz: int, uv_scale=(1.0, 1.0)) -> Mesh:
    """A flat grid in the y = 0 plane, normal +y, centered, (nx + 1) * (nz + 1) vertices."""
    xs = np.linspace(-size_x / 2, size_x / 2, nx + 1)
    zs = np.linspace(-size_z / 2, size_z / 2, nz + 1)
    z, x = np.meshgrid(zs, xs, indexing="ij")
    u = (x / size_x + 0.5) * uv_scale[0]
    v = (z / size_z + 0.5) * uv_scale[1]
    n = x.size
    vertices = np.stack([x.ravel(), np.zeros(n), z.ravel(), np.zeros(n), np.ones(n),
                         np.zeros(n), u.ravel(), v.ravel()], axis=1)
    i = np.arange(nz)[:, None] * (nx + 1) + np.arange(nx)[None, :]
    a, b, c, d = i, i + 1, i + nx + 2, i + nx + 1
    # counter-clockwise seen from +y
    idx = np.stack([a, d, c, c, b, a], axis=-1).ravel()
    return Mesh(vertices, idx)


def cylinder(radius: float, height: float, segments: int, *, caps: bool = True,
             top_radius: float | None = None) -> Mesh:
    """A cylinder (or cone frustum) along +y from y = 0 to ``height``, smooth sides."""
    top_radius = radius if top_radius is None else top_radius
    a = np.linspace(0, 2 * np.pi, segments + 1)
    c, s = np.cos(a), np.sin(a)
    slope = (radius - top_radius) / height
    norm = np.sqrt(1 + slope * slope)
    verts = []
    for k in range(segments + 1):
        n = (c[k] / norm, slope / norm, s[k] / norm)
        verts.append([radius * c[k], 0, radius * s[k], *n, k / segments, 0])
        verts.append([top_radius * c[k], height, top_radius * s[k], *n, k / segments, 1])
    idx = []
    for k in range(segments):
        b0, t0, b1, t1 = 2 * k, 2 * k + 1, 2 * k + 2, 2 * k + 3
        idx += [b0, t0, t1, t1, b1, b0]
    if caps:
        for y, r, ny in ((height, top_radius, 1.0), (0.0, radius, -1.0)):
            if r <= 0:
                continue
            center = len(verts)
            verts.append([0, y, 0, 0, ny, 0, 0.5, 0.5])
            for k in range(segments + 1):
                verts.append([r * c[k], y, r * s[k], 0, ny, 0, 0.5 + 0.5 * c[k],
                              0.5 + 0.5 * s[k]])
            for k in range(segments):
                p, q = center + 1 + k, center + 2 + k
                idx += [center, q, p] if ny > 0 else [center, p, q]
    return Mesh(np.asarray(verts), np.asarray(idx))


def sphere(radius: float, rings: int, segments: int) -> Mesh:
    """A UV sphere centered at the origin."""
    theta = np.linspace(0, np.pi, rings + 1)[:, None]
    phi = np.linspace(0, 2 * np.pi, segments + 1)[None, :]
    n = np.stack([np.sin(theta) * np.cos(phi), np.cos(theta) * np.ones_like(phi),
                  np.sin(theta) * np.sin(phi)], axis=-1).reshape(-1, 3)
    u = np.broadcast_to(phi / (2 * np.pi), (rings + 1, segments + 1)).ravel()
    v = np.broadcast_to(theta / np.pi, (rings + 1, segments + 1)).ravel()
    vertices = np.concatenate([n * radius, n, u[:, None], v[:, None]], axis=1)
    i = np.arange(rings)[:, None] * (segments + 1) + np.arange(segments)[None, :]
    a, b, c, d = i, i + 1, i + segments + 2, i + segments + 1
    idx = np.stack([a, b, c, c, d, a], axis=-1).ravel()
    return Mesh(vertices, idx)


def lathe(radii, heights, segments: int) -> Mesh:
    """A surface of revolution about +y: the profile (radius, height) points, ordered away
    from the axis, swept through 360 degrees in ``segments`` steps. Normals are smooth (the
    mean of the two profile segments at a point), each segment's turned a quarter towards
    +y, so a profile walking outward faces +y (a disc), up a wall faces the axis, down a
    wall faces away. uvs are the planar projection onto the x-z plane over the largest
    radius ((0.5, 0.5) on the axis), as a dial face is textured. CCW seen from the normal."""
    r = np.asarray(radii, dtype=np.float64)
    y = np.asarray(heights, dtype=np.float64)
    dr, dy = np.diff(r), np.diff(y)
    seg = np.stack([-dy, dr], axis=1) / np.hypot(dr, dy)[:, None]
    prof = np.concatenate([seg[:1], seg[:-1] + seg[1:], seg[-1:]])
    prof /= np.linalg.norm(prof, axis=1, keepdims=True)
    a = np.linspace(0, 2 * np.pi, segments + 1)[None, :]
    c, s = np.cos(a), np.sin(a)
    rr, yy = r[:, None] + 0 * a, y[:, None] + 0 * a
    nr, ny = prof[:, :1] + 0 * a, prof[:, 1:] + 0 * a
    rmax = max(float(r.max()), 1e-9)
    vertices = np.stack([rr * c, yy, rr * s, nr * c, ny, nr * s, 0.5 + 0.5 * rr * c / rmax,
                         0.5 + 0.5 * rr * s / rmax], axis=-1).reshape(-1, 8)
    i = np.arange(len(r) - 1)[:, None] * (segments + 1) + np.arange(segments)[None, :]
    b, c_, d = i + 1, i + segments + 1, i + segments + 2
    # (P[i,j], P[i,j+1], P[i+1,j]) turns counter-clockwise seen from +y on a disc
    idx = np.stack([i, b, c_, b, d, c_], axis=-1).ravel()
    return Mesh(vertices, idx)


def setup_mesh_arrays(gl, offset: int = 0) -> None:
    """vertexAttribPointer for a bound mesh VBO: 0 position, 1 normal, 2 uv."""
    gl.vertexAttribPointer(0, 3, "FLOAT", False, MESH_STRIDE, offset)
    gl.vertexAttribPointer(1, 3, "FLOAT", False, MESH_STRIDE, offset + 12)
    gl.vertexAttribPointer(2, 2, "FLOAT", False, MESH_STRIDE, offset + 24)


MESH_ATTRIBS = {"a_position": 0, "a_normal": 1, "a_uv": 2}
# The vertex program of per-pixel lit meshes (MESH_ATTRIBS): eye-space position and normal
# and the texture coordinates for the fragment program (runner, the gauges).
PIXEL_LIT_VS = """\
attribute vec3 a_position;
attribute vec3 a_normal;
attribute vec2 a_uv;
uniform mat4 u_mvp;
uniform mat4 u_model_view;
uniform mat3 u_normal_matrix;
varying vec3 v_position;
varying vec3 v_normal;
varying vec2 v_uv;
void main() {
    v_position = (u_model_view * vec4(a_position, 1.0)).xyz;
    v_normal = u_normal_matrix * a_normal;
    v_uv = a_uv;
    gl_Position = u_mvp * vec4(a_position, 1.0);
}
"""
