"""The parsed form of a TGSI program, as Mesa's ``tgsi_dump`` prints it.

These are program-level records (one object per declaration or instruction, a few hundred at
most per shader); the per-invocation data the interpreter works on are arrays, never these.
Component indices are 0..3 for x, y, z, w throughout.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from tilesim.shaders.opcodes import FLOW, OPCODES, TEXEL_READS

CHANNELS = "xyzw"
IDENTITY_SWIZZLE = (0, 1, 2, 3)
FULL_MASK = (0, 1, 2, 3)


@dataclass(frozen=True)
class Indirect:
    """A relative address ``FILE[index].c``: the lane's value of that register component."""

    file: str
    index: int
    component: int


@dataclass(frozen=True)
class Register:
    """``FILE[dim][index]`` with optional relative addressing on either index.

    ``dimension`` is the second-level index, e.g. the constant buffer in ``CONST[0][4]``
    (None where the file is one-dimensional). With ``indirect`` the lane's address is
    ``indirect value + index``.
    """

    file: str
    index: int
    dimension: int | None = None
    indirect: Indirect | None = None
    dimension_indirect: Indirect | None = None
    array_id: int | None = None

    def __str__(self) -> str:
        text = self.file
        if self.dimension is not None or self.dimension_indirect is not None:
            text += "[" + _index_text(self.dimension or 0, self.dimension_indirect) + "]"
        return text + "[" + _index_text(self.index, self.indirect) + "]"


def _index_text(index: int, indirect: Indirect | None) -> str:
    if indirect is None:
        return str(index)
    text = f"{indirect.file}[{indirect.index}].{CHANNELS[indirect.component]}"
    if index:
        text += f"{index:+d}"
    return text


@dataclass(frozen=True)
class SrcOperand:
    register: Register
    swizzle: tuple[int, int, int, int] = IDENTITY_SWIZZLE
    negate: bool = False
    absolute: bool = False

    def __str__(self) -> str:
        text = str(self.register)
        if self.swizzle != IDENTITY_SWIZZLE:
            text += "." + "".join(CHANNELS[c] for c in self.swizzle)
        if self.absolute:
            text = f"|{text}|"
        return ("-" if self.negate else "") + text


@dataclass(frozen=True)
class DstOperand:
    register: Register
    writemask: tuple[int, ...] = FULL_MASK

    def __str__(self) -> str:
        text = str(self.register)
        if self.writemask != FULL_MASK:
            text += "." + "".join(CHANNELS[c] for c in self.writemask)
        return text


@dataclass(frozen=True)
class Instruction:
    """One numbered instruction. ``line`` is its line in the source text (1-based)."""

    number: int
    opcode: str
    dst: tuple[DstOperand, ...] = ()
    src: tuple[SrcOperand, ...] = ()
    saturate: bool = False
    texture_target: str | None = None
    texture_offsets: tuple[SrcOperand, ...] = ()
    label: int | None = None
    line: int = 0

    def __str__(self) -> str:
        text = self.opcode + ("_SAT" if self.saturate else "")
        operands = [str(d) for d in self.dst] + [str(s) for s in self.src]
        if self.texture_target:
            operands.append(self.texture_target)
        operands += [str(o) for o in self.texture_offsets]
        if operands:
            text += " " + ", ".join(operands)
        if self.label is not None:
            text += f" :{self.label}"
        return text


@dataclass(frozen=True)
class Declaration:
    """``DCL FILE[first..last]`` with its attributes.

    ``semantic`` is e.g. ('GENERIC', 9) or ('POSITION', 0); ``interpolation`` one of
    CONSTANT / LINEAR / PERSPECTIVE / COLOR; ``texture_target`` and ``return_type`` are set
    for SVIEW declarations.
    """

    file: str
    first: int
    last: int
    dimension: int | None = None
    usage_mask: tuple[int, ...] = FULL_MASK
    semantic: tuple[str, int] | None = None
    interpolation: str | None = None
    location: str | None = None
    array_id: int | None = None
    local: bool = False
    invariant: bool = False
    texture_target: str | None = None
    return_type: tuple[str, ...] | None = None
    line: int = 0


@dataclass(frozen=True)
class Immediate:
    """``IMM[n] TYPE {a, b, c, d}``; ``bits`` holds the raw 32-bit patterns."""

    index: int
    type: str
    bits: tuple[int, ...]
    line: int = 0


def program_digest(tgsi: str) -> str:
    """A TGSI program's name (counters, throughput cache): 16 hex digits of its text's SHA-256."""
    return hashlib.sha256(tgsi.encode()).hexdigest()[:16]


@dataclass
class Program:
    """A whole TGSI program: processor, properties, declarations, immediates, instructions."""

    processor: str
    properties: dict[str, str] = field(default_factory=dict)
    declarations: list[Declaration] = field(default_factory=list)
    immediates: list[Immediate] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    source: str = "<tgsi>"
    _register_counts: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def declared(self, file: str) -> list[Declaration]:
        return [d for d in self.declarations if d.file == file]

    def constant_slots(self) -> int:
        """The vec4 slots of constant buffer 0 the program declares (at least 1): the table
        uniforms are written into."""
        return max([d.last + 1 for d in self.declared("CONST") if (d.dimension or 0) == 0],
                   default=1)

    def register_count(self, file: str) -> int:
        """One past the highest index declared (or used) in ``file``. Kept per file: every draw
        asks (the parser only appends, so the lists' lengths tell a stale answer)."""
        key = (file, len(self.declarations), len(self.immediates), len(self.instructions))
        known = self._register_counts.get(key)
        if known is None:
            known = self._register_counts[key] = self._count_registers(file)
        return known

    def _count_registers(self, file: str) -> int:
        count = 0
        for d in self.declarations:
            if d.file == file:
                count = max(count, d.last + 1)
        if file == "IMM":
            count = max(count, len(self.immediates))
        for inst in self.instructions:
            for reg in [o.register for o in inst.src] + [o.register for o in inst.dst]:
                if reg.file == file and reg.indirect is None:
                    count = max(count, reg.index + 1)
        return count

    def reads_texels_at_most_once(self) -> bool:
        """Whether no invocation can run two instructions that read texels: at most one
        (``opcodes.TEXEL_READS``), outside every loop and subroutine. Decides whether the
        texture caches must hold a program's accesses to order them as warps in flight issue
        them (``TextureSampler.warps_in_flight``); False is always safe, only slower."""
        reads = [i for i in self.instructions if i.opcode in TEXEL_READS]
        if len(reads) > 1:
            return False
        return not reads or not any(i.opcode in ("BGNLOOP", "BGNSUB", "CAL")
                                    for i in self.instructions)

    def registers_read_unwritten(self, files=("TEMP", "OUT", "ADDR")) -> dict[str, set[int]]:
        """Per register file, the registers an invocation may read (or, for OUT, leave to its
        caller) in a channel no earlier instruction has written in every lane: those must
        start at zero, as the interpreter defines an unwritten register, and the others need
        no initial value. A write is certain only in the straight-line start of the program,
        before its first flow-control or kill instruction (each then writes its write mask in
        every lane: the exec mask is all lanes), to a register named directly; a register
        read through an address (``TEMP[ADDR[0].x]``) counts as every register of its file
        read. Conservative: every channel a source's swizzle names is read."""
        written: set[tuple[str, int, int]] = set()
        unwritten: dict[str, set[int]] = {file: set() for file in files}
        certain = True
        everything = {file: set(range(self.register_count(file))) for file in files}

        def read_addresses(register: Register) -> None:
            for address in (register.indirect, register.dimension_indirect):
                if address is not None:
                    read(Register(address.file, address.index), {address.component})

        def read(register: Register, channels) -> None:
            read_addresses(register)
            if register.file not in unwritten:
                return
            if register.indirect is not None:
                unwritten[register.file] |= everything[register.file]
            elif any((register.file, register.index, c) not in written for c in channels):
                unwritten[register.file].add(register.index)

        for inst in self.instructions:
            if OPCODES[inst.opcode].category == FLOW:
                certain = False
            for src in (*inst.src, *inst.texture_offsets):
                read(src.register, set(src.swizzle))
            for dst in inst.dst:
                register = dst.register
                read_addresses(register)
                if certain and register.indirect is None and register.file in unwritten:
                    written.update((register.file, register.index, c) for c in dst.writemask)
        if "OUT" in unwritten:      # the caller reads every output channel
            for index in everything["OUT"]:
                read(Register("OUT", index), range(4))
        return unwritten

    def input_semantics(self) -> dict[int, tuple[str, int]]:
        """IN register index -> semantic, for every declared input."""
        return _semantics(self, "IN")

    def output_semantics(self) -> dict[int, tuple[str, int]]:
        return _semantics(self, "OUT")

    def system_value_semantics(self) -> dict[int, tuple[str, int]]:
        return _semantics(self, "SV")

    def to_text(self) -> str:
        """Back to tgsi_dump-like text (used by error messages and tests)."""
        lines = [self.processor]
        lines += [f"PROPERTY {k} {v}" for k, v in self.properties.items()]
        for inst in self.instructions:
            lines.append(f"{inst.number:3d}: {inst}")
        return "\n".join(lines) + "\n"


def _semantics(program: Program, file: str) -> dict[int, tuple[str, int]]:
    found: dict[int, tuple[str, int]] = {}
    for d in program.declared(file):
        if d.semantic is None:
            continue
        name, index = d.semantic
        for offset, reg in enumerate(range(d.first, d.last + 1)):
            found[reg] = (name, index + offset)
    return found
