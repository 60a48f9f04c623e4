"""GLSL precision of TGSI instructions (tilesim.shaders.precision) and the interpreter's fp16
mediump mode, without Mesa: the dataflow rules on hand-written programs, fp16 rounding, and
that the default float32 mode ignores precision. tests/shaders/test_differential_mesa.py
compares the fp16 mode with Mesa llvmpipe; tests/render/test_conformance.py renders the
mediump scene."""

from __future__ import annotations

import numpy as np
import pytest
from tgsi_helpers import lanes_of, program_text

from tilesim.errors import InputError
from tilesim.shaders.interpreter import Interpreter, to_half
from tilesim.shaders.parser import parse
from tilesim.shaders.precision import (
    instruction_precisions,
    lowered_channels,
    lowered_products,
    register_precisions,
)

IMM = ["IMM[0] FLT32 {157.0, 0.1, 2.0, 1.0}"]
# IN[0] mediump, IN[1] highp, IN[2] lowp; SAMP[0] lowp; CONST[0][0] mediump.
REGISTERS = {"IN[0]": "mmmm", "IN[1]": "hhhh", "IN[2]": "llll", "SAMP[0]": "l",
             "CONST[0][0]": "mmmm"}


def precisions(body: list[str], registers=REGISTERS) -> list[str]:
    program = parse(program_text(body, inputs=3, extra=IMM + ["DCL SAMP[0]", "DCL CONST[0]"]))
    return instruction_precisions(program, registers)[:len(body)]


def test_an_operation_takes_the_highest_precision_of_its_operands():
    got = precisions(["MUL TEMP[0], IN[0], IMM[0].xxxx",      # mediump * constant
                      "ADD TEMP[1], IN[0], IN[1]",            # mediump + highp
                      "MUL TEMP[2], IN[2], IMM[0].yyyy",      # lowp * constant
                      "ADD TEMP[3], IMM[0], IMM[0]",          # constants only: no precision
                      "MUL TEMP[2], IN[2], IN[0]"])           # lowp * mediump
    assert got == ["mmmm", "hhhh", "llll", "----", "mmmm"]


def test_channels_follow_swizzles_and_write_masks():
    got = precisions(["MOV TEMP[0].x, IN[1].xxxx",            # highp into x
                      "MOV TEMP[0].y, IN[0].xxxx",            # mediump into y
                      "MUL TEMP[1].xy, TEMP[0].xyyy, IMM[0]", # x highp, y mediump
                      "DP2 TEMP[2].x, TEMP[0].xyyy, IMM[0]",  # a dot reads both: highp
                      "RCP TEMP[3].zw, TEMP[0].yyyy"])        # replicated from .y
    assert got == ["h---", "-m--", "hm--", "h---", "--mm"]


def test_texture_results_take_the_samplers_precision_not_the_coordinates():
    got = precisions(["TEX TEMP[0], IN[1], SAMP[0], 2D", "MUL TEMP[1], TEMP[0], IMM[0]"])
    assert got == ["llll", "llll"]


def test_branches_merge_to_the_highest_precision():
    body = ["MOV TEMP[0], IN[0]",
            "IF IN[0].xxxx",
            "MOV TEMP[0].x, IN[1].xxxx",   # highp on one path only
            "ENDIF",
            "MUL TEMP[1], TEMP[0], IMM[0]"]
    assert precisions(body)[4] == "hmmm"


def test_a_write_after_the_branch_replaces_the_merged_precision():
    body = ["IF IN[0].xxxx", "MOV TEMP[0], IN[1]", "ELSE", "MOV TEMP[0], IN[0]", "ENDIF",
            "MOV TEMP[0], IN[2]", "MUL TEMP[1], TEMP[0], IMM[0]"]
    assert precisions(body)[6] == "llll"


def test_a_loop_carries_a_highp_value_back_to_its_head():
    body = ["MOV TEMP[0], IN[0]",
            "BGNLOOP",
            "ADD TEMP[1], TEMP[0], IMM[0]",   # first pass mediump, later passes highp
            "MOV TEMP[0], IN[1]",
            "BRK",
            "ENDLOOP",
            "MUL TEMP[2], TEMP[1], IMM[0]"]
    got = precisions(body)
    assert got[2] == "hhhh"
    assert got[6] == "hhhh"


def test_a_mediump_product_inside_a_highp_sum_is_recorded():
    got = precisions(["MAD TEMP[0].x, IN[0].xxxx, IMM[0].zzzz, IN[1].xxxx"])
    assert got == ["h---/m---"]
    assert lowered_channels(got) == [()]
    assert lowered_products(got) == [(0,)]


def test_register_precisions_come_from_the_interface():
    interface = {
        "attributes": [],
        "varyings": [{"name": "v_uv", "fragment": [
            {"first": 0, "count": 2, "register": "IN[1]", "component": 0}]},
            {"name": "v_h", "fragment": [
                {"first": 0, "count": 1, "register": "IN[1]", "component": 2}]}],
        "builtins": {"fragment": [
            {"name": "gl_FragCoord", "register": "IN[0]"},
            {"name": "gl_FrontFacing", "register": "IN[2]"},
            {"name": "gl_FragColor", "register": "OUT[0]"}]},
        "uniforms": [{"name": "u_k", "storage": "float32", "fragment": {
            "buffer": 0, "first_slot": 2, "slots": 1}},
            {"name": "u_on", "storage": "bool32", "fragment": {
                "buffer": 0, "first_slot": 3, "slots": 1}}],
        "state": [{"name": "gl_FbWposYTransform", "stage": "fragment", "buffer": 0, "slot": 4}],
        "samplers": [{"name": "u_tex", "fragment": {"samplers": ["SAMP[0]"]}}],
    }
    qualifiers = {"v_uv": "mediump", "v_h": "highp", "gl_FragCoord": "mediump",
                  "u_k": "lowp", "u_tex": "lowp"}
    got = register_precisions(interface, "fragment", qualifiers)
    assert got == {"IN[1]": "mmhh", "IN[0]": "mmmm", "IN[2]": "----",
                   "CONST[0][2]": "llll", "CONST[0][3]": "----", "CONST[0][4]": "----",
                   "SAMP[0]": "l"}


# --- the interpreter ----------------------------------------------------------------------


def test_to_half_rounds_to_nearest_even_overflows_and_keeps_subnormals():
    x = np.array([157.06, 157.0625, 157.1875, 65504.0, 65520.0, -70000.0, 2.0 ** -20,
                  1.0 + 2.0 ** -11], dtype=np.float32)
    got = to_half(x)
    assert got.dtype == np.float32
    assert got[:3].tolist() == [157.0, 157.0, 157.25]   # ties at 1/16 go to even
    assert got[3] == 65504.0 and np.isposinf(got[4]) and np.isneginf(got[5])
    assert got[6] == 2.0 ** -20                           # an fp16 subnormal, not flushed
    assert got[7] == 1.0                                  # the tie 1 + 2^-11 goes to 1


def _run(body, inputs, precision, mediump):
    program = parse(program_text(body, inputs=len(inputs), extra=IMM))
    regs = np.stack([lanes_of(v).view(np.uint32) for v in inputs])
    interp = Interpreter(program, precision=precision, mediump=mediump)
    return np.asarray(interp.run(regs).outputs[0])


def test_fp16_mode_rounds_mediump_and_leaves_highp_alone():
    u = [0.9003, 0.5001, 0.2502, 0.7777]
    body = ["MUL TEMP[0], IN[0], IMM[0].xxxx", "FRC OUT[0].xy, TEMP[0]",
            "MUL TEMP[1], IN[1], IMM[0].xxxx", "FRC OUT[0].zw, TEMP[1]"]
    precision = ["mmmm", "mm--", "hhhh", "--hh", "----"]
    fp16 = _run(body, [u, u], precision, "fp16")
    fp32 = _run(body, [u, u], precision, "fp32")
    x = np.float32(u)
    expected_half = to_half(to_half(to_half(x) * np.float32(157.0)) % np.float32(1.0))
    np.testing.assert_array_equal(fp16[0], expected_half)      # stepped by fp16's 1/8
    np.testing.assert_array_equal(fp16[2], fp32[2])            # highp: float32 in both
    np.testing.assert_array_equal(fp32[0], fp32[2])            # fp32 mode ignores precision
    assert not np.array_equal(fp16[0], fp32[0])


def test_fp16_mode_copies_without_rounding_and_fuses_nothing():
    v = [0.1, 0.2, 0.3, 0.4]
    body = ["MOV OUT[0].x, IN[0].xxxx",                   # a copy: no conversion
            "MAD OUT[0].y, IN[0].xxxx, IMM[0].yyyy, IMM[0].wwww"]
    out = _run(body, [v], ["m---", "-m--", "----"], "fp16")
    np.testing.assert_array_equal(out[0], np.float32(v))
    x, c = to_half(np.float32(v)), to_half(np.float32(0.1))
    np.testing.assert_array_equal(out[1], to_half(to_half(x * c) + np.float32(1.0)))


def test_programs_without_precision_run_in_float32_in_fp16_mode():
    v = [0.9003, 0.5001, 0.2502, 0.7777]
    body = ["MUL TEMP[0], IN[0], IMM[0].xxxx", "FRC OUT[0], TEMP[0]"]
    np.testing.assert_array_equal(_run(body, [v], None, "fp16"), _run(body, [v], None, "fp32"))


def test_bad_mode_and_mismatched_precision_are_refused():
    program = parse(program_text(["MOV OUT[0], IN[0]"], inputs=1))
    with pytest.raises(ValueError, match="mediump"):
        Interpreter(program, mediump="fp8")
    with pytest.raises(InputError, match="precision lists 1 instructions"):
        Interpreter(program, precision=["mmmm"], mediump="fp16")


def test_gl_state_runs_programs_without_precision_in_float32_and_says_so():
    from tilesim.render.gl.state import GLState

    tgsi = program_text(["MOV OUT[0], IN[0]"], inputs=1)
    state = GLState(8, 8, "test", mediump="fp16")
    with pytest.warns(UserWarning, match="compiled before tilesim recorded GLSL precision"):
        state._createProgram(1, "", "", tgsi, tgsi, {})
    state._createProgram(2, "", "", tgsi, tgsi, {})   # counted, not warned again
    assert state.programs_without_precision == 2
    assert state.programs[1].fragment.lowered == [(), ()]
    with_precision = {"precision": {"vertex": {"instructions": ["mmmm", "----"]},
                                    "fragment": {"instructions": ["mmmm", "----"]}}}
    state._createProgram(3, "", "", tgsi, tgsi, with_precision)
    assert state.programs[3].fragment.lowered == [(0, 1, 2, 3), ()]
    with pytest.raises(InputError, match="mediump must be one of"):
        GLState(8, 8, "test", mediump="half")


def test_highp_locals_parameters_and_returns_are_listed_globals_are_not():
    from tilesim.shaders.precision import untracked_highp_lines

    # glmark2 terrain's noise: a highp parameter keeps mediump arguments in 32 bits.
    noise = ("precision mediump float;\nuniform float time;\n"
             "vec4 permute(highp vec4 x) { return mod(((x * 34.0) + 1.0) * x, 289.0); }\n"
             "highp float f(void) { return 1.0; }\n"
             "void main() {\n  highp vec3 v = vec3(time); // highp in a comment\n"
             "  /* highp\n  */ gl_FragColor = permute(vec4(v, 1.0));\n}\n")
    assert untracked_highp_lines(noise) == [3, 4, 6]
    globals_only = ("precision highp float;\nuniform highp vec4 a;\nvarying highp vec2 v;\n"
                    "attribute highp vec4 p;\nprecision mediump float;\n"
                    "void main() { gl_FragColor = a; }\n")
    assert untracked_highp_lines(globals_only) == []
    # a stage computing everything in highp is tracked exactly
    assert untracked_highp_lines("void main() { highp float x = 1.0; }") == []
    # glmark2 spells it HIGHP_OR_DEFAULT, defined as highp where the stage has it
    glmark2 = ("#ifdef GL_FRAGMENT_PRECISION_HIGH\n#define HIGHP_OR_DEFAULT highp\n#else\n"
               "#define HIGHP_OR_DEFAULT\n#endif\nprecision mediump float;\n"
               "vec4 permute(HIGHP_OR_DEFAULT vec4 x) { return x; }\n")
    assert untracked_highp_lines(glmark2) == [7]


def test_gl_state_warns_once_of_highp_locals_in_fp16_mode():
    from tilesim.render.gl.state import GLState

    tgsi = program_text(["MOV OUT[0], IN[0]"], inputs=1)
    precise = {"precision": {"vertex": {"instructions": ["mmmm", "----"]},
                             "fragment": {"instructions": ["mmmm", "----"]}}}
    fragment = "precision mediump float;\nvoid main() {\n  highp float x = 1.0;\n}\n"
    state = GLState(8, 8, "test", mediump="fp16")
    with pytest.warns(UserWarning, match=r"program 1: declares highp locals.*fragment GLSL "
                                         r"line 3\)"):
        state._createProgram(1, "", fragment, tgsi, tgsi, precise)
    state._createProgram(2, "", fragment, tgsi, tgsi, precise)   # counted, not warned again
    assert state.programs_with_untracked_highp == 2
    fp32 = GLState(8, 8, "test", mediump="fp32")
    fp32._createProgram(1, "", fragment, tgsi, tgsi, precise)    # fp32: nothing to say
    assert fp32.programs_with_untracked_highp == 0


@pytest.mark.mesa
def test_the_cli_shows_a_warning_as_one_line(tmp_path, capsys):
    from conftest import require_mesa

    require_mesa()
    from tilesim.cli import main
    from tilesim.render.gl.commands import Recorder
    from tilesim.render.traces.trace_file import write_trace

    gl = Recorder(32, 32, name="highp-local")
    gl.createProgram("attribute vec4 pos; void main() { gl_Position = pos; }",
                     "precision mediump float; uniform float t;\n"
                     "void main() { highp float x = t * 300.0; gl_FragColor = vec4(fract(x)); }")
    gl.endFrame()
    trace = write_trace(tmp_path / "t.tsim", gl.recorded_frames(), width=32, height=32,
                        name="t")
    assert main(["render", str(trace), "--out", str(tmp_path / "out"),
                 "--mediump", "fp16"]) == 0
    err = capsys.readouterr().err.splitlines()
    warned = [line for line in err if "warning" in line.lower()]
    assert len(warned) == 1 and warned[0].startswith("tilesim: warning: ")
    assert "fragment GLSL line 2" in warned[0] and "UserWarning" not in warned[0]
