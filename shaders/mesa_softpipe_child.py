"""Child process that compiles GLSL ES 1.00 programs with Mesa softpipe and lets Mesa print TGSI.

Run by :mod:`tilesim.shaders.glsl_compile` as ``python -I shaders/mesa_softpipe_child.py REQUEST
RESULT`` (``python -m tilesim.shaders.mesa_softpipe_child`` works too) with
``GALLIUM_DRIVER=softpipe
SOFTPIPE_DEBUG=vs,fs EGL_PLATFORM=surfaceless``. It creates a real GLES2 context (EGL
surfaceless, no window, no X server) through ctypes, then for each program compiles, links and
queries the GL interface (active attributes and uniforms, and the varyings of each stage through
one-stage separable programs), and links the varying-packing probes of :func:`probe_rounds`.

Mesa prints the NIR and the TGSI of each shader on stderr when the program is linked. Mesa also
prints its internal blit shaders while the context is created, so right before each link this
process writes a marker line straight to file descriptor 2 (unbuffered, so it interleaves
correctly with Mesa's own writes), ``@@tilesim-link-begin N`` (``N.probeR`` for probes), and an
end marker after it; the parent parses only what lies between them.

REQUEST is a JSON file::

    {"programs": [{"vertex": "...", "fragment": "...", "attrib_bindings": {"position": 0}}]}

RESULT is a JSON file written by this process::

    {"renderer": "softpipe", "version": "OpenGL ES 3.1 Mesa 22.3.6",
     "programs": [{"status": "ok" | "compile_error" | "link_error" | "probe_error",
                   "stage": "vertex" | "fragment" | null, "log": "...",
                   "attributes": [{"name", "size", "type", "location"}],
                   "uniforms": [{"name", "size", "type", "location"}],
                   "vs_outputs": [{"name", "type", "size"}], "fs_inputs": [...],
                   "probes": [{"source": "...", "atoms": [[varying, component], ...]}]}]}

Exit status 0: RESULT written (compile errors are results, not failures); 3: EGL/GLES or Mesa
could not be loaded or initialised (the message on stderr says which). This module imports only
the standard library and :mod:`tilesim.mesa` (itself standard library only), so it starts fast.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

from tilesim.mesa import EXIT_NO_MESA, GL, NoMesa

# Markers written to fd 2 around each link. The parent matches them exactly.
MARKER_BEGIN = "@@tilesim-link-begin"
MARKER_END = "@@tilesim-link-end"
# Written when the child starts on program N (``@@tilesim-program N``), so that the parent can
# name the program Mesa was compiling if the process dies there.
MARKER_PROGRAM = "@@tilesim-program"

# GLES enums used below.
GL_VERTEX_SHADER = 0x8B31
GL_FRAGMENT_SHADER = 0x8B30
GL_ACTIVE_UNIFORMS = 0x8B86
GL_ACTIVE_UNIFORM_MAX_LENGTH = 0x8B87
GL_ACTIVE_ATTRIBUTES = 0x8B89
GL_ACTIVE_ATTRIBUTE_MAX_LENGTH = 0x8B8A
GL_RENDERER = 0x1F01
GL_VERSION = 0x1F02
GL_PROGRAM_SEPARABLE = 0x8258
GL_PROGRAM_INPUT = 0x92E3
GL_PROGRAM_OUTPUT = 0x92E4
GL_ACTIVE_RESOURCES = 0x92F5
GL_NAME_LENGTH = 0x92F9
GL_TYPE = 0x92FA
GL_ARRAY_SIZE = 0x92FB

# Components of the GLSL ES 1.00 varying types: (columns, rows) by GL type enum.
MATRIX_COLUMNS = {0x8B5A: 2, 0x8B5B: 3, 0x8B5C: 4}
VARYING_SHAPES = {0x1406: (1, 1), 0x8B50: (1, 2), 0x8B51: (1, 3), 0x8B52: (1, 4),
                  0x8B5A: (2, 2), 0x8B5B: (3, 3), 0x8B5C: (4, 4)}
# GL guarantees 16 vertex attributes; a probe shares them with the original shader's attributes,
# which its renamed main still references.
MAX_ATTRIBUTES = 16



class ProbeTooManyInputs(RuntimeError):
    """A probe declared more attributes than the link accepts."""


def probe_rounds(vertex_source: str, outputs: list[dict], attributes: int = 16) -> list[dict]:
    """Vertex shaders that reveal where the linker packed each varying component.

    Each probe keeps the original vertex shader's declarations (so the linker sees the same
    varyings in the same order) but renames its ``main`` away with the preprocessor and appends a
    new ``main`` that copies one distinct attribute component (``tilesim_probeJ.c``, atom
    ``4*J+c``) into each varying component. Attributes rather than constants, because NIR linking
    folds constant varyings into the fragment shader. The GLSL linker packs only the varyings the
    vertex shader references, so every probe writes every output the original references (those
    the interface query lists); when the attributes cannot hold all components, the varyings
    beyond a round's share get a constant instead (folded only after packing) and the next round
    probes them.

    ``outputs``: the user varyings of the vertex shader (name, type enum, array size) as the
    program interface query reports them; ``attributes``: how many vec4 attributes a probe may
    add. Returns [{"source": GLSL, "atoms": [[varying name, flattened component], ...]}] where
    list position = atom number.
    """
    writes = []  # (lvalue, [(varying name, flattened component)])
    for out in sorted(outputs, key=lambda o: o["name"]):
        if out["type"] not in VARYING_SHAPES:
            raise RuntimeError(f"varying {out['name']} has GL type 0x{out['type']:04X}, which "
                               "is not a GLSL ES 1.00 varying type (float, vec2-4, mat2-4)")
        cols, rows = VARYING_SHAPES[out["type"]]
        is_array = out["name"].endswith("]")
        base = out["name"].rsplit("[", 1)[0] if is_array else out["name"]
        for element in range(out["size"] if is_array else 1):
            for col in range(cols):
                lvalue = base + (f"[{element}]" if is_array else "") + (
                    f"[{col}]" if cols > 1 else "")
                first = (element * cols + col) * rows
                writes.append((lvalue, [(base, first + k) for k in range(rows)]))
    rounds: list[set[int]] = [set()]  # indices into writes probed by each round
    used, capacity = 0, 4 * attributes
    for i, (_, comps) in enumerate(writes):
        if used + len(comps) > capacity:
            rounds.append(set())
            used = 0
        rounds[-1].add(i)
        used += len(comps)
    # The #define must follow a #version line, which has to come first in the shader.
    lines = vertex_source.split("\n")
    at = next((i + 1 for i, line in enumerate(lines)
               if line.lstrip().startswith("#") and line.lstrip()[1:].lstrip().startswith(
                   "version")), 0)
    head = "\n".join(lines[:at] + ["#define main tilesim_original_main"] + lines[at:])
    result = []
    for probed in rounds:
        atoms, body = [], ["    gl_Position = vec4(0.0);"]
        for i, (lvalue, comps) in enumerate(writes):
            refs = []
            for comp in comps:
                if i in probed:
                    refs.append(f"tilesim_probe{len(atoms) // 4}.{'xyzw'[len(atoms) % 4]}")
                    atoms.append(list(comp))
                else:
                    refs.append("0.0")
            rhs = refs[0] if len(refs) == 1 else f"vec{len(refs)}({', '.join(refs)})"
            body.append(f"    {lvalue} = {rhs};")
        decls = [f"attribute vec4 tilesim_probe{j};" for j in range((len(atoms) + 3) // 4)]
        source = "\n".join([head, "#undef main", *decls, "void main()", "{", *body, "}", ""])
        result.append({"source": source, "atoms": atoms})
    return result


def _marker(text: str) -> None:
    # os.write bypasses Python's buffering, so the marker lands exactly between Mesa's writes.
    os.write(2, f"\n{text}\n".encode("ascii"))


class Gles2:
    """A current GLES2 context on Mesa's surfaceless EGL platform, with the queries this child
    needs (entry points and their signatures: :data:`tilesim.mesa.GL_FUNCTIONS`)."""

    def __init__(self) -> None:
        self.gl = GL.create("gles2")

    def string(self, name: int) -> str:
        return self.gl.string(name)

    def _active(self, program: int, count_pname: int, length_pname: int, getter, locator):
        """Active attributes or uniforms as dicts (name, size, type enum, location)."""
        out = []
        size_max = max(self.gl.program_parameter(program, length_pname), 1) + 1
        for index in range(self.gl.program_parameter(program, count_pname)):
            buf = ctypes.create_string_buffer(size_max)
            length, size, gltype = ctypes.c_int(), ctypes.c_int(), ctypes.c_uint()
            getter(program, index, size_max, ctypes.byref(length), ctypes.byref(size),
                   ctypes.byref(gltype), buf)
            name = buf.value
            out.append({"name": name.decode("utf-8"), "size": size.value, "type": gltype.value,
                        "location": locator(program, name)})
        return out

    def _resources(self, shader: int, interface: int) -> list[dict]:
        """Inputs or outputs of a separable one-stage program made of ``shader``.

        A separable program exposes its vertex outputs / fragment inputs (the varyings, with GL
        types and array sizes) to the program interface query, which a VS+FS program does not.
        """
        gl = self.gl
        prog = gl.glCreateProgram()
        try:
            gl.glProgramParameteri(prog, GL_PROGRAM_SEPARABLE, 1)
            gl.glAttachShader(prog, shader)
            gl.glLinkProgram(prog)
            if not self.gl.linked(prog):
                raise RuntimeError("separable link failed: " + self.gl.program_log(prog))
            count = ctypes.c_int()
            gl.glGetProgramInterfaceiv(prog, interface, GL_ACTIVE_RESOURCES, ctypes.byref(count))
            out = []
            for i in range(count.value):
                props = (ctypes.c_uint * 3)(GL_NAME_LENGTH, GL_TYPE, GL_ARRAY_SIZE)
                vals = (ctypes.c_int * 3)()
                gl.glGetProgramResourceiv(prog, interface, i, 3, props, 3, None, vals)
                buf = ctypes.create_string_buffer(vals[0] + 1)
                gl.glGetProgramResourceName(prog, interface, i, vals[0] + 1, None, buf)
                out.append({"name": buf.value.decode("utf-8"), "type": vals[1],
                            "size": vals[2]})
            return out
        finally:
            gl.glDeleteProgram(prog)

    def _probe(self, index: int, vertex_source: str, fragment_shader: int,
               outputs: list[dict], used_attributes: int) -> list[dict]:
        """Link each probe vertex shader (see :func:`probe_rounds`) with the real fragment shader;
        Mesa prints its TGSI between ``MARKER_BEGIN index.probeN`` markers."""
        attributes = max(1, MAX_ATTRIBUTES - used_attributes)
        while True:
            try:
                return self._probe_rounds(index, probe_rounds(vertex_source, outputs,
                                                              attributes), fragment_shader)
            except ProbeTooManyInputs:
                # The renamed original main may still count attributes the real link dropped.
                if attributes == 1:
                    raise RuntimeError("probe needs more vertex attributes than GL has") from None
                attributes //= 2

    def _probe_rounds(self, index: int, rounds: list[dict], fragment_shader: int) -> list[dict]:
        gl = self.gl
        for number, probe in enumerate(rounds):
            shader, ok = self.gl.compile_shader(GL_VERTEX_SHADER, probe["source"])
            prog = gl.glCreateProgram()
            try:
                if not ok:
                    raise RuntimeError("probe vertex shader failed to compile: "
                                       + self.gl.shader_log(shader))
                gl.glAttachShader(prog, shader)
                gl.glAttachShader(prog, fragment_shader)
                _marker(f"{MARKER_BEGIN} {index}.probe{number}")
                gl.glLinkProgram(prog)
                _marker(f"{MARKER_END} {index}.probe{number}")
                if not self.gl.linked(prog):
                    log = self.gl.program_log(prog)
                    if "too many vertex shader inputs" in log:
                        raise ProbeTooManyInputs(log)
                    raise RuntimeError("probe failed to link: " + log)
            finally:
                gl.glDeleteProgram(prog)
                gl.glDeleteShader(shader)
        return rounds

    def build(self, index: int, program: dict) -> dict:
        """Compile and link one program; Mesa prints its NIR and TGSI between the markers."""
        gl = self.gl
        shaders = []
        _marker(f"{MARKER_PROGRAM} {index}")
        try:
            for stage, kind in (("vertex", GL_VERTEX_SHADER), ("fragment", GL_FRAGMENT_SHADER)):
                shader, ok = self.gl.compile_shader(kind, program[stage])
                shaders.append(shader)
                if not ok:
                    return {"status": "compile_error", "stage": stage,
                            "log": self.gl.shader_log(shader)}
            prog = gl.glCreateProgram()
            try:
                for shader in shaders:
                    gl.glAttachShader(prog, shader)
                for name, location in sorted(program.get("attrib_bindings", {}).items()):
                    gl.glBindAttribLocation(prog, int(location), name.encode("utf-8"))
                _marker(f"{MARKER_BEGIN} {index}")
                gl.glLinkProgram(prog)
                _marker(f"{MARKER_END} {index}")
                if not self.gl.linked(prog):
                    return {"status": "link_error", "stage": None,
                            "log": self.gl.program_log(prog)}
                log = self.gl.program_log(prog)
                try:
                    vs_outputs = self._resources(shaders[0], GL_PROGRAM_OUTPUT)
                    fs_inputs = self._resources(shaders[1], GL_PROGRAM_INPUT)
                    user = [o for o in vs_outputs if not o["name"].startswith("gl_")]
                    attributes = self._active(prog, GL_ACTIVE_ATTRIBUTES,
                                              GL_ACTIVE_ATTRIBUTE_MAX_LENGTH,
                                              gl.glGetActiveAttrib, gl.glGetAttribLocation)
                    # Matrices take one location per column.
                    used = sum(MATRIX_COLUMNS.get(a["type"], 1) for a in attributes)
                    probes = self._probe(index, program["vertex"], shaders[1], user, used)
                except RuntimeError as exc:
                    return {"status": "probe_error", "stage": None, "log": str(exc)}
                return {
                    "status": "ok", "stage": None, "log": log,
                    "vs_outputs": vs_outputs, "fs_inputs": fs_inputs,
                    "probes": [{"atoms": p["atoms"], "source": p["source"]} for p in probes],
                    "attributes": attributes,
                    "uniforms": self._active(prog, GL_ACTIVE_UNIFORMS,
                                             GL_ACTIVE_UNIFORM_MAX_LENGTH,
                                             gl.glGetActiveUniform, gl.glGetUniformLocation),
                }
            finally:
                gl.glDeleteProgram(prog)
        finally:
            for shader in shaders:
                gl.glDeleteShader(shader)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: mesa_softpipe_child.py REQUEST.json RESULT.json",
              file=sys.stderr)
        return 2
    request_path, result_path = argv
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    try:
        ctx = Gles2()
    except NoMesa as exc:
        print(f"tilesim-mesa-child: {exc}", file=sys.stderr)
        return EXIT_NO_MESA
    result = {"renderer": ctx.string(GL_RENDERER), "version": ctx.string(GL_VERSION),
              "programs": [ctx.build(i, p) for i, p in enumerate(request["programs"])]}
    # The parent owns RESULT's temporary folder, so a plain write is enough here.
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
