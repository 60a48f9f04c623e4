"""Differential test: the TGSI interpreter against Mesa llvmpipe, pixel by pixel.

For every distinct fragment program of the corpus (``shaders/corpus/*/``: each distinct
``fragment.tgsi``, with the GLSL ES 1.00 text glmark2-es2 or es2gears passed to glShaderSource
for it) and a few hand-written ones:

1. :mod:`mesa_fullscreen` writes a vertex shader that sets each varying the program declares to
   a known affine function of the position, and Mesa llvmpipe draws a 64x64 full-screen quad
   with it into an RGBA32F framebuffer object: uniforms hold seeded random values (floats in
   [-1, 1], ints in [-2, 5], bools 0/1), each 2D sampler a 4x4 float texture with NEAREST
   filtering and CLAMP_TO_EDGE (so the texel a lookup returns is known exactly), each cube
   sampler 1x1 faces of one color. Probe passes read back llvmpipe's interpolated varyings,
   gl_FragCoord and gl_FrontFacing.
2. The program is also linked with that vertex shader by :mod:`tilesim.shaders.glsl_compile`
   (softpipe). The corpus ``fragment.tgsi`` and ``interface.json`` are the files run when the
   corpus TGSI reads every varying component this link reads (true for every program today);
   otherwise the corpus link let Mesa fold a varying its own vertex shader wrote as a constant
   (or merge two equal ones) into the TGSI, and the program as linked here is run instead
   (the summary says "recompiled").
3. The interpreter runs that TGSI over the 4096 pixels in 2x2 quad order on exactly the probed
   inputs, placed in IN registers and CONST[0] slots as ``interface.json`` says, with a
   sampler that returns the texel of each SAMP unit's texture that llvmpipe returns
   (:func:`mesa_fullscreen.sample_nearest`).
4. Its COLOR output must agree with Mesa's pixel on every pixel and channel:
   ``|interpreter - mesa| <= atol + rtol * |mesa|``, or both NaN; the pixels the interpreter
   kills must be exactly those llvmpipe left at the clear value. A program that reads
   per-pixel inputs (an IN or SV register) must draw at least two distinct colors, or the
   comparison would prove nothing about how it uses them (a harness feeding every pixel the
   same input would pass); one that reads none must draw exactly one.

What the test found and pins down:

- llvmpipe (Mesa 22.3) evaluates ``mediump``/``lowp`` arithmetic in 16-bit floats, softpipe
  (whose TGSI the interpreter runs) in float32: the program llvmpipe runs has its precision
  qualifiers raised to highp (:func:`mesa_fullscreen.highp_source`); without that,
  normalize() of a mediump vec3 is off by 7e-4.
- Drawing into a framebuffer object Mesa does not flip y: row y of glReadPixels is window y
  and llvmpipe's 2x2 quads pair rows (2k, 2k+1). The interpreter's lanes 4q..4q+3 (top-left,
  top-right, bottom-left, bottom-right) are pixels (x, y), (x+1, y), (x, y+1), (x+1, y+1) in
  window coordinates, so "bottom" is +1 in window y and DDY is f(y+1) - f(y).
- softpipe's TGSI declares ``FS_COORD_ORIGIN LOWER_LEFT`` and ``HALF_INTEGER`` centers: its
  POSITION input holds (x + 0.5, H - (y + 0.5), z, 1/w) and the program rebuilds
  gl_FragCoord.y with the state uniform ``gl_FbWposYTransform`` = (1, 0, -1, H) of an FBO.
- gl_FrontFacing is the FACE input, +1.0 front and -1.0 back; bool uniforms are 0 / 0xFFFFFFFF
  (``float(b)`` compiles to an AND with 1.0, so a true stored as 1 would read as 0.0).
- llvmpipe's dFdx/dFdy are fine derivatives (one difference per row / column of the quad);
  softpipe's tgsi_exec computes TGSI DDX/DDY coarse (from the quad's top row / left column),
  which tgsi.rst allows. The interpreter computes DDX/DDY per row / column like llvmpipe, so
  ``extra_derivatives`` agrees with it, and so does ``extra_derivatives_as_fine`` (the same
  program with its DDX/DDY rewritten as DDX_FINE/DDY_FINE).
- Undefined results follow llvmpipe (the interpreter's rule, shaders/opcodes.py): pow(x, y) is
  0 whenever x == 0 and NaN whenever x < 0 (``extra_pow_undefined``); integer division by zero
  gives 0 (``extra_idiv_by_zero``). Both agree; EXPECTED_FAILURES (known disagreements,
  strict xfails) is empty.

Tolerances (rtol relative, atol an absolute floor for values near zero):

- 1e-5 / 1e-6 for every program without transcendental opcodes. Both sides work in float32
  with the same operation order: most programs agree bit for bit, the largest difference
  seen is 1.2e-6 relative (RSQ/DIV/DP3 rounding).
- TRANSCENDENTAL_TOLERANCE = 1e-4 / 1e-5 for programs using EX2, LG2, POW, SIN or COS (or the
  legacy EXP, LOG): llvmpipe uses polynomial approximations (gallivm lp_bld_arit.c) where
  NumPy calls libm. Measured one opcode at a time on [-3, 3]: SIN/COS 6e-8 absolute, LG2
  1.3e-7 absolute, EX2 3.4e-7 relative, POW 7e-7 relative. POW is exp2(y * log2 x) in
  llvmpipe, and any rounding of x is raised to the power y too, so the error grows with y:
  glmark2's Phong shaders (pow(..., 100.0)) need 2.4e-5 relative, the most of any corpus
  program; extra_math (every built-in function summed) 1.3e-4 relative on a value of 2.7e-3
  whose absolute error, 3.6e-7, is within the floor.

``PYTHONPATH=tests python tests/shaders/test_differential_mesa.py`` prints the per-program
table of errors (the helper modules it imports sit in tests/).
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest
from mesa_probe_helpers import (
    HEIGHT,
    WIDTH,
    XYZW,
    Probe,
    constant_buffer,
    fragment_inputs,
    parse_register,
)
from repo_paths import CORPUS

from tilesim.errors import InputError, ToolMissing
from tilesim.shaders import mesa_fullscreen as mf
from tilesim.shaders.glsl_compile import TYPE_SHAPES, ProgramSource, compile_many
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse
from tilesim.shaders.synthetic_inputs import quad_pixels

pytestmark = [pytest.mark.mesa]

SEED = 2024
MIN_CORPUS_PROGRAMS = 20
RTOL, ATOL = 1e-5, 1e-6
TRANSCENDENTAL_OPCODES = frozenset({"EX2", "LG2", "POW", "SIN", "COS", "EXP", "LOG"})
TRANSCENDENTAL_TOLERANCE = (1e-4, 1e-5)
# fp16 mode: one fp16 unit in the last place (fp16 values x in [2^e, 2^(e+1)) are 2^(e-10)
# apart, so 2^-10 * |x| covers one step; 2^-24 is the smallest fp16 subnormal).
FP16_TOLERANCE = (2.0 ** -10, 2.0 ** -24)
TEXTURE_SIZE = 4  # texels per side of each 2D texture

# Hand-written programs for what the corpus lacks: derivatives, packed varyings of every
# shape, uniforms of every type, cube maps and sampler arrays, loops with break and discard,
# the GLSL built-in functions, and results GLSL leaves undefined (the interpreter's rule,
# shaders/opcodes.py: where tgsi.rst leaves a result undefined, do what llvmpipe does).
EXTRA_PROGRAMS = {
    "extra_derivatives": """\
#extension GL_OES_standard_derivatives : enable
precision highp float;
varying vec2 v_uv;
varying float v_k;
uniform float u_scale;
void main() {
    float f = v_uv.x * v_uv.y * u_scale + v_k * v_k;
    vec2 p = gl_FragCoord.xy;
    gl_FragColor = vec4(dFdx(f), dFdy(f), dFdx(p.x * p.y) + fwidth(f), dFdy(p.y * p.y));
}
""",
    "extra_builtins": """\
precision mediump float;
varying vec4 v_color;
uniform vec2 u_scale;
void main() {
    vec4 c = gl_FrontFacing ? v_color : v_color.wzyx;
    gl_FragColor = c + vec4(gl_FragCoord.xy * u_scale, gl_FragCoord.z, 1.0 / gl_FragCoord.w);
}
""",
    "extra_packing": """\
precision mediump float;
varying float v_a;
varying vec2 v_b;
varying vec3 v_c[2];
varying mat2 v_m;
uniform mat2 u_m2;
uniform mat3 u_m3;
uniform bvec2 u_flags;
uniform ivec3 u_ints;
uniform float u_weights[3];
uniform sampler2D u_maps[2];
uniform samplerCube u_env;
void main() {
    vec2 p = u_m2 * (v_m * v_b) + vec2(v_a);
    vec3 q = u_m3 * (v_c[0] - v_c[1]) * u_weights[1] + vec3(u_ints) * u_weights[2];
    vec4 t = texture2D(u_maps[1], p) + textureCube(u_env, q) * u_weights[0];
    gl_FragColor = vec4(u_flags.x ? q : q.zyx, u_flags.y ? p.x : p.y) + t
        + vec4(vec2(u_flags), 0.0, 0.0);
}
""",
    "extra_math": """\
precision highp float;
varying vec4 v_a;
varying vec4 v_b;
void main() {
    vec4 x = fract(v_a * 0.5);
    vec4 r = sin(v_a * 3.0) + cos(v_b) + tan(x * 1.2);
    r += asin(x * 2.0 - 1.0) + acos(x * 1.6 - 0.8) + atan(v_a, v_b) + atan(v_b);
    r += exp(v_a) + log(x + 0.25) + exp2(v_b) + log2(x + 0.5) + pow(x + 0.1, v_b * 2.0);
    r += sqrt(x) + inversesqrt(x + 0.01) + mod(v_a, 0.75) + floor(v_b * 4.0) + ceil(v_a);
    r += sign(v_b) * abs(v_a) + clamp(v_a, -0.5, 0.5) + mix(v_a, v_b, x) + step(v_a, v_b);
    r += smoothstep(-1.0, 1.0, v_b) + min(v_a, v_b) + max(v_a, v_b);
    vec3 n = normalize(v_a.xyz);
    vec3 f = faceforward(n, v_b.xyz, n) + reflect(v_b.xyz, n) + refract(n, normalize(v_b.xyz), 0.6);
    r.xyz += cross(v_a.xyz, v_b.xyz) + f;
    r.w += length(v_a) + distance(v_a, v_b) + dot(v_a, v_b);
    gl_FragColor = r;
}
""",
    "extra_pow_undefined": """\
precision highp float;
varying vec4 v_a;
varying vec4 v_b;
void main() {
    // Whole numbers, zero and negative ones included: pow(0, y <= 0) and pow(x < 0, y).
    gl_FragColor = pow(floor(v_a * 3.0), floor(v_b * 3.0));
}
""",
    "extra_idiv_by_zero": """\
precision highp float;
varying vec4 v_a;
varying vec4 v_b;
void main() {
    gl_FragColor = vec4(ivec4(floor(v_a * 3.0)) / ivec4(floor(v_b * 3.0)));
}
""",
    "extra_loop_discard": """\
precision mediump float;
varying vec3 v_normal;
varying vec2 v_uv;
uniform vec3 u_lights[3];
uniform int u_count;
uniform bool u_invert;
uniform sampler2D u_tex;
void main() {
    vec3 n = normalize(v_normal);
    float sum = 0.0;
    for (int i = 0; i < 3; i++) {
        if (i >= u_count) break;
        sum += max(dot(n, normalize(u_lights[i])), 0.0);
    }
    if (v_uv.x + v_uv.y > 1.25) discard;
    vec4 c = texture2D(u_tex, v_uv) * sum;
    gl_FragColor = u_invert ? 1.0 - c : c;
}
""",
}

# Programs where mediump precision matters, for the fp16 mode (test_fp16_mode_matches_llvmpipe):
# fract of large products, long accumulations, normalize of mediump vectors, pow/exp/log and
# the other built-ins, texture lookups at mediump coordinates, mixed highp/mediump
# expressions (a mediump product inside a highp sum), lowp, comparisons and discard,
# derivatives.
MEDIUMP_PROGRAMS = {
    "mediump_fract_stripes": """\
precision mediump float;
varying vec2 v_uv;
void main() {
    float s = fract(v_uv.x * 157.0);
    float t = fract(v_uv.y * 70.0 + 0.3);
    gl_FragColor = vec4(s, t, fract(s * t * 31.0), v_uv.x * v_uv.y * 100.0);
}
""",
    "mediump_accumulate": """\
precision mediump float;
varying vec2 v_uv;
uniform float u_step;
void main() {
    float acc = 0.0;
    for (int i = 0; i < 32; i++) {
        acc += v_uv.x * 0.37 + u_step * float(i);
    }
    gl_FragColor = vec4(acc, fract(acc), acc * 0.01, 1.0);
}
""",
    "mediump_normalize": """\
precision mediump float;
varying vec3 v_n;
varying vec3 v_l;
void main() {
    vec3 n = normalize(v_n);
    vec3 l = normalize(v_l);
    float d = max(dot(n, l), 0.0);
    gl_FragColor = vec4(n * 0.5 + 0.5, d + length(v_n) * 0.1);
}
""",
    "mediump_transcendental": """\
precision mediump float;
varying vec4 v_a;
void main() {
    vec4 x = abs(v_a) + 0.05;
    gl_FragColor = vec4(pow(x.x, 3.7) + exp(v_a.y), log(x.z) + exp2(v_a.w),
                        log2(x.y) + sqrt(x.w) + inversesqrt(x.x), sin(v_a.x * 3.0) + cos(v_a.z));
}
""",
    "mediump_texture": """\
precision mediump float;
varying vec2 v_uv;
uniform sampler2D u_tex;
uniform vec4 u_tint;
void main() {
    vec4 a = texture2D(u_tex, fract(v_uv * 3.7 + 0.1));
    vec4 b = texture2D(u_tex, v_uv);
    gl_FragColor = a * u_tint + b * 0.3 + vec4(fract(v_uv.x * 57.0));
}
""",
    "mediump_mixed": """\
precision mediump float;
varying highp vec2 v_hp;
varying vec2 v_mp;
uniform highp float u_hk;
uniform float u_mk;
void main() {
    highp float h = fract(v_hp.x * 157.0 * u_hk);
    float m = fract(v_mp.x * 157.0 * u_mk);
    gl_FragColor = vec4(h, m, h + m * 7.1, fract(v_hp.y * 91.0) + fract(v_mp.y * 91.0));
}
""",
    "lowp_colors": """\
precision lowp float;
varying vec4 v_color;
uniform vec4 u_gain;
void main() {
    vec4 c = v_color * u_gain * 3.3 + 0.1;
    gl_FragColor = clamp(c, 0.0, 1.0) * 0.7 + fract(c * 9.0) * 0.3;
}
""",
    "mediump_compare_discard": """\
precision mediump float;
varying vec2 v_uv;
void main() {
    float x = v_uv.x * 100.0 + 0.3;
    if (fract(v_uv.y * 157.0) < 0.25) discard;
    gl_FragColor = vec4(step(37.3, x), x > 12.7 ? 1.0 : 0.0, mix(v_uv.x, v_uv.y, 0.3),
                        smoothstep(0.0, 2.0, x * 0.01));
}
""",
    "mediump_derivatives": """\
#extension GL_OES_standard_derivatives : enable
precision mediump float;
varying vec2 v_uv;
void main() {
    float f = v_uv.x * v_uv.y * 50.0;
    gl_FragColor = vec4(dFdx(f), dFdy(f), fwidth(f), f);
}
""",
}

# fp16 subnormals (below 2^-14) on the way: llvmpipe keeps them (x86 F16C conversions do not
# flush), and so does the fp16 mode.
MEDIUMP_PROGRAMS["mediump_subnormal"] = """\
precision mediump float;
varying vec2 v_uv;
void main() {
    float t = v_uv.x * v_uv.y * 0.00001;
    float s = t * v_uv.x;
    gl_FragColor = vec4(t + t, s * v_uv.y, s * 1000.0, t);
}
"""

FINE_CASE = "extra_derivatives_as_fine"

# Known disagreements: case -> why. Strict xfails: when the interpreter changes, they pass and
# the test fails, so that this table is kept true. (None today: the interpreter follows
# llvmpipe's fine derivatives, its POW at x <= 0 and its IDIV by zero.)
EXPECTED_FAILURES: dict[str, str] = {}


def _require_mesa(reason: str):
    """Skip, or fail where CI demands Mesa (TILESIM_REQUIRE_MESA=1)."""
    if os.environ.get("TILESIM_REQUIRE_MESA") == "1":
        pytest.fail(f"Mesa is required here (TILESIM_REQUIRE_MESA=1): {reason}")
    pytest.skip(reason)


# ----------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    """One fragment program: its GLSL and, for corpus programs, the stored TGSI + interface."""

    id: str
    fragment_glsl: str
    stored_tgsi: str | None = None
    stored_interface: str | None = None
    fine_derivatives: bool = False  # run DDX/DDY as DDX_FINE/DDY_FINE


def corpus_cases() -> list[Case]:
    """Every corpus fragment program with a distinct TGSI text (the first program id wins).

    Programs reading gl_PointCoord are left out: a quad has no point coordinates.
    """
    cases, seen = [], set()
    for folder in sorted(p.parent for p in CORPUS.glob("*/fragment.tgsi")):
        tgsi = (folder / "fragment.tgsi").read_text(encoding="utf-8")
        glsl = (folder / "fragment.glsl").read_text(encoding="utf-8")
        if tgsi in seen or "gl_PointCoord" in glsl:
            continue
        seen.add(tgsi)
        cases.append(Case(folder.name, glsl, tgsi,
                          (folder / "interface.json").read_text(encoding="utf-8")))
    return cases


def fp16_cases() -> list[Case]:
    """The programs the fp16 mode is compared on: MEDIUMP_PROGRAMS, then every other case."""
    return [Case(name, text) for name, text in MEDIUMP_PROGRAMS.items()] + all_cases()


def all_cases() -> list[Case]:
    extras = [Case(name, text) for name, text in EXTRA_PROGRAMS.items()]
    extras.append(Case(FINE_CASE, EXTRA_PROGRAMS["extra_derivatives"], fine_derivatives=True))
    return corpus_cases() + extras


# ----------------------------------------------------------------------------------------------
# Inputs for Mesa and the interpreter


def uniform_values(interface: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Seeded values for every uniform the fragment stage reads, flattened in GL order."""
    values = {}
    for uniform in interface["uniforms"]:
        if uniform["fragment"] is None:
            continue
        cols, rows, storage = TYPE_SHAPES[uniform["type"]]
        count = (uniform["array_size"] or 1) * cols * rows
        if storage == "float32":
            values[uniform["name"]] = rng.uniform(-1, 1, count).astype(np.float32)
        elif storage == "int32":
            values[uniform["name"]] = rng.integers(-2, 6, count).astype(np.int32)
        else:  # bool32
            values[uniform["name"]] = rng.integers(0, 2, count).astype(np.int32)
    return values


def sampler_textures(interface: dict, rng: np.random.Generator) -> dict[int, mf.Texture]:
    """SAMP index -> the texture bound for that sampler (4x4 texels; 1x1 cube faces).

    Texel values are multiples of 1/64 in (0, 1]; every fragment sampler (array element)
    gets its own GL texture unit.
    """
    textures = {}
    for sampler in interface["samplers"]:
        place = sampler["fragment"]
        if place is None:
            continue
        for element, register in enumerate(place["samplers"]):
            texels = (rng.integers(1, 65, (TEXTURE_SIZE, TEXTURE_SIZE, 4)) / 64.0).tolist()
            target = "CUBE" if sampler["type"] == "samplerCube" else "2D"
            textures[parse_register(register)[1]] = mf.Texture(
                sampler["name"], len(textures), texels, target, element)
    return textures


class TexelSampler:
    """The interpreter's view of the :class:`mesa_fullscreen.Texture` of each SAMP unit."""

    def __init__(self, textures: dict[int, mf.Texture]):
        self.textures = textures

    def sample(self, request):
        texture = self.textures[request.unit]
        lanes = request.coords.shape[1]
        if texture.target == "CUBE":
            face = np.asarray(texture.texels[0][0], np.float32)
            return np.repeat(face[:, None], lanes, axis=1)
        return mf.sample_nearest(texture.texels, request.coords[0], request.coords[1])

    def fetch(self, unit, target, texel, active):
        raise NotImplementedError("TXF does not exist in GLSL ES 1.00")

    def size(self, unit, target, level):
        raise NotImplementedError("TXQ does not exist in GLSL ES 1.00")


# ----------------------------------------------------------------------------------------------
# The comparison


@dataclass
class Outcome:
    """What one program's comparison found."""

    case: Case
    source: str = ""               # "corpus" or "recompiled"
    mediump: str = "fp32"          # the interpreter's mode
    reference: str = "highp"       # how llvmpipe ran the program (run_all)
    error: str | None = None       # a failure before any pixel could be compared
    rtol: float = RTOL
    atol: float = ATOL
    compared: int = 0              # pixels both drew
    distinct: int = 0              # distinct colors among them (1: the program is constant)
    reads_inputs: bool = False     # the TGSI declares an IN or SV register (per-pixel inputs)
    killed: int = 0
    kill_mismatch: int = 0
    bad: int = 0                   # channel values outside the tolerance
    nan: int = 0                   # channel values NaN in both
    max_abs: float = 0.0
    max_rel: float = 0.0           # over channels with |mesa| >= 1e-3
    worst: str = ""
    opcodes: set[str] = field(default_factory=set)

    def line(self) -> str:
        if self.error:
            return f"{self.case.id:50s} ERROR {self.error.splitlines()[0]}"
        transcendental = ",".join(sorted(self.opcodes & TRANSCENDENTAL_OPCODES)) or "-"
        return (f"{self.case.id:50s} {self.source:10s} rtol={self.rtol:.0e} "
                f"max_abs={self.max_abs:.2e} max_rel={self.max_rel:.2e} bad={self.bad} "
                f"killed={self.killed} kill_mismatch={self.kill_mismatch} nan={self.nan} "
                f"colors={self.distinct} transcendental={transcendental}")


def compare(outcome: Outcome, mesa: np.ndarray, color: np.ndarray, killed: np.ndarray) -> None:
    """Fill ``outcome`` from Mesa's (4, N) pixels and the interpreter's (4, N) color."""
    drawn = ~(mesa == np.float32(mf.SENTINEL)).all(axis=0)
    outcome.killed = int(killed.sum())
    outcome.kill_mismatch = int((drawn == killed).sum())
    both = drawn & ~killed
    outcome.compared = int(both.sum())
    e = mesa[:, both].astype(np.float64)
    a = color[:, both].astype(np.float64)
    with np.errstate(invalid="ignore"):
        both_nan = np.isnan(e) & np.isnan(a)
        equal = (e == a) | both_nan
        diff = np.where(equal, 0.0, np.abs(a - e))
        diff = np.where(np.isnan(diff), np.inf, diff)  # NaN on one side only
        ok = equal | (diff <= outcome.atol + outcome.rtol * np.abs(e))
    outcome.nan = int(both_nan.sum())
    outcome.distinct = len(np.unique(e.T, axis=0)) if e.size else 0
    outcome.bad = int((~ok).sum())
    if diff.size:
        outcome.max_abs = float(diff.max())
        big = np.abs(e) >= 1e-3
        outcome.max_rel = float((diff[big] / np.abs(e[big])).max()) if big.any() else 0.0
        if outcome.bad:
            channel, lane = np.unravel_index(np.argmax(~ok), ok.shape)
            x, y = quad_pixels(WIDTH, HEIGHT)
            pixel = np.nonzero(both)[0][lane]
            outcome.worst = (f"pixel ({x[pixel]}, {y[pixel]}) channel {XYZW[channel]}: "
                             f"interpreter {float(a[channel, lane])!r}, "
                             f"Mesa {float(e[channel, lane])!r}")


# ----------------------------------------------------------------------------------------------
# Running everything once


@dataclass
class Prepared:
    case: Case
    geometry: mf.Geometry
    tgsi: str
    interface: dict
    source: str
    values: dict[str, np.ndarray]
    textures: dict[int, mf.Texture]  # by SAMP index


def _rng(case_id: str) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(case_id.encode("utf-8"))])


def prepare(cases: list[Case]) -> tuple[list[Prepared], dict[str, str]]:
    """Vertex shaders, TGSI + interface and input values per case; errors by case id."""
    errors: dict[str, str] = {}
    geometries = {}
    for case in cases:
        try:
            varyings = mf.parse_varyings(case.fragment_glsl)
        except ValueError as exc:
            errors[case.id] = str(exc)
            continue
        geometries[case.id] = mf.Geometry.random(varyings, _rng(case.id))
    ready = [c for c in cases if c.id in geometries]
    sources = [ProgramSource(geometries[c.id].vertex_shader(), c.fragment_glsl, name=c.id)
               for c in ready]
    try:  # one Mesa process for all (about 0.5 s to start)...
        compiled = {c.id: prog for c, prog in zip(ready, compile_many(sources), strict=True)}
    except InputError:  # ...unless one fails: then one each, to name every failure
        compiled = {}
        for case, source in zip(ready, sources, strict=True):
            try:
                compiled[case.id] = compile_many([source])[0]
            except InputError as exc:
                errors[case.id] = f"softpipe compile: {exc}"
    prepared = []
    for case in ready:
        program = compiled.get(case.id)
        if program is None:
            continue
        stored = json.loads(case.stored_interface) if case.stored_interface else None
        if stored is not None and _reads(program.interface) <= _reads(stored):
            tgsi, interface, origin = case.stored_tgsi, stored, "corpus"
        else:
            tgsi, interface = program.fragment_tgsi, program.interface
            origin = "recompiled" if stored is not None else "extra"
        if case.fine_derivatives:
            tgsi = re.sub(r"\bDD([XY])\b", r"DD\1_FINE", tgsi)
        rng = _rng(case.id + "/uniforms")
        prepared.append(Prepared(case, geometries[case.id], tgsi, interface, origin,
                                 uniform_values(interface, rng),
                                 sampler_textures(interface, rng)))
    return prepared, errors


def _reads(interface: dict) -> set[tuple[str, int]]:
    """(varying, flattened component) pairs the fragment TGSI reads from an IN register."""
    return {(v["name"], piece["first"] + i)
            for v in interface["varyings"] if v["fragment"]
            for piece in v["fragment"] if piece["register"]
            for i in range(piece["count"])}


def run_all(cases: list[Case], mediump: str = "fp32",
            reference: str | None = None) -> dict[str, Outcome]:
    """Render every case with llvmpipe, run the interpreter, compare; outcomes by case id.

    ``mediump``: the interpreter's mode, "fp32" or "fp16" (with the precision the interface
    records). ``reference``: how llvmpipe runs each program, "highp" (its precision
    qualifiers raised: float32 throughout) or "as written" (mediump and lowp in 16-bit
    floats, compared with FP16_TOLERANCE); default: "highp" for fp32, "as written" for
    fp16."""
    reference = reference or ("as written" if mediump == "fp16" else "highp")
    prepared, errors = prepare(cases)
    outcomes = {cid: Outcome(next(c for c in cases if c.id == cid), error=msg)
                for cid, msg in errors.items()}
    passes, first_pass = [], {}
    for p in prepared:
        first_pass[p.case.id] = len(passes)
        vertex = p.geometry.vertex_shader()
        uniforms = {name: ("float" if v.dtype == np.float32 else "int", v.tolist())
                    for name, v in p.values.items()}
        fragment = (mf.es_source(p.case.fragment_glsl) if reference == "as written"
                    else mf.highp_source(p.case.fragment_glsl))
        passes.append(mf.Pass(vertex, fragment, uniforms, list(p.textures.values())))
        passes += [mf.Pass(vertex, fs) for fs in p.geometry.probe_shaders()]
    rendered = mf.render(passes, WIDTH, HEIGHT)
    for p in prepared:
        start = first_pass[p.case.id]
        count = 1 + len(p.geometry.probe_shaders())
        images = rendered.images[start:start + count]
        outcome = Outcome(p.case, source=p.source, mediump=mediump,
                          reference=reference)
        outcomes[p.case.id] = outcome
        failed = [e for e in rendered.errors[start:start + count] if e]
        if failed:
            outcome.error = f"llvmpipe compile: {failed[0]}"
            continue
        try:
            run_interpreter(p, images, outcome)
        except (InputError, NotImplementedError) as exc:
            outcome.error = f"interpreter: {exc}"
    return outcomes


def run_interpreter(p: Prepared, images: list[np.ndarray], outcome: Outcome) -> None:
    program = parse(p.tgsi, source=f"{p.case.id}/fragment.tgsi ({p.source})")
    outcome.opcodes = {inst.opcode for inst in program.instructions}
    outcome.reads_inputs = bool(program.declared("IN") or program.declared("SV"))
    if outcome.opcodes & TRANSCENDENTAL_OPCODES:
        outcome.rtol, outcome.atol = TRANSCENDENTAL_TOLERANCE
    precision = None
    if outcome.reference == "as written":
        outcome.rtol, outcome.atol = FP16_TOLERANCE
    if outcome.mediump == "fp16":
        precision = p.interface["precision"]["fragment"]["instructions"]
    probe = Probe.from_images(p.geometry.probe_labels(), images[1:])
    x, y = quad_pixels(WIDTH, HEIGHT)
    # The harness's own check: lane i is pixel (x[i], y[i]) in llvmpipe's window coordinates.
    if not (np.array_equal(probe.values["gl_FragCoord.x"], x + np.float32(0.5)) and
            np.array_equal(probe.values["gl_FragCoord.y"], y + np.float32(0.5))):
        raise AssertionError("probed gl_FragCoord does not match the lane layout")
    inputs, system_values = fragment_inputs(program, p.interface, probe, HEIGHT)
    constants = constant_buffer(program, p.interface, p.values, HEIGHT)
    interpreter = Interpreter(program, precision=precision, mediump=outcome.mediump)
    execution = interpreter.run(inputs, constants, sampler=TexelSampler(p.textures),
                                system_values=system_values)
    color_reg = next(i for i, sem in program.output_semantics().items() if sem == ("COLOR", 0))
    mesa = images[0][y, x].T  # (4, N) in lane order
    compare(outcome, mesa, np.asarray(execution.outputs[color_reg]),
            np.asarray(execution.killed))



# ----------------------------------------------------------------------------------------------
# Tests

CASES = all_cases()
FP16_CASES = fp16_cases()
# fp16 mode: known disagreements with llvmpipe's mediump, case -> why (strict xfails). Each
# class was traced on the programs named (MESA_GLSL=dump prints llvmpipe's 16-bit NIR; the
# interpreter's precision per instruction is in interface.json).
_HIGHP_COPY = (
    "a highp variable holds a mediump input (`highp vec2 FragCoord = gl_FragCoord.xy`, and "
    "`vec2 p = gl_FragCoord.xy` under `precision highp float`): Mesa decides precision by "
    "the variable before copy propagation, so llvmpipe multiplies the coordinates in float32 "
    "(traced: function-fragment-steps), but the TGSI reads the mediump input register "
    "directly and the fp16 mode computes the product in fp16. (Tried: taking the inputs "
    "llvmpipe's NIR reads only in 32 bits as highp fixes the product, but the mediump "
    "`float d = fract(...)` it is assigned to, which Mesa rounds to fp16, then stays highp "
    "here, and more pixels differ: 10.9k instead of 2.6k channel values on "
    "function-fragment-steps. Both directions need the GLSL variables the TGSI no longer "
    "has.)")
_HIGHP_INLINED = (
    "a highp function parameter or local (terrain's `permute(highp vec4 x)`, "
    "`highp vec3 lVector`) is inlined away in the TGSI: the fp16 mode computes it at the "
    "precision of its mediump operands (in terrain-14fb739a (x * 34 + 1) * x overflows "
    "fp16: inf, then NaN)")
_REORDERED = (
    "llvmpipe's 16-bit NIR keeps the GLSL order of operations where the float32 NIR that the "
    "TGSI comes from reassociated or fused them (traced: bump-render-normals' mat4 * vec4 "
    "summed ((c0 x + c1 y) + c2 z) + c3 by llvmpipe, c2 z + (c0 x + (c1 y + c3)) in the "
    "TGSI, and x * 2 - 1 made an LRP; effect2d-kernel's sum of texture taps), so the fp16 "
    "roundings fall elsewhere: an ulp or two, which pow(x, 100), fract or a NEAREST texel "
    "choice magnify on some pixels (the others of this class show the same signature, not "
    "traced instruction by instruction)")
FP16_EXPECTED_FAILURES: dict[str, str] = {
    **dict.fromkeys([
        "glmark2-conditionals-892afdc9",
        "glmark2-conditionals-vertex-steps-0-fragment-ste-50d5de46",
        "glmark2-conditionals-vertex-steps-0-fragment-ste-5da3ee77",
        "glmark2-conditionals-vertex-steps-3-fragment-ste-ba9240e9",
        "glmark2-conditionals-vertex-steps-5-fragment-ste-f99c4923",
        "glmark2-function-2c653865",
        "glmark2-function-fragment-steps-5-fragment-compl-74aec955",
        "glmark2-loop-vertex-steps-5-fragment-steps-5-fra-94ae5c81",
        "extra_derivatives",
        FINE_CASE,
    ], _HIGHP_COPY),
    **dict.fromkeys(["glmark2-terrain-14fb739a", "glmark2-terrain-0c8e89aa"], _HIGHP_INLINED),
    **dict.fromkeys([
        "glmark2-bump-bump-render-normals-e476bf89",
        "glmark2-bump-bump-render-normals-tangent-ccc499e4",
        "glmark2-desktop-1196x768-effect-blur-blur-radius-d8388139",
        "glmark2-desktop-effect-blur-blur-radius-3-separa-f96921b3",
        "glmark2-desktop-windows-4-effect-blur-blur-radiu-4676036b",
        "glmark2-effect2d-kernel-0-1-0-1-4-1-0-1-0-90d8191f",
        "glmark2-effect2d-kernel-1-1-1-1-1-1-1-1-1-1-1-1-72e98719",
        "glmark2-effect2d-kernel-1-1-1-1-1-1-1-1-1-1-1-1-a5c39b81",
        "glmark2-ideas-speed-duration-9b6a1c9f",
        "glmark2-jellyfish-c60e3103",
        "glmark2-refract-177c5a0d",
        "glmark2-shading-phong-num-lights-2-4d5f7fe2",
        "glmark2-shading-phong-num-lights-4-fedbfbb3",
        "glmark2-terrain-34f7b434",
    ], _REORDERED),
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    try:
        return run_all(CASES)
    except (mf.MesaUnavailable, ToolMissing) as exc:
        _require_mesa(str(exc))


def test_harness_reads_varyings_and_raises_precision():
    text = """#define HP highp
    varying HP vec2 uv; // varying vec4 commented;
    invariant varying lowp mat3 m, arr[2];
    /* varying float gone; */ varying float f;"""
    assert mf.parse_varyings(text) == [mf.Varying("uv", "vec2"), mf.Varying("m", "mat3"),
                                       mf.Varying("arr", "mat3", 2), mf.Varying("f", "float")]
    assert mf.Varying("arr", "mat2", 2).component_expressions()[4:6] == ["arr[1][0][0]",
                                                                         "arr[1][0][1]"]
    assert mf.highp_source("precision mediump float;") == "#version 100\nprecision highp float;"
    assert mf.highp_source("#version 100\nlowp vec4 c;") == "#version 100\nhighp vec4 c;"
    assert [mf.glsl_float(v) for v in (1.0, -0.015625, 1e-30)] == ["1.0", "-0.015625",
                                                                   "1.0000000031710769e-30"]


def test_corpus_has_enough_programs():
    assert len(corpus_cases()) >= MIN_CORPUS_PROGRAMS, (
        f"{CORPUS} holds {len(corpus_cases())} distinct fragment programs usable here; the "
        f"differential test needs at least {MIN_CORPUS_PROGRAMS}")


def _param(case: Case):
    reason = EXPECTED_FAILURES.get(case.id)
    if reason is None:
        return case.id
    return pytest.param(case.id, marks=pytest.mark.xfail(strict=True, reason=reason))


@pytest.mark.slow
@pytest.mark.parametrize("case_id", [_param(c) for c in CASES])
def test_interpreter_matches_llvmpipe(outcomes, case_id, record_property):
    outcome = outcomes[case_id]
    print(outcome.line())
    record_property("max_abs", outcome.max_abs)
    record_property("max_rel", outcome.max_rel)
    assert outcome.error is None, outcome.error
    assert outcome.compared > 0 or outcome.killed == WIDTH * HEIGHT
    assert outcome.kill_mismatch == 0, (
        f"{outcome.kill_mismatch} pixels are killed by one implementation only")
    assert outcome.bad == 0, (
        f"{outcome.bad} channel values differ beyond rtol={outcome.rtol}, atol={outcome.atol}; "
        f"first: {outcome.worst}")
    if outcome.reads_inputs:
        assert outcome.distinct >= 2, (
            f"{outcome.compared} pixels compared, {outcome.distinct} distinct colors: a program "
            "reading per-pixel inputs drew a constant, so the comparison shows nothing")
    else:
        assert outcome.distinct == 1, (
            f"a program without per-pixel inputs drew {outcome.distinct} distinct colors")


@pytest.fixture(scope="module")
def outcomes_fp16() -> dict[str, Outcome]:
    try:
        return run_all(FP16_CASES, mediump="fp16")
    except (mf.MesaUnavailable, ToolMissing) as exc:
        _require_mesa(str(exc))


def _param_fp16(case: Case):
    reason = FP16_EXPECTED_FAILURES.get(case.id)
    if reason is None:
        return case.id
    return pytest.param(case.id, marks=pytest.mark.xfail(strict=True, reason=reason))


@pytest.mark.slow
@pytest.mark.parametrize("case_id", [_param_fp16(c) for c in FP16_CASES])
def test_fp16_mode_matches_llvmpipe(outcomes_fp16, case_id, record_property):
    """The interpreter's fp16 mode against llvmpipe running mediump / lowp as written."""
    test_interpreter_matches_llvmpipe(outcomes_fp16, case_id, record_property)


@pytest.mark.slow
def test_float32_misses_llvmpipe_on_every_mediump_program():
    """Run in float32, the interpreter differs from llvmpipe's mediump beyond the fp16
    tolerance on every MEDIUMP_PROGRAMS program: they test what the fp16 mode adds."""
    cases = [c for c in FP16_CASES if c.id in MEDIUMP_PROGRAMS]
    try:
        outcomes = run_all(cases, mediump="fp32", reference="as written")
    except (mf.MesaUnavailable, ToolMissing) as exc:
        _require_mesa(str(exc))
    for case in cases:
        outcome = outcomes[case.id]
        print(outcome.line())
        assert outcome.error is None, outcome.error
        assert outcome.bad > 0 or outcome.kill_mismatch > 0, case.id


def main() -> int:
    """Print the per-program table
    (``PYTHONPATH=tests python tests/shaders/test_differential_mesa.py [fp16]``)."""
    import sys

    mediump = sys.argv[1] if len(sys.argv) > 1 else "fp32"
    results = run_all(FP16_CASES if mediump == "fp16" else CASES, mediump=mediump)
    for outcome in results.values():
        print(outcome.line())
        if outcome.worst:
            print("    first bad:", outcome.worst)
    failed = [o for o in results.values() if o.error or o.bad or o.kill_mismatch
              or (o.distinct < 2 if o.reads_inputs else o.distinct != 1)]
    print(f"{len(results)} programs, {len(failed)} failing")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
