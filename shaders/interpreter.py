"""Vectorized TGSI interpreter: one program over N invocations at once.

Each lane is one vertex or one fragment; fragments come in 2x2 quads (lanes 4q..4q+3 are
top-left, top-right, bottom-left, bottom-right, "bottom" being +1 in the y the renderer
uses for derivatives). All lanes of a program step through the instruction list together,
SIMT style: structured control flow narrows an execution mask the way Gallium's tgsi_exec
does (condition, loop, continue and function masks), and an instruction with no active
lane is not computed. Registers hold raw 32-bit patterns (uint32 arrays of shape
(registers, 4, N)); float and integer opcodes view them as they need.

Works on NumPy or CuPy: the backend is taken from the input arrays.

Precision (``mediump``): by default every float instruction computes in float32, as Mesa
softpipe (whose TGSI this runs) does. In fp16 mode (``Interpreter(program, precision=...,
mediump="fp16")``, the precision from ``interface.json``, :mod:`tilesim.shaders.precision`)
the channels an instruction computes at mediump or lowp are computed as Mesa llvmpipe does
after its ``lower_precision`` pass, and as mobile GPUs (Mali-class, the thesis's Table 3.1
baseline) run mediump: each float source is converted to fp16 (a varying or uniform read
in 32 bits is converted where a mediump operation reads it; constants are converted), the
operation is computed in float32 and its result rounded to fp16 (round to nearest even,
beyond +-65504 to +-inf, fp16 subnormals kept: x86 F16C conversions, which llvmpipe uses,
do not flush them). A plain copy (MOV) converts nothing, as Mesa adds no conversion to a
bare variable read; texture coordinates are not converted (the lookup's result takes the
sampler's precision).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.backend import array_module, quad_all
from tilesim.backend import xp as active_xp
from tilesim.errors import InputError
from tilesim.shaders import opcodes as ops
from tilesim.shaders.ir import Instruction, Program, SrcOperand
from tilesim.shaders.opcodes import (
    COMPONENT,
    DOT,
    F32,
    I32,
    OPCODES,
    REPLICATE,
    U32,
    to_half,
)
from tilesim.shaders.precision import lowered_channels, lowered_products
from tilesim.shaders.sampling import (
    BIAS,
    EXPLICIT,
    GRADIENT,
    IMPLICIT,
    LEVEL_ZERO,
    ProceduralSampler,
    Sampler,
    TextureRequest,
)
from tilesim.shaders.stats import DynamicCounter, DynamicStats

MAX_LOOP_ITERATIONS = 1 << 16
# Budget of instructions one invocation may execute, across loops and calls: a bound on the
# longest lane (lanes step together, so it counts the instructions issued while any lane is
# active). Nested loops each under MAX_LOOP_ITERATIONS would otherwise run for hours. Real
# GLES2 shaders have loops with constant bounds (GLSL ES 1.00 Appendix A): every corpus
# program runs within a budget of 1,000 (`tilesim --instruction-budget 1000 shader check
# shaders/corpus`), so the default leaves a margin of over 250x.
INSTRUCTION_BUDGET = 1 << 18
# Subroutine nesting: GLSL ES 1.00 forbids recursion (§6.1), so a deeper stack than any
# real call chain is a malformed or hostile program (a CAL to itself grew memory unbounded).
MAX_CALL_DEPTH = 64
# Both are set for a whole run (and its worker processes) by ``tilesim --instruction-budget``
# and ``tilesim --call-depth``, through these variables.
BUDGET_ENV, CALL_DEPTH_ENV = "TILESIM_INSTRUCTION_BUDGET", "TILESIM_CALL_DEPTH"


def _limit(env: str, default: int) -> int:
    text = os.environ.get(env)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(f"{env}: expected a positive integer, got {text!r}")
    return value
_CATEGORY_INDEX = {c: i for i, c in enumerate(ops.CATEGORIES)}
_FLOW_PAIRS = {"IF": "ENDIF", "UIF": "ENDIF", "BGNLOOP": "ENDLOOP", "BGNSUB": "ENDSUB"}


@dataclass
class Execution:
    """The result of running a program over N lanes.

    outputs: (R, 4, N) float32 (a view of the raw bits: integer outputs read with
        ``outputs.view(np.uint32)``).
    killed: (N,) bool, fragments discarded by KILL / KILL_IF.
    stats: dynamic instruction statistics.
    trace: when requested, (pc (T,) int32, active lanes per warp (T, W) uint8) for every
        issued instruction, in execution order.
    """

    outputs: Any
    killed: Any
    stats: DynamicStats
    trace: tuple[Any, Any] | None = None


MEDIUMP_MODES = ("fp32", "fp16")


class UnsupportedOpcode(InputError):
    """The program uses a TGSI opcode the interpreter does not implement."""


def _control_structure(program: Program) -> dict[int, dict[str, int]]:
    """Matching partners of every flow instruction, checked: IF->ELSE/ENDIF, loops, subs."""
    links: dict[int, dict[str, int]] = {}
    stack: list[int] = []
    loops: list[int] = []
    src = program.source
    for pc, inst in enumerate(program.instructions):
        op = inst.opcode
        if op in ("IF", "UIF", "BGNLOOP", "BGNSUB"):
            stack.append(pc)
            links[pc] = {}
            if op == "BGNLOOP":
                loops.append(pc)
        elif op == "ELSE":
            if not stack or program.instructions[stack[-1]].opcode not in ("IF", "UIF"):
                raise InputError("ELSE without IF", source=src, line=inst.line)
            if "else" in links[stack[-1]]:
                raise InputError("second ELSE for one IF", source=src, line=inst.line)
            links[stack[-1]]["else"] = pc
            links[pc] = {"if": stack[-1]}
        elif op in ("ENDIF", "ENDLOOP", "ENDSUB"):
            opener = program.instructions[stack[-1]].opcode if stack else None
            if opener is None or _FLOW_PAIRS[opener] != op:
                raise InputError(f"{op} without matching opener (innermost open block: "
                                 f"{opener or 'none'})", source=src, line=inst.line)
            start = stack.pop()
            links[start]["end"] = pc
            links[pc] = {"begin": start}
            if "else" in links[start]:
                links[links[start]["else"]]["end"] = pc
            if op == "ENDLOOP":
                loops.pop()
        elif op in ("BRK", "CONT"):
            if not loops:
                raise InputError(f"{op} outside a loop", source=src, line=inst.line)
            links[pc] = {"loop": loops[-1]}
        elif op == "CAL":
            if inst.label is None or not 0 <= inst.label < len(program.instructions):
                raise InputError("CAL without a valid label", source=src, line=inst.line)
            links[pc] = {"target": inst.label}
    if stack:
        inst = program.instructions[stack[-1]]
        raise InputError(f"{inst.opcode} is never closed", source=src, line=inst.line)
    return links


# Flow control: executed by the interpreter loop itself, whatever the exec mask.
_FLOW_OPS = frozenset({"IF", "UIF", "ELSE", "ENDIF", "BGNLOOP", "BRK", "CONT", "ENDLOOP",
                       "CAL", "RET", "ENDSUB", "BGNSUB", "NOP"})
# The files an operand names by index, and the dtype (its character) each kind reads as.
_REGISTER_FILES = ("TEMP", "OUT", "IN", "ADDR", "SV")
_F32_CHAR, _I32_CHAR, _U32_CHAR = (np.dtype(t).char for t in (F32, I32, U32))


@dataclass(slots=True)  # built once per instruction: no frozen __init__ cost
class _Source:
    """A source operand of a fast-path instruction, decoded once: where its bits are, which
    rows to take (a slice reads a view, a tuple is copied with ``take``) and how to type them."""

    file: str
    buffer: int          # CONST buffer (0 elsewhere)
    index: int
    rows: slice | tuple[int, ...]
    width: int           # rows read
    dtype: str           # dtype character the bits are read as
    kind: str
    negate: bool
    absolute: bool
    key: tuple[str, int, str]   # ``_Run._typed``'s: file, buffer, dtype
    view: bool                  # rows is a slice
    modified: bool              # negate or absolute


@dataclass(slots=True)  # built once per instruction: no frozen __init__ cost
class _Plan:
    """One instruction decoded once per Interpreter. ``sources`` is set for the fast path
    (a COMPONENT / REPLICATE / DOT instruction with no fp16 rounding, on directly addressed
    registers); None sends the instruction to the general path (``fetch`` / ``store``)."""

    inst: Instruction
    info: ops.OpInfo
    flow: bool
    category_index: int
    samples: bool                      # a texture instruction that samples (not TXQ)
    half_rows: list[bool] | None       # fp16 mode: source rows rounded (``_half_rows``)
    products: tuple[int, ...]          # fp16 mode: channels of a mediump product in a MAD
    sources: tuple[_Source, ...] | None = None
    dst_file: str = ""
    dst_index: int = 0
    dst_channels: tuple[int, ...] = ()
    dst_rows: slice | None = None      # the written channels as a slice, when contiguous
    saturate: bool = False
    stored_as: tuple[str, ...] = ()    # result dtypes stored as they are (``_STORED_AS``)
    handler: Callable[[Any, Any], None] | None = None   # the _Run method of a non-flow op


@functools.cache  # a handful of swizzles recur in every program
def _row_index(channels: tuple[int, ...], broadcast: bool) -> slice | tuple[int, ...]:
    """A slice picking ``channels`` of a register (a view), or the channels themselves (for
    ``take``). With ``broadcast`` one channel replicated (``.xxxx``) is a single row, which
    broadcasts."""
    first = channels[0]
    if broadcast and all(c == first for c in channels):
        return slice(first, first + 1)
    if channels == tuple(range(first, first + len(channels))):
        return slice(first, first + len(channels))
    return channels


def _read_dtype(kind: str, src: SrcOperand) -> str:
    if kind == "float" or (kind == "any" and (src.negate or src.absolute)):
        return _F32_CHAR
    return _I32_CHAR if kind == "int" else _U32_CHAR


def _modified(xp, v, kind: str, negate: bool, absolute: bool):
    """Source modifiers, applied as the source's kind reads them (``v`` already typed)."""
    if kind == "int":
        if absolute:
            v = ops._iabs(v)
        return ops._ineg(v) if negate else v
    if kind == "uint":
        return (U32(0) - v).astype(U32) if negate else v
    if absolute:
        v = xp.abs(v)
    return -v if negate else v


def _saturated(xp, value):
    """Clamped to [0, 1]; NaN saturates to 0, as llvmpipe does."""
    value = value.view(F32) if value.dtype == U32 else value.astype(F32, copy=False)
    return xp.where(value > 0, xp.minimum(value, F32(1)), F32(0)).astype(F32)


# The dtypes (characters) each result kind is stored as it is; others are converted.
_STORED_AS = {"float": (_F32_CHAR, _U32_CHAR), "any": (_F32_CHAR, _U32_CHAR),
              "int": (_I32_CHAR, _U32_CHAR), "uint": (_I32_CHAR, _U32_CHAR)}


def _register_typed(value, kind: str):
    """``value`` as the dtype its bits are stored in: float32 for float results (uint32 bits
    pass as they are), int32 / uint32 for integer ones."""
    if value.dtype.char in _STORED_AS[kind]:
        return value
    if kind in ("float", "any"):
        return value.astype(F32)
    return value.astype(np.int64).astype(U32)


class Interpreter:
    """A prepared program. ``run`` executes it over arrays of lanes; it may be called often:
    what every run needs of an instruction is decoded once, here (``plans``)."""

    def __init__(self, program: Program, *, instruction_budget: int | None = None,
                 call_depth: int | None = None, precision: list[str] | None = None,
                 mediump: str = "fp32"):
        """``instruction_budget`` / ``call_depth``: the limits of one invocation (None: the
        run's, ``TILESIM_INSTRUCTION_BUDGET`` / ``TILESIM_CALL_DEPTH``, else the defaults).
        ``mediump``: "fp32" (every float in float32) or "fp16" (mediump and lowp channels in
        16-bit floats, module docstring); ``precision``: per instruction, the precision
        letters of its channels (``interface.json``'s ``precision``); None (an interface
        written before precision was recorded): every instruction runs in float32."""
        if mediump not in MEDIUMP_MODES:
            raise ValueError(f"mediump must be one of {MEDIUMP_MODES}, got {mediump!r}")
        if precision is not None and len(precision) != len(program.instructions):
            raise InputError(f"precision lists {len(precision)} instructions, the program has "
                             f"{len(program.instructions)}", source=program.source)
        self.program = program
        self.mediump = mediump
        # Per instruction, the channels computed in fp16 (empty: float32).
        self.lowered: list[tuple[int, ...]] = (
            lowered_channels(precision) if mediump == "fp16" and precision is not None
            else [()] * len(program.instructions))
        self.lowered_products: list[tuple[int, ...]] = (
            lowered_products(precision) if mediump == "fp16" and precision is not None
            else [()] * len(program.instructions))
        self.instruction_budget = (_limit(BUDGET_ENV, INSTRUCTION_BUDGET)
                                   if instruction_budget is None else instruction_budget)
        self.call_depth = (_limit(CALL_DEPTH_ENV, MAX_CALL_DEPTH) if call_depth is None
                           else call_depth)
        if self.instruction_budget < 1 or self.call_depth < 1:
            raise ValueError(f"limits must be >= 1, got instruction budget "
                             f"{self.instruction_budget}, call depth {self.call_depth}")
        for inst in program.instructions:
            if inst.opcode not in OPCODES:
                raise UnsupportedOpcode(
                    f"opcode {inst.opcode} (instruction {inst.number}) is not implemented by "
                    "the interpreter", source=program.source, line=inst.line)
        self.links = _control_structure(program)
        self.num_temps = max(program.register_count("TEMP"), 1)
        self.num_outputs = max(program.register_count("OUT"), 1)
        self.num_addrs = max(program.register_count("ADDR"), 1)
        self.num_inputs = program.register_count("IN")
        # Whether an instruction writes an IN register (not valid TGSI, but the interpreter
        # lets it write its own copy): otherwise the caller's inputs are read in place.
        self.writes_inputs = any(d.register.file == "IN" for inst in program.instructions
                                 for d in inst.dst)
        # The registers a run must zero (read before certainly written); the rest start
        # uninitialized: zeroing every register of a million lanes cost more than the
        # arithmetic of a short program.
        self.zeroed = program.registers_read_unwritten()
        self.sv_semantics = program.system_value_semantics()
        self.num_system_values = program.register_count("SV")
        imm = np.zeros((max(len(program.immediates), 1), 4), dtype=U32)
        for im in program.immediates:
            imm[im.index, : len(im.bits)] = im.bits
        self._immediates_host = imm
        # Registers a run allocates per file (the shapes of ``_Run.files``).
        self.register_counts = {"TEMP": self.num_temps, "OUT": self.num_outputs,
                                "ADDR": self.num_addrs, "IN": max(self.num_inputs, 1),
                                "SV": max(self.num_system_values, 1)}
        self.plans = [self._decode(pc, inst) for pc, inst in enumerate(program.instructions)]

    def __deepcopy__(self, memo) -> Interpreter:
        # Prepared once and never changed after (a run keeps its registers elsewhere): copies
        # of a renderer (Renderer.snapshot) share it.
        return self

    # -- decoding ---------------------------------------------------------------------------

    def _decode(self, pc: int, inst: Instruction) -> _Plan:
        """What the run loop needs of ``inst``, worked out once rather than on every run."""
        info = OPCODES[inst.opcode]
        flow = inst.opcode in _FLOW_OPS
        fast = None if flow else self._fast_operands(pc, inst, info)
        return _Plan(inst=inst, info=info, flow=flow,
                     category_index=_CATEGORY_INDEX[info.category],
                     samples=info.category == ops.TEX and info.name != "TXQ",
                     half_rows=self._half_rows(inst, info),
                     products=self.lowered_products[pc],
                     handler=None if flow else _handler(inst.opcode, info, fast is not None),
                     **(fast or {}))

    def _lowered_at(self, inst: Instruction) -> tuple[int, ...]:
        return self.lowered[inst.number] if inst.number < len(self.lowered) else ()

    def _half_rows(self, inst: Instruction, info) -> list[bool] | None:
        """fp16 mode: which source rows of ``inst`` are rounded to fp16 (None: none). A
        component-wise instruction reads one row per written channel, so its rows follow its
        channels' precisions; the others compute every channel from the same rows, all of
        one precision. MOV copies and texture coordinates are never rounded (module
        docstring); results are rounded in ``store``."""
        lowered = self._lowered_at(inst)
        if not lowered or inst.opcode == "MOV" or info.category == ops.TEX:
            return None
        if info.shape == COMPONENT:
            return [c in lowered for c in inst.dst[0].writemask]
        return [True]

    def _fast_operands(self, pc: int, inst: Instruction, info) -> dict | None:
        """The fast path's decoded operands (``_Plan`` fields) of a COMPONENT, REPLICATE or
        DOT instruction with no fp16 rounding, on directly addressed registers; None for the
        rest."""
        if info.shape not in (COMPONENT, REPLICATE, DOT) or len(inst.dst) != 1:
            return None
        if self._lowered_at(inst) or self.lowered_products[pc]:  # fp16: the general path
            return None
        dst = inst.dst[0].register
        written = tuple(inst.dst[0].writemask)
        if (not written or dst.indirect is not None or dst.file not in _REGISTER_FILES
                or dst.index >= self.register_counts[dst.file]):
            return None
        if info.shape == COMPONENT:
            reads = [(src, tuple(src.swizzle[c] for c in written), info.src_type)
                     for src in inst.src]
        elif info.shape == REPLICATE:
            reads = [(src, (src.swizzle[0],), info.src_type) for src in inst.src]
        else:  # a dot product indexes its rows: no single broadcast row
            reads = [(src, tuple(src.swizzle[: info.dot_width]), "float")
                     for src in inst.src[:2]]
        sources = []
        for src, channels, kind in reads:
            source = self._fast_source(src, channels, kind, info.shape != DOT, dst, written)
            if source is None:
                return None
            sources.append(source)
        contiguous = written == tuple(range(written[0], written[0] + len(written)))
        return {"sources": tuple(sources), "dst_file": dst.file, "dst_index": dst.index,
                "dst_channels": written,
                "dst_rows": slice(written[0], written[-1] + 1) if contiguous else None,
                "saturate": inst.saturate and info.dst_type in ("float", "any"),
                "stored_as": _STORED_AS[info.dst_type]}

    def _fast_source(self, src: SrcOperand, channels: tuple[int, ...], kind: str,
                     broadcast: bool, dst, written: tuple[int, ...]) -> _Source | None:
        reg = src.register
        if reg.indirect is not None or reg.dimension_indirect is not None:
            return None
        if reg.file in _REGISTER_FILES:
            if reg.index >= self.register_counts[reg.file]:
                return None
        elif reg.file == "IMM":
            if reg.index >= len(self._immediates_host):
                return None
        elif reg.file != "CONST":
            return None
        rows = _row_index(channels, broadcast)
        # The store may write channel by channel: a view of the register it writes is safe
        # only where each written channel gets its own value or all get one channel's
        # (MOV TEMP[0].yw, TEMP[0].xxyy would copy the new y into w).
        if (isinstance(rows, slice) and (reg.file, reg.index) == (dst.file, dst.index)
                and rows.stop - rows.start > 1
                and tuple(range(rows.start, rows.stop)) != written):
            rows = channels
        view = isinstance(rows, slice)
        buffer = (reg.dimension or 0) if reg.file == "CONST" else 0
        dtype = _read_dtype(kind, src)
        return _Source(file=reg.file, buffer=buffer, index=reg.index, rows=rows,
                       width=rows.stop - rows.start if view else len(rows), dtype=dtype,
                       kind=kind, negate=src.negate, absolute=src.absolute,
                       key=(reg.file, buffer, dtype), view=view,
                       modified=src.negate or src.absolute)

    # -- public -----------------------------------------------------------------------------

    def run(self, inputs=None, constants=None, *, lanes: int | None = None,
            sampler: Sampler | None = None, system_values: dict | None = None,
            record_trace: bool = False) -> Execution:
        """Run over N lanes.

        inputs: (R, 4, N) float32 or uint32 array (IN registers), or {index: (4, N)}.
        constants: (S, 4) for CONST buffer 0, or {buffer: (S, 4)}; float32 or uint32 bits.
        system_values: {semantic name: (4, N)} for SV registers (e.g. 'FACE', 'VERTEXID').
        lanes: N, needed only when there are no inputs to take it from.
        """
        sampler = sampler or ProceduralSampler()
        # Imported here: it loads Numba, which the command line's parser (importing this
        # module through the trace importer) must not.
        from tilesim.shaders import compiled_program

        if not record_trace and compiled_program.jit.enabled():
            # The program compiled to native kernels, for NumPy arrays: the same bits and
            # counters (tilesim.shaders.compiled_program); None where the interpreter runs.
            execution = compiled_program.run_compiled(self, inputs, constants, lanes, sampler,
                                                      system_values or {})
            if execution is not None:
                return execution
        run = _Run(self, inputs, constants, lanes, sampler, system_values or {}, record_trace)
        return run.execute()


def interpret(program: Program, inputs=None, constants=None, **kwargs) -> Execution:
    """One-shot convenience: ``Interpreter(program).run(...)``."""
    return Interpreter(program).run(inputs, constants, **kwargs)


def _rows_of(block, channels: list[int]):
    """``channels`` of a (4, ...) register block: a view for all four or for one channel
    (neither changes under a store into the same register, which copies row by row), else a
    copy."""
    if channels == [0, 1, 2, 3]:
        return block
    if len(channels) == 1:
        return block[channels[0]:channels[0] + 1]
    return block.take(channels, axis=0)


def _as_bits(xp, a):
    a = xp.asarray(a)
    if a.dtype.char in (_F32_CHAR, _U32_CHAR, _I32_CHAR):
        return a.view(U32)
    if a.dtype.kind == "f":
        return a.astype(F32).view(U32)
    if a.dtype.kind in "iub":
        return a.astype(np.int64).astype(U32)
    raise TypeError(f"cannot use an array of {a.dtype} as TGSI register data")


def _registers(xp, count: int, n: int, zeroed: set[int]):
    """A (count, 4, n) register file whose registers ``zeroed`` read as zero and the others
    are uninitialized (the program writes them before it reads them)."""
    if len(zeroed) >= count:
        return xp.zeros((count, 4, n), dtype=U32)
    registers = xp.empty((count, 4, n), dtype=U32)
    for index in zeroed:
        registers[index] = 0
    return registers


def sample_array(inputs, system_values):
    """The array a run takes its lane count and array module from: the inputs (the first of a
    dict of them), else the first system value; None where there is none."""
    sample = next(iter(inputs.values()), None) if isinstance(inputs, dict) else inputs
    if sample is None and system_values:
        sample = next(iter(system_values.values()))
    return sample


class _Run:
    """The state of one execution: registers, masks, stacks, counters."""

    def __init__(self, interp: Interpreter, inputs, constants, lanes, sampler, system_values,
                 record_trace):
        self.interp = interp
        self.program = interp.program
        sample = sample_array(inputs, system_values)
        xp = array_module(sample) if sample is not None else active_xp()
        self.xp = xp
        if lanes is None:
            if sample is None:
                raise ValueError("lanes must be given when there are no inputs")
            lanes = int(xp.asarray(sample).shape[-1])
        self.n = lanes
        n = lanes

        # Register files.
        num_in = max(interp.num_inputs, 1)
        bits = None if inputs is None or isinstance(inputs, dict) else _as_bits(xp, inputs)
        in_place = (bits is not None and bits.shape[0] >= num_in
                    and bits.shape[1:] == (4, n) and not interp.writes_inputs)
        if in_place:
            self.inputs = bits[:num_in]     # read in place: no copy
        else:
            self.inputs = xp.zeros((num_in, 4, n), dtype=U32)
        if isinstance(inputs, dict):
            for index, value in inputs.items():
                if index < num_in:
                    self.inputs[index] = _as_bits(xp, value)
        elif bits is not None and not in_place:
            count = min(bits.shape[0], num_in)
            self.inputs[:count] = bits[:count]
        self.temps = _registers(xp, interp.num_temps, n, interp.zeroed["TEMP"])
        self.outputs = _registers(xp, interp.num_outputs, n, interp.zeroed["OUT"])
        self.addrs = _registers(xp, interp.num_addrs, n, interp.zeroed["ADDR"])
        self.system = xp.zeros((max(interp.num_system_values, 1), 4, n), dtype=U32)
        for index, (name, _) in interp.sv_semantics.items():
            if name in system_values:
                self.system[index] = _as_bits(xp, system_values[name])
        self.immediates = xp.asarray(interp._immediates_host)
        if constants is None:
            constants = {}
        if not isinstance(constants, dict):
            constants = {0: constants}
        self.constants = {int(k): _as_bits(xp, v).reshape(-1, 4) for k, v in constants.items()}
        self.files = {"TEMP": self.temps, "OUT": self.outputs, "IN": self.inputs,
                      "ADDR": self.addrs, "SV": self.system}
        self._typed_views: dict[tuple[str, int, str], Any] = {}  # ``_typed``

        self.sampler = sampler
        ones = xp.ones(n, dtype=bool)
        self.cond = ones
        self.loop = ones
        self.cont = ones
        self.func = ones
        self.killed = xp.zeros(n, dtype=bool)
        self.dead_warps = None  # lanes of warps whose every lane was killed
        self.counter = DynamicCounter(xp, n)
        self.record_trace = record_trace
        # fp16 mode, the instruction being executed: per source row / result row, whether it
        # is rounded to fp16 (None: nothing is).
        self.half_rows: list[bool] | None = None
        self.trace_pc: list[int] = []
        self.trace_masks: list[Any] = []
        self.exec, self.exec_any, self.exec_all = ones, n > 0, True  # _update_exec's, at start

    # -- masks ------------------------------------------------------------------------------

    def _update_exec(self) -> None:
        mask = self.cond & self.loop & self.cont & self.func
        if self.dead_warps is not None:
            mask = mask & ~self.dead_warps
        self.exec = mask
        count = int(self.xp.count_nonzero(mask))
        self.exec_any = count > 0
        self.exec_all = count == self.n

    # -- operands ---------------------------------------------------------------------------

    def _lane_address(self, indirect, offset: int):
        reg = self.files[indirect.file][indirect.index, indirect.component]
        return reg.view(I32).astype(np.int64) + offset

    def _read_bits(self, src: SrcOperand, channels: list[int]):
        """Raw bits of the selected source channels: (k, N) or (k, 1) uint32."""
        xp = self.xp
        reg = src.register
        file = reg.file
        if file == "IMM":
            if reg.indirect is not None:
                addr = self._lane_address(reg.indirect, reg.index)
                table = self.immediates
                ok = (addr >= 0) & (addr < table.shape[0])
                rows = table[xp.where(ok, addr, 0)]  # (N, 4)
                return xp.where(ok[None, :], rows.T[channels], U32(0))
            return _rows_of(self.immediates[reg.index], channels)[:, None]
        if file == "CONST":
            if reg.dimension_indirect is not None:
                raise UnsupportedOpcode("indirect constant-buffer selection is not supported",
                                        source=self.program.source)
            table = self.constants.get(reg.dimension or 0)
            if table is None:
                table = xp.zeros((1, 4), dtype=U32)
            if reg.indirect is not None:
                addr = self._lane_address(reg.indirect, reg.index)
                ok = (addr >= 0) & (addr < table.shape[0])
                rows = table[xp.where(ok, addr, 0)]
                return xp.where(ok[None, :], rows.T[channels], U32(0))
            if reg.index >= table.shape[0]:
                return xp.zeros((len(channels), 1), dtype=U32)
            return _rows_of(table[reg.index], channels)[:, None]
        array = self.files.get(file)
        if array is None:
            raise UnsupportedOpcode(f"register file {file} cannot be read here",
                                    source=self.program.source)
        if reg.indirect is not None:
            addr = self._lane_address(reg.indirect, reg.index)
            ok = (addr >= 0) & (addr < array.shape[0])
            idx = xp.where(ok, addr, 0)
            ch = xp.asarray(channels)[:, None]
            values = array[idx[None, :], ch, xp.arange(self.n)[None, :]]
            return xp.where(ok[None, :], values, U32(0))
        if reg.index >= array.shape[0]:
            return xp.zeros((len(channels), 1), dtype=U32)
        return _rows_of(array[reg.index], channels)

    def _typed(self, key: tuple[str, int, str]):
        """The register file or constant table ``key`` names, viewed as its dtype; made once
        per run. Registers are (R, 4, N), constants and immediates (S, 4, 1): one value for
        every lane."""
        view = self._typed_views.get(key)
        if view is None:
            file, buffer, dtype = key
            if file == "CONST":
                table = self.constants.get(buffer)
                table = (self.xp.zeros((1, 4), dtype=U32) if table is None else table)[:, :, None]
            elif file == "IMM":
                table = self.immediates[:, :, None]
            else:
                table = self.files[file]
            view = self._typed_views[key] = table.view(dtype)
        return view

    def _read(self, src: _Source):
        """A fast-path source: its rows typed as its kind, modifiers applied."""
        table = self._typed_views.get(src.key)
        if table is None:
            table = self._typed(src.key)
        if src.index >= table.shape[0]:  # a constant beyond its buffer reads 0
            return self.xp.zeros((src.width, 1), dtype=src.dtype)
        if src.view:
            v = table[src.index, src.rows]
        else:
            v = table[src.index].take(src.rows, axis=0)
        if src.modified:
            v = _modified(self.xp, v, src.kind, src.negate, src.absolute)
        return v

    def _write(self, plan: _Plan, value) -> None:
        """Store a fast-path result (one row per written channel, or one row for them all)
        to its register under the exec mask."""
        if plan.saturate:
            value = _saturated(self.xp, value)
        if value.dtype.char not in plan.stored_as:
            value = _register_typed(value, plan.info.dst_type)
        target = self._typed((plan.dst_file, 0, value.dtype.char))[plan.dst_index]
        if plan.dst_rows is not None:
            if self.exec_all:
                target[plan.dst_rows] = value
            else:
                self.xp.copyto(target[plan.dst_rows], value, where=self.exec)
            return
        for i, c in enumerate(plan.dst_channels):
            row = value[i] if value.shape[0] > 1 else value[0]
            if self.exec_all:
                target[c] = row
            else:
                self.xp.copyto(target[c], row, where=self.exec)

    def _fast_component(self, plan: _Plan) -> None:
        self._write(plan, plan.info.fn(*[self._read(s) for s in plan.sources]))

    def _fast_dot(self, plan: _Plan) -> None:
        # The products at once (each as a[c] * b[c] alone), summed in order: same rounding.
        products = self._read(plan.sources[0]) * self._read(plan.sources[1])
        value = products[0]
        for c in range(1, plan.info.dot_width):
            value = value + products[c]
        self._write(plan, value[None])

    def fetch(self, src: SrcOperand, channels: list[int], kind: str):
        """Source channels (after swizzle) typed as ``kind`` with its modifiers applied."""
        bits = self._read_bits(src, [src.swizzle[c] for c in channels])
        if kind == "any" and not (src.negate or src.absolute):
            return bits
        dtype = F32 if kind in ("float", "any") else I32 if kind == "int" else U32
        v = _modified(self.xp, bits.view(dtype), kind, src.negate, src.absolute)
        if kind == "float" and self.half_rows is not None:
            v = self._round_rows(v, self.half_rows)
        return v

    def store(self, inst: Instruction, value, kind: str, channels: list[int] | None = None):
        """Write a (k, N) or (k, 1) result to the destination's write mask under the exec mask."""
        xp = self.xp
        dst = inst.dst[0]
        channels = list(dst.writemask) if channels is None else channels
        lowered = self.interp.lowered[inst.number] if inst.number < len(
            self.interp.lowered) else ()
        if lowered and kind == "float" and inst.opcode != "MOV":
            value = self._round_rows(value.astype(F32, copy=False),
                                     [c in lowered for c in channels])
        if inst.saturate and kind in ("float", "any"):
            value = _saturated(xp, value)
        if kind in ("float", "any") and value.dtype != U32:
            bits = value.astype(F32, copy=False).view(U32)
        else:
            bits = value.astype(value.dtype, copy=False).view(U32) if value.dtype in (
                I32, U32) else value.astype(np.int64).astype(U32)
        reg = dst.register
        array = self.files.get(reg.file)
        if array is None:
            raise UnsupportedOpcode(f"register file {reg.file} cannot be written",
                                    source=self.program.source, line=inst.line)
        if reg.indirect is not None:
            addr = self._lane_address(reg.indirect, reg.index)
            ok = self.exec & (addr >= 0) & (addr < array.shape[0])
            lanes = xp.nonzero(ok)[0]
            rows = addr[lanes]
            for i, c in enumerate(channels):
                row = bits[i]
                array[rows, c, lanes] = row[lanes] if row.shape[0] != 1 else row[0]
            return
        target = array[reg.index]
        for i, c in enumerate(channels):
            if self.exec_all:
                target[c] = bits[i]
            else:
                xp.copyto(target[c], xp.broadcast_to(bits[i], (self.n,)), where=self.exec)

    def _round_rows(self, value, rows: list[bool]):
        """``value`` (k, N) or (k, 1) float32 with the rows flagged in ``rows`` (one flag per
        row, or one for all) rounded to fp16."""
        return self._select_rows(rows, to_half(value), value) if any(rows) else value

    def _select_rows(self, rows: list[bool], flagged, other):
        """Rows of ``flagged`` where ``rows`` says so, of ``other`` elsewhere."""
        if len(rows) != other.shape[0]:
            rows = rows[:1] * other.shape[0]
        if all(rows):
            return flagged
        if not any(rows):
            return other
        return self.xp.where(self.xp.asarray(rows)[:, None], flagged, other)

    # -- execution --------------------------------------------------------------------------

    def execute(self) -> Execution:
        instructions = self.program.instructions
        plans = self.interp.plans
        links = self.interp.links
        cond_stack: list[Any] = []
        loop_stack: list[tuple[Any, Any, int]] = []
        call_stack: list[tuple[int, Any]] = []
        pc = 0
        budget = self.interp.instruction_budget
        issued = 0
        with np.errstate(all="ignore"):
            while pc < len(plans):
                plan = plans[pc]
                inst = plan.inst
                op = inst.opcode
                if op == "END":
                    break
                issued += 1
                if issued > budget:
                    raise InputError(
                        f"shader executed more than {budget} instructions in one invocation "
                        "(the instruction budget; raise it with tilesim --instruction-budget N)",
                        source=self.program.source, line=inst.line)
                self.half_rows = plan.half_rows
                if not plan.flow:
                    # Computed only where some lane executes it.
                    if self.exec_any:
                        self._count(pc, plan)
                        plan.handler(self, plan)
                    pc += 1
                    continue
                if op in ("ELSE", "ENDIF"):
                    # Issued by every warp that entered the IF, whichever branch it took.
                    self._count(pc, plan, cond_stack[-1] & self.loop & self.cont & self.func)
                elif op == "ENDLOOP":
                    # Issued by every lane still in the loop, CONT or not.
                    self._count(pc, plan, self.cond & self.loop & self.func)
                elif self.exec_any:
                    self._count(pc, plan)
                if op in ("IF", "UIF"):
                    if self.exec_any:
                        x = self.fetch(inst.src[0], [0], "float" if op == "IF" else "uint")[0]
                        taken = x != 0
                    else:
                        taken = self.xp.zeros(self.n, dtype=bool)
                    cond_stack.append(self.cond)
                    self.cond = self.cond & taken
                    self._update_exec()
                    if not self.exec_any:
                        pc = links[pc].get("else", links[pc]["end"])
                        continue
                elif op == "ELSE":
                    self.cond = cond_stack[-1] & ~self.cond
                    self._update_exec()
                    if not self.exec_any:
                        pc = links[pc]["end"]
                        continue
                elif op == "ENDIF":
                    self.cond = cond_stack.pop()
                    self._update_exec()
                elif op == "BGNLOOP":
                    loop_stack.append((self.loop, self.cont, 0))
                elif op == "BRK":
                    self.loop = self.loop & ~self.exec
                    self._update_exec()
                elif op == "CONT":
                    self.cont = self.cont & ~self.exec
                    self._update_exec()
                elif op == "ENDLOOP":
                    saved_loop, saved_cont, iterations = loop_stack[-1]
                    self.cont = saved_cont
                    self._update_exec()
                    if self.exec_any:
                        if iterations + 1 >= MAX_LOOP_ITERATIONS:
                            raise InputError(
                                f"loop did not finish after {MAX_LOOP_ITERATIONS} iterations",
                                source=self.program.source,
                                line=instructions[links[pc]["begin"]].line)
                        loop_stack[-1] = (saved_loop, saved_cont, iterations + 1)
                        pc = links[pc]["begin"] + 1
                        continue
                    loop_stack.pop()
                    self.loop = saved_loop
                    self._update_exec()
                elif op == "CAL":
                    if self.exec_any:
                        if len(call_stack) >= self.interp.call_depth:
                            raise InputError(
                                f"subroutine calls nested deeper than {self.interp.call_depth} "
                                "(GLSL ES has no recursion; tilesim --call-depth N)",
                                source=self.program.source,
                                line=inst.line)
                        call_stack.append((pc + 1, self.func, self.cond, self.loop, self.cont,
                                           len(cond_stack), len(loop_stack)))
                        # Inside the call, the lanes that made it are the function's lanes.
                        self.func = self.exec
                        target = links[pc]["target"]
                        if instructions[target].opcode == "BGNSUB":
                            target += 1
                        pc = target
                        continue
                elif op == "RET":
                    self.func = self.func & ~self.exec
                    self._update_exec()
                    if not bool(self.func.any()):
                        if not call_stack:
                            break
                        pc = self._return(call_stack, cond_stack, loop_stack)
                        continue
                elif op == "ENDSUB":
                    if not call_stack:
                        raise InputError("ENDSUB reached outside a call",
                                         source=self.program.source, line=inst.line)
                    pc = self._return(call_stack, cond_stack, loop_stack)
                    continue
                elif op in ("BGNSUB", "NOP"):
                    pass
                pc += 1
        trace = None
        if self.record_trace:
            xp = self.xp
            masks = (xp.stack(self.trace_masks) if self.trace_masks
                     else xp.zeros((0, self.counter.warps), dtype=np.uint8))
            trace = (np.asarray(self.trace_pc, dtype=np.int32), masks)
        return Execution(outputs=self.outputs.view(F32), killed=self.killed,
                         stats=self.counter.result(), trace=trace)

    def _return(self, call_stack, cond_stack, loop_stack) -> int:
        """Leave a subroutine: restore the caller's masks and stacks; the return address."""
        pc, self.func, self.cond, self.loop, self.cont, conds, loops = call_stack.pop()
        del cond_stack[conds:]
        del loop_stack[loops:]
        self._update_exec()
        return pc

    def _count(self, pc: int, plan: _Plan, mask=None) -> None:
        if mask is None:
            mask, full = self.exec, self.exec_all
        else:
            if self.dead_warps is not None:
                mask = mask & ~self.dead_warps
            count = int(self.xp.count_nonzero(mask))
            if count == 0:
                return
            full = count == self.n
        self.counter.step(plan.category_index, mask, full, plan.samples)
        if self.record_trace:
            self.trace_pc.append(pc)
            self.trace_masks.append(self.counter.warp_lanes(mask).astype(np.uint8))

    # -- general path: instructions the fast path does not take ---------------------------

    def _component(self, plan: _Plan) -> None:
        inst, info, op = plan.inst, plan.info, plan.inst.opcode
        channels = list(inst.dst[0].writemask)
        args = [self.fetch(s, channels, info.src_type) for s in inst.src]
        value = info.fn(*args)
        if self.half_rows is not None and op in ops.FP16_FORMS:
            value = self._select_rows(self.half_rows, ops.FP16_FORMS[op](*args), value)
        products = plan.products
        if products:  # a mediump product inside a highp MAD
            a, b, c = args
            value = self._select_rows([ch in products for ch in channels],
                                      to_half(to_half(a) * to_half(b)) + c, value)
        self.store(inst, value, info.dst_type)

    def _replicate(self, plan: _Plan) -> None:
        inst, info = plan.inst, plan.info
        args = [self.fetch(s, [0], info.src_type) for s in inst.src]
        fn = info.fn
        if self.half_rows is not None:
            fn = ops.FP16_FORMS.get(inst.opcode, fn)
        value = fn(*args)
        mask = inst.dst[0].writemask
        self.store(inst, self.xp.broadcast_to(value, (len(mask), value.shape[1])),
                   info.dst_type)

    def _dot(self, plan: _Plan) -> None:
        inst = plan.inst
        channels = list(range(plan.info.dot_width))
        a = self.fetch(inst.src[0], channels, "float")
        b = self.fetch(inst.src[1], channels, "float")
        if self.half_rows is not None:
            value = ops.dot_fp16(a, b)
        else:
            value = a[0] * b[0]
            for c in channels[1:]:
                value = value + a[c] * b[c]
        mask = inst.dst[0].writemask
        self.store(inst, self.xp.broadcast_to(value, (len(mask), value.shape[-1])), "float")

    # -- special opcodes --------------------------------------------------------------------

    def _kill(self, plan: _Plan) -> None:
        xp, inst = self.xp, plan.inst
        if inst.opcode == "KILL":
            hit = self.exec
        else:
            v = self.fetch(inst.src[0], [0, 1, 2, 3], "float")
            hit = self.exec & xp.broadcast_to((v < 0).any(axis=0), (self.n,))
        self.killed = self.killed | hit
        # A warp whose every lane is killed stops, as GPUs do; lanes of a partly killed quad
        # go on as helpers so that derivatives stay defined for the others.
        if self.n % 4 == 0:
            whole = quad_all(self.killed)
            self.dead_warps = xp.repeat(whole, 4)
            self._update_exec()

    def _quads(self, value):
        if value.shape[-1] == 1:
            return None
        if self.n % 4:
            raise InputError("derivatives need lanes in whole 2x2 quads (N % 4 == 0)",
                             source=self.program.source)
        return value.reshape(value.shape[0], -1, 4)

    def _derivative(self, value, op: str):
        xp = self.xp
        q = self._quads(value)
        if q is None:
            return xp.zeros_like(value)
        # tgsi.rst lets coarse DDX/DDY be one value per quad but does not require it;
        # llvmpipe (the reference renderer) computes them per row/column, and so do we.
        if op in ("DDX", "DDX_FINE"):
            top = q[:, :, 1] - q[:, :, 0]
            bottom = q[:, :, 3] - q[:, :, 2]
            d = xp.stack([top, top, bottom, bottom], axis=2)
        else:  # DDY, DDY_FINE
            left = q[:, :, 2] - q[:, :, 0]
            right = q[:, :, 3] - q[:, :, 1]
            d = xp.stack([left, right, left, right], axis=2)
        return d.reshape(value.shape[0], -1)

    def _special(self, plan: _Plan) -> None:
        xp, inst = self.xp, plan.inst
        op = inst.opcode
        mask = list(inst.dst[0].writemask)
        if op.startswith(("DDX", "DDY")):
            self.store(inst, self._derivative(self.fetch(inst.src[0], mask, "float"), op),
                       "float")
            return
        one = xp.ones((1, 1), dtype=F32)
        if op == "LIT":
            s = self.fetch(inst.src[0], [0, 1, 2, 3], "float")
            x, y, w = s[0], s[1], s[3]
            spec = xp.where(x > 0, xp.power(xp.maximum(y, F32(0)),
                                            xp.clip(w, F32(-128), F32(128))), F32(0))
            full = [one[0], xp.maximum(x, F32(0)), spec, one[0]]
        elif op == "EXP":
            x = self.fetch(inst.src[0], [0], "float")[0]
            fl = xp.floor(x)
            full = [xp.exp2(fl), x - fl, xp.exp2(x), one[0]]
        elif op == "LOG":
            x = xp.abs(self.fetch(inst.src[0], [0], "float")[0])
            lg = xp.log2(x)
            fl = xp.floor(lg)
            full = [fl, x / xp.exp2(fl), lg, one[0]]
        elif op == "DST":
            a = self.fetch(inst.src[0], [0, 1, 2, 3], "float")
            b = self.fetch(inst.src[1], [0, 1, 2, 3], "float")
            full = [one[0], a[1] * b[1], a[2], b[3]]
        else:  # pragma: no cover - every OPCODES entry is dispatched somewhere
            raise UnsupportedOpcode(f"opcode {op} is not implemented",
                                    source=self.program.source, line=inst.line)
        width = max(v.shape[-1] for v in full)
        value = xp.stack([xp.broadcast_to(full[c], (width,)) for c in mask]).astype(F32)
        self.store(inst, value, "float")

    def _texture(self, plan: _Plan) -> None:
        xp, inst = self.xp, plan.inst
        op = inst.opcode
        sampler_operand = inst.src[-1]
        if sampler_operand.register.file not in ("SAMP", "SVIEW"):
            raise InputError(f"{op}: last operand must be a SAMP register",
                             source=self.program.source, line=inst.line)
        if sampler_operand.register.indirect is not None:
            raise UnsupportedOpcode(f"{op}: indirect sampler indexing is not supported",
                                    source=self.program.source, line=inst.line)
        unit = sampler_operand.register.index
        target = inst.texture_target or "2D"
        full = [0, 1, 2, 3]

        def lanes(v):
            return xp.broadcast_to(v, (v.shape[0], self.n)).astype(v.dtype)

        if op == "TXQ":
            level = lanes(self.fetch(inst.src[0], [0], "int"))[0]
            result = self.sampler.size(unit, target, level).astype(I32)
            self.store(inst, result[list(inst.dst[0].writemask)], "int")
            return
        if op in ("TXF", "TXF_LZ"):
            texel = lanes(self.fetch(inst.src[0], full, "int")).copy()
            if op == "TXF_LZ":
                texel[3] = 0
            result = self.sampler.fetch(unit, target, texel, self.exec)
            self.store(inst, result[list(inst.dst[0].writemask)].astype(F32), "float")
            return
        coords = lanes(self.fetch(inst.src[0], full, "float"))
        request = TextureRequest(unit=unit, target=target, coords=coords, active=self.exec,
                                 instruction=inst.number)
        if op == "TXP":
            w = coords[3]
            request.coords = xp.stack([coords[0] / w, coords[1] / w, coords[2] / w, w])
        elif op == "TXB":
            request.lod_mode, request.lod = BIAS, coords[3]
        elif op == "TXL":
            request.lod_mode, request.lod = EXPLICIT, coords[3]
        elif op in ("TXB2", "TXL2"):
            request.lod = lanes(self.fetch(inst.src[1], [0], "float"))[0]
            request.lod_mode = BIAS if op == "TXB2" else EXPLICIT
        elif op == "TXD":
            request.lod_mode = GRADIENT
            request.ddx = lanes(self.fetch(inst.src[1], full, "float"))
            request.ddy = lanes(self.fetch(inst.src[2], full, "float"))
        elif op == "TEX_LZ":
            request.lod_mode = LEVEL_ZERO
        else:
            request.lod_mode = IMPLICIT
        if request.lod_mode in (IMPLICIT, BIAS) and self.program.processor != "FRAG":
            # Outside fragment shaders there are no quads: implicit LOD is level 0.
            request.lod_mode = EXPLICIT if request.lod_mode == IMPLICIT else request.lod_mode
            if request.lod is None:
                request.lod = xp.zeros(self.n, dtype=F32)
        result = self.sampler.sample(request)
        # Copied into the register by store: the written rows need no copy of their own.
        written = inst.dst[0].writemask
        if tuple(written) != (0, 1, 2, 3):
            result = result.take(list(written), axis=0)
        self.store(inst, result.astype(F32, copy=False), "float")


def _handler(opcode: str, info: ops.OpInfo, fast: bool) -> Callable[[_Run, _Plan], None]:
    """The ``_Run`` method that executes a (non-flow) instruction; ``fast``: on the fast path."""
    if fast:
        return _Run._fast_dot if info.shape == DOT else _Run._fast_component
    if opcode in ("KILL", "KILL_IF"):
        return _Run._kill
    if info.category == ops.TEX:
        return _Run._texture
    if info.shape == COMPONENT:
        return _Run._component
    if info.shape == REPLICATE:
        return _Run._replicate
    return _Run._dot if info.shape == DOT else _Run._special
