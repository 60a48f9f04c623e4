"""Mesa llvmpipe as an oracle: render GLSL ES 1.00 fragment programs on a full-screen quad.

For a fragment program (the exact GLSL an application passed to glShaderSource) this module

- reads its ``varying`` declarations and writes a vertex shader that sets every varying
  component to a known affine function ``A * X + B * Y + C`` of the quad's position (X, Y in
  normalized device coordinates, -1..1), with ``gl_Position = (X, Y, Z(X, Y), 1)``: w = 1, so
  perspective-correct interpolation is plain linear interpolation;
- draws two triangles covering a ``width x height`` RGBA32F framebuffer object cleared to
  :data:`SENTINEL`: the lower-right one counter-clockwise (front-facing), the upper-left one
  clockwise (back-facing), so ``gl_FrontFacing`` takes both values;
- runs the program at float32 precision: ``mediump`` and ``lowp`` become ``highp`` (see
  :func:`highp_source`), because llvmpipe evaluates mediump arithmetic in 16-bit floats;
- sets uniforms to given values and binds each sampler to a tiny RGBA32F texture whose lookups
  are easy to compute exactly (:class:`Texture`);
- renders "probe" passes with the same vertex shader whose fragment shaders write the
  interpolated varyings, ``gl_FragCoord`` and ``gl_FrontFacing`` themselves: the per-pixel
  inputs exactly as llvmpipe computed them, so that another implementation can be run on the
  very same inputs.

Images come back as (height, width, 4) float32 arrays indexed ``[y, x]`` with y the GL window
coordinate (row 0 is the bottom row, as glReadPixels returns it). Rendering into a framebuffer
object, Mesa does not flip y: llvmpipe's 2x2 quads pair rows 2k and 2k + 1 of this array,
``dFdy`` is the difference toward larger y, and both derivatives are "fine" (taken within each
row / column of a quad, not once per quad).

Mesa runs in a child process (``python shaders/mesa_fullscreen.py REQUEST RESULT_DIR``) with
``GALLIUM_DRIVER=llvmpipe`` through moderngl's EGL (surfaceless) backend, so that the driver
choice cannot leak into, or be decided by, other Mesa users of the calling process. The desktop
core-profile context Mesa gives compiles ``#version 100`` (GLSL ES 1.00) shaders through
ARB_ES2_compatibility; a fragment program without a ``#version`` line gets ``#version 100``
prepended.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.mesa import EXIT_NO_MESA, child_environment, proc_address

SENTINEL = -12345.5  # clear value of every channel: marks pixels no fragment was written to
POSITION_ATTRIBUTE = "tilesim_position"
# Components of the float types a GLSL ES 1.00 varying may have: (columns, rows).
VARYING_SHAPES = {"float": (1, 1), "vec2": (1, 2), "vec3": (1, 3), "vec4": (1, 4),
                  "mat2": (2, 2), "mat3": (3, 3), "mat4": (4, 4)}
# Two triangles over NDC [-1, 1]^2: (1) lower-right, counter-clockwise, front-facing;
# (2) upper-left, clockwise, back-facing.
QUAD_VERTICES = np.array([[-1, -1], [1, -1], [1, 1],
                          [-1, -1], [-1, 1], [1, 1]], dtype=np.float32)
_XYZW = "xyzw"


class MesaUnavailable(RuntimeError):
    """llvmpipe could not be started here (moderngl, EGL or Mesa missing); says which."""


# ----------------------------------------------------------------------------------------------
# GLSL generation


@dataclass(frozen=True)
class Varying:
    """One ``varying`` of a fragment program: name, type, array size (None: not an array)."""

    name: str
    type: str
    array_size: int | None = None

    @property
    def components(self) -> int:
        cols, rows = VARYING_SHAPES[self.type]
        return (self.array_size or 1) * cols * rows

    def component_expressions(self) -> list[str]:
        """GLSL for each flattened component: array element, then column, then row."""
        cols, rows = VARYING_SHAPES[self.type]
        out = []
        for element in range(self.array_size or 1):
            base = self.name if self.array_size is None else f"{self.name}[{element}]"
            for col in range(cols):
                for row in range(rows):
                    if cols > 1:
                        out.append(f"{base}[{col}][{row}]")
                    elif rows > 1:
                        out.append(f"{base}.{_XYZW[row]}")
                    else:
                        out.append(base)
        return out

    def declaration(self) -> str:
        """Always highp: the fragment program runs with highp too (:func:`highp_source`)."""
        size = f"[{self.array_size}]" if self.array_size is not None else ""
        return f"varying highp {self.type} {self.name}{size};"


_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# ``varying [qualifier] type names;`` where the qualifier is a precision or a macro standing
# for one (glmark2 writes ``varying HIGHP_OR_DEFAULT vec2 TextureCoord;``).
_VARYING_RE = re.compile(
    r"\bvarying\s+(?:\w+\s+)?(?P<type>float|vec[234]|mat[234]|\w+)\s+(?P<names>[^;]+);")
_NAME_RE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*(?:\[\s*(?P<size>\d+)\s*\])?$")


def parse_varyings(fragment_glsl: str) -> list[Varying]:
    """The varyings a fragment program declares (comments ignored), in declaration order.

    Raises ValueError for what this harness cannot drive: non-float types, array sizes that are
    not integer literals.
    """
    text = _COMMENT_RE.sub(" ", fragment_glsl)
    out = []
    for m in _VARYING_RE.finditer(text):
        if m["type"] not in VARYING_SHAPES:
            raise ValueError(f"varying type {m['type']!r} is not a GLSL ES 1.00 varying type")
        for item in m["names"].split(","):
            nm = _NAME_RE.match(item.strip())
            if nm is None:
                raise ValueError(f"cannot read varying declarator {item.strip()!r}")
            size = int(nm["size"]) if nm["size"] else None
            out.append(Varying(nm["name"], m["type"], size))
    return out


def glsl_float(value: float) -> str:
    """A GLSL float literal that parses back to exactly ``value`` (a float32)."""
    text = repr(float(np.float32(value)))
    if "e" in text or "E" in text:
        mantissa, exponent = text.lower().split("e")
        text = (mantissa if "." in mantissa else mantissa + ".0") + "e" + exponent
    return text if "." in text or "e" in text else text + ".0"


@dataclass
class Geometry:
    """What the vertex shader computes: affine coefficients per varying component and depth.

    ``coefficients[name]``: (components, 3) float32 rows (A, B, C) of ``A*X + B*Y + C``;
    ``depth``: (A, B, C) of clip-space z.
    """

    varyings: list[Varying]
    coefficients: dict[str, np.ndarray]
    depth: tuple[float, float, float] = (0.25, -0.125, 0.0)

    @classmethod
    def random(cls, varyings: list[Varying], rng: np.random.Generator,
               scale: float = 1.0) -> Geometry:
        """Coefficients drawn as multiples of 1/64 in [-scale, scale].

        With such dyadic values the per-vertex values are exact in float32, and llvmpipe's
        interpolated values are exactly the affine functions at the pixel centers (seen on
        the whole corpus); the probe passes read them back in any case.
        """
        coefficients = {}
        for v in varyings:
            steps = int(round(scale * 64))
            coefficients[v.name] = (rng.integers(-steps, steps + 1, (v.components, 3))
                                    / 64.0).astype(np.float32)
        return cls(varyings, coefficients)

    def vertex_shader(self) -> str:
        p = POSITION_ATTRIBUTE
        lines = ["#version 100", f"attribute vec2 {p};"]
        lines += [v.declaration() for v in self.varyings]
        lines.append("void main() {")
        for v in self.varyings:
            coef = self.coefficients[v.name]
            per_element = coef.shape[0] // (v.array_size or 1)
            for element in range(v.array_size or 1):
                target = v.name if v.array_size is None else f"{v.name}[{element}]"
                rows = coef[element * per_element:(element + 1) * per_element]
                terms = [f"{v.type}({', '.join(glsl_float(x) for x in rows[:, k])})"
                         for k in range(3)]
                lines.append(f"  {target} = {terms[0]} * {p}.x + {terms[1]} * {p}.y"
                             f" + {terms[2]};")
        a, b, c = (glsl_float(x) for x in self.depth)
        lines.append(f"  gl_Position = vec4({p}, {a} * {p}.x + {b} * {p}.y + {c}, 1.0);")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def probe_labels(self) -> list[str]:
        """What the probe passes read, 4 per pass, as GLSL expressions."""
        labels = ["gl_FragCoord.x", "gl_FragCoord.y", "gl_FragCoord.z", "gl_FragCoord.w",
                  "gl_FrontFacing"]
        for v in self.varyings:
            labels += v.component_expressions()
        return labels

    def probe_shaders(self) -> list[str]:
        """Fragment shaders writing ``probe_labels()`` four at a time (booleans as 1.0/0.0)."""
        labels = self.probe_labels()
        head = ["#version 100", "precision highp float;"]
        head += [v.declaration() for v in self.varyings]
        out = []
        for start in range(0, len(labels), 4):
            chunk = labels[start:start + 4]
            exprs = [f"({e} ? 1.0 : 0.0)" if e == "gl_FrontFacing" else e for e in chunk]
            exprs += ["0.0"] * (4 - len(exprs))
            body = f"void main() {{ gl_FragColor = vec4({', '.join(exprs)}); }}"
            out.append("\n".join(head + [body]) + "\n")
        return out


_LOW_PRECISION_RE = re.compile(r"\b(?:mediump|lowp)\b")


def highp_source(fragment_glsl: str) -> str:
    """The program as llvmpipe must run it to compute what its TGSI computes.

    Two changes, nothing else: ``#version 100`` first unless the text has a ``#version`` line
    (a desktop context reads a text without one as GLSL 1.10), and every ``mediump`` / ``lowp``
    qualifier becomes ``highp``. Mesa 22.3's llvmpipe lowers mediump arithmetic to 16-bit
    floats (normalize() of a mediump vec3 is off by ~7e-4), while softpipe, whose TGSI the
    interpreter runs, computes everything in float32 whatever the precision.
    """
    return es_source(_LOW_PRECISION_RE.sub("highp", fragment_glsl))


def es_source(fragment_glsl: str) -> str:
    """The program as written, with ``#version 100`` first unless it has a ``#version`` line
    (a desktop context reads a text without one as GLSL 1.10): llvmpipe then computes its
    ``mediump`` / ``lowp`` arithmetic in 16-bit floats, as the interpreter's fp16 mode does."""
    for line in _COMMENT_RE.sub(" ", fragment_glsl).split("\n"):
        stripped = line.strip()
        if stripped:
            if stripped.startswith("#") and stripped[1:].lstrip().startswith("version"):
                return fragment_glsl
            break
    return "#version 100\n" + fragment_glsl


# ----------------------------------------------------------------------------------------------
# Requests to the child and its results


@dataclass
class Texture:
    """A texture bound to ``unit`` for a sampler uniform (array element).

    By default (the fields after ``element`` left alone) an RGBA32F texture whose lookups are
    exact: 2D: ``texels`` is rows x columns x RGBA (row 0 at t = 0), power-of-two sizes,
    NEAREST filtering, CLAMP_TO_EDGE, no mipmaps: a lookup returns one texel, chosen exactly
    as :func:`sample_nearest` does, whatever the LOD or bias. CUBE: 1x1 faces all of color
    ``texels[0][0]``.

    The optional fields make any GLES2-style texture: ``dtype`` "u1" (RGBA8 with normalized
    unsigned bytes, texel values 0..255) instead of "f4"; any size; ``min_filter`` /
    ``mag_filter`` and ``wrap_s`` / ``wrap_t`` as GL names (MIRRORED_REPEAT included);
    ``generate_mipmap`` (glGenerateMipmap after upload, then the filters); ``faces``: the six
    (size, size, 4) faces of a CUBE texture in GL order (+X, -X, +Y, -Y, +Z, -Z; ``texels``
    is then ignored). ``seamless``: whether a pass that binds the cube texture draws with
    GL_TEXTURE_CUBE_MAP_SEAMLESS enabled; None (default): disabled for a cube texture with
    ``faces``, as in OpenGL ES 2.0, enabled for the others (moderngl's default). True is what
    Mesa's GLES2 contexts do (Mesa makes them ES 3.x contexts, whose cube maps are seamless).
    """

    uniform: str
    unit: int
    texels: list  # (rows, columns, 4) nested lists of floats
    target: str = "2D"
    element: int = 0
    dtype: str = "f4"
    min_filter: str = "NEAREST"
    mag_filter: str = "NEAREST"
    wrap_s: str = "CLAMP_TO_EDGE"
    wrap_t: str = "CLAMP_TO_EDGE"
    generate_mipmap: bool = False
    faces: list | None = None
    seamless: bool | None = None


def sample_nearest(texels, s, t):
    """Texels at coordinates (s, t), each (N,): (4, N) float32, as llvmpipe picks them.

    NEAREST with CLAMP_TO_EDGE picks column clamp(floor(s * W), 0, W - 1) and likewise the
    row; with power-of-two sizes s * W is exact, so the choice is exact too.
    """
    texels = np.asarray(texels, dtype=np.float32)
    rows, cols = texels.shape[:2]
    column = np.floor(np.asarray(s, dtype=np.float32) * np.float32(cols))
    row = np.floor(np.asarray(t, dtype=np.float32) * np.float32(rows))
    column = np.clip(np.nan_to_num(column, nan=0.0), 0, cols - 1).astype(np.int64)
    row = np.clip(np.nan_to_num(row, nan=0.0), 0, rows - 1).astype(np.int64)
    return texels[row, column].T.copy()


@dataclass
class Pass:
    """One draw of the quad: a program, its uniform values and textures."""

    vertex: str
    fragment: str
    # name -> ("float" | "int", flat values in GL order; matrices column-major)
    uniforms: dict[str, tuple[str, list]] = field(default_factory=dict)
    textures: list[Texture] = field(default_factory=list)


@dataclass
class RenderResult:
    images: list[np.ndarray | None]   # per pass, (H, W, 4) float32, None when it failed
    errors: list[str | None]          # per pass, Mesa's compile/link message
    renderer: str
    version: str
    seconds: list[float | None] = field(default_factory=list)  # best time of one draw




def render(passes: list[Pass], width: int, height: int, *, processes: int | None = None,
           timeout: float = 300, driver: str = "llvmpipe", repeat: int = 0) -> RenderResult:
    """Draw every pass with Mesa llvmpipe, in order, split over a few child processes.

    ``processes`` defaults to one per CPU, at most 4 (compiling shaders is most of the time).
    ``driver`` may be "softpipe" for the other Gallium software driver. With ``repeat`` > 0
    each pass is also drawn ``repeat`` more times, and the best wall time of one draw
    (finished with glFinish) is returned in ``seconds`` (benchmarks use it; run one process
    then, so that draws do not compete for cores).
    Raises MesaUnavailable when no llvmpipe context can be made, RuntimeError when a child
    fails otherwise. A pass whose shaders do not compile gets an error string, not an image.
    """
    if not passes:
        return RenderResult([], [], "", "")
    if processes is None:
        processes = min(4, os.cpu_count() or 1)
    processes = max(1, min(processes, len(passes)))
    size = -(-len(passes) // processes)
    chunks = [passes[k:k + size] for k in range(0, len(passes), size)]
    with tempfile.TemporaryDirectory(prefix="tilesim-llvmpipe-") as tmp:
        jobs = []
        for k, chunk in enumerate(chunks):
            folder = Path(tmp, str(k))
            folder.mkdir()
            request = _request(chunk, width, height)
            request.update({"driver": driver, "repeat": repeat})
            (folder / "request.json").write_text(json.dumps(request), encoding="utf-8")
            with open(folder / "stderr.txt", "wb") as stderr:
                proc = subprocess.Popen(
                    [sys.executable, str(Path(__file__).resolve()),
                     str(folder / "request.json"), str(folder)],
                    env=child_environment(driver), stdout=subprocess.DEVNULL, stderr=stderr)
            jobs.append((proc, folder))
        try:
            parts = [_collect(proc, folder, timeout) for proc, folder in jobs]
        finally:
            for proc, _ in jobs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    images = [image for part in parts for image in part.images]
    errors = [error for part in parts for error in part.errors]
    seconds = [t for part in parts for t in part.seconds]
    return RenderResult(images, errors, parts[0].renderer, parts[0].version, seconds)


def _request(passes: list[Pass], width: int, height: int) -> dict:
    return {"width": width, "height": height,
            "passes": [{"vertex": p.vertex, "fragment": p.fragment,
                        "uniforms": {name: [kind, [float(v) if kind == "float" else int(v)
                                                   for v in values]]
                                     for name, (kind, values) in p.uniforms.items()},
                        "textures": [t.__dict__ for t in p.textures]} for p in passes]}


def _collect(proc: subprocess.Popen, folder: Path, timeout: float) -> RenderResult:
    """Wait for one child and read what it wrote into ``folder``."""
    proc.wait(timeout=timeout)
    stderr = (folder / "stderr.txt").read_text(encoding="utf-8", errors="replace")
    if proc.returncode == EXIT_NO_MESA:
        raise MesaUnavailable(stderr.strip().split("\n")[-1])
    if proc.returncode != 0:
        raise RuntimeError(f"llvmpipe child failed (exit {proc.returncode}):\n" + stderr[-4000:])
    meta = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    with np.load(folder / "images.npz", allow_pickle=False) as npz:
        stack = npz["images"]
    images = [None if error else stack[i] for i, error in enumerate(meta["errors"])]
    return RenderResult(images, meta["errors"], meta["renderer"], meta["version"],
                        meta.get("seconds", []))


# ----------------------------------------------------------------------------------------------
# The child process


def _child(request_path: str, out_dir: str) -> int:
    try:
        import moderngl
    except ImportError as exc:
        print(f"moderngl is not installed ({exc}): pip install 'tilesim[mesa]'", file=sys.stderr)
        return EXIT_NO_MESA
    try:
        ctx = moderngl.create_standalone_context(backend="egl")
    except Exception as exc:  # moderngl raises plain Exception when EGL/Mesa fail
        print(f"no EGL context: {exc}", file=sys.stderr)
        return EXIT_NO_MESA
    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    driver = request.get("driver", "llvmpipe")
    renderer = ctx.info["GL_RENDERER"]
    if not renderer.startswith(driver):
        print(f"renderer is {renderer!r}, not {driver}", file=sys.stderr)
        return EXIT_NO_MESA
    width, height = request["width"], request["height"]
    fbo = ctx.framebuffer(color_attachments=[ctx.renderbuffer((width, height), 4, dtype="f4")])
    vbo = ctx.buffer(QUAD_VERTICES.tobytes())
    images = np.full((len(request["passes"]), height, width, 4), SENTINEL, dtype=np.float32)
    errors: list[str | None] = []
    seconds: list[float | None] = []
    for index, item in enumerate(request["passes"]):
        try:
            program = ctx.program(vertex_shader=item["vertex"], fragment_shader=item["fragment"])
        except moderngl.Error as exc:
            errors.append(str(exc))
            seconds.append(None)
            continue
        textures = _bind(ctx, program, item)
        vao = ctx.vertex_array(program, [(vbo, "2f", POSITION_ATTRIBUTE)])
        fbo.use()
        fbo.clear(SENTINEL, SENTINEL, SENTINEL, SENTINEL)
        vao.render(moderngl.TRIANGLES)
        data = fbo.read(components=4, dtype="f4")
        images[index] = np.frombuffer(data, dtype=np.float32).reshape(height, width, 4)
        errors.append(None)
        best = None
        for _ in range(request.get("repeat", 0)):
            start = time.perf_counter()
            vao.render(moderngl.TRIANGLES)
            ctx.finish()
            elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
        seconds.append(best)
        for obj in [vao, program, *textures]:
            obj.release()
    np.savez(Path(out_dir, "images.npz"), images=images)
    Path(out_dir, "result.json").write_text(json.dumps(
        {"renderer": renderer, "version": ctx.info["GL_VERSION"], "errors": errors,
         "seconds": seconds}),
        encoding="utf-8")
    return 0


GL_ENUMS = {"NEAREST": 0x2600, "LINEAR": 0x2601, "NEAREST_MIPMAP_NEAREST": 0x2700,
            "LINEAR_MIPMAP_NEAREST": 0x2701, "NEAREST_MIPMAP_LINEAR": 0x2702,
            "LINEAR_MIPMAP_LINEAR": 0x2703, "REPEAT": 0x2901, "CLAMP_TO_EDGE": 0x812F,
            "MIRRORED_REPEAT": 0x8370}
GL_TEXTURE_2D, GL_TEXTURE_CUBE_MAP = 0x0DE1, 0x8513
GL_TEXTURE_WRAP_S, GL_TEXTURE_WRAP_T = 0x2802, 0x2803
GL_TEXTURE_CUBE_MAP_SEAMLESS = 0x884F


def _gl_function(name: str, *argtypes):
    """A GL entry point of the current (EGL) context, for what moderngl does not expose."""
    return ctypes.CFUNCTYPE(None, *argtypes)(proc_address(name))


def _make_texture(ctx, tex: dict):
    """The moderngl texture of one :class:`Texture` request."""
    # "u1" asks for RGBA8 (normalized unsigned bytes): moderngl's "f1" ("u1" is RGBA8UI).
    dtype = "f1" if tex.get("dtype", "f4") == "u1" else "f4"
    numpy_dtype = np.float32 if dtype == "f4" else np.uint8
    is_cube = tex["target"] == "CUBE"
    if is_cube and tex.get("faces") is not None:
        faces = np.asarray(tex["faces"], dtype=numpy_dtype)
        texture = ctx.texture_cube((faces.shape[2], faces.shape[1]), 4, faces.tobytes(),
                                   dtype=dtype)
    elif is_cube:
        face = np.asarray(tex["texels"], dtype=numpy_dtype)[0, 0]
        texture = ctx.texture_cube((1, 1), 4, np.tile(face, 6).tobytes(), dtype=dtype)
    if is_cube:
        seamless = tex.get("seamless")
        if seamless is None:
            seamless = tex.get("faces") is None
        _gl_function("glEnable" if seamless else "glDisable",
                     ctypes.c_uint)(GL_TEXTURE_CUBE_MAP_SEAMLESS)
    else:
        texels = np.asarray(tex["texels"], dtype=numpy_dtype)
        rows, cols = texels.shape[:2]
        texture = ctx.texture((cols, rows), 4, texels.tobytes(), dtype=dtype)
    if tex.get("generate_mipmap"):
        texture.build_mipmaps()
    texture.filter = (GL_ENUMS[tex.get("min_filter", "NEAREST")],
                      GL_ENUMS[tex.get("mag_filter", "NEAREST")])
    target = GL_TEXTURE_CUBE_MAP if is_cube else GL_TEXTURE_2D
    bind = _gl_function("glBindTexture", ctypes.c_uint, ctypes.c_uint)
    parameter = _gl_function("glTexParameteri", ctypes.c_uint, ctypes.c_uint, ctypes.c_int)
    bind(target, texture.glo)
    parameter(target, GL_TEXTURE_WRAP_S, GL_ENUMS[tex.get("wrap_s", "CLAMP_TO_EDGE")])
    parameter(target, GL_TEXTURE_WRAP_T, GL_ENUMS[tex.get("wrap_t", "CLAMP_TO_EDGE")])
    return texture


def _bind(ctx, program, item: dict) -> list:
    """Set the uniforms of one pass and create its textures; returns the textures."""
    for name, (kind, values) in item["uniforms"].items():
        if name not in program:
            continue  # inactive in llvmpipe's link
        uniform = program[name]
        count = uniform.array_length * uniform.dimension
        dtype = np.float32 if kind == "float" else np.int32
        uniform.write(np.asarray(values[:count], dtype=dtype).tobytes())
    textures = []
    units: dict[str, dict[int, int]] = {}
    for tex in item["textures"]:
        texture = _make_texture(ctx, tex)
        texture.use(tex["unit"])
        textures.append(texture)
        units.setdefault(tex["uniform"], {})[tex["element"]] = tex["unit"]
    for name, by_element in units.items():
        if name in program:
            uniform = program[name]
            values = [by_element.get(e, 0) for e in range(uniform.array_length)]
            uniform.write(np.asarray(values, dtype=np.int32).tobytes())
    return textures


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python shaders/mesa_fullscreen.py REQUEST.json OUT_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(_child(sys.argv[1], sys.argv[2]))
