"""Parser for TGSI text exactly as Mesa prints it with ``tgsi_dump``.

That is what ``GALLIUM_DRIVER=softpipe SOFTPIPE_DEBUG=vs,fs`` prints for every shader it
compiles: a processor line (VERT, FRAG, ...), PROPERTY lines, DCL lines, IMM lines and
numbered instructions such as ``  3: MAD TEMP[1], CONST[0][0], IN[0].xxxx, TEMP[1]``.

Every syntax error is an ``InputError`` naming the source, line and column and what was
expected there; nothing else escapes ``parse`` (a property-based test holds us to that).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from tilesim.errors import InputError
from tilesim.inputs import read_input_text
from tilesim.shaders.ir import (
    CHANNELS,
    FULL_MASK,
    IDENTITY_SWIZZLE,
    Declaration,
    DstOperand,
    Immediate,
    Indirect,
    Instruction,
    Program,
    Register,
    SrcOperand,
)
from tilesim.shaders.opcodes import KNOWN_OPCODES, OPCODES

PROCESSORS = ("VERT", "FRAG", "GEOM", "COMP", "TESS_CTRL", "TESS_EVAL")
FILES = ("NULL", "CONST", "IN", "OUT", "TEMP", "SAMP", "ADDR", "IMM", "SV", "IMAGE", "SVIEW",
         "BUFFER", "MEMORY", "HWATOMIC", "CONSTBUF")
TEXTURE_TARGETS = ("BUFFER", "1D", "2D", "3D", "CUBE", "RECT", "SHADOW1D", "SHADOW2D",
                   "SHADOWRECT", "1D_ARRAY", "2D_ARRAY", "SHADOW1D_ARRAY", "SHADOW2D_ARRAY",
                   "SHADOWCUBE", "2D_MSAA", "2D_ARRAY_MSAA", "CUBE_ARRAY", "SHADOWCUBE_ARRAY",
                   "UNKNOWN")
RETURN_TYPES = ("UNORM", "SNORM", "SINT", "UINT", "FLOAT", "UNUSED")
INTERPOLATIONS = ("CONSTANT", "LINEAR", "PERSPECTIVE", "COLOR")
LOCATIONS = ("CENTER", "CENTROID", "SAMPLE")
IMMEDIATE_TYPES = ("FLT32", "UINT32", "INT32", "FLT64", "UINT64", "INT64")

# The largest register index a program may name. Mesa's own limit for any TGSI register file
# is 4096 (tgsi_exec's TGSI_EXEC_NUM_TEMPS; GLES2 asks far less: 128 vertex uniform vectors,
# 16 varyings); anything beyond is a malformed or hostile program, not a real shader.
MAX_REGISTER_INDEX = 4095
# Register files whose direct operands must lie inside a declaration (the interpreter sizes
# them from the declarations; tgsi_exec refuses undeclared ones too).
DECLARED_FILES = ("IN", "OUT", "TEMP", "SAMP", "SVIEW", "SV", "ADDR", "CONST")

_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
_INT = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(?:0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|nan)",
                     re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9_]+")


class _Cursor:
    """Reads one line, keeping the column for error messages."""

    def __init__(self, text: str, line: int, source: str):
        self.text = text
        self.pos = 0
        self.line = line
        self.source = source

    def error(self, expected: str, pos: int | None = None) -> InputError:
        pos = self.pos if pos is None else pos
        found = self.text[pos:pos + 12].strip() or "end of line"
        return InputError(f"expected {expected}, found {found!r}", source=self.source,
                          line=self.line, column=pos + 1)

    def mark(self) -> int:
        """The position of the next token (after blanks), for error messages."""
        self.skip_space()
        return self.pos

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r":
            self.pos += 1

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= len(self.text)

    def peek(self, literal: str) -> bool:
        self.skip_space()
        return self.text.startswith(literal, self.pos)

    def accept(self, literal: str) -> bool:
        if self.peek(literal):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, what: str | None = None) -> None:
        if not self.accept(literal):
            raise self.error(what or repr(literal))

    def regex(self, pattern: re.Pattern, what: str) -> str:
        self.skip_space()
        m = pattern.match(self.text, self.pos)
        if not m:
            raise self.error(what)
        self.pos = m.end()
        return m.group(0)

    def integer(self, what: str = "an integer") -> int:
        return int(self.regex(_INT, what))

    def register_index(self, what: str = "a register index") -> int:
        """A register index: 0 <= index <= MAX_REGISTER_INDEX (a negative one would address
        the end of a register file through Python's indexing; a huge one allocate it)."""
        pos = self.pos
        value = self.integer(what)
        if not 0 <= value <= MAX_REGISTER_INDEX:
            raise self.error(f"{what} in 0..{MAX_REGISTER_INDEX}", pos)
        return value

    def name(self, what: str) -> str:
        return self.regex(_NAME, what)

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error("end of line")


def parse_file(path: str | Path) -> Program:
    return parse(read_input_text(path, "TGSI program"), source=str(path))


def parse(text: str, source: str = "<tgsi>") -> Program:
    """Parse tgsi_dump text into a ``Program``."""
    program: Program | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        cur = _Cursor(raw, number, source)
        if program is None:
            word = cur.regex(_WORD, "a processor name (" + ", ".join(PROCESSORS) + ")")
            if word not in PROCESSORS:
                raise cur.error("a processor name (" + ", ".join(PROCESSORS) + ")", 0)
            cur.expect_end()
            program = Program(processor=word, source=source)
            continue
        _parse_line(cur, program)
    if program is None:
        raise InputError("empty TGSI text: expected a processor line such as FRAG",
                         source=source, line=1, column=1)
    if not any(inst.opcode == "END" for inst in program.instructions):
        last = program.instructions[-1].line if program.instructions else 1
        raise InputError("program has no END instruction", source=source, line=last)
    _check_operands_declared(program)
    return program


def _check_operands_declared(program: Program) -> None:
    """Every direct operand of a declared file names a declared register (and an immediate
    that exists): an undeclared input, sampler or constant is an error, not a silent zero."""
    declared: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for d in program.declarations:
        dimension = d.dimension or 0 if d.file == "CONST" else 0
        declared.setdefault((d.file, dimension), []).append((d.first, d.last))
    for inst in program.instructions:
        for operand in [*inst.src, *inst.dst]:
            reg = operand.register
            if reg.file == "IMM" and reg.indirect is None and reg.index >= len(program.immediates):
                raise InputError(f"instruction {inst.number}: IMM[{reg.index}] is not defined "
                                 f"({len(program.immediates)} immediates)",
                                 source=program.source, line=inst.line)
            if reg.file not in DECLARED_FILES or reg.indirect is not None:
                continue
            dimension = (reg.dimension or 0) if reg.file == "CONST" else 0
            ranges = declared.get((reg.file, dimension), [])
            if not any(first <= reg.index <= last for first, last in ranges):
                name = (f"{reg.file}[{dimension}][{reg.index}]" if reg.file == "CONST"
                        else f"{reg.file}[{reg.index}]")
                raise InputError(f"instruction {inst.number}: {name} is not declared",
                                 source=program.source, line=inst.line)


def _parse_line(cur: _Cursor, program: Program) -> None:
    cur.skip_space()
    start = cur.pos
    if cur.text[start:start + 1].isdigit():
        program.instructions.append(_parse_instruction(cur, program))
        return
    word = cur.regex(_WORD, "PROPERTY, DCL, IMM or a numbered instruction")
    if word == "PROPERTY":
        name = cur.name("a property name")
        value = cur.regex(_WORD, "a property value")
        cur.expect_end()
        program.properties[name] = value
    elif word == "DCL":
        program.declarations.append(_parse_declaration(cur))
    elif word == "IMM":
        program.immediates.append(_parse_immediate(cur, len(program.immediates)))
    else:
        raise cur.error("PROPERTY, DCL, IMM or a numbered instruction", start)


def _parse_file_name(cur: _Cursor) -> str:
    pos = cur.mark()
    name = cur.name("a register file (" + ", ".join(FILES[:9]) + ", ...)")
    if name not in FILES:
        raise cur.error("a register file (" + ", ".join(FILES[:9]) + ", ...)", pos)
    return name


def _parse_mask(cur: _Cursor, what: str) -> tuple[int, ...]:
    pos = cur.mark()
    letters = cur.regex(re.compile(r"[xyzw]{1,4}"), what)
    mask = tuple(CHANNELS.index(c) for c in letters)
    if list(mask) != sorted(set(mask)):
        raise cur.error(what + " with channels in xyzw order", pos)
    return mask


def _parse_declaration(cur: _Cursor) -> Declaration:
    line = cur.line
    file = _parse_file_name(cur)
    brackets: list[tuple[int, int]] = []
    while cur.accept("["):
        first = cur.register_index()
        last = first
        if cur.accept(".."):
            last = cur.register_index("the last register index of the range")
            if last < first:
                raise cur.error(f"a last index >= {first}")
        cur.expect("]")
        brackets.append((first, last))
    if not brackets or len(brackets) > 2:
        raise cur.error("'[' and a register index or range")
    dimension = brackets[0][0] if len(brackets) == 2 else None
    first, last = brackets[-1]
    usage: tuple[int, ...] = FULL_MASK
    if cur.accept("."):
        usage = _parse_mask(cur, "a usage mask")
    fields: dict = {}
    returns: list[str] = []
    while cur.accept(","):
        pos = cur.mark()
        word = cur.regex(_WORD, "a declaration attribute")
        if word == "ARRAY":
            cur.expect("(")
            fields["array_id"] = cur.integer("an array id")
            cur.expect(")")
        elif word == "LOCAL":
            fields["local"] = True
        elif word == "INVARIANT":
            fields["invariant"] = True
        elif (file in ("IN", "OUT", "SV") and "semantic" not in fields
              and _NAME.fullmatch(word)):
            # tgsi_dump prints the semantic first, then interpolation and location.
            index = 0
            if cur.accept("["):
                index = cur.integer("a semantic index")
                cur.expect("]")
            fields["semantic"] = (word, index)
        elif word in INTERPOLATIONS and file == "IN":
            fields["interpolation"] = word
        elif word in LOCATIONS and file == "IN":
            fields["location"] = word
        elif file == "SVIEW" and word in TEXTURE_TARGETS and "texture_target" not in fields:
            fields["texture_target"] = word
        elif file == "SVIEW" and word in RETURN_TYPES:
            returns.append(word)
        else:
            raise cur.error("a declaration attribute (semantic, interpolation, ARRAY(n), "
                            "LOCAL, texture target or return type)", pos)
    cur.expect_end()
    if returns:
        fields["return_type"] = tuple(returns)
    return Declaration(file=file, first=first, last=last, dimension=dimension,
                       usage_mask=usage, line=line, **fields)


def _parse_immediate(cur: _Cursor, expected_index: int) -> Immediate:
    line = cur.line
    cur.expect("[", "'[' after IMM")
    pos = cur.mark()
    index = cur.integer("an immediate index")
    if index != expected_index:
        raise cur.error(f"immediate index {expected_index} (immediates are numbered in order)",
                        pos)
    cur.expect("]")
    pos = cur.mark()
    kind = cur.regex(_WORD, "an immediate type (FLT32, UINT32, INT32)")
    if kind not in IMMEDIATE_TYPES[:3]:
        raise cur.error("an immediate type (FLT32, UINT32, INT32)", pos)
    cur.expect("{")
    bits: list[int] = []
    while True:
        pos = cur.mark()
        token = cur.regex(_NUMBER, "a number")
        bits.append(_immediate_bits(cur, kind, token, pos))
        if cur.accept("}"):
            break
        cur.expect(",", "',' or '}'")
        if len(bits) == 4:
            raise cur.error("'}' after four values")
    cur.expect_end()
    return Immediate(index=index, type=kind, bits=tuple(bits), line=line)


def _immediate_bits(cur: _Cursor, kind: str, token: str, pos: int) -> int:
    try:
        if token.lower().startswith(("0x", "+0x", "-0x")):
            value = int(token, 16)
            if not 0 <= value <= 0xFFFFFFFF:
                raise ValueError
            return value
        if kind == "FLT32":
            return struct.unpack("<I", struct.pack("<f", float(token)))[0]
        value = int(token)
    except (ValueError, OverflowError):
        raise cur.error(f"a {kind} value", pos) from None
    if kind == "UINT32" and 0 <= value <= 0xFFFFFFFF:
        return value
    if kind == "INT32" and -(2**31) <= value < 2**31:
        return value & 0xFFFFFFFF
    raise cur.error(f"a {kind} value in range", pos)


def _parse_index(cur: _Cursor) -> tuple[int, Indirect | None, int | None]:
    """The inside of ``[...]``: ``5`` or ``ADDR[0].x+5``; then an optional ``(array id)``."""
    cur.skip_space()
    indirect = None
    index = 0
    if cur.text[cur.pos:cur.pos + 1].isalpha():
        file = _parse_file_name(cur)
        cur.expect("[")
        reg = cur.register_index()
        cur.expect("]")
        cur.expect(".", "'.' and the address component")
        comp = cur.regex(re.compile(r"[xyzw0-3]"), "an address component (x, y, z or w)")
        component = int(comp) if comp.isdigit() else CHANNELS.index(comp)
        indirect = Indirect(file, reg, component)
        if cur.peek("+") or cur.peek("-"):
            index = cur.integer("an index offset")
    else:
        index = cur.register_index()
    cur.expect("]")
    array_id = None
    if cur.accept("("):
        array_id = cur.integer("an array id")
        cur.expect(")")
    return index, indirect, array_id


def _parse_register(cur: _Cursor) -> Register:
    file = _parse_file_name(cur)
    parts = []
    while cur.accept("["):
        parts.append(_parse_index(cur))
    if not parts or len(parts) > 2:
        raise cur.error("'[' and a register index")
    index, indirect, array_id = parts[-1]
    if len(parts) == 2:
        dim, dim_indirect, _ = parts[0]
        return Register(file, index, dim, indirect, dim_indirect, array_id)
    return Register(file, index, None, indirect, None, array_id)


def _parse_src(cur: _Cursor) -> SrcOperand:
    negate = cur.accept("-")
    absolute = cur.accept("|")
    reg = _parse_register(cur)
    swizzle = IDENTITY_SWIZZLE
    if cur.accept("."):
        letters = cur.regex(re.compile(r"[xyzw]{1,4}"), "a swizzle")
        comps = [CHANNELS.index(c) for c in letters]
        swizzle = tuple((comps + [comps[-1]] * 4)[:4])
    if absolute:
        cur.expect("|", "'|' closing the absolute value")
    return SrcOperand(reg, swizzle, negate, absolute)


def _parse_dst(cur: _Cursor) -> DstOperand:
    reg = _parse_register(cur)
    mask: tuple[int, ...] = FULL_MASK
    if cur.accept("."):
        mask = _parse_mask(cur, "a write mask")
    return DstOperand(reg, mask)


def _parse_instruction(cur: _Cursor, program: Program) -> Instruction:
    line = cur.line
    pos = cur.mark()
    number = cur.integer("an instruction number")
    if number != len(program.instructions):
        raise cur.error(f"instruction number {len(program.instructions)}", pos)
    cur.expect(":")
    pos = cur.mark()
    word = cur.name("an opcode")
    saturate = False
    for suffix in ("_SAT", "_PRECISE"):
        if word.endswith(suffix) and word[: -len(suffix)] in KNOWN_OPCODES:
            saturate = saturate or suffix == "_SAT"
            word = word[: -len(suffix)]
    if word not in KNOWN_OPCODES:
        raise cur.error("a TGSI opcode", pos)
    info = OPCODES.get(word)
    num_dst = info.num_dst if info else None
    dst: list[DstOperand] = []
    src: list[SrcOperand] = []
    target = None
    offsets: list[SrcOperand] = []
    label = None
    first = True
    while not cur.at_end():
        if cur.peek(":"):
            cur.expect(":")
            label = cur.integer("a label (instruction number)")
            break
        if not first:
            cur.expect(",", "',' between operands")
        first = False
        cur.skip_space()
        m = _WORD.match(cur.text, cur.pos)
        if m and m.group(0) in TEXTURE_TARGETS and not cur.text.startswith("[", m.end()):
            cur.pos = m.end()
            target = m.group(0)
            continue
        if target is not None:
            offsets.append(_parse_src(cur))
        elif num_dst is not None and len(dst) < num_dst:
            dst.append(_parse_dst(cur))
        elif num_dst is None and not dst and not src:
            dst.append(_parse_dst(cur))
        else:
            src.append(_parse_src(cur))
    if info is not None:
        if len(dst) != info.num_dst or len(src) != info.num_src:
            raise InputError(
                f"{word} takes {info.num_dst} destination and {info.num_src} source operands, "
                f"found {len(dst)} and {len(src)}", source=cur.source, line=line,
                column=pos + 1)
        if info.category == "tex" and target is None and word not in ("TXQ",):
            raise cur.error(f"a texture target after the operands of {word}")
    return Instruction(number=number, opcode=word, dst=tuple(dst), src=tuple(src),
                       saturate=saturate, texture_target=target,
                       texture_offsets=tuple(offsets), label=label, line=line)
