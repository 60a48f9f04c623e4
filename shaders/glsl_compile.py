"""GLSL ES 1.00 -> TGSI through Mesa softpipe, plus the interface a renderer needs to run it.

Mesa compiles and links the program in a child process (:mod:`tilesim.shaders.mesa_softpipe_child`,
run as ``python -I shaders/mesa_softpipe_child.py REQUEST RESULT``) on a real GLES2 context (EGL
surfaceless, ``GALLIUM_DRIVER=softpipe SOFTPIPE_DEBUG=vs,fs``); softpipe prints the TGSI of each
stage, which is kept byte for byte. The TGSI alone does not say which GLSL variable lives in which
register, so this module also builds ``interface.json`` from Mesa's NIR
``decl_var`` lines (driver locations), the GL program queries, a varying-packing probe, and the
TGSI ``DCL`` lines (every register is cross-checked against them).

Interface format (``interface.json``, ``{"format": "tilesim-shader-interface", "version": 1}``)
-----------------------------------------------------------------------------------------------
Registers are written as in TGSI (``"IN[0]"``, ``"OUT[1]"``, ``"SAMP[2]"``), semantics as
``"GENERIC[0]"``, ``"POSITION"``, ``"COLOR"``; components as letters (``"xyz"``). Keys:

``mesa``
    ``{"renderer": "softpipe", "version": "OpenGL ES 3.1 Mesa 22.3.6"}``.
``bound_attrib_locations``
    ``{name: location}`` passed to glBindAttribLocation before linking (compile input, usually
    what the traced program bound, apitrace's "fake" binds included).
``attributes``
    ``[{name, type, location, registers: ["IN[k]", ...], components}]``: GL location from
    glGetAttribLocation; one register per column (matrices take several locations); registers is
    null if Mesa optimised the attribute away after the GL-level activity analysis.
``varyings``
    ``[{name, type, array_size, vertex: [piece...] | null, fragment: [piece...] | null}]``. The
    linker packs varyings: a varying's flattened components (array element, then column, then
    row) are cut into pieces, each ``{first, count, register, semantic, component}`` meaning
    components ``first..first+count-1`` of the varying are ``register`` components
    ``component..component+count-1``; fragment pieces add ``interpolation`` (PERSPECTIVE,
    LINEAR, CONSTANT). A stage is null where the varying is inactive (no register in that stage's
    TGSI); a piece has ``register: null`` where only that part is inactive.
``uniforms``
    ``[{name, gl_name, type, array_size, location, storage, vertex: place | null, fragment: place
    | null}]`` with place ``{buffer, first_slot, slots, layout}``: the uniform occupies vec4 slots
    ``CONST[buffer][first_slot .. first_slot+slots-1]``, ``layout[i]`` the components of slot i
    (softpipe does not pack uniforms: a mat3 is 3 slots "xyz", a float[4] is 4 slots "x"; array
    elements in order, matrices column by column). ``storage``: ``float32``, ``int32`` or
    ``bool32`` (false 0, true 0xFFFFFFFF: softpipe has native integers).
``samplers``
    ``[{name, gl_name, type, array_size, location, vertex: place | null, fragment: ...}]``, place
    ``{samplers: ["SAMP[i]", ...] (one per array element), target, return_type}``; the texture
    unit is the value the application gives the uniform with glUniform1i.
``state``
    Mesa-internal uniforms the renderer must fill, per stage: ``[{name, stage, buffer, slot,
    layout, value}]``, e.g. ``gl_FbWposYTransform`` for gl_FragCoord's y flip.
``builtins``
    ``{"vertex": [...], "fragment": [...]}``: ``{name, register, semantic, components}`` (+
    ``interpolation`` for fragment inputs) for gl_Position, gl_PointSize, gl_FragCoord,
    gl_FrontFacing, gl_PointCoord, gl_FragColor / gl_FragData.
``precision`` (optional: interfaces written before it have none, and run in float32)
    ``{"version": 1, "rule": text, "vertex": stage, "fragment": stage}`` with stage
    ``{"registers": {"IN[1]": "mmhh", "CONST[0][2]": "hhhh", "SAMP[0]": "l", ...},
    "instructions": ["mm--", "----", ...]}``: the GLSL precision (``h`` highp, ``m`` mediump,
    ``l`` lowp, ``-`` none) of each component of the registers the stage reads, from Mesa's NIR
    ``decl_var`` qualifiers, and of each channel (xyzw) each TGSI instruction writes, one string
    per instruction in program order (:mod:`tilesim.shaders.precision`). The interpreter's fp16
    mediump mode computes the ``m`` and ``l`` channels in 16-bit floats.

Every IN/OUT/SV/SAMP register declared in either TGSI text appears in exactly the entries above;
:func:`compile_program` raises an InputError naming the program if one is left unexplained.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tilesim.atomic import write_text
from tilesim.errors import InputError, TilesimError, ToolMissing
from tilesim.inputs import read_input_text
from tilesim.mesa import EXIT_NO_MESA, child_environment
from tilesim.shaders import mesa_dump, precision
from tilesim.shaders.mesa_dump import Dcl, MesaOutputError, NirVar, StageDump
from tilesim.shaders.mesa_softpipe_child import MARKER_BEGIN, MARKER_END, MARKER_PROGRAM
from tilesim.shaders.parser import parse
from tilesim.shaders.texture_lod import FRAG_COLOR, RewriteError, rewrite_program, uses_texture_lod

INTERFACE_FORMAT = "tilesim-shader-interface"
INTERFACE_VERSION = 1
PRECISION_RULE = ("GLSL ES 1.00 section 4.5.2 per written channel, as Mesa's "
                  "lower_precision.cpp applies it (tilesim.shaders.precision)")
DEBIAN_PACKAGES = "libgl1-mesa-dri libegl1 libgles2"
STAGES = ("vertex", "fragment")
CHILD_SCRIPT = Path(__file__).resolve().parent / "mesa_softpipe_child.py"
OUTPUT_FILES = ("vertex.glsl", "fragment.glsl", "vertex.tgsi", "fragment.tgsi", "interface.json")

# GL type enums of GLSL ES 1.00 -> (GLSL name, columns, rows, storage).
GL_TYPES = {
    0x1406: ("float", 1, 1, "float32"), 0x8B50: ("vec2", 1, 2, "float32"),
    0x8B51: ("vec3", 1, 3, "float32"), 0x8B52: ("vec4", 1, 4, "float32"),
    0x1404: ("int", 1, 1, "int32"), 0x8B53: ("ivec2", 1, 2, "int32"),
    0x8B54: ("ivec3", 1, 3, "int32"), 0x8B55: ("ivec4", 1, 4, "int32"),
    0x8B56: ("bool", 1, 1, "bool32"), 0x8B57: ("bvec2", 1, 2, "bool32"),
    0x8B58: ("bvec3", 1, 3, "bool32"), 0x8B59: ("bvec4", 1, 4, "bool32"),
    0x8B5A: ("mat2", 2, 2, "float32"), 0x8B5B: ("mat3", 3, 3, "float32"),
    0x8B5C: ("mat4", 4, 4, "float32"),
    0x8B5E: ("sampler2D", 1, 1, "sampler"), 0x8B60: ("samplerCube", 1, 1, "sampler"),
    # OES_texture_3D
    0x8B5F: ("sampler3D", 1, 1, "sampler"),
    0x8D66: ("samplerExternalOES", 1, 1, "sampler"),
}
# Sampler types of extensions Mesa's GLES2 context compiles but tilesim does not sample.
EXTENSION_SAMPLERS: dict[int, str] = {}
XYZW = "xyzw"
# GLSL type name -> (columns, rows, storage).
TYPE_SHAPES = {name: (cols, rows, storage) for name, cols, rows, storage in GL_TYPES.values()}

# Mesa-internal uniforms (gl_state_index) seen in the NIR of GLES2 programs; any other one makes
# build_interface fail rather than leave a CONST slot unexplained.
STATE_UNIFORMS = {
    "gl_FbWposYTransform": (
        "STATE_FB_WPOS_Y_TRANSFORM: [1, 0, -1, H] when drawing into a framebuffer object, "
        "[-1, H, 1, 0] when drawing into the window-system framebuffer (H = framebuffer height "
        "in pixels); the TGSI computes gl_FragCoord.y from it"),
    "state.depth.range": (
        "STATE_DEPTH_RANGE: [n, f, f - n, 1] of glDepthRangef(n, f), the built-in uniform "
        "gl_DepthRange {near, far, diff} (GLSL ES 1.00 section 7.5)"),
}
# Built-in uniforms GL lists among a program's active uniforms (location -1) whose values reach
# the TGSI as one of STATE_UNIFORMS.
STATE_BUILTIN_UNIFORMS = ("gl_DepthRange",)

BUILTIN_VARS = {
    ("vertex", "shader_out"): {"gl_Position", "gl_PointSize"},
    ("fragment", "shader_in"): {"gl_FragCoord", "gl_FrontFacing", "gl_PointCoord"},
    # gl_FragDepthEXT: EXT_frag_depth, the z of TGSI's POSITION output;
    # gl_SecondaryFragColorEXT / gl_SecondaryFragDataEXT: EXT_blend_func_extended, the second
    # source color of dual-source blending (TGSI's COLOR[1] output)
    # (gl_FragDepth: gl_FragDepthEXT in the GLSL ES 3.00 form of EXT_shader_texture_lod)
    ("fragment", "shader_out"): {"gl_FragColor", "gl_FragData", "gl_FragDepthEXT",
                                 "gl_FragDepth",
                                 "gl_SecondaryFragColorEXT", "gl_SecondaryFragDataEXT"},
}

# Fragment color outputs -> TGSI COLOR semantic index (None: COLOR, 1: COLOR[1]) where a program
# writes both colors of dual-source blending.
COLOR_INDEX = {"gl_FragColor": None, "gl_FragData": None, "gl_SecondaryFragColorEXT": 1,
               "gl_SecondaryFragDataEXT": 1}

# Built-ins a GLES2 program can reach through an extension Mesa compiles that the renderer does
# not implement: name -> where it comes from. Each makes the import fail with one line naming
# the program (build_interface); a built-in in neither this table nor BUILTIN_VARS gets the
# same error without the source.
UNSUPPORTED_BUILTINS = {
    "gl_FragData": "EXT_draw_buffers: more than one color output",
    "gl_LastFragData": "EXT_shader_framebuffer_fetch",
    "gl_LastFragColorARM": "ARM_shader_framebuffer_fetch",
    "gl_LastFragDepthARM": "ARM_shader_framebuffer_fetch_depth_stencil",
}
# GLSL ES versions a GLES2 context compiles (OpenGL ES 2.0 spec section 2.10; GLSL ES 1.00
# section 3.4): Mesa's context is GLES 3.1 and would accept "#version 300 es" / "310 es" too.
GLSL_ES_VERSIONS = {100}
_VERSION_RE = re.compile(r"^[ \t]*#[ \t]*version[ \t]+(?P<number>\d+)(?P<profile>[ \t]+\w+)?",
                         re.M)


@dataclass
class CompiledProgram:
    """A GLSL program compiled by Mesa softpipe: sources, TGSI text and register interface."""

    name: str
    vertex_glsl: str
    fragment_glsl: str
    vertex_tgsi: str
    fragment_tgsi: str
    interface: dict
    renderer: str
    version: str

    def files(self) -> dict[str, str]:
        """File name -> content, as :meth:`write` lays them out."""
        return {
            "vertex.glsl": self.vertex_glsl,
            "fragment.glsl": self.fragment_glsl,
            "vertex.tgsi": self.vertex_tgsi,
            "fragment.tgsi": self.fragment_tgsi,
            "interface.json": interface_json(self.interface),
        }

    def write(self, out_dir: str | os.PathLike) -> Path:
        """Write the five files into ``out_dir`` (created if needed), each atomically."""
        out = Path(out_dir)
        for file_name, text in self.files().items():
            write_text(out / file_name, text)
        return out


def interface_json(interface: dict) -> str:
    """The exact text of interface.json (what write_json writes), for byte comparisons."""
    return json.dumps(interface, indent=2, sort_keys=False) + "\n"


@dataclass
class ProgramSource:
    """One program to compile: GLSL sources, a name for messages, optional attribute bindings.

    ``vertex_origin`` / ``fragment_origin`` name the sources in errors (a file path, or
    ``<name>.vert``); ``program_origin`` names the program in errors that concern the link as
    a whole (the trace and the glLinkProgram call, for an import), else the two sources do.
    """

    vertex: str
    fragment: str
    name: str = "program"
    attrib_bindings: dict[str, int] | None = None
    vertex_origin: str | None = None
    fragment_origin: str | None = None
    program_origin: str | None = None

    def origin(self, stage: str) -> str:
        given = self.vertex_origin if stage == "vertex" else self.fragment_origin
        return given or f"{self.name}.{'vert' if stage == 'vertex' else 'frag'}"

    def program(self) -> str:
        return self.program_origin or f"{self.origin('vertex')} + {self.origin('fragment')}"


class InterfaceError(Exception):
    """Mesa's output for one program does not give a register interface tilesim can run: an
    unsupported built-in, or Mesa's NIR and TGSI disagreeing (the message says which).
    :func:`compile_many` turns it into an :class:`~tilesim.errors.InputError` naming the
    program."""


def compile_program(vertex_source: str, fragment_source: str, *, name: str = "program",
                    attrib_bindings: dict[str, int] | None = None) -> CompiledProgram:
    """Compile and link one GLSL ES 1.00 program with Mesa softpipe.

    Raises InputError (naming the stage, with Mesa's info log) when it does not compile or link;
    an InputError of one line naming the program when Mesa compiles it but tilesim cannot run
    it (GLSL ES 3.x, a built-in of UNSUPPORTED_BUILTINS, Mesa's NIR and TGSI disagreeing, Mesa
    dying on it); ToolMissing when Mesa/EGL is not installed.
    """
    source = ProgramSource(vertex_source, fragment_source, name=name,
                           attrib_bindings=attrib_bindings)
    return compile_many([source])[0]


def compile_files(vert_path: str | os.PathLike, frag_path: str | os.PathLike,
                  out_dir: str | os.PathLike | None = None, *,
                  attrib_bindings: dict[str, int] | None = None) -> CompiledProgram:
    """Compile two GLSL files; write the result into ``out_dir`` when given (for the CLI)."""
    texts = []
    for path in (vert_path, frag_path):
        texts.append(read_input_text(path, "GLSL shader"))
    source = ProgramSource(texts[0], texts[1], name=Path(vert_path).stem,
                           attrib_bindings=attrib_bindings, vertex_origin=str(vert_path),
                           fragment_origin=str(frag_path))
    program = compile_many([source])[0]
    if out_dir is not None:
        program.write(out_dir)
    return program


def compile_many(sources: list[ProgramSource]) -> list[CompiledProgram]:
    """Compile several programs in one Mesa process (context creation costs ~0.3 s)."""
    if not sources:
        return []
    for source in sources:
        _check_version(source)
    result, stderr = _run_child([_for_mesa(source) for source in sources])
    segments = _split_segments(stderr)
    programs = []
    for index, (source, res) in enumerate(zip(sources, result["programs"], strict=True)):
        if res["status"] == "compile_error":
            stage = res["stage"]
            unsupported = _UNSUPPORTED_EXTENSION.search(res["log"])
            if unsupported:  # e.g. GL_NV_shadow_samplers_cube, which Mesa 22.3 lacks
                raise InputError(f"{stage} shader needs {unsupported.group(1)}, which Mesa's "
                                 "GLSL ES compiler (and so tilesim) does not support",
                                 source=source.origin(stage),
                                 line=_first_log_line(res["log"]))
            raise InputError(f"{stage} shader failed to compile:\n{res['log'].rstrip()}",
                             source=source.origin(stage), line=_first_log_line(res["log"]))
        if res["status"] == "link_error":
            raise InputError(f"program failed to link:\n{res['log'].rstrip()}",
                             source=source.program())
        if res["status"] != "ok":
            raise InputError("tilesim cannot tell where Mesa's linker put this program's "
                             f"varyings: {_one_line(res['log'])}", source=source.program())
        where = "Mesa's output"
        try:
            stages = mesa_dump.split_stages(segments.get(str(index), ""), where=where)
            if uses_texture_lod(source.vertex, source.fragment):
                _name_the_color_output(stages["fragment"])
            declared = mesa_dump.glsl_ir_precisions(segments.get(str(index), ""), where=where)
            probes = [mesa_dump.split_stages(segments.get(f"{index}.probe{r}", ""),
                                             where=f"{where} (varying probe {r})")
                      for r in range(len(res["probes"]))]
            interface = build_interface(source, res, stages, probes,
                                        {"renderer": result["renderer"],
                                         "version": result["version"]}, declared)
        except (MesaOutputError, InterfaceError) as exc:
            raise InputError(_one_line(str(exc)), source=source.program()) from None
        programs.append(CompiledProgram(
            name=source.name, vertex_glsl=source.vertex, fragment_glsl=source.fragment,
            vertex_tgsi=stages["vertex"].tgsi, fragment_tgsi=stages["fragment"].tgsi,
            interface=interface, renderer=result["renderer"], version=result["version"]))
    return programs


def _for_mesa(source: ProgramSource) -> ProgramSource:
    """The program as Mesa compiles it: a program enabling EXT_shader_texture_lod, which
    Mesa 22.3's GLSL ES 1.00 lacks, as its GLSL ES 3.00 form (:mod:`.texture_lod`); any
    other as written."""
    if not uses_texture_lod(source.vertex, source.fragment):
        return source
    try:
        vertex, fragment = rewrite_program(source.vertex, source.fragment)
    except RewriteError as exc:
        raise InputError(str(exc), source=source.program()) from None
    return ProgramSource(vertex, fragment, name=source.name,
                         attrib_bindings=source.attrib_bindings,
                         vertex_origin=source.vertex_origin,
                         fragment_origin=source.fragment_origin,
                         program_origin=source.program_origin)


def _name_the_color_output(stage: StageDump) -> None:
    """The GLSL ES 3.00 form's color output is the program's gl_FragColor."""
    for k, var in enumerate(stage.nir_vars):
        if var.name == FRAG_COLOR:
            stage.nir_vars[k] = dataclasses.replace(var, name="gl_FragColor")


def _run_child(sources: list[ProgramSource]) -> tuple[dict, str]:
    request = {"programs": [{"vertex": s.vertex, "fragment": s.fragment,
                             "attrib_bindings": s.attrib_bindings or {}} for s in sources]}
    with tempfile.TemporaryDirectory(prefix="tilesim-mesa-") as tmp:
        req_path, res_path = Path(tmp, "request.json"), Path(tmp, "result.json")
        req_path.write_text(json.dumps(request), encoding="utf-8")
        # Run the child by path in isolated mode: it needs only the standard library, and this
        # keeps the package's __init__ (numpy, the interpreter) out of the Mesa process.
        proc = subprocess.run(
            [sys.executable, "-I", str(CHILD_SCRIPT), str(req_path), str(res_path)],
            # MESA_GLSL=dump adds the linked GLSL IR, whose declarations carry every
            # variable's precision (the NIR packs varyings and keeps one precision per pack).
            env=child_environment("softpipe", SOFTPIPE_DEBUG="vs,fs", MESA_GLSL="dump"),
            capture_output=True,
            check=False)
        stderr = proc.stderr.decode("utf-8", "replace")
        if proc.returncode == EXIT_NO_MESA:
            raise ToolMissing(
                f"Mesa EGL/GLES2 is not usable ({_last_line(stderr)}); install the Debian "
                f"packages {DEBIAN_PACKAGES}")
        if proc.returncode != 0 or not res_path.exists():
            raise _child_failure(sources, proc.returncode, stderr)
        result = json.loads(res_path.read_text(encoding="utf-8"))
    if result["renderer"] != "softpipe":
        raise ToolMissing(f"Mesa gave renderer {result['renderer']!r}, not softpipe; install "
                          f"the Debian packages {DEBIAN_PACKAGES}")
    return result, stderr


def mesa_available() -> tuple[bool, str]:
    """Whether Mesa softpipe can compile here, and why not (for test skips)."""
    try:
        compile_program("attribute vec4 p; void main() { gl_Position = p; }",
                        "void main() { gl_FragColor = vec4(1.0); }", name="probe")
    except ToolMissing as exc:
        return False, str(exc)
    except (TilesimError, RuntimeError, OSError) as exc:
        return False, f"Mesa softpipe compile failed: {exc}"
    return True, ""


def _check_version(source: ProgramSource) -> None:
    """InputError unless each stage is GLSL ES 1.00 (GLSL_ES_VERSIONS): a GLES2 program's
    shaders cannot be GLSL ES 3.x, which Mesa's GLES 3.1 context would otherwise compile."""
    for stage in STAGES:
        text = source.vertex if stage == "vertex" else source.fragment
        m = _VERSION_RE.search(text)
        if m is None or int(m["number"]) in GLSL_ES_VERSIONS:
            continue
        given = f"#version {m['number']}{m['profile'] or ''}"
        raise InputError(f"{stage} shader is {given}: an OpenGL ES 2.0 context compiles "
                         "GLSL ES 1.00 (#version 100) only, and so does tilesim",
                         source=source.origin(stage), line=text.count("\n", 0, m.start()) + 1)


def _child_failure(sources: list[ProgramSource], code: int, stderr: str) -> TilesimError:
    """The error for a Mesa compiler process that died: it names the program Mesa was
    compiling (the child's last ``MARKER_PROGRAM`` line) and Mesa's last words."""
    started = re.findall(rf"^{MARKER_PROGRAM} (\d+)$", stderr, re.M)
    said = [line for line in stderr.split("\n") if line.strip() and not line.startswith("@@")]
    last = _one_line(said[-1]) if said else "no message"
    how = f"exit status {code}" if code >= 0 else f"signal {-code}"
    if not started or int(started[-1]) >= len(sources):
        return TilesimError(f"Mesa's compiler process failed ({how}) before it compiled a "
                            f"program: {last}")
    return InputError(f"Mesa's compiler process died ({how}) compiling this program: {last}",
                      source=sources[int(started[-1])].program())


def _one_line(text: str) -> str:
    """A message from Mesa or the child as one line (errors are one line, DESIGN.md 11)."""
    return " ".join(text.split())


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().split("\n") if line.strip()]
    return lines[-1] if lines else "no message"


# Mesa's message for an #extension it does not know or support in this stage.
_UNSUPPORTED_EXTENSION = re.compile(r"extension `(\w+)' unsupported")


def _first_log_line(log: str) -> int | None:
    # Mesa info logs read "0:12(3): error: ..." (source string : line (column)).
    m = re.search(r"^\d+:(\d+)\(\d+\)", log, re.M)
    return int(m.group(1)) if m else None


_MARKER_RE = re.compile(rf"^(?P<kind>{MARKER_BEGIN}|{MARKER_END}) (?P<key>\S+)$")


def _split_segments(stderr: str) -> dict[str, str]:
    """Mesa's output between each pair of link markers, keyed by "N" or "N.probeR"."""
    segments: dict[str, str] = {}
    key: str | None = None
    lines: list[str] = []
    for line in stderr.split("\n"):
        m = _MARKER_RE.match(line)
        if m is None:
            if key is not None:
                lines.append(line)
        elif m["kind"] == MARKER_BEGIN:
            key, lines = m["key"], []
        elif key == m["key"]:
            segments[key] = "\n".join(lines)
            key = None
    return segments


# ----------------------------------------------------------------------------------------------
# Interface construction


class _Registers:
    """The declared registers of one stage's TGSI, and which of them the interface explains."""

    def __init__(self, stage: str, tgsi: str):
        self.stage = stage
        self.dcls = mesa_dump.parse_dcls(tgsi)
        self.by_reg = {(d.file, d.index): d for d in self.dcls if d.file != "CONST"}
        self.const = {(d.buffer, d.index) for d in self.dcls if d.file == "CONST"}
        self.used: set[tuple[str, int]] = set()

    def get(self, file: str, index: int, what: str) -> Dcl:
        dcl = self.by_reg.get((file, index))
        if dcl is None:
            raise _mismatch(f"{what}: NIR says {file}[{index}] but the {self.stage} TGSI does "
                            "not declare it")
        self.used.add((file, index))
        return dcl

    def by_semantic(self, file: str, semantic: str, index: int | None) -> Dcl | None:
        for dcl in self.dcls:
            if dcl.file == file and dcl.semantic == semantic and dcl.semantic_index == index:
                self.used.add((file, dcl.index))
                return dcl
        return None

    def unexplained(self) -> list[str]:
        return [d.register for d in self.dcls if d.file in ("IN", "OUT", "SV", "SAMP", "SVIEW")
                and (d.file if d.file != "SVIEW" else "SAMP", d.index) not in self.used]


def _mismatch(message: str) -> InterfaceError:
    return InterfaceError(f"Mesa's NIR and TGSI disagree ({message}); tilesim cannot tell "
                          "which register holds which GLSL variable")


def _gl_type(enum: int, what: str) -> tuple[str, int, int, str]:
    """GL_TYPES[enum], or an InterfaceError naming ``what`` when GLSL ES 1.00 has no such
    type."""
    if enum not in GL_TYPES:
        raise InterfaceError(f"{what} has GL type 0x{enum:04X}, which is not a GLSL ES 1.00 "
                             "type tilesim runs")
    return GL_TYPES[enum]


def _unsupported_builtin(who: str, mode: str, name: str) -> InterfaceError:
    """A built-in variable the renderer does not implement (UNSUPPORTED_BUILTINS) that ``who``
    (the program or one shader) uses; ``name`` as GL or NIR prints it (``gl_FragData@1``: part
    of a split array, ``gl_DepthRange.near``: a member)."""
    base = re.split(r"[@\[.]", name, maxsplit=1)[0]
    verb = "writes" if mode == "shader_out" else "reads"
    origin = UNSUPPORTED_BUILTINS.get(base)
    what = f"{base} ({origin})" if origin else f"the built-in {base}"
    return InterfaceError(f"{who} {verb} {what}, which tilesim does not implement")


def _semantic(dcl: Dcl) -> str:
    return dcl.semantic if dcl.semantic_index is None else f"{dcl.semantic}[{dcl.semantic_index}]"


def _parse_nir_type(text: str) -> tuple[str, int | None]:
    """'vec3[2]' -> ('vec3', 2); 'mat4' -> ('mat4', None)."""
    m = re.fullmatch(r"(\w+)((?:\[\d+\])*)", text)
    if m is None:
        raise _mismatch(f"unexpected NIR type {text!r}")
    dims = [int(d) for d in re.findall(r"\[(\d+)\]", m.group(2))]
    if len(dims) > 1:
        raise _mismatch(f"arrays of arrays ({text}) are not GLSL ES 1.00")
    return m.group(1), (dims[0] if dims else None)


def build_interface(source: ProgramSource, res: dict, stages: dict[str, StageDump],
                    probes: list[dict[str, StageDump]], mesa: dict,
                    declared: dict[str, dict[str, str]] | None = None) -> dict:
    """Assemble interface.json (see the module docstring) for one linked program.
    ``declared``: per stage, the precision qualifier of each global variable from Mesa's
    GLSL IR (:func:`mesa_dump.glsl_ir_precisions`); it takes precedence over the NIR's."""
    regs = {stage: _Registers(stage, stages[stage].tgsi) for stage in STAGES}
    nir = {stage: stages[stage].nir_vars for stage in STAGES}
    interface = {
        "format": INTERFACE_FORMAT,
        "version": INTERFACE_VERSION,
        "mesa": mesa,
        "bound_attrib_locations": dict(sorted((source.attrib_bindings or {}).items())),
        "attributes": _attributes(res["attributes"], nir["vertex"], regs["vertex"]),
        "varyings": _varyings(res, nir, regs, probes),
    }
    uniforms, samplers, state = _uniforms(source, res["uniforms"], nir, regs)
    interface.update(uniforms=uniforms, samplers=samplers, state=state,
                     builtins={stage: _builtins(stage, nir[stage], regs[stage])
                               for stage in STAGES})
    for stage in STAGES:
        left = regs[stage].unexplained()
        if left:
            raise _mismatch(f"the {stage} TGSI declares {', '.join(left)}, which no GLSL "
                            "variable explains")
    interface["precision"] = _precision(interface, stages, source, declared or {})
    return interface


def _nir_precisions(nir_vars: list[NirVar]) -> dict[str, str | None]:
    """GLSL name -> precision qualifier of every NIR variable; a varying Mesa packed with
    others (``packed:a,b.xy``) gives its members the packed variable's precision."""
    out: dict[str, str | None] = {}
    for var in nir_vars:
        if var.name.startswith("packed:"):
            for member in var.name[len("packed:"):].split(","):
                out.setdefault(re.split(r"[\[.]", member, maxsplit=1)[0], var.precision)
        else:
            out[var.name] = var.precision
    return out


def _precision(interface: dict, stages: dict[str, StageDump], source: ProgramSource,
               declared: dict[str, dict[str, str]]) -> dict:
    """The ``precision`` entry of interface.json (module docstring)."""
    entry: dict = {"version": precision.PRECISION_FORMAT_VERSION, "rule": PRECISION_RULE}
    for stage in STAGES:
        qualifiers = {**_nir_precisions(stages[stage].nir_vars), **declared.get(stage, {})}
        registers = precision.register_precisions(interface, stage, qualifiers)
        program = parse(stages[stage].tgsi, source=source.origin(stage) + " (TGSI)")
        entry[stage] = {"registers": dict(sorted(registers.items())),
                        "instructions": precision.instruction_precisions(program, registers)}
    return entry


def _attributes(active: list[dict], nir_vars: list[NirVar], regs: _Registers) -> list[dict]:
    inputs = {v.name: v for v in nir_vars if v.mode == "shader_in"}
    out = []
    for attr in sorted(active, key=lambda a: (a["location"], a["name"])):
        glsl_type, cols, rows, _ = _gl_type(attr["type"], f"attribute {attr['name']}")
        var = inputs.pop(attr["name"], None)
        registers = None
        if var is not None:
            if var.slot != f"VERT_ATTRIB_GENERIC{attr['location']}":
                raise _mismatch(f"attribute {attr['name']} at GL location {attr['location']} "
                                f"but NIR slot {var.slot}")
            registers = [regs.get("IN", var.driver_location + c, f"attribute {attr['name']}")
                         .register for c in range(cols)]
        out.append({"name": attr["name"], "type": glsl_type, "location": attr["location"],
                    "registers": registers, "components": XYZW[:rows]})
    if inputs:
        raise _mismatch(f"NIR vertex inputs {sorted(inputs)} are not active GL attributes")
    return out


def _probe_placement(res: dict, probes: list[dict[str, StageDump]]) -> dict:
    """{(varying, flattened component): (GENERIC index, component)} from the probe links."""
    placement = {}
    for rnd, dump in zip(res["probes"], probes, strict=True):
        vs = dump["vertex"]
        attr_reg = {}
        for var in vs.nir_vars:
            m = re.fullmatch(r"tilesim_probe(\d+)", var.name)
            if var.mode == "shader_in" and m:
                attr_reg[var.driver_location] = int(m.group(1))
        outs = {d.index: d for d in mesa_dump.parse_dcls(vs.tgsi) if d.file == "OUT"}
        for (out_index, comp), (in_index, in_comp) in mesa_dump.trace_input_moves(
                vs.tgsi).items():
            dcl = outs.get(out_index)
            if dcl is None or dcl.semantic != "GENERIC" or in_index not in attr_reg:
                continue
            atom = 4 * attr_reg[in_index] + in_comp
            name, flat = rnd["atoms"][atom]
            placement[(name, flat)] = (dcl.semantic_index, comp)
    return placement


def _varyings(res: dict, nir: dict[str, list[NirVar]], regs: dict[str, _Registers],
              probes: list[dict[str, StageDump]]) -> list[dict]:
    declared: dict[str, dict] = {}
    for item in res["vs_outputs"] + res["fs_inputs"]:
        if item["name"].startswith("gl_"):
            continue
        is_array = item["name"].endswith("]")
        name = item["name"].rsplit("[", 1)[0] if is_array else item["name"]
        entry = {"name": name, "type": _gl_type(item["type"], f"varying {name}")[0],
                 "array_size": item["size"] if is_array else None}
        if declared.setdefault(name, entry) != entry:
            raise _mismatch(f"varying {name} has different types in the two stages")
    placement = _probe_placement(res, probes)
    by_slot: dict[int, set[str]] = {}
    out = []
    for name in sorted(declared):
        entry = declared[name]
        cols, rows, _ = TYPE_SHAPES[entry["type"]]
        total = (entry["array_size"] or 1) * cols * rows
        places = [placement.get((name, k)) for k in range(total)]
        if all(p is None for p in places):  # not matched between the stages: eliminated
            out.append({**entry, "vertex": None, "fragment": None})
            continue
        if any(p is None for p in places):
            raise _mismatch(f"the packing probe placed only part of varying {name}")
        pieces = []
        for k, (generic, comp) in enumerate(places):
            by_slot.setdefault(generic, set()).add(name)
            last = pieces[-1] if pieces else None
            if last and last["generic"] == generic and last["component"] + last["count"] == comp:
                last["count"] += 1
            else:
                pieces.append({"first": k, "count": 1, "generic": generic, "component": comp})
        entry = dict(entry)
        for stage, file in (("vertex", "OUT"), ("fragment", "IN")):
            staged = []
            for piece in pieces:
                dcl = regs[stage].by_semantic(file, "GENERIC", piece["generic"])
                item = {"first": piece["first"], "count": piece["count"],
                        "register": dcl.register if dcl else None,
                        "semantic": f"GENERIC[{piece['generic']}]",
                        "component": piece["component"]}
                if stage == "fragment":
                    item["interpolation"] = dcl.extra[0] if dcl and dcl.extra else None
                staged.append(item)
            entry[stage] = staged if any(p["register"] for p in staged) else None
        out.append(entry)
    _check_varyings_against_nir(nir, regs, by_slot, placement)
    return out


def _check_varyings_against_nir(nir: dict[str, list[NirVar]], regs: dict[str, _Registers],
                                by_slot: dict[int, set[str]], placement: dict) -> None:
    """The probe's packing must agree with the real link's NIR variables and registers."""
    for stage, mode, file in (("vertex", "shader_out", "OUT"), ("fragment", "shader_in", "IN")):
        for var in nir[stage]:
            m = re.fullmatch(r"VARYING_SLOT_VAR(\d+)", var.slot or "")
            if var.mode != mode or m is None:
                continue
            generic = int(m.group(1))
            dcl = regs[stage].get(file, var.driver_location, f"varying {var.name}")
            if (dcl.semantic, dcl.semantic_index) != ("GENERIC", generic):
                raise _mismatch(f"{var.name} in VAR{generic} but {dcl.register} is "
                                f"{_semantic(dcl)}")
            if var.name.startswith("packed:"):
                # Members read "v", "a[1]" (array element) or "v.xy" (part of a vector that
                # straddles two slots); compare base names.
                members = {re.split(r"[\[.]", n, maxsplit=1)[0]
                           for n in var.name[len("packed:"):].split(",")}
                if not by_slot.get(generic, set()) <= members:
                    raise _mismatch(f"probe put {sorted(by_slot[generic])} in VAR{generic}, "
                                    f"Mesa packed {sorted(members)}")
            else:
                # NIR splits matrix/array varyings into vec4 variables "m", "m@0", "m@1"...
                base = var.name.split("@", 1)[0]
                comps = sorted(c for (n, _), (g, c) in placement.items()
                               if n == base and g == generic)
                if comps != [XYZW.index(c) for c in var.components]:
                    raise _mismatch(f"{var.name} is VAR{generic}.{var.components} in NIR, "
                                    f"the probe found components {comps}")


def _uniforms(source: ProgramSource, active: list[dict], nir: dict[str, list[NirVar]],
              regs: dict[str, _Registers]) -> tuple[list[dict], list[dict], list[dict]]:
    per_stage = {stage: {v.name: v for v in nir[stage] if v.mode == "uniform"}
                 for stage in STAGES}
    uniforms, samplers = [], []
    for uni in sorted(active, key=lambda u: (u["location"], u["name"])):
        gl_name = uni["name"]
        base = re.split(r"[\[.]", gl_name, maxsplit=1)[0]
        stages = [stage for stage in STAGES if base in per_stage[stage]] or ["vertex"]
        if base in STATE_BUILTIN_UNIFORMS:
            continue    # the stages read it as a state uniform (the loop below)
        if base.startswith("gl_"):
            raise _unsupported_builtin("the program", "uniform", base)
        if "." in gl_name:
            raise InputError(f"uniform {gl_name} is a struct member; struct uniforms are not "
                             "supported by tilesim", source=source.origin(stages[0]))
        if uni["type"] in EXTENSION_SAMPLERS:
            raise InputError(f"uniform {gl_name} is a {EXTENSION_SAMPLERS[uni['type']]}, "
                             "which tilesim does not implement", source=source.origin(stages[0]))
        if uni["type"] not in GL_TYPES:
            raise InputError(f"uniform {gl_name} has GL type 0x{uni['type']:04X}, which is not "
                             "a GLSL ES 1.00 type", source=source.origin(stages[0]))
        glsl_type, cols, rows, storage = GL_TYPES[uni["type"]]
        is_array = gl_name.endswith("]")
        name = gl_name.rsplit("[", 1)[0] if is_array else gl_name
        entry = {"name": name, "gl_name": gl_name, "type": glsl_type,
                 "array_size": uni["size"] if is_array else None, "location": uni["location"]}
        if storage != "sampler":
            entry["storage"] = storage
        for stage in STAGES:
            var = per_stage[stage].pop(name, None)
            entry[stage] = None if var is None else _uniform_place(
                var, glsl_type, cols, rows, storage, regs[stage])
        (samplers if storage == "sampler" else uniforms).append(entry)
    state = []
    for stage in STAGES:
        for name, var in sorted(per_stage[stage].items()):
            if name not in STATE_UNIFORMS:
                raise _mismatch(f"NIR {stage} uniform {name} is not an active GL uniform")
            base, _ = _parse_nir_type(var.type)
            if base != "vec4":
                raise _mismatch(f"state uniform {name} has type {var.type}")
            _check_const(regs[stage], var.driver_location, 1, name)
            state.append({"name": name, "stage": stage, "buffer": 0,
                          "slot": var.driver_location, "layout": ["xyzw"],
                          "value": STATE_UNIFORMS[name]})
    return uniforms, samplers, state


def _uniform_place(var: NirVar, glsl_type: str, cols: int, rows: int, storage: str,
                   regs: _Registers) -> dict:
    base, length = _parse_nir_type(var.type)
    if base != glsl_type:
        raise _mismatch(f"uniform {var.name} is {glsl_type} for GL but {var.type} in NIR")
    elements = length or 1
    if storage == "sampler":
        registers = []
        for e in range(elements):
            regs.get("SAMP", var.driver_location + e, f"sampler {var.name}")
            registers.append(f"SAMP[{var.driver_location + e}]")
        view = regs.by_reg.get(("SVIEW", var.driver_location))
        return {"samplers": registers, "target": view.extra[0] if view else None,
                "return_type": view.extra[1] if view and len(view.extra) > 1 else None}
    slots = elements * cols
    _check_const(regs, var.driver_location, slots, var.name)
    return {"buffer": 0, "first_slot": var.driver_location, "slots": slots,
            "layout": [XYZW[:rows]] * slots}


def _check_const(regs: _Registers, first: int, count: int, name: str) -> None:
    missing = [i for i in range(first, first + count) if (0, i) not in regs.const]
    if missing:
        raise _mismatch(f"uniform {name} needs CONST[0][{first}..{first + count - 1}] but the "
                        f"{regs.stage} TGSI does not declare slots {missing}")


def _builtins(stage: str, nir_vars: list[NirVar], regs: _Registers) -> list[dict]:
    out = []
    dual = any(d.file == "OUT" and d.semantic == "COLOR" and d.semantic_index == 1
               for d in regs.dcls)
    for var in sorted(nir_vars, key=lambda v: (v.mode, v.driver_location, v.name)):
        if not var.name.startswith("gl_") or var.mode == "uniform":
            continue
        if var.name not in BUILTIN_VARS.get((stage, var.mode), set()):
            raise _unsupported_builtin(f"the {stage} shader", var.mode, var.name)
        file = {"shader_in": "IN", "shader_out": "OUT", "system_value": "SV"}[var.mode]
        dcl = None
        if stage == "fragment" and var.name in COLOR_INDEX and dual:
            # Two color outputs (EXT_blend_func_extended): NIR's driver locations need not be
            # the TGSI's output order, the COLOR semantic index says which is which.
            dcl = regs.by_semantic("OUT", "COLOR", COLOR_INDEX[var.name])
        if dcl is None:
            dcl = regs.get(file, var.driver_location, var.name)
        components = "z" if var.slot == "FRAG_RESULT_DEPTH" else var.components or dcl.mask
        item = {"name": var.name, "register": dcl.register, "semantic": _semantic(dcl),
                "components": components}
        if stage == "fragment" and var.mode == "shader_in":
            item["interpolation"] = dcl.extra[0] if dcl.extra else None
        out.append(item)
    return out
