"""The TGSI parser: Mesa's tgsi_dump syntax, clear errors, and a fuzz test."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from repo_paths import CORPUS

from tilesim.errors import InputError
from tilesim.shaders.parser import parse, parse_file
from tilesim.shaders.stats import static_stats

MESA_FRAGMENT = """\
FRAG
PROPERTY FS_COLOR0_WRITES_ALL_CBUFS 1
DCL IN[0].xyz, GENERIC[0], PERSPECTIVE
DCL IN[1], POSITION, LINEAR
DCL IN[2], COLOR, COLOR, CENTROID
DCL SV[0], FACE
DCL OUT[0], COLOR
DCL SAMP[0]
DCL SVIEW[0], 2D, FLOAT
DCL SAMP[1]
DCL SVIEW[1], CUBE, FLOAT
DCL CONST[0][0..6]
DCL TEMP[0..2], LOCAL
DCL TEMP[3..5], ARRAY(1), LOCAL
DCL ADDR[0]
IMM[0] UINT32 {1074580685, 1056964608, 1036831949, 0}
IMM[1] FLT32 {    1.0000,    -0.5000,     0.0000,     0.0000}
IMM[2] INT32 {-1, 2147483647, -2147483648, 7}
  0: TEX TEMP[0], IN[0].xyyy, SAMP[0], 2D
  1: MUL_SAT TEMP[0], TEMP[0], CONST[0][0]
  2: POW TEMP[1].x, |TEMP[0].yyyy|, -IMM[0].xxxx
  3: UARL ADDR[0].x, IMM[2].wwww
  4: MOV TEMP[1].yzw, CONST[0][ADDR[0].x-1].yyzw
  5: MOV TEMP[ADDR[0].x+3](1).x, -|IN[1].wwww|
  6: UIF TEMP[2].xxxx :0
  7:   TXB TEMP[2], IN[0], SAMP[1], CUBE
  8: ELSE :0
  9:   KILL
 10: ENDIF
 11: END
"""


def test_parses_everything_mesa_prints():
    p = parse(MESA_FRAGMENT, source="mesa.tgsi")
    assert p.processor == "FRAG"
    assert p.properties == {"FS_COLOR0_WRITES_ALL_CBUFS": "1"}
    decl = {(d.file, d.first): d for d in p.declarations}
    assert decl["IN", 0].usage_mask == (0, 1, 2) and decl["IN", 0].semantic == ("GENERIC", 0)
    assert decl["IN", 0].interpolation == "PERSPECTIVE"
    assert decl["IN", 2].semantic == ("COLOR", 0) and decl["IN", 2].interpolation == "COLOR"
    assert decl["IN", 2].location == "CENTROID"
    assert decl["SV", 0].semantic == ("FACE", 0)
    assert decl["SVIEW", 1].texture_target == "CUBE" and decl["SVIEW", 1].return_type == ("FLOAT",)
    assert decl["CONST", 0].dimension == 0 and decl["CONST", 0].last == 6
    assert decl["TEMP", 3].array_id == 1 and decl["TEMP", 3].local
    assert p.immediates[0].bits[0] == 1074580685
    assert p.immediates[1].bits[:2] == (0x3F800000, struct.unpack("<I", struct.pack("<f", -0.5))[0])
    assert p.immediates[2].bits == (0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 7)
    ins = p.instructions
    assert ins[1].saturate and ins[1].opcode == "MUL"
    assert ins[2].src[0].absolute and ins[2].src[1].negate and ins[2].src[1].swizzle == (0,) * 4
    assert ins[4].src[0].register.indirect.file == "ADDR" and ins[4].src[0].register.index == -1
    assert ins[5].dst[0].register.array_id == 1 and ins[5].dst[0].writemask == (0,)
    assert ins[5].src[0].negate and ins[5].src[0].absolute
    assert ins[7].texture_target == "CUBE" and ins[6].label == 0
    assert str(ins[4]) == "MOV TEMP[1].yzw, CONST[0][ADDR[0].x-1].yyzw"


def test_static_stats_split_alu_tex_flow():
    s = static_stats(parse(MESA_FRAGMENT))
    assert (s.alu, s.tex, s.flow, s.total) == (5, 2, 4, 11)


@pytest.mark.parametrize("text, line, column, expected", [
    ("FROG\n", 1, 1, "processor name"),
    ("FRAG\nDCL FOO[0]\n  0: END\n", 2, 5, "register file"),
    ("FRAG\nDCL TEMP[3..1]\n  0: END\n", 2, 14, "last index"),
    ("FRAG\n  0: MOVE TEMP[0], IN[0]\n  1: END\n", 2, 6, "TGSI opcode"),
    ("FRAG\n  0: MOV TEMP[0], IN[0].xyqw\n  1: END\n", 2, 27, "','"),
    ("FRAG\n  0: ADD TEMP[0], IN[0]\n  1: END\n", 2, 6, "2 source operands"),
    ("FRAG\n  0: MOV TEMP[0].yx, IN[0]\n  1: END\n", 2, 18, "xyzw order"),
    ("FRAG\n  1: END\n", 2, 3, "instruction number 0"),
    ("FRAG\nIMM[0] UINT32 {1, -2}\n  0: END\n", 2, 19, "UINT32 value"),
    ("FRAG\nIMM[1] FLT32 {1.0}\n  0: END\n", 2, 5, "immediate index 0"),
    ("FRAG\n  0: TEX TEMP[0], IN[0], SAMP[0]\n  1: END\n", 2, 33, "texture target"),
    ("FRAG\n  0: MOV TEMP[0], |IN[0]\n  1: END\n", 2, 25, "'|'"),
    ("FRAG\n  0: MOV TEMP[0], IN[0]\n", 2, None, "no END"),
    ("", 1, 1, "empty"),
])
def test_errors_name_line_column_and_what_was_expected(text, line, column, expected):
    with pytest.raises(InputError) as info:
        parse(text, source="bad.tgsi")
    err = info.value
    assert err.source == "bad.tgsi" and err.line == line and err.column == column, str(err)
    assert expected in str(err)
    assert str(err).startswith(f"bad.tgsi:{line}")


def test_parse_file_reports_non_utf8(tmp_path):
    path = tmp_path / "x.tgsi"
    path.write_bytes(b"FRAG\n\xff\xfe\n")
    with pytest.raises(InputError, match="UTF-8"):
        parse_file(path)


def _corpus_texts() -> list[str]:
    files = sorted(CORPUS.rglob("*.tgsi"))[:40]
    return [f.read_text() for f in files] or [MESA_FRAGMENT]


TGSI_ALPHABET = "[](){}.,:|-+_0123456789xyzwABCDEFIMNOPQRSTUVX \n\t"


def _mutate(text: str, data) -> str:
    edit = st.tuples(st.sampled_from(["delete", "insert", "replace", "swap"]),
                     st.integers(0, max(len(text) - 1, 0)),
                     st.text(alphabet=TGSI_ALPHABET, min_size=1, max_size=4))
    ops = data.draw(st.lists(edit, min_size=1, max_size=6))
    for kind, pos, piece in ops:
        if kind == "delete":
            text = text[:pos] + text[pos + len(piece):]
        elif kind == "insert":
            text = text[:pos] + piece + text[pos:]
        elif kind == "replace":
            text = text[:pos] + piece + text[pos + len(piece):]
        else:
            lines = text.split("\n")
            if len(lines) > 2:
                a = pos % len(lines)
                lines[a], lines[-2] = lines[-2], lines[a]
            text = "\n".join(lines)
    return text


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_corpus_files_parse_or_raise_positioned_errors(data):
    texts = _corpus_texts()
    text = _mutate(data.draw(st.sampled_from(texts)), data)
    try:
        parse(text, source="fuzz.tgsi")
    except InputError as err:
        assert err.source == "fuzz.tgsi" and err.line is not None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_parses_or_raises_positioned_errors(text):
    try:
        parse(text, source="random.tgsi")
    except InputError as err:
        assert err.line is not None


# --- register indices and declarations (issue 12) -------------------------------------------

def _one(instruction: str, declarations: str = "DCL TEMP[0]") -> str:
    return f"FRAG\nDCL OUT[0], COLOR\n{declarations}\n  0: {instruction}\n  1: END\n"


@pytest.mark.parametrize("operand", ["IN[-1]", "TEMP[-1]", "OUT[-1]", "CONST[0][-2]"])
def test_negative_register_indices_are_refused(operand):
    with pytest.raises(InputError, match=r"a register index in 0\.\.4095") as info:
        parse(_one(f"MOV OUT[0], {operand}"))
    assert info.value.line == 4


def test_huge_register_indices_are_refused_before_anything_is_allocated():
    with pytest.raises(InputError, match=r"in 0\.\.4095"):
        parse(_one("MOV OUT[0], TEMP[99999999]", "DCL TEMP[0..99999999]"))
    with pytest.raises(InputError, match=r"in 0\.\.4095"):
        parse(_one("MOV TEMP[5000], TEMP[0]"))


@pytest.mark.parametrize("operand, name", [
    ("IN[3]", "IN[3]"), ("TEMP[1]", "TEMP[1]"), ("CONST[0][7]", "CONST[0][7]"),
    ("CONST[1][0]", "CONST[1][0]"), ("IMM[2]", None)])
def test_undeclared_operands_are_refused(operand, name):
    declarations = "DCL TEMP[0]\nDCL IN[0..2], GENERIC[0], PERSPECTIVE\nDCL CONST[0][0..1]"
    with pytest.raises(InputError, match="is not declared" if name else "is not defined") as e:
        parse(_one(f"MOV OUT[0], {operand}", declarations))
    assert e.value.line == 6
    if name:
        assert name in str(e.value)


def test_declared_operands_and_mesa_programs_parse():
    declarations = "DCL TEMP[0..3]\nDCL IN[0..2], GENERIC[0], PERSPECTIVE\nDCL CONST[0][0..1]"
    parse(_one("MAD OUT[0], IN[2], CONST[0][1], TEMP[3]", declarations))
    parse(MESA_FRAGMENT)


def test_shader_files_that_are_fifos_are_refused_at_once(tmp_path):
    """TGSI programs, GLSL sources and throughput programs a user names were read with
    read_text / read_bytes: a fifo in their place waited for a writer forever. They are
    opened as every input is (tilesim.inputs.read_input_text)."""
    import os

    from tilesim.shaders.glsl_compile import compile_files
    from tilesim.timing.shader_core.config import load_core_config
    from tilesim.timing.shader_core.throughput import program_throughput

    fifo = tmp_path / "fragment.tgsi"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        parse_file(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        compile_files(fifo, fifo)
    with pytest.raises(InputError, match="not a regular file"):
        program_throughput(tmp_path, load_core_config())
