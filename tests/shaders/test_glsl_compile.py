"""GLSL -> TGSI through Mesa softpipe, the interface it derives, the corpus and trace reading."""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys

import pytest
from conftest import require_mesa, require_tools
from repo_paths import SCRIPTS

from tilesim.errors import InputError, ToolMissing
from tilesim.shaders import corpus, glsl_compile, mesa_dump
from tilesim.shaders.glsl_compile import compile_files, compile_program
from tilesim.shaders.trace_capture import (
    GL_FRAGMENT_SHADER,
    GL_VERTEX_SHADER,
    Call,
    Pointer,
    ProgramTracker,
    read_calls,
)

# The experiment this module reproduces, plus a float array.
VERTEX = """attribute vec3 position;
attribute vec2 uv;
uniform mat4 mvp;
uniform float scale;
uniform vec3 light[2];
uniform float weights[3];
varying vec2 v_uv;
varying float v_f;
void main()
{
    v_uv = uv * scale;
    v_f = dot(light[1], position) + weights[2];
    gl_Position = mvp * vec4(position, 1.0);
}
"""
FRAGMENT = """precision mediump float;
uniform sampler2D tex;
uniform vec4 color;
varying vec2 v_uv;
varying float v_f;
void main()
{
    vec4 c = texture2D(tex, v_uv) * color;
    if (v_f > 0.5) c.r = pow(c.g, 2.2);
    if (c.a < 0.1) discard;
    gl_FragColor = c + vec4(v_f);
}
"""


def _by_name(items: list[dict]) -> dict[str, dict]:
    return {item["name"]: item for item in items}


@pytest.mark.mesa
def test_small_program_interface(mesa):
    program = compile_program(VERTEX, FRAGMENT, name="small", attrib_bindings={"uv": 3})
    assert program.renderer == "softpipe"
    assert program.vertex_tgsi.startswith("VERT\n") and program.vertex_tgsi.endswith("END\n")
    assert program.fragment_tgsi.startswith("FRAG\n")
    assert "DCL OUT[1].xyz, GENERIC[0]" in program.vertex_tgsi
    assert "DCL IN[0].xyz, GENERIC[0], PERSPECTIVE" in program.fragment_tgsi
    iface = program.interface
    assert (iface["format"], iface["version"]) == ("tilesim-shader-interface", 1)
    assert iface["bound_attrib_locations"] == {"uv": 3}

    attrs = _by_name(iface["attributes"])
    assert attrs["position"] == {"name": "position", "type": "vec3", "location": 0,
                                 "registers": ["IN[0]"], "components": "xyz"}
    assert attrs["uv"]["location"] == 3 and attrs["uv"]["registers"] == ["IN[1]"]

    # v_uv and v_f are packed into one GENERIC register: .xy and .z.
    varyings = _by_name(iface["varyings"])
    assert varyings["v_uv"]["vertex"] == [{"first": 0, "count": 2, "register": "OUT[1]",
                                           "semantic": "GENERIC[0]", "component": 0}]
    assert varyings["v_f"]["vertex"] == [{"first": 0, "count": 1, "register": "OUT[1]",
                                          "semantic": "GENERIC[0]", "component": 2}]
    assert varyings["v_f"]["fragment"] == [{"first": 0, "count": 1, "register": "IN[0]",
                                            "semantic": "GENERIC[0]", "component": 2,
                                            "interpolation": "PERSPECTIVE"}]

    uniforms = _by_name(iface["uniforms"])
    assert uniforms["mvp"]["vertex"] == {"buffer": 0, "first_slot": 0, "slots": 4,
                                         "layout": ["xyzw"] * 4}
    assert uniforms["mvp"]["fragment"] is None
    assert uniforms["scale"]["vertex"]["first_slot"] == 4
    assert uniforms["light"]["gl_name"] == "light[0]"
    assert uniforms["light"]["vertex"] == {"buffer": 0, "first_slot": 5, "slots": 2,
                                           "layout": ["xyz", "xyz"]}
    assert uniforms["weights"]["array_size"] == 3
    assert uniforms["weights"]["vertex"] == {"buffer": 0, "first_slot": 7, "slots": 3,
                                             "layout": ["x", "x", "x"]}
    assert uniforms["color"]["vertex"] is None
    assert uniforms["color"]["fragment"]["first_slot"] == 0
    assert uniforms["mvp"]["storage"] == "float32"

    sampler = _by_name(iface["samplers"])["tex"]
    assert sampler["type"] == "sampler2D"
    assert sampler["fragment"] == {"samplers": ["SAMP[0]"], "target": "2D",
                                   "return_type": "FLOAT"}
    assert iface["builtins"]["vertex"] == [{"name": "gl_Position", "register": "OUT[0]",
                                            "semantic": "POSITION", "components": "xyzw"}]
    assert iface["builtins"]["fragment"] == [{"name": "gl_FragColor", "register": "OUT[0]",
                                              "semantic": "COLOR", "components": "xyzw"}]


@pytest.mark.mesa
def test_builtins_state_and_split_varyings(mesa):
    vs = """attribute vec4 p;
varying vec3 a;
varying vec2 b;
varying mat2 m;
uniform bool flag;
uniform ivec2 counts;
void main()
{
    a = p.xyz; b = p.yw; m = mat2(p.x, p.y, p.z, p.w);
    gl_PointSize = flag ? float(counts.y) : 1.0;
    gl_Position = p;
}
"""
    fs = """precision mediump float;
uniform samplerCube cube;
varying vec3 a;
varying vec2 b;
varying mat2 m;
void main()
{
    vec4 c = textureCube(cube, a) + vec4(b, gl_PointCoord) + vec4(m[0], m[1]);
    if (gl_FrontFacing) c += gl_FragCoord;
    gl_FragData[0] = c;
}
"""
    iface = compile_program(vs, fs, name="builtins").interface
    fragment = _by_name(iface["builtins"]["fragment"])
    assert fragment["gl_FragCoord"]["semantic"] == "POSITION"
    assert fragment["gl_FrontFacing"]["semantic"] == "FACE"
    assert fragment["gl_PointCoord"]["semantic"] == "PCOORD"
    assert fragment["gl_FragData"]["semantic"] == "COLOR"
    assert _by_name(iface["builtins"]["vertex"])["gl_PointSize"]["semantic"] == "PSIZE"
    assert [s["name"] for s in iface["state"]] == ["gl_FbWposYTransform"]
    uniforms = _by_name(iface["uniforms"])
    assert uniforms["flag"]["storage"] == "bool32"
    assert uniforms["counts"]["storage"] == "int32"
    assert _by_name(iface["samplers"])["cube"]["fragment"]["target"] == "CUBE"
    # Every component of every varying is placed exactly once per stage, 9 in all.
    placed = set()
    for varying in iface["varyings"]:
        for piece in varying["vertex"]:
            for k in range(piece["count"]):
                placed.add((piece["register"], piece["component"] + k))
    sizes = {"a": 3, "b": 2, "m": 4}
    assert sum(sizes.values()) == len(placed)
    for varying in iface["varyings"]:
        assert sum(p["count"] for p in varying["fragment"]) == sizes[varying["name"]]


@pytest.mark.mesa
def test_many_varyings_take_several_probe_rounds(mesa):
    # 83 varying components: more than one probe's 16 attributes can tell apart.
    names = [f"v{i}" for i in range(20)]
    decls = "".join(f"varying vec4 {n};\n" for n in names) + "varying float f[3];\n"
    vs = ("attribute vec4 p;\n" + decls + "void main()\n{\n"
          + "".join(f"    {n} = p * {i + 1}.0;\n" for i, n in enumerate(names))
          + "    f[0] = p.x; f[1] = p.y; f[2] = p.z;\n    gl_Position = p;\n}\n")
    fs = ("precision mediump float;\n" + decls + "void main()\n{\n"
          + "    vec4 c = vec4(f[0], f[1], f[2], 0.0);\n"
          + "".join(f"    c += {n};\n" for n in names) + "    gl_FragColor = c;\n}\n")
    iface = compile_program(vs, fs, name="many").interface
    seen = {}
    for varying in iface["varyings"]:
        for stage in ("vertex", "fragment"):
            for piece in varying[stage]:
                for k in range(piece["count"]):
                    key = (stage, piece["register"], piece["component"] + k)
                    assert key not in seen, (varying["name"], seen.get(key))
                    seen[key] = varying["name"]
        assert [p["semantic"] for p in varying["vertex"]] == [
            p["semantic"] for p in varying["fragment"]]
    assert len(seen) == 2 * 83


@pytest.mark.mesa
def test_compile_error_is_input_error_with_info_log(mesa, tmp_path):
    vert = tmp_path / "bad.vert"
    vert.write_text("attribute vec4 p;\nvoid main()\n{\n    gl_Position = q;\n}\n")
    frag = tmp_path / "ok.frag"
    frag.write_text("void main() { gl_FragColor = vec4(1.0); }\n")
    with pytest.raises(InputError) as info:
        compile_files(vert, frag, tmp_path / "out")
    assert info.value.source == str(vert)
    assert info.value.line == 4
    assert "vertex shader failed to compile" in str(info.value)
    assert "`q' undeclared" in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.mesa
def test_an_unsupported_extension_is_a_one_line_error(mesa, tmp_path):
    """An #extension Mesa 22.3's GLSL ES compiler does not offer (NV_shadow_samplers_cube)
    leaves no TGSI to run: one line names it. (EXT_shader_texture_lod, which Mesa lacks too,
    compiles as its GLSL ES 3.00 form: tests/render/test_gles2_extensions_mesa.py.)"""
    vert = tmp_path / "ok.vert"
    vert.write_text("attribute vec4 p;\nvoid main() { gl_Position = p; }\n")
    frag = tmp_path / "shadow.frag"
    frag.write_text("#extension GL_NV_shadow_samplers_cube : require\n"
                    "precision highp float; varying vec2 v;\n"
                    "void main() { gl_FragColor = vec4(v, 0.0, 1.0); }\n")
    with pytest.raises(InputError) as info:
        compile_files(vert, frag, tmp_path / "out")
    assert info.value.source == str(frag) and info.value.line == 1
    assert "\n" not in str(info.value)
    assert "fragment shader needs GL_NV_shadow_samplers_cube, which Mesa's GLSL ES compiler" \
        in str(info.value)


@pytest.mark.mesa
def test_link_error_and_struct_uniform(mesa):
    with pytest.raises(InputError, match="failed to link"):
        compile_program("varying vec2 v; void main() { v = vec2(0.0); gl_Position = vec4(0.0); }",
                        "precision mediump float; varying vec3 v;"
                        " void main() { gl_FragColor = vec4(v, 1.0); }")
    with pytest.raises(InputError, match="struct uniforms are not supported"):
        compile_program("struct S { vec4 a; }; uniform S s; void main() { gl_Position = s.a; }",
                        "void main() { gl_FragColor = vec4(1.0); }")


PLAIN_VS = "attribute vec4 p;\nvoid main() { gl_Position = p; }\n"
LINK = "capture.pkl: program 3 (glLinkProgram call 17)"
# (fragment shader, what the one-line error must say): built-ins of extensions Mesa's GLES2
# context compiles but the renderer does not implement.
UNSUPPORTED = {
    "EXT_draw_buffers": (
        "#extension GL_EXT_draw_buffers : require\nprecision mediump float;\n"
        "void main() { gl_FragData[0] = vec4(1.0); gl_FragData[1] = vec4(0.5); }\n",
        "fragment shader writes gl_FragData (EXT_draw_buffers"),
}


@pytest.mark.mesa
@pytest.mark.parametrize("written", ["gl_FragColor", "gl_FragData[0]"])
def test_the_second_source_color_is_the_color1_output(mesa, written):
    """EXT_blend_func_extended: gl_SecondaryFragColorEXT (with gl_FragColor) and
    gl_SecondaryFragDataEXT[0] (with gl_FragData[0]) are TGSI's COLOR[1] output, which
    dual-source blending reads as the second source color."""
    secondary = ("gl_SecondaryFragColorEXT" if written == "gl_FragColor"
                 else "gl_SecondaryFragDataEXT[0]")
    program = compile_program(PLAIN_VS, (
        "#extension GL_EXT_blend_func_extended : require\nprecision mediump float;\n"
        f"void main() {{ {written} = vec4(1.0); {secondary} = vec4(0.5); }}\n"))
    semantics = {b["name"].split("[")[0]: b["semantic"]
                 for b in program.interface["builtins"]["fragment"]}
    assert semantics[secondary.split("[")[0]] == "COLOR[1]"
    assert semantics[written.split("[")[0]] == "COLOR"


@pytest.mark.mesa
def test_a_sampler3d_is_a_3d_sampler(mesa):
    """OES_texture_3D: Mesa's GLES2 context compiles sampler3D and texture3D (TGSI's 3D
    target); the interface lists the uniform as a sampler3D on a 3D sampler view."""
    fragment = ("#extension GL_OES_texture_3D : require\nprecision mediump float;\n"
                "uniform lowp sampler3D t;\n"
                "void main() { gl_FragColor = texture3D(t, vec3(0.5)); }\n")
    program = compile_program(PLAIN_VS, fragment)
    [sampler] = program.interface["samplers"]
    assert sampler["type"] == "sampler3D" and sampler["fragment"]["target"] == "3D"
    assert ", 3D" in program.fragment_tgsi


@pytest.mark.mesa
@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unsupported_builtins_are_one_line_errors_naming_the_program(mesa, case):
    """Issue 31 item 5: what Mesa compiles but the interface cannot map is an InputError of one
    line that names the program (for an import: the capture and the glLinkProgram call)."""
    fragment, expected = UNSUPPORTED[case]
    source = glsl_compile.ProgramSource(PLAIN_VS, fragment, name=LINK, program_origin=LINK)
    with pytest.raises(InputError) as info:
        glsl_compile.compile_many([source])
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{LINK}: the ") and expected in message
    assert message.endswith("which tilesim does not implement")


@pytest.mark.mesa
def test_gl_depth_range_is_a_state_uniform(mesa):
    """GLSL ES 1.00 section 7.5: gl_DepthRange reaches each stage that reads it as Mesa's
    STATE_DEPTH_RANGE, a state entry the renderer fills from glDepthRangef."""
    program = compile_program(
        "attribute vec4 p;\nvarying float d;\n"
        "void main() { d = gl_DepthRange.far; gl_Position = p; }\n",
        "precision mediump float;\nvarying float d;\n"
        "void main() { gl_FragColor = vec4(d, gl_DepthRange.near, gl_DepthRange.diff, 1.0); }\n")
    state = {(s["name"], s["stage"]) for s in program.interface["state"]}
    assert state >= {("state.depth.range", "vertex"), ("state.depth.range", "fragment")}
    assert not [u for u in program.interface["uniforms"] if u["name"].startswith("gl_")]


@pytest.mark.mesa
def test_frag_depth_ext_is_the_position_output(mesa):
    """EXT_frag_depth: gl_FragDepthEXT is the z of the fragment program's POSITION output,
    which the renderer's late depth test reads."""
    program = compile_program(
        PLAIN_VS, "#extension GL_EXT_frag_depth : require\nprecision mediump float;\n"
                  "void main() { gl_FragColor = vec4(1.0); gl_FragDepthEXT = 0.25; }\n")
    depth = next(b for b in program.interface["builtins"]["fragment"]
                 if b["name"] == "gl_FragDepthEXT")
    assert (depth["semantic"], depth["components"]) == ("POSITION", "z")
    assert f"MOV {depth['register']}.z" in program.fragment_tgsi


@pytest.mark.mesa
def test_invariant_outputs_compile(mesa):
    """GLSL ES 1.00 section 4.6.1: ``invariant gl_Position`` and invariant varyings (Mesa's
    NIR prints the qualifier before the variable's mode)."""
    program = compile_program(
        "invariant gl_Position;\nattribute vec4 p;\ninvariant varying vec3 c;\n"
        "void main() { c = p.xyz; gl_Position = p; }\n",
        "precision mediump float;\ninvariant varying vec3 c;\n"
        "void main() { gl_FragColor = vec4(c, 1.0); }\n")
    assert [b["name"] for b in program.interface["builtins"]["vertex"]] == ["gl_Position"]
    assert program.interface["varyings"][0]["fragment"][0]["register"] == "IN[0]"


@pytest.mark.parametrize("stage", ["vertex", "fragment"])
@pytest.mark.parametrize("version", ["300 es", "310 es"])
def test_glsl_es_3_shaders_are_refused_before_mesa(monkeypatch, stage, version):
    """A GLES2 context compiles GLSL ES 1.00 only; Mesa's GLES 3.1 context would take 3.x."""
    monkeypatch.setattr(glsl_compile, "_run_child", None)  # Mesa is never asked
    shaders = {"vertex": PLAIN_VS, "fragment": "void main() { gl_FragColor = vec4(1.0); }\n"}
    shaders[stage] = f"// comment\n#version {version}\n" + shaders[stage]
    source = glsl_compile.ProgramSource(shaders["vertex"], shaders["fragment"], name=LINK,
                                        vertex_origin=f"{LINK}, vertex shader",
                                        fragment_origin=f"{LINK}, fragment shader")
    with pytest.raises(InputError) as info:
        glsl_compile.compile_many([source])
    assert str(info.value) == (
        f"{LINK}, {stage} shader:2: {stage} shader is #version {version}: an OpenGL ES 2.0 "
        "context compiles GLSL ES 1.00 (#version 100) only, and so does tilesim")


def test_mesa_dying_names_the_program_it_was_compiling(monkeypatch, tmp_path):
    fake = tmp_path / "child.py"
    fake.write_text(
        "import os, sys\n"
        f"for n in (0, 1):\n    os.write(2, b'\\n{glsl_compile.MARKER_PROGRAM} %d\\n' % n)\n"
        "os.write(2, b'nir_to_tgsi.c:123: ntt_emit: Assertion `0\\' failed.\\n')\n"
        "os.abort()\n")
    monkeypatch.setattr(glsl_compile, "CHILD_SCRIPT", fake)
    sources = [glsl_compile.ProgramSource(PLAIN_VS, "void main() {}", name=f"p{n}",
                                          program_origin=f"capture.pkl: program {n}")
               for n in range(3)]
    with pytest.raises(InputError) as info:
        glsl_compile.compile_many(sources)
    assert str(info.value) == (
        "capture.pkl: program 1: Mesa's compiler process died (signal 6) compiling this "
        "program: nir_to_tgsi.c:123: ntt_emit: Assertion `0' failed.")


def test_varying_probe_failure_is_an_input_error(monkeypatch):
    result = {"renderer": "softpipe", "version": "OpenGL ES 3.1 Mesa",
              "programs": [{"status": "probe_error", "stage": None,
                            "log": "probe failed to link:\nerror: too many varyings"}]}
    monkeypatch.setattr(glsl_compile, "_run_child", lambda sources: (result, ""))
    source = glsl_compile.ProgramSource(PLAIN_VS, "void main() {}", program_origin=LINK)
    with pytest.raises(InputError) as info:
        glsl_compile.compile_many([source])
    assert str(info.value) == (
        f"{LINK}: tilesim cannot tell where Mesa's linker put this program's varyings: probe "
        "failed to link: error: too many varyings")


def test_unreadable_mesa_output_is_an_input_error(monkeypatch):
    """Mesa's print of a link that tilesim cannot read (no TGSI here) is the program's error,
    not a traceback."""
    result = {"renderer": "softpipe", "version": "OpenGL ES 3.1 Mesa",
              "programs": [{"status": "ok", "stage": None, "log": "", "probes": []}]}
    monkeypatch.setattr(glsl_compile, "_run_child", lambda sources: (result, ""))
    source = glsl_compile.ProgramSource(PLAIN_VS, "void main() {}", program_origin=LINK)
    with pytest.raises(InputError) as info:
        glsl_compile.compile_many([source])
    assert str(info.value).startswith(f"{LINK}: Mesa's output: Mesa printed no TGSI for the "
                                      "vertex shader")


@pytest.mark.mesa
def test_write_files(mesa, tmp_path):
    program = compile_program(VERTEX, FRAGMENT)
    program.write(tmp_path / "p")
    names = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert names == sorted(glsl_compile.OUTPUT_FILES)
    assert (tmp_path / "p" / "vertex.glsl").read_text() == VERTEX
    assert (tmp_path / "p" / "fragment.tgsi").read_text() == program.fragment_tgsi
    assert json.loads((tmp_path / "p" / "interface.json").read_text()) == program.interface


def test_missing_mesa_is_tool_missing(monkeypatch, tmp_path):
    fake = tmp_path / "child.py"
    fake.write_text("import sys\nprint('cannot load libEGL.so.1', file=sys.stderr)\nsys.exit(3)\n")
    monkeypatch.setattr(glsl_compile, "CHILD_SCRIPT", fake)
    with pytest.raises(ToolMissing, match="libgl1-mesa-dri libegl1 libgles2"):
        compile_program(VERTEX, FRAGMENT)


@pytest.mark.slow
@pytest.mark.mesa
def test_corpus_recompiles_byte_for_byte(mesa):
    index = corpus.load_index()
    assert len(index["programs"]) >= 50
    changes = corpus.recompile_corpus(check=True, progress=lambda message: None)
    if any(change.startswith(f"{corpus.INDEX_NAME}: Mesa") for change in changes):
        message = f"corpus made with {index['mesa']}; {changes[0]}"
        if os.environ.get("TILESIM_REQUIRE_MESA") == "1":
            pytest.fail(message)
        pytest.skip(message)
    assert changes == []


def test_corpus_index_matches_folders():
    index, sources = corpus.corpus_sources()  # checks every sha256 against the GLSL
    ids = {entry["id"] for entry in index["programs"]}
    folders = {p.name for p in corpus.CORPUS_DIR.iterdir() if p.is_dir()}
    assert ids == folders
    apps = {usage["app"] for entry in index["programs"] for usage in entry["used_by"]}
    assert apps == {"glmark2-es2", "es2gears"}
    for entry in index["programs"]:
        files = sorted(p.name for p in (corpus.CORPUS_DIR / entry["id"]).iterdir())
        assert files == sorted(glsl_compile.OUTPUT_FILES)
    assert len(sources) == len(ids)


# ------------------------------------------------------------------------------------------
# Trace reading: apitrace's pickle stream through the restricted unpickler


def _apitrace_pickle(value) -> bytes:
    """Serialise like apitrace's PickleWriter (protocol 2, SHORT_BINSTRING strings)."""
    if value is None:
        return b"N"
    if isinstance(value, Pointer):
        return (b"cunpickle\nPointer\nq\x01" + b"\x8a\x08" + struct.pack("<q", value)
                + b"\x85R")
    if isinstance(value, bool):
        return b"\x88" if value else b"\x89"
    if isinstance(value, int):
        return b"J" + struct.pack("<i", value)
    if isinstance(value, bytearray):
        return b"c__builtin__\nbytearray\nq\x01" + _apitrace_pickle(bytes(value)) + b"\x85R"
    if isinstance(value, bytes):
        head = (b"U" + bytes([len(value)]) if len(value) < 256
                else b"T" + struct.pack("<I", len(value)))
        return head + value + b"q\x01"
    if isinstance(value, list):
        return b"]q\x01(" + b"".join(_apitrace_pickle(v) for v in value) + b"e"
    if isinstance(value, tuple):
        return b"(" + b"".join(_apitrace_pickle(v) for v in value) + b"t"
    raise TypeError(value)


def _stream(*calls) -> io.BytesIO:
    return io.BytesIO(b"".join(b"\x80\x02" + _apitrace_pickle(c) + b"." for c in calls))


def test_restricted_unpickler_refuses_os_system(tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    command = f"touch {marker}".encode()
    hostile = (b"\x80\x02cos\nsystem\nq\x01U" + bytes([len(command)]) + command
               + b"\x85R.")
    with pytest.raises(InputError, match=r"os\.system"):
        list(read_calls(io.BytesIO(hostile), source="hostile.pkl"))
    assert not marker.exists()
    evil_builtin = b"\x80\x02cbuiltins\neval\nq\x01U\x031+1\x85R."
    with pytest.raises(InputError, match="builtins.eval"):
        list(read_calls(io.BytesIO(evil_builtin), source="hostile.pkl"))
    # The same payloads are live with a plain unpickler reading apitrace's Python 2 strings
    # as the reader does (encoding="bytes"): this is what the test guards. It calls os.system
    # with the command (a stand-in here, so nothing runs) and evaluates "1+1".
    calls = []
    monkeypatch.setattr(os, "system", lambda cmd: calls.append(cmd) or 0)
    assert pickle.loads(hostile, encoding="bytes") == 0
    assert calls == [command]
    assert not marker.exists()
    assert pickle.loads(evil_builtin, encoding="bytes") == 2


def test_restricted_unpickler_reads_apitrace_records():
    stream = _stream(
        (3, b"glBufferData", [(b"target", 34962), (b"data", bytearray(b"\x00\x01")),
                              (b"ptr", Pointer(0x55AA_0000_1234))], None, 0),
        (4, b"glFlush", [], None, 0))
    calls = list(read_calls(stream, source="ok.pkl"))
    assert [c.name for c in calls] == ["glBufferData", "glFlush"]
    assert calls[0].args["data"] == bytearray(b"\x00\x01")
    assert calls[0].args["ptr"] == 0x55AA_0000_1234
    with pytest.raises(InputError, match=r"odd\.pkl: record 0 \(the first\): expected an "
                                         r"apitrace call .*, got \[1, 2\]"):
        list(read_calls(_stream([1, 2]), source="odd.pkl"))


def test_program_tracker_follows_objects():
    def call(number, function, ret=None, flags=0, **args):
        return Call(number, function, args, ret, flags)

    calls = [
        call(0, "eglCreateContext", ret=Pointer(0x10), share_context=0),
        call(1, "eglMakeCurrent", ctx=Pointer(0x10)),
        call(2, "glCreateShader", ret=1, type=GL_VERTEX_SHADER),
        # Two strings; the length array cuts the first one short.
        call(3, "glShaderSource", shader=1, count=2,
             string=[b"attribute vec4 p;XXX", b"void main(){gl_Position=p;}"], length=[17, -1]),
        call(4, "glCompileShader", shader=1),
        call(5, "glCreateShader", ret=2, type=GL_FRAGMENT_SHADER),
        call(6, "glShaderSource", shader=2, count=1, string=[b"void main(){}\0junk"], length=0),
        call(7, "glCompileShader", shader=2),
        call(8, "glShaderSource", shader=2, count=1, string=[b"not compiled"], length=0),
        call(9, "glCreateProgram", ret=3),
        call(10, "glAttachShader", program=3, shader=1),
        call(11, "glAttachShader", program=3, shader=2),
        call(12, "glBindAttribLocation", program=3, index=0, name=b"p"),
        call(13, "glBindAttribLocation", program=3, index=2, name=b"p", flags=1),
        call(14, "glLinkProgram", program=3),
        # A new context numbers its objects from 1 again.
        call(15, "eglCreateContext", ret=Pointer(0x20), share_context=0),
        call(16, "eglMakeCurrent", ctx=Pointer(0x20)),
        call(17, "glCreateShader", ret=1, type=GL_FRAGMENT_SHADER),
    ]
    linked = list(ProgramTracker("t.trace").feed(calls))
    assert len(linked) == 1
    assert linked[0].vertex == "attribute vec4 p;void main(){gl_Position=p;}"
    assert linked[0].fragment == "void main(){}"
    assert linked[0].attrib_bindings == {"p": 2}
    assert (linked[0].call, linked[0].program) == (14, 3)
    with pytest.raises(InputError, match="call 19: glLinkProgram on unknown program 3"):
        list(ProgramTracker("t.trace").feed(calls[15:] + [call(19, "glLinkProgram",
                                                                program=3)]))


def test_mesa_dump_parsing():
    var = mesa_dump.parse_decl_var("decl_var shader_out INTERP_MODE_NONE mediump vec4 "
                                   "packed:v0,v1,farr[0] (VARYING_SLOT_VAR0.xyzw, 2, 0)")
    assert (var.mode, var.name, var.slot, var.components, var.driver_location) == (
        "shader_out", "packed:v0,v1,farr[0]", "VARYING_SLOT_VAR0", "xyzw", 2)
    assert var.precision == "mediump"
    uni = mesa_dump.parse_decl_var("decl_var uniform INTERP_MODE_NONE highp vec3[2] light "
                                   "(2, 5, 0)")
    assert (uni.type, uni.location, uni.driver_location) == ("vec3[2]", 2, 5)
    # GLSL's invariant qualifier: nir_print writes it before the mode
    inv = mesa_dump.parse_decl_var("decl_var invariant shader_out INTERP_MODE_NONE highp vec4 "
                                   "gl_Position (VARYING_SLOT_POS.xyzw, 0, 0)")
    assert (inv.mode, inv.interp, inv.qualifiers, inv.precision) == (
        "shader_out", "NONE", ("invariant", "highp"), "highp")
    with pytest.raises(mesa_dump.MesaOutputError, match="no interpolation mode"):
        mesa_dump.parse_decl_var("decl_var shader_out highp vec4 x (VARYING_SLOT_POS, 0, 0)")
    dcls = mesa_dump.parse_dcls("FRAG\nDCL IN[0..1], GENERIC[3..4], PERSPECTIVE\n"
                                "DCL CONST[0][0..2]\nDCL SVIEW[0], 2D, FLOAT\n  0: END\n")
    assert [(d.register, d.semantic, d.semantic_index) for d in dcls[:2]] == [
        ("IN[0]", "GENERIC", 3), ("IN[1]", "GENERIC", 4)]
    assert [(d.buffer, d.index) for d in dcls if d.file == "CONST"] == [(0, 0), (0, 1), (0, 2)]
    assert dcls[-1].extra == ("2D", "FLOAT")
    moves = mesa_dump.trace_input_moves("  0: MOV TEMP[0].xy, IN[2].zwxx\n"
                                        "  1: MOV OUT[1].yz, TEMP[0].xxyx\n"
                                        "  2: MOV OUT[2].x, IN[0].yyyy\n"
                                        "  3: ADD OUT[2].x, OUT[2].xxxx, IN[0].xxxx\n")
    assert moves == {(1, 1): (2, 2), (1, 2): (2, 3)}


@pytest.mark.mesa
@pytest.mark.slow
def test_capture_matches_corpus(tmp_path):
    """A real glmark2 capture yields the committed corpus program (apitrace + Xvfb needed)."""
    require_mesa()
    require_tools("xvfb-run", "apitrace", "glmark2-es2")
    linked = corpus.capture_glmark2("shading:shading=phong", tmp_path)
    shas = [corpus.program_sha256(lp.vertex, lp.fragment, lp.attrib_bindings) for lp in linked]
    index = corpus.load_index()
    assert shas and set(shas) <= {entry["sha256"] for entry in index["programs"]}


def test_regenerate_script_help():
    script = SCRIPTS / "regenerate_corpus.py"
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "--capture" in out and "--check" in out
