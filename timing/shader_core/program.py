"""A TGSI program as the core sees it: per instruction its class (which unit, which latency),
its register-file sources and destination, and whether fetch must wait for it.

Registers: a warp's registers are numbered from 0 when it enters the core (002 §5.1), in the
order IN, SV, TEMP, ADDR, OUT of the program's declarations; that number is the register
index of the bank hash. CONST and IMM operands are not register-file reads (constants come
from a constant buffer, immediates with the instruction) and SAMP/SVIEW name a texture unit.
A relatively addressed TEMP (an array) reads the array's first register and the address
register. ``registers.per_warp = fixed80`` gives every warp 80 registers (002 §3.1) whatever
the program uses.

The end of the program is one more instruction, at index ``len(program.instructions)``
(EOP): the interpreter counts no END, the core issues one per warp.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.shaders.ir import Program, Register
from tilesim.shaders.opcodes import OPCODES, TEX
from tilesim.timing.shader_core.state import ALU, BRANCH, EOP, TRANS
from tilesim.timing.shader_core.state import TEX as TEX_CLASS

TRANSCENDENTAL = frozenset({"RCP", "RSQ", "SQRT", "EX2", "LG2", "POW", "SIN", "COS", "EXP",
                            "LOG", "LIT", "DIV", "IDIV", "UDIV", "MOD", "UMOD", "LDEXP"})
# Instructions after which the next one fetched may not be the next in the program.
REDIRECTS = frozenset({"IF", "UIF", "ELSE", "ENDLOOP", "BRK", "CONT", "CAL", "RET", "ENDSUB"})
REGISTER_FILES = ("IN", "SV", "TEMP", "ADDR", "OUT")
FIXED_REGISTERS = 80


@dataclass(frozen=True)
class StaticProgram:
    """Arrays over the program's instructions plus the EOP row."""

    op_class: np.ndarray       # (S,) ALU / TRANS / BRANCH / TEX / EOP
    op_src: np.ndarray         # (S, 3) register indices, -1 where none (distinct registers)
    op_dst: np.ndarray         # (S,) register index or -1
    op_redirect: np.ndarray    # (S,) 1 where fetch waits for the instruction
    opcodes: tuple[str, ...]   # (S,) names, "EOP" last
    registers: int             # the program's registers (IN + SV + TEMP + ADDR + OUT)

    @property
    def eop(self) -> int:
        return len(self.opcodes) - 1


def register_numbering(program: Program) -> tuple[dict[str, int], int]:
    """First register index of each file, and the count."""
    base, count = {}, 0
    for file in REGISTER_FILES:
        base[file] = count
        count += program.register_count(file)
    return base, count


def _index(reg: Register, base: dict[str, int], count: int) -> int:
    if reg.file not in base:
        return -1
    index = base[reg.file] + reg.index
    return index if 0 <= index < count else -1


def static_program(program: Program) -> StaticProgram:
    base, count = register_numbering(program)
    n = len(program.instructions) + 1
    op_class = np.full(n, ALU, dtype=np.int64)
    op_src = np.full((n, 3), -1, dtype=np.int64)
    op_dst = np.full(n, -1, dtype=np.int64)
    op_redirect = np.zeros(n, dtype=np.int64)
    names = []
    for pc, inst in enumerate(program.instructions):
        op = inst.opcode
        names.append(op)
        info = OPCODES.get(op)
        if op == "END":
            op_class[pc] = BRANCH            # never on a path: the EOP row ends each warp
        elif info is not None and info.category == TEX:
            op_class[pc] = TEX_CLASS
        elif op in TRANSCENDENTAL:
            op_class[pc] = TRANS
        elif info is not None and info.category != "alu":
            op_class[pc] = BRANCH
        op_redirect[pc] = op in REDIRECTS
        sources: list[int] = []
        for operand in inst.src:
            reg = operand.register
            for r in (_index(reg, base, count),
                      _index(Register(reg.indirect.file, reg.indirect.index), base, count)
                      if reg.indirect is not None else -1):
                if r >= 0 and r not in sources:
                    sources.append(r)
        for k, r in enumerate(sources[:3]):
            op_src[pc, k] = r
        if inst.dst:
            op_dst[pc] = _index(inst.dst[0].register, base, count)
    names.append("EOP")
    op_class[n - 1] = EOP
    return StaticProgram(op_class, op_src, op_dst, op_redirect, tuple(names), count)
