"""The GLSL precision of every TGSI instruction, for running ``mediump`` in 16-bit floats.

TGSI has no precision qualifiers, but the GLSL ES 1.00 program it came from does, and Mesa's
NIR ``decl_var`` lines print them for every input, output, uniform and sampler (the GLSL
default precision statements already applied). :func:`register_precisions` maps them onto the
TGSI registers through ``interface.json``; :func:`instruction_precisions` then derives the
precision of each channel each instruction writes, as a forward dataflow pass over the
program.

The rule is GLSL ES 1.00 §4.5.2 ("Precision Qualifiers"): an operation's precision is the
highest precision of its operands that have one; constants (TGSI immediates) have none; a
texture lookup's result has the precision of its sampler, whatever the coordinates'. Mesa's
``src/compiler/glsl/lower_precision.cpp`` (the pass that makes llvmpipe compute mediump in
fp16) applies the same rule to expression trees, with the details this module follows:

- an expression whose operands are all constants has no precision and stays 32-bit;
- a highp operand makes the whole operation highp (its "CANT_LOWER");
- texture coordinates are independent of the lookup ("INDEPENDENT_OPERATION"), the result
  takes the sampler's precision;
- comparisons are lowered (their boolean result has no precision), and so are derivatives
  on drivers that report ``PIPE_SHADER_CAP_FP16_DERIVATIVES``, which llvmpipe does
  (``lp_has_fp16()``, x86 F16C);
- a plain copy (a GLSL assignment of a variable, TGSI ``MOV``) converts nothing: Mesa inserts
  no conversion around a bare dereference.

In TGSI the GLSL temporaries are registers that the compiler reuses for unrelated values and
whose channels it packs from different expressions (one ``MAD`` may compute a highp and a
mediump channel), so the precision is tracked per register channel and per written channel:
a write sets the channel's precision (partial write masks leave the other channels alone);
where control flow merges (after IF/ELSE, around loops, after BRK/CONT, at subroutine
returns) a channel takes the highest precision of the paths that reach it, and an
instruction visited with several states (a loop body) keeps the highest precision seen.

Precision letters: ``h`` highp, ``m`` mediump, ``l`` lowp, ``-`` none (a constant, a
boolean, or a channel the instruction does not write).

What Mesa does that this module does not reproduce (the TGSI no longer shows it): an
assignment of a highp expression to a ``mediump`` GLSL variable rounds it in Mesa (its
"lower_variables" pass makes the variable 16-bit), while here the register keeps the highp
value and what reads it stays highp; Mesa lowers a whole vector expression at once where
TGSI may have split or merged it across instructions; mediump integers (16-bit in llvmpipe,
``PIPE_SHADER_CAP_INT16``) stay 32-bit.
"""

from __future__ import annotations

import re

from tilesim.shaders.ir import Instruction, Program, SrcOperand
from tilesim.shaders.opcodes import DOT, OPCODES, REPLICATE, TEX

PRECISION_FORMAT_VERSION = 1
HIGH, MEDIUM, LOW, NONE = "h", "m", "l", "-"
_RANK = {NONE: 0, LOW: 1, MEDIUM: 2, HIGH: 3}
_LETTER = {rank: letter for letter, rank in _RANK.items()}
GLSL_PRECISION = {"highp": HIGH, "mediump": MEDIUM, "lowp": LOW}
LOWERED = frozenset({MEDIUM, LOW})  # what fp16 mode computes in 16-bit floats
# Registers whose precision the interface cannot tell are taken as highp: computing them in
# float32 is what tilesim did before precision was known.
UNKNOWN = HIGH
_STORED_FILES = ("TEMP", "OUT", "ADDR")
_XYZW = "xyzw"


def _join(*letters: str) -> str:
    return _LETTER[max((_RANK[x] for x in letters), default=0)]


# ----------------------------------------------------------------------------------------------
# Registers


def register_precisions(interface: dict, stage: str, nir_precision: dict[str, str | None]
                        ) -> dict[str, str]:
    """Precision letters of the registers ``stage`` reads: ``{"IN[1]": "mmhh", "CONST[0][3]":
    "mmmm", "SAMP[0]": "l", ...}`` (one letter per component; ``-`` for booleans).

    ``nir_precision``: GLSL name -> "highp" / "mediump" / "lowp" / None, from the stage's NIR
    ``decl_var`` lines. Mesa's internal state uniforms (``interface["state"]``, e.g. the
    y flip of gl_FragCoord and of dFdy) have no precision, like constants: llvmpipe's NIR
    converts ``gl_FbWposYTransform`` to fp16 where a mediump derivative uses it.
    """
    def letter(name: str) -> str:
        base = name.split("@", 1)[0]
        precision = nir_precision.get(name, nir_precision.get(base))
        return GLSL_PRECISION.get(precision or "", UNKNOWN)

    out: dict[str, list[str]] = {}

    def put(register: str, component: int, value: str) -> None:
        out.setdefault(register, [UNKNOWN] * 4)[component] = value

    if stage == "vertex":
        for attribute in interface["attributes"]:
            for register in attribute["registers"] or []:
                for c in range(4):
                    put(register, c, letter(attribute["name"]))
    else:
        for varying in interface["varyings"]:
            for piece in varying["fragment"] or []:
                if piece["register"] is not None:
                    for i in range(piece["count"]):
                        put(piece["register"], piece["component"] + i, letter(varying["name"]))
    for builtin in interface["builtins"][stage]:
        if builtin["register"].startswith("OUT"):
            continue  # written, never read: outputs take the precision of what writes them
        # gl_FrontFacing is a bool: it has no precision (GLSL ES 1.00 §4.5.2).
        value = NONE if builtin["name"] == "gl_FrontFacing" else letter(builtin["name"])
        for c in range(4):
            put(builtin["register"], c, value)
    for uniform in interface["uniforms"]:
        place = uniform[stage]
        if place is None:
            continue
        value = NONE if uniform.get("storage") == "bool32" else letter(uniform["name"])
        for slot in range(place["first_slot"], place["first_slot"] + place["slots"]):
            for c in range(4):
                put(f"CONST[{place['buffer']}][{slot}]", c, value)
    for state in interface["state"]:
        if state["stage"] == stage:
            for c in range(4):
                put(f"CONST[{state['buffer']}][{state['slot']}]", c, NONE)
    for sampler in interface["samplers"]:
        place = sampler[stage]
        for register in (place or {}).get("samplers", []):
            out[register] = [letter(sampler["name"])]
    return {register: "".join(letters) for register, letters in out.items()}


# ----------------------------------------------------------------------------------------------
# Instructions


class _Analysis:
    """Forward dataflow over one program's structured control flow."""

    MAX_DEPTH = 64  # subroutine nesting; deeper is malformed (the interpreter refuses it)

    def __init__(self, program: Program, registers: dict[str, str]):
        self.program = program
        self.registers = registers
        self.result: list[str] = ["----"] * len(program.instructions)
        self.products: dict[int, str] = {}
        self.breaks: list[list[dict]] = []
        self.continues: list[list[dict]] = []
        self.returns: list[list[dict]] = []
        self.depth = 0

    # -- operands ---------------------------------------------------------------------------

    def _read(self, state: dict, src: SrcOperand, component: int) -> str:
        """Precision of one channel (after swizzle) of a source operand."""
        reg = src.register
        channel = src.swizzle[component]
        if reg.file == "IMM":
            return NONE
        if reg.file in _STORED_FILES:
            if reg.indirect is not None:  # a TEMP array read at a run-time index
                return _join(*(v for (f, _, c), v in state.items()
                               if f == reg.file and c == channel))
            return state.get((reg.file, reg.index, channel), NONE)
        if reg.file == "CONST":
            name = f"CONST[{reg.dimension or 0}][{reg.index}]"
        else:
            name = f"{reg.file}[{reg.index}]"
        letters = self.registers.get(name)
        return letters[channel] if letters and len(letters) == 4 else UNKNOWN

    def _precisions(self, state: dict, inst: Instruction) -> str:
        """The precision of each channel the instruction writes (4 letters)."""
        info = OPCODES.get(inst.opcode)
        if info is None or not inst.dst:
            return "----"
        mask = inst.dst[0].writemask
        if info.category == TEX:
            if inst.opcode == "TXQ":
                return "----"
            sampler = inst.src[-1].register
            letters = self.registers.get(f"SAMP[{sampler.index}]", UNKNOWN)
            return "".join(letters[0] if c in mask else NONE for c in range(4))
        sources = inst.src
        if inst.opcode == "UCMP":
            sources = inst.src[1:]  # the selected values, not the condition (a boolean)
        if info.shape == REPLICATE:
            whole = _join(*(self._read(state, s, 0) for s in sources))
            return "".join(whole if c in mask else NONE for c in range(4))
        if info.shape == DOT or inst.opcode in ("LIT", "EXP", "LOG", "DST"):
            width = info.dot_width or 4
            whole = _join(*(self._read(state, s, k) for s in sources for k in range(width)))
            return "".join(whole if c in mask else NONE for c in range(4))
        return "".join(_join(*(self._read(state, s, c) for s in sources)) if c in mask
                       else NONE for c in range(4))

    def _write(self, state: dict, inst: Instruction, letters: str) -> None:
        dst = inst.dst[0]
        reg = dst.register
        if reg.file not in _STORED_FILES:
            return
        for c in dst.writemask:
            key = (reg.file, reg.index, c)
            if reg.indirect is not None:  # unknown element: it may keep its old value
                state[key] = _join(state.get(key, NONE), letters[c])
            else:
                state[key] = letters[c]

    def _record(self, pc: int, letters: str) -> None:
        old = self.result[pc]
        self.result[pc] = "".join(_join(a, b) for a, b in zip(old, letters, strict=True))

    def _record_product(self, pc: int, state: dict, inst: Instruction, letters: str) -> None:
        """A MAD whose product is mediump while its sum is highp (``h + m * 7.1``: TGSI fused
        a mediump multiply into a highp add): the product's precision, per channel."""
        a, b = inst.src[0], inst.src[1]
        product = "".join(_join(self._read(state, a, c), self._read(state, b, c))
                          if c in inst.dst[0].writemask else NONE for c in range(4))
        if any(p in LOWERED and r not in LOWERED for p, r in zip(product, letters, strict=True)):
            old = self.products.get(pc, "----")
            self.products[pc] = "".join(_join(a, b) for a, b in zip(old, product, strict=True))

    # -- control flow -----------------------------------------------------------------------

    def block(self, pc: int, state: dict, stops: tuple[str, ...]) -> tuple[int, dict]:
        """Walk from ``pc`` to the first instruction whose opcode is in ``stops`` (at this
        nesting level); returns its index and the state there."""
        instructions = self.program.instructions
        while pc < len(instructions):
            inst = instructions[pc]
            op = inst.opcode
            if op in stops or op == "END":
                return pc, state
            if op in ("IF", "UIF"):
                end, then_state = self.block(pc + 1, dict(state), ("ELSE", "ENDIF"))
                else_state = state
                if end < len(instructions) and instructions[end].opcode == "ELSE":
                    end, else_state = self.block(end + 1, dict(state), ("ENDIF",))
                state = merge(then_state, else_state)
                pc = end + 1
            elif op == "BGNLOOP":
                pc, state = self.loop(pc, state)
            elif op == "BRK" and self.breaks:
                self.breaks[-1].append(dict(state))
                pc += 1
            elif op == "CONT" and self.continues:
                self.continues[-1].append(dict(state))
                pc += 1
            elif op == "RET":
                if self.returns:
                    self.returns[-1].append(dict(state))
                pc += 1
            elif op == "CAL":
                state = self.call(inst, state)
                pc += 1
            elif op in ("ELSE", "ENDIF", "ENDLOOP", "ENDSUB", "BGNSUB"):
                return pc, state  # malformed nesting: the interpreter reports it
            else:
                letters = self._precisions(state, inst)
                self._record(pc, letters)
                if op == "MAD":
                    self._record_product(pc, state, inst, letters)
                if inst.dst:
                    self._write(state, inst, letters)
                pc += 1
        return pc, state

    def loop(self, pc: int, state: dict) -> tuple[int, dict]:
        """A BGNLOOP at ``pc``: iterate the body until the state at its head is stable."""
        head = dict(state)
        while True:
            self.breaks.append([])
            self.continues.append([])
            end, body_end = self.block(pc + 1, dict(head), ("ENDLOOP",))
            breaks, continues = self.breaks.pop(), self.continues.pop()
            new_head = merge(state, body_end, *continues)
            if new_head == head:
                break
            head = new_head
        return end + 1, merge(*breaks) if breaks else body_end

    def call(self, inst: Instruction, state: dict) -> dict:
        target = inst.label
        instructions = self.program.instructions
        if target is None or not 0 <= target < len(instructions) or self.depth >= self.MAX_DEPTH:
            return state
        if instructions[target].opcode == "BGNSUB":
            target += 1
        self.depth += 1
        self.returns.append([])
        _, end_state = self.block(target, dict(state), ("ENDSUB",))
        returns = self.returns.pop()
        self.depth -= 1
        return merge(end_state, *returns)


def merge(*states: dict) -> dict:
    """Where paths meet: each channel takes the highest precision of any path."""
    out: dict = {}
    for state in states:
        for key, letter in state.items():
            out[key] = _join(out.get(key, NONE), letter)
    return out


def instruction_precisions(program: Program, registers: dict[str, str]) -> list[str]:
    """Per instruction, the precision of each channel it writes: 4 letters over xyzw
    (``-`` for channels not written and for instructions that write nothing); a MAD whose
    product is mediump or lowp in a channel where its sum is highp adds ``/`` and the
    product's 4 letters (``"h---/m---"``): GLSL computed that product as an operation of its
    own, which Mesa lowers."""
    analysis = _Analysis(program, registers)
    analysis.block(0, {}, ())
    return [letters + ("/" + analysis.products[pc] if pc in analysis.products else "")
            for pc, letters in enumerate(analysis.result)]


def lowered_channels(precisions: list[str]) -> list[tuple[int, ...]]:
    """Per instruction, the channels fp16 mode computes in 16-bit floats (mediump, lowp)."""
    return [tuple(c for c, letter in enumerate(letters[:4]) if letter in LOWERED)
            for letters in precisions]


def lowered_products(precisions: list[str]) -> list[tuple[int, ...]]:
    """Per instruction, the channels of a MAD whose product alone fp16 mode computes in 16-bit
    floats (the ``/`` part of its precision string)."""
    return [tuple(c for c, letter in enumerate(letters[5:9]) if letter in LOWERED)
            for letters in precisions]


# ----------------------------------------------------------------------------------------------
# What the TGSI cannot show


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_GLOBAL_QUALIFIERS = frozenset({"uniform", "varying", "attribute", "precision"})


def untracked_highp_lines(glsl: str) -> list[int]:
    """Lines of a GLSL ES 1.00 stage that declare a ``highp`` local variable, function
    parameter or return type in a stage that also computes in ``mediump`` or ``lowp``.

    Mesa decides such a value's precision by its GLSL variable (a ``highp`` parameter keeps
    the mediump arguments of glmark2 terrain's noise in 32 bits, where fp16 would overflow),
    but the compiler propagates copies and inlines functions before the TGSI tilesim runs, so
    the dataflow here sees only the mediump operands and computes the value in fp16: the fp16
    mode's result can then differ from llvmpipe's, by much. Global declarations (uniforms,
    varyings, attributes) are tracked and not listed."""
    text = _COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), glsl)
    # Object-like macros that stand for highp (glmark2's HIGHP_OR_DEFAULT under
    # GL_FRAGMENT_PRECISION_HIGH) count as highp; preprocessor lines are not declarations.
    spelled = {"highp"} | set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+highp[ \t]*$",
                                         text, re.M))
    text = re.sub(r"^[ \t]*#[^\n]*", "", text, flags=re.M)
    if not re.search(r"\b(mediump|lowp)\b", text):
        return []       # everything highp: the dataflow is exact
    lines = []
    for match in re.finditer(r"\b(" + "|".join(sorted(spelled)) + r")\b", text):
        statement = re.split(r"[;{}]", text[:match.start()])[-1]
        if _GLOBAL_QUALIFIERS.isdisjoint(re.findall(r"[A-Za-z_]\w*", statement)):
            lines.append(text.count("\n", 0, match.start()) + 1)
    return lines
