"""``thesis_games``: a recorded GLES2 program per game of Frame Coherence Tables 3.3 and 3.4,
built from the row's numbers and the genre's motion, so the study runs in the thesis's regime.

The thesis's benchmarks are commercial Android games captured with Gapid; tilesim cannot
replay them. What the techniques' results depend on is the work each frame gives the GPU and
how it changes from frame to frame, and Tables 3.3 and 3.4 characterize the first per game:
draw calls per frame, vertices per draw call, attributes per vertex, vertex-shader
instructions, fragment-shader instructions per fragment, the ALU:TEX ratio, texels per texture
instruction and overshading (Frame Coherence §3.2). This module turns a row of those tables
(``thesis_games.toml``) into a program that does that work, by construction rather than by
tuning:

- **Fragment programs.** The row's instructions per fragment ``I`` and ALU:TEX ratio ``R`` give
  the mean texture and ALU instructions a fragment executes, ``t = I / (1 + R)`` and
  ``a = I - t``. At most two straight-line programs (``t1 = floor(t)`` and ``t1 + 1`` texture
  instructions, padded with multiply-adds to the ALU counts that best meet ``a``) share the
  fragments in the proportion that gives ``t`` exactly. The counts are those of the TGSI Mesa
  compiles them to, measured, not assumed.
- **Filters.** Texels per texture instruction ``T`` (1 nearest, 4 bilinear, 8 trilinear, as
  §3.2 counts them) is met by the two filters around it, each on its share of the fragments:
  nearest and bilinear textures are magnified (0.25 and 0.5 texels per pixel), trilinear ones
  minified with mipmaps (1.5 texels per pixel, a level of detail between levels 0 and 1).
  Rows above 8 texels (anisotropic filtering, e.g. Brawl Stars) are refused.
- **Coverage.** A first layer covers the screen once in bands (one draw per program and
  filter pair); the other draws place sprites or meshes fully on screen whose areas add up
  to ``(overshading - 1)`` screens, so fragments shaded / pixels written is the row's
  overshading. 3D rows draw depth-tested, back to front, so every fragment is shaded.
- **Geometry.** Each draw has the row's vertices per draw call, in patches whose shape gives
  the row's primitives per vertex: two triangles of six vertices (``glDrawArrays``, 1/3),
  indexed quads (1/2) or indexed k x k grids (``2 (k-1)^2 / k^2``, up to 2). Vertex programs
  take the row's attributes and are padded to its vertex-shader instructions.
- **Draw calls.** ``ceil(D)`` draws are planned; frame ``f`` draws ``floor(D (f+1)) -
  floor(D f)`` of them, the last (a short-lived effect) only where that count is ``ceil(D)``.
- **Motion.** The genre's profile (``[profiles.*]``): the share of the screen whose sprites
  move every frame (each draw's sprites grouped in a region, as a game object's parts), the
  HUD that never moves, and pans of the world layers (every world tile changes) in phases.
  This is an interpretation of Table 3.2's genres against the
  coherence the thesis reports (§4.1 Figure 4.1, §4.4 Figure 4.12), stated in the TOML.

What it does not reproduce: the games' look, their render-to-texture passes, and Table 3.3's
primitives per tile and Table 3.4's fragments per primitive, which follow from the above
(reported by ``tilesim characterize``, not matched). ``characterization`` in the TOML's
neighbour ``thesis_games_measured.json`` keeps each built workload's measured columns, and
``tests/studies/test_thesis_games.py`` holds them within 15% of the rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

import numpy as np

from tilesim.render.workloads.common import (
    check_request,
    pixels_ortho,
    rng_for,
    to_u8,
    upload_texture,
    value_noise,
)
from tilesim.render.workloads.transforms import gl_matrix

DATA = Path(__file__).with_name("thesis_games.toml")
SIZES = {"4-5": (1196, 768), "6": (1920, 1080)}  # Frame Coherence §3.2: the two sets' screens

# Texels fetched per texture instruction by filter (Frame Coherence §3.2) and the texels per
# screen pixel each is drawn at, so the sampler picks that filter (magnified: the
# magnification filter; 1.5: level of detail log2(1.5) = 0.58, between mip levels 0 and 1).
FILTER_TEXELS = {"nearest": 1, "bilinear": 4, "trilinear": 8}
TEXELS_PER_PIXEL = {"nearest": 0.25, "bilinear": 0.5, "trilinear": 1.5}
TEXTURE_SIZE = {"nearest": 64, "bilinear": 128, "trilinear": 256}
MOTION_PIXELS = 6.0     # amplitude of a moving sprite's per-frame wobble
PAN_PIXELS = 7.0        # world scroll per frame during a pan
GROUP_SPREAD = 2.0      # a draw's sprites lie in a region this many times their area
MOVING_DRAWS = 0.1      # share of the sprite draws that move (their groups: moving_area)
EFFECT_AREA = 0.005     # screen share of the short-lived effect draw
MAX_TEX = 8
TWO_PROGRAM_ERROR = 0.02   # ALU mean error that two programs may leave before a third joins
ROW_NUMBERS = ("draw_calls_per_frame", "vertices_per_draw", "attributes_per_vertex",
               "vs_instructions", "primitives_per_draw", "primitives_per_tile",
               "fragments_per_primitive", "fs_instructions_per_fragment", "alu_tex_ratio",
               "texels_per_fragment", "overshading")


@dataclass(frozen=True)
class Profile:
    """A genre's motion (``[profiles.*]`` of thesis_games.toml)."""

    projection: str
    moving_area: float
    pan_period: int
    pan_frames: int
    hud_share: float
    ticking_share: float


@dataclass(frozen=True)
class Row:
    """One benchmark of Frame Coherence Tables 3.2-3.4."""

    key: str
    benchmark: str
    chapters: str
    genre: str
    type: str
    profile: str
    numbers: dict

    @property
    def size(self) -> tuple[int, int]:
        return SIZES[self.chapters]

    @property
    def name(self) -> str:
        """The workload's name: ``like_<key>``."""
        return f"like_{self.key}"


@cache
def load_table(path: str = str(DATA)) -> tuple[dict[str, Row], dict[str, Profile], tuple]:
    """(rows by key, profiles by name, the suite's row keys) of thesis_games.toml."""
    from tilesim.inputs import read_toml

    data = read_toml(path, "workload table")
    profiles = {k: Profile(str(v["projection"]), float(v["moving_area"]),
                           int(v["pan_period"]), int(v["pan_frames"]), float(v["hud_share"]),
                           float(v["ticking_share"]))
                for k, v in data["profiles"].items()}
    rows = {}
    for key, v in data["rows"].items():
        if v["profile"] not in profiles or v["chapters"] not in SIZES:
            raise ValueError(f"{path}: row {key}: unknown profile or chapters")
        rows[key] = Row(key, v["benchmark"], v["chapters"], v["genre"], v["type"],
                        v["profile"], {n: float(v[n]) for n in ROW_NUMBERS})
    suite = tuple(data["suite"])
    missing = [k for k in suite if k not in rows]
    if missing:
        raise ValueError(f"{path}: suite names unknown rows {missing}")
    return rows, profiles, suite


# --- programs ------------------------------------------------------------------------------


def _fragment_glsl(tex: int, pad: int) -> str:
    """A straight-line fragment program: ``tex`` texture instructions summed, then ``pad``
    multiply-adds by uniforms (the first scales the sum by 1 / tex, the others are identities:
    the image is the textures' mean)."""
    lines = ["precision mediump float;", "varying vec2 v_uv;", "uniform vec4 u_k[24];"]
    lines += [f"uniform sampler2D u_tex{i};" for i in range(tex)]
    body = ["vec4 c = texture2D(u_tex0, v_uv);" if tex else "vec4 c = u_k[0] * v_uv.xyxy;"]
    body += [f"c += texture2D(u_tex{i}, v_uv + u_k[{i}].xy);" for i in range(1, tex)]
    # u_k[8] scales the textures' sum back into range once; the other multiply-adds are
    # identities (u_k[9..15] = 1, u_k[16..23] = 0)
    body += [f"c = c * u_k[{8 if j == 0 else 9 + (j - 1) % 7}] + u_k[{16 + j % 8}];"
             for j in range(pad)]
    return "\n".join(lines + ["void main() {", *body, "gl_FragColor = c;", "}"])


def _vertex_glsl(extras: int, pad: int, depth: bool) -> str:
    """Pixel-space quads offset per draw (``u_draw``: xy position, z texture offset, w the
    draw's tick, read but weighed by zero: a per-frame constant that leaves the image as it
    was), with ``extras`` further vec4 attributes read and ``pad`` identity multiply-adds."""
    lines = ["attribute vec2 a_pos;", "attribute vec2 a_uv;"]
    lines += [f"attribute vec4 a_extra{i};" for i in range(extras)]
    lines += ["uniform mat4 u_proj;", "uniform vec4 u_draw;", "uniform vec4 u_v[8];",
              "uniform float u_depth;", "varying vec2 v_uv;", "void main() {",
              "vec4 p = vec4(a_pos + u_draw.xy, 0.0, 1.0);"]
    lines += [f"p.xy += a_extra{i}.xy * u_v[{i % 4}].z;" for i in range(extras)]
    lines += [f"p = p * u_v[{j % 4}] + u_v[{4 + j % 4}];" for j in range(pad)]
    lines += ["vec4 clip = u_proj * p;"]
    if depth:
        lines += ["clip.z = u_depth;"]
    lines += ["gl_Position = clip;", "v_uv = a_uv + vec2(u_draw.z, u_draw.w * u_v[7].w);",
              "}"]
    return "\n".join(lines)


ATTRIBS = {"a_pos": 0, "a_uv": 1}


def _attrib_locations(extras: int) -> dict[str, int]:
    return {**ATTRIBS, **{f"a_extra{i}": 2 + i for i in range(extras)}}


def _counts(vs: str, fs: str, extras: int) -> tuple:
    """((VS total), (FS tex, alu, flow)) of the TGSI Mesa compiles the pair to."""
    from tilesim.render.gl.commands import compile_cached
    from tilesim.shaders.parser import parse
    from tilesim.shaders.stats import static_stats

    compiled = compile_cached(vs, fs, _attrib_locations(extras))
    v = static_stats(parse(compiled.vertex_tgsi))
    f = static_stats(parse(compiled.fragment_tgsi))
    return v.total, (f.tex, f.alu, f.flow)


_BASE_VS = _vertex_glsl(0, 0, False)


def fragment_program(tex: int, alu: int) -> str:
    """The fragment program with ``tex`` texture and ``alu`` ALU instructions as Mesa compiles
    it (the padding found by compiling); ValueError if no padding gives that count."""
    pad = max(0, alu - max(tex - 1, 1))
    for _ in range(6):
        fs = _fragment_glsl(tex, pad)
        _, (t, a, _flow) = _counts(_BASE_VS, fs, 0)
        if (t, a) == (tex, alu):
            return fs
        pad += alu - a
        if pad < 0:
            break
    raise ValueError(f"no fragment program with {tex} TEX and {alu} ALU instructions")


def min_alu(tex: int) -> int:
    """The fewest ALU instructions a program of ``tex`` texture instructions compiles to."""
    return _counts(_BASE_VS, _fragment_glsl(tex, 0), 0)[1][1]


def vertex_program(extras: int, instructions: int, depth: bool) -> str:
    """The vertex program closest to ``instructions`` (static, END left out)."""
    base = _counts(_vertex_glsl(extras, 0, depth), _fragment_glsl(1, 0), extras)[0]
    pad = max(0, instructions - base)
    return _vertex_glsl(extras, pad, depth)


def program_mix(instructions: float, alu_tex: float,
                alu_floor=min_alu) -> list[tuple[int, int, float]]:
    """[(texture instructions, ALU instructions, share of fragments)] of two programs (three
    where two miss ``a`` by more than TWO_PROGRAM_ERROR) whose fragment-weighted means give
    ``t = I / (1 + R)`` texture instructions exactly and ``a = I - t`` ALU instructions."""
    t = instructions / (1.0 + alu_tex)
    a = instructions - t
    t1 = int(math.floor(t))
    if t1 + 1 > MAX_TEX:
        raise ValueError(f"{t:.2f} texture instructions per fragment: more than {MAX_TEX}")
    w = t - t1                      # share of the program with t1 + 1
    if w < 1e-9:                    # a whole number of TEX: two ALU counts around a
        lo = max(alu_floor(t1), int(math.floor(a)))
        share = min(max(a - lo, 0.0), 1.0)
        return [(t1, lo, 1.0 - share)] + ([(t1, lo + 1, share)] if share > 1e-9 else [])
    lo1, lo2 = alu_floor(t1), alu_floor(t1 + 1)
    top = int(math.ceil(2 * a)) + 2
    # Two programs: the closest mean, preferring programs of similar length (1% of relative
    # error per instruction of difference) over a 7-and-1 pair that is only marginally closer.
    _cost, a1, a2 = min((abs((1 - w) * a1 + w * a2 - a) / a + 0.01 * abs(a1 - a2), a1, a2)
                       for a1 in range(lo1, max(lo1, top) + 1)
                       for a2 in range(lo2, max(lo2, top) + 1))
    if abs((1 - w) * a1 + w * a2 - a) <= TWO_PROGRAM_ERROR * a:
        return [(t1, a1, 1.0 - w), (t1 + 1, a2, w)]
    # Otherwise three: the t1 + 1 side split between two ALU counts, which meets a exactly
    # (a share w of fragments near 0 or 1 leaves one program's count to carry the mean).
    options = [(abs(alu1 - exact), alu1, exact)
               for alu1 in range(lo1, max(lo1, top) + 1)
               if (exact := (a - (1 - w) * alu1) / w) >= lo2]
    if not options:      # a below what any pair of programs executes: the fewest
        return [(t1, a1, 1.0 - w), (t1 + 1, a2, w)]
    _, a1, exact = min(options)
    a2, g = int(math.floor(exact)), exact - math.floor(exact)
    mix = [(t1, a1, 1.0 - w), (t1 + 1, a2, w * (1 - g)), (t1 + 1, a2 + 1, w * g)]
    return [m for m in mix if m[2] > 1e-9]


def filter_mix(texels: float) -> list[tuple[str, float]]:
    """[(filter, share of texture instructions)] of the two filters around ``texels``."""
    levels = sorted(FILTER_TEXELS.items(), key=lambda kv: kv[1])
    if texels <= levels[0][1]:
        return [(levels[0][0], 1.0)]
    for (lo_name, lo), (hi_name, hi) in pairwise(levels):
        if texels <= hi:
            share = (texels - lo) / (hi - lo)
            return [(n, s) for n, s in ((lo_name, 1 - share), (hi_name, share)) if s > 1e-9]
    raise ValueError(f"{texels} texels per texture instruction needs anisotropic filtering, "
                     "which the sampler does not model (at most 8: trilinear)")


@dataclass(frozen=True)
class Patch:
    """The shape of a draw's geometry: ``arrays`` (two triangles of 6 vertices) or
    ``indexed`` k x k vertex grids (2 (k-1)^2 triangles)."""

    kind: str
    k: int

    @property
    def vertices(self) -> int:
        return 6 if self.kind == "arrays" else self.k * self.k

    @property
    def triangles(self) -> int:
        return 2 if self.kind == "arrays" else 2 * (self.k - 1) ** 2


def patch_shape(vertices: float, primitives: float) -> Patch:
    """The patch whose primitives per vertex is closest (in ratio) to the row's."""
    rho = primitives / vertices
    candidates = [Patch("arrays", 2)] + [Patch("indexed", k) for k in range(2, 33)
                                         if k * k <= max(4.0, vertices)]
    return min(candidates, key=lambda p: abs(math.log(p.triangles / p.vertices / rho)))


# --- the plan of a frame -------------------------------------------------------------------


@dataclass
class DrawPlan:
    """One planned draw: its program and filter (a cell), its role and its patches' rects."""

    program: int
    filter: str | None
    role: str                         # band, world, moving, hud, effect
    rects: np.ndarray                 # (n, 4) x, y, w, h pixels
    depth: float = 0.0


def _split(total: int, shares: list[float], minimum: int = 0) -> list[int]:
    """Largest-remainder split of ``total`` into integers by ``shares``, each >= minimum."""
    shares = np.asarray(shares, dtype=np.float64)
    base = np.full(len(shares), minimum)
    rest = total - base.sum()
    if rest < 0:
        raise ValueError("too few items to split")
    exact = shares / shares.sum() * rest
    counts = base + np.floor(exact).astype(int)
    order = np.argsort(-(exact - np.floor(exact)), kind="stable")
    counts[order[:total - counts.sum()]] += 1
    return counts.tolist()


def _band_rects(x0: int, width: int, height: int, n: int) -> np.ndarray:
    """A band of the screen (columns x0..x0+width) cut into n integer-aligned cells."""
    cols = max(1, int(round(math.sqrt(n * width / max(height, 1)))))
    cols = min(cols, n, max(width, 1))
    rows = int(math.ceil(n / cols))
    xs = np.linspace(x0, x0 + width, cols + 1).round()
    ys = np.linspace(0, height, rows + 1).round()
    rects = [(xs[c], ys[r], xs[c + 1] - xs[c], ys[r + 1] - ys[r])
             for r in range(rows) for c in range(cols)]
    # n cells exactly: merge the overflow of the last row into its neighbours.
    while len(rects) > n:
        x, y, w, h = rects.pop()
        px, py, pw, ph = rects[-1]
        rects[-1] = (min(px, x), py, pw + w, ph)
    return np.asarray(rects, dtype=np.float64)


def _sprite_rects(rng, area: float, n: int, width: int, height: int) -> np.ndarray:
    """n rectangles of ``area`` pixels in all, grouped in a region of about twice their area
    (a game object's parts; the whole screen at most), inside the screen with room to move."""
    each = area / n
    aspect = np.exp(rng.uniform(-0.4, 0.4, n))
    w = np.sqrt(each * aspect)
    h = each / w
    limit_w, limit_h = width - 2 * MOTION_PIXELS - 2, height - 2 * MOTION_PIXELS - 2
    if (w > limit_w).any() or (h > limit_h).any():
        raise ValueError(f"a sprite of {each:.0f} pixels does not fit a {width}x{height} "
                         "screen: too few vertices per draw for its area")
    scale = math.sqrt(min(GROUP_SPREAD * area / (limit_w * limit_h), 1.0))
    region_w = min(max(scale * limit_w, w.max()), limit_w)
    region_h = min(max(scale * limit_h, h.max()), limit_h)
    rx = MOTION_PIXELS + 1 + rng.random() * (limit_w - region_w)
    ry = MOTION_PIXELS + 1 + rng.random() * (limit_h - region_h)
    x = rx + rng.random(n) * (region_w - w)
    y = ry + rng.random(n) * (region_h - h)
    return np.column_stack([x, y, w, h])


@dataclass
class Plan:
    """Everything a row's program draws, decided before recording."""

    row: Row
    profile: Profile
    width: int
    height: int
    programs: list[tuple[int, int, float]]       # (tex, alu, fragment share)
    filters: list[tuple[str, float]]
    patch: Patch
    draws: list[DrawPlan]
    attributes: int


def plan(row: Row, profile: Profile, width: int, height: int, seed: int = 0,
         alu_floor=min_alu) -> Plan:
    """The draws of ``row`` at width x height (see the module's docstring)."""
    n = row.numbers
    rng = rng_for(seed, 1)
    programs = program_mix(n["fs_instructions_per_fragment"], n["alu_tex_ratio"], alu_floor)
    filters = filter_mix(n["texels_per_fragment"])
    cells = []                                   # (program, filter, share of fragments)
    for p, (tex, _alu, share) in enumerate(programs):
        for f, fshare in (filters if tex else [(None, 1.0)]):
            if share * fshare > 1e-9:
                cells.append((p, f, share * fshare))
    total_draws = int(math.ceil(n["draw_calls_per_frame"]))
    sprite_draws = total_draws - len(cells)
    if sprite_draws < len(cells):
        raise ValueError(f"{row.benchmark}: {total_draws} draws cannot carry {len(cells)} "
                         "program and filter pairs on both layers")
    patch = patch_shape(n["vertices_per_draw"], n["primitives_per_draw"])
    per_draw = _split(int(round(total_draws * n["vertices_per_draw"] / patch.vertices)),
                      [1.0] * total_draws, minimum=1)
    screen = float(width * height)
    overshading = n["overshading"]
    draws: list[DrawPlan] = []
    widths = _split(width, [c[2] for c in cells], minimum=1)
    x0 = 0
    for (p, f, _share), w, count in zip(cells, widths, per_draw[:len(cells)], strict=True):
        draws.append(DrawPlan(p, f, "band", _band_rects(x0, w, height, count)))
        x0 += w
    owners = _split(sprite_draws, [c[2] for c in cells], minimum=1)
    sprite_cells = [c for c, k in zip(cells, owners, strict=True) for _ in range(k)]
    # Interleave the cells' sprite draws so that each role (world, moving, HUD) mixes them.
    order = np.argsort([(i % max(owners)) * len(cells) + cells.index(c)
                        for i, c in enumerate(sprite_cells)], kind="stable")
    sprite_cells = [sprite_cells[i] for i in order]
    # Roles: the last draw short-lived where D is fractional, the HUD before it, and the
    # first MOVING_DRAWS of the sprite draws moving (only where their program and filter
    # keep a static draw to carry the rest of their fragments).
    roles = ["world"] * sprite_draws
    hud = int(round(profile.hud_share * sprite_draws))
    for i in range(sprite_draws - hud, sprite_draws):
        roles[i] = "hud"
    if n["draw_calls_per_frame"] < total_draws:
        roles[-1] = "effect"
    moving_target = max(1, int(round(MOVING_DRAWS * sprite_draws)))
    for i in range(sprite_draws):
        static = [j for j in range(sprite_draws) if sprite_cells[j] == sprite_cells[i]
                  and roles[j] in ("world", "hud")]
        if roles.count("moving") < moving_target and roles[i] == "world" and len(static) > 1:
            roles[i] = "moving"
    # Areas: moving groups cover the profile's moving_area; the short-lived effect
    # EFFECT_AREA; the static draws of each program and filter the rest of its fragments.
    small = {"moving": profile.moving_area * screen / GROUP_SPREAD / max(roles.count("moving"), 1),
             "effect": EFFECT_AREA * screen}
    areas = [small.get(r, 0.0) for r in roles]
    for c in cells:
        mine = [i for i in range(sprite_draws) if sprite_cells[i] == c]
        static = [i for i in mine if roles[i] in ("world", "hud")]
        rest = c[2] * (overshading - 1.0) * screen - sum(areas[i] for i in mine)
        if rest < 0 or not static:
            raise ValueError(f"{row.benchmark}: too little overshading for its moving sprites")
        for i in static:
            areas[i] = rest / len(static)
    for i, (p, f, _share) in enumerate(sprite_cells):
        rects = _sprite_rects(rng, areas[i], per_draw[len(cells) + i], width, height)
        draws.append(DrawPlan(p, f, roles[i], rects))
    for i, d in enumerate(draws):   # back to front: later draws nearer
        d.depth = 0.9 - 1.8 * (i + 1) / (len(draws) + 1)
    return Plan(row, profile, width, height, programs, filters, patch, draws,
                attributes=int(min(max(round(n["attributes_per_vertex"]), 2), 6)))


# --- geometry and textures -----------------------------------------------------------------


def _patch_vertices(rects: np.ndarray, patch: Patch, filter_name: str | None,
                    extras: int, rng) -> tuple[np.ndarray, np.ndarray | None]:
    """Interleaved vertices (x, y, u, v float32, then ``extras`` x 4 bytes) of the rects and
    uint16 indices (None for arrays). Texture coordinates are anchored to the screen, at the
    filter's texels per pixel."""
    tpp = TEXELS_PER_PIXEL.get(filter_name or "bilinear")
    size = TEXTURE_SIZE.get(filter_name or "bilinear")
    if patch.kind == "arrays":
        cx = np.array([0, 0, 1, 1, 1, 0], dtype=np.float64)
        cy = np.array([0, 1, 1, 1, 0, 0], dtype=np.float64)
    else:
        g = np.linspace(0.0, 1.0, patch.k)
        cy, cx = [a.ravel() for a in np.meshgrid(g, g, indexing="ij")]
    x = rects[:, None, 0] + cx[None, :] * rects[:, None, 2]
    y = rects[:, None, 1] + cy[None, :] * rects[:, None, 3]
    floats = np.stack([x, y, x * tpp / size, y * tpp / size], axis=2).astype(np.float32)
    nv = floats.shape[0] * floats.shape[1]
    stride = 16 + 4 * extras
    out = np.empty((nv, stride), dtype=np.uint8)
    out[:, :16] = floats.reshape(nv, 4).view(np.uint8)
    if extras:
        out[:, 16:] = rng.integers(0, 256, (nv, 4 * extras), dtype=np.uint8)
    if patch.kind == "arrays":
        return out.ravel(), None
    k = patch.k
    q = (np.arange(k - 1)[:, None] * k + np.arange(k - 1)[None, :]).ravel()
    quad = np.stack([q, q + k, q + k + 1, q + k + 1, q + 1, q], axis=1).ravel()
    base = (np.arange(rects.shape[0]) * k * k)[:, None]
    return out.ravel(), (base + quad[None, :]).astype(np.uint16).ravel()


def _texture(filter_name: str, variant: int, seed: int) -> np.ndarray:
    """A tileable RGBA texture for a filter: pixel-art for nearest, smooth noise for bilinear,
    detailed noise (mipmapped) for trilinear; alpha 0.8-1 so blended layers mix."""
    size = TEXTURE_SIZE[filter_name]
    rng = rng_for(seed, 7, variant, size)
    cells = {"nearest": 8, "bilinear": 4, "trilinear": 16}[filter_name]
    channels = [value_noise(rng, size, size, cells=cells, octaves=3) for _ in range(4)]
    rgb = np.stack(channels[:3], axis=2)
    if filter_name == "nearest":
        rgb = np.round(rgb * 4) / 4
    alpha = 0.8 + 0.2 * channels[3]
    return to_u8(np.concatenate([rgb, alpha[..., None]], axis=2))


# --- recording ------------------------------------------------------------------------------


def build_row(row: Row, width: int, height: int, frames: int = 100, seed: int = 0):
    """The frames (lists of commands) of ``row``'s program at width x height."""
    from tilesim.render.gl.commands import Recorder

    _rows, profiles, _suite = load_table()
    check_request(row.name, width, height, frames)
    profile = profiles[row.profile]
    p = plan(row, profile, width, height, seed)
    depth = profile.projection == "3d"
    extras = p.attributes - 2
    vs = vertex_program(extras, int(round(row.numbers["vs_instructions"])), depth)
    gl = Recorder(width, height, name=row.name)
    programs, locations = [], []
    for tex, alu, _share in p.programs:
        program = gl.createProgram(vs, fragment_program(tex, alu),
                                   attrib_locations=_attrib_locations(extras))
        programs.append(program)
        locations.append({name: gl.getUniformLocation(program, name) for name in
                          ("u_proj", "u_draw", "u_v", "u_k", "u_depth",
                           *[f"u_tex{i}" for i in range(tex)])})
    textures = {}
    for f, _share in p.filters:
        for variant in range(max(t for t, _a, _s in p.programs)):
            textures[f, variant] = _upload(gl, _texture(f, variant, seed), f)
    buffers = []
    geo_rng = rng_for(seed, 2)
    for d in p.draws:
        vertices, indices = _patch_vertices(d.rects, p.patch, d.filter, extras, geo_rng)
        vbo = gl.createBuffer()
        gl.bindBuffer("ARRAY_BUFFER", vbo)
        gl.bufferData("ARRAY_BUFFER", vertices, "STATIC_DRAW")
        ibo = None
        if indices is not None:
            ibo = gl.createBuffer()
            gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
            gl.bufferData("ELEMENT_ARRAY_BUFFER", indices, "STATIC_DRAW")
        count = indices.size if indices is not None else vertices.size // (16 + 4 * extras)
        buffers.append((vbo, ibo, count))
    identity = np.tile(np.array([1.0, 1.0, 1.0, 1.0], np.float32), 4)
    zeros = np.zeros(16, np.float32)
    for program, loc, (tex, _alu, _s) in zip(programs, locations, p.programs, strict=True):
        gl.useProgram(program)
        gl.uniformMatrix4fv(loc["u_proj"], False, gl_matrix(pixels_ortho(width, height)))
        gl.uniform4fv(loc["u_v"], np.concatenate([identity, zeros]))
        k = np.zeros((24, 4), np.float32)
        k[0], k[1:8] = (0.6, 0.5, 0.7, 1.0), 0.01
        k[8:16], k[16:24] = 1.0, 0.0
        if tex:
            k[8] = 1.0 / tex        # the textures' sum back in range, once
        gl.uniform4fv(loc["u_k"], k.ravel())
        for i in range(tex):
            gl.uniform1i(loc[f"u_tex{i}"], i)
    for a in range(p.attributes):
        gl.enableVertexAttribArray(a)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    if depth:
        gl.enable("DEPTH_TEST")
        gl.depthFunc("LEQUAL")
    motion_rng = rng_for(seed, 3)
    phases = motion_rng.random((len(p.draws), 2)) * 2 * np.pi
    ticking = [d.role in ("world", "hud") and tick < profile.ticking_share
               for d, tick in zip(p.draws, motion_rng.random(len(p.draws)), strict=True)]
    speeds = 0.15 + 0.25 * motion_rng.random(len(p.draws))
    per_frame = row.numbers["draw_calls_per_frame"]
    for f in range(frames):
        gl.clear("COLOR_BUFFER_BIT", *(["DEPTH_BUFFER_BIT"] if depth else []))
        drawn = int(math.floor(per_frame * (f + 1)) - math.floor(per_frame * f))
        pan = _pan_offset(profile, f)
        bound_program = None
        blending = False
        for i, (d, (vbo, ibo, count)) in enumerate(zip(p.draws, buffers, strict=True)):
            if d.role == "effect" and drawn < len(p.draws):
                continue
            tex = p.programs[d.program][0]
            if programs[d.program] != bound_program:
                gl.useProgram(programs[d.program])
                bound_program = programs[d.program]
            loc = locations[d.program]
            for unit in range(tex):
                gl.activeTexture(unit)
                gl.bindTexture("TEXTURE_2D", textures[d.filter, unit])
            want_blend = not depth and d.role != "band"
            if want_blend != blending:
                (gl.enable if want_blend else gl.disable)("BLEND")
                if want_blend:
                    gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
                blending = want_blend
            dx = dy = 0.0
            if d.role in ("moving", "effect"):
                angle = phases[i, 0] + speeds[i] * f
                dx, dy = MOTION_PIXELS * math.sin(angle), MOTION_PIXELS * math.cos(angle)
            scroll = 0.0 if d.role == "hud" else pan
            size = TEXTURE_SIZE.get(d.filter or "bilinear")
            tpp = TEXELS_PER_PIXEL.get(d.filter or "bilinear")
            tick = float(f) if ticking[i] else 0.0
            gl.uniform4f(loc["u_draw"], dx, dy, scroll * tpp / size, tick)
            if depth:
                gl.uniform1f(loc["u_depth"], d.depth)
            gl.bindBuffer("ARRAY_BUFFER", vbo)
            stride = 16 + 4 * extras
            gl.vertexAttribPointer(0, 2, "FLOAT", False, stride, 0)
            gl.vertexAttribPointer(1, 2, "FLOAT", False, stride, 8)
            for e in range(extras):
                gl.vertexAttribPointer(2 + e, 4, "UNSIGNED_BYTE", True, stride, 16 + 4 * e)
            if ibo is None:
                gl.drawArrays("TRIANGLES", 0, count)
            else:
                gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
                gl.drawElements("TRIANGLES", count, "UNSIGNED_SHORT", 0)
        gl.endFrame()
    return gl.recorded_frames()


def _pan_offset(profile: Profile, frame: int) -> float:
    """The world's scroll (pixels) at ``frame``: it moves PAN_PIXELS a frame during frames 1 to
    ``pan_frames`` of every ``pan_period`` frames, and holds still otherwise (so any window of
    a few frames from the start sees the genre's share of panning frames)."""
    if profile.pan_period <= 0 or profile.pan_frames <= 0:
        return 0.0
    cycles, into = divmod(frame, profile.pan_period)
    return PAN_PIXELS * (cycles * profile.pan_frames + min(into, profile.pan_frames))


def _upload(gl, image: np.ndarray, filter_name: str) -> int:
    nearest = filter_name == "nearest"
    mip = filter_name == "trilinear"
    return upload_texture(gl, image, min_filter="NEAREST" if nearest else
                          "LINEAR_MIPMAP_LINEAR" if mip else "LINEAR",
                          mag_filter="NEAREST" if nearest else "LINEAR", wrap_s="REPEAT",
                          wrap_t="REPEAT", mipmap=mip)


def builder(key: str):
    """``build(width, height, frames, seed)`` of row ``key`` (the WORKLOADS signature)."""
    def build(width: int, height: int, frames: int = 100, seed: int = 0):
        return build_row(load_table()[0][key], width, height, frames, seed)
    build.__name__ = f"build_like_{key}"
    return build
