"""One shader core, cycle by cycle: the stages in reverse order each cycle (writeback first,
warp entry last), so that an instruction moves at most one stage per cycle and a stage sees
the room the stage after it made in the same cycle (a writeback's scoreboard release lets
a dependent instruction issue in that cycle; a dispatched CU takes a new instruction).

``simulate(paths, cfg)`` runs every warp along its recorded path to its end and returns a
``CoreResult``: the figures of 002 §4.2 and, on request, the timeline of every instruction
and the occupancies of every cycle.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from tilesim.errors import InputError
from tilesim.jit import AVAILABLE as JIT
from tilesim.jit import UNSLICED, jit, run_in_slices
from tilesim.timing.shader_core.config import (
    P_BANKS,
    P_CUS,
    P_IBUF_SLOTS,
    P_ISOC_SIZE,
    P_ISSUE_WIDTH,
    P_MAX_WARPS,
    P_OCEX_SIZE,
    P_TOTAL_REGS,
    CoreConfig,
)
from tilesim.timing.shader_core.decode import decode
from tilesim.timing.shader_core.execute import execute
from tilesim.timing.shader_core.fetch import fetch
from tilesim.timing.shader_core.issue import issue
from tilesim.timing.shader_core.operand_collector import allocate, dispatch, read_operands
from tilesim.timing.shader_core.program import FIXED_REGISTERS, StaticProgram
from tilesim.timing.shader_core.state import (
    CLASS_NAMES,
    CT_CU,
    CT_IBUF,
    CT_ISOC,
    CT_ISSUED,
    CT_OCEX,
    CT_REGS,
    CT_WARPS,
    CYCLE_TRACE_NAMES,
    EOP,
    S_ACTIVE_CYCLES,
    S_ALLOCATED,
    S_CONFLICTS,
    S_CT_CAP,
    S_CUS_BUSY,
    S_CYCLE,
    S_DECODED,
    S_DISPATCHED,
    S_ENTERED,
    S_ERROR,
    S_EXECUTED,
    S_FETCHED,
    S_FREE_REGS,
    S_IC_ACC,
    S_IC_MISS,
    S_ISOC_N,
    S_ISSUED,
    S_ISSUED_NOW,
    S_MAX_CU,
    S_MAX_IBUF,
    S_MAX_ISOC,
    S_MAX_OCEX,
    S_MOVED,
    S_NWARPS,
    S_OCC_CU,
    S_OCC_IBUF,
    S_OCC_ISOC,
    S_OCC_OCEX,
    S_OCC_REGS,
    S_OCC_WARPS,
    S_OCEX_N,
    S_QUIET,
    S_REQ_CYCLES,
    S_RETIRED,
    S_TC_ACC,
    S_TC_MISS,
    S_WARPS_IN,
    S_WRITTEN,
    STAMP_NAMES,
    A,
    X,
    make_state,
)
from tilesim.timing.shader_core.warp_entry import warp_entry
from tilesim.timing.shader_core.warp_paths import WarpPaths
from tilesim.timing.shader_core.writeback import writeback

STALL_LIMIT = 1_000_000      # cycles without any stage moving: a deadlock, reported


@jit(inline=True)
def account(st, c):
    """Occupancies of the cycle (002 §4.2.4-4.2.5), summed over cycles with a warp in the core."""
    cycle_trace = st.cycle_trace
    ibuf_n = st.ibuf_n
    slot_warp = st.slot_warp
    p, sc = st.p, st.sc
    ibuf = 0
    for s in range(p[P_MAX_WARPS]):
        if slot_warp[s] >= 0:
            ibuf += ibuf_n[s]
    regs = p[P_TOTAL_REGS] - sc[S_FREE_REGS]
    if sc[S_WARPS_IN] > 0 or sc[S_ISOC_N] > 0:
        sc[S_ACTIVE_CYCLES] += 1
        sc[S_OCC_IBUF] += ibuf
        sc[S_OCC_ISOC] += sc[S_ISOC_N]
        sc[S_OCC_OCEX] += sc[S_OCEX_N]
        sc[S_OCC_CU] += sc[S_CUS_BUSY]
        sc[S_OCC_REGS] += regs
        sc[S_OCC_WARPS] += sc[S_WARPS_IN]
    sc[S_MAX_IBUF] = max(sc[S_MAX_IBUF], ibuf)
    sc[S_MAX_ISOC] = max(sc[S_MAX_ISOC], sc[S_ISOC_N])
    sc[S_MAX_OCEX] = max(sc[S_MAX_OCEX], sc[S_OCEX_N])
    sc[S_MAX_CU] = max(sc[S_MAX_CU], sc[S_CUS_BUSY])
    if c < sc[S_CT_CAP]:
        t = cycle_trace
        t[c, CT_WARPS] = sc[S_WARPS_IN]
        t[c, CT_IBUF] = ibuf
        t[c, CT_ISOC] = sc[S_ISOC_N]
        t[c, CT_CU] = sc[S_CUS_BUSY]
        t[c, CT_OCEX] = sc[S_OCEX_N]
        t[c, CT_ISSUED] = sc[S_ISSUED_NOW]
        t[c, CT_REGS] = regs


@jit
def run_cycles(st, stall_limit, max_cycles):
    """Runs the core from cycle ``sc[S_CYCLE]`` until every warp retired, a deadlock
    (``sc[S_ERROR]``) or ``max_cycles`` cycles; the loop's state is left in ``sc``, so a
    next call goes on as if there had been one: the same cycles, bit for bit."""
    sc = st.sc
    c = sc[S_CYCLE]
    end = c + max_cycles if max_cycles < UNSLICED else UNSLICED
    quiet = sc[S_QUIET]
    moved = sc[S_MOVED]
    while sc[S_RETIRED] < sc[S_NWARPS] and c < end:
        writeback(st, c)
        execute(st, c)
        dispatch(st, c)
        read_operands(st, c)
        allocate(st, c)
        issue(st, c)
        decode(st, c)
        fetch(st, c)
        warp_entry(st, c)
        account(st, c)
        c += 1
        now = (sc[S_ENTERED] + sc[S_FETCHED] + sc[S_DECODED] + sc[S_ISSUED] + sc[S_ALLOCATED]
               + sc[S_DISPATCHED] + sc[S_EXECUTED] + sc[S_WRITTEN] + sc[S_REQ_CYCLES])
        if now == moved:
            quiet += 1
            if quiet > stall_limit:
                sc[S_ERROR] = 1
                break
        else:
            quiet = 0
            moved = now
    sc[S_CYCLE] = c
    sc[S_QUIET] = quiet
    sc[S_MOVED] = moved


def run_sliced(st, stall_limit: int = STALL_LIMIT, slice_cycles: int | None = None) -> None:
    """:func:`run_cycles` to the end in slices (``tilesim.jit.run_in_slices``: Python sees
    Ctrl-C between them), ``slice_cycles`` cycles each or (None) about 0.1 s of them; the
    slices change nothing of the result."""
    sc = st.sc

    def advance(size: int) -> bool:
        if sc[S_RETIRED] < sc[S_NWARPS] and not sc[S_ERROR]:
            run_cycles(st, stall_limit, size)
        return bool(sc[S_RETIRED] >= sc[S_NWARPS] or sc[S_ERROR])

    run_in_slices(advance, slice_cycles)


@dataclass
class CoreResult:
    """What one run of the core gives (002 §4.2's figures, and the timelines on request)."""

    name: str
    cycles: int
    warps: int
    instructions: int             # warp instructions issued, EOP included
    dynamic_instructions: int     # without EOP: the interpreter's count
    interpreter_instructions: int
    texture_instructions: int
    counts: dict                  # instructions through each stage (002 §4.2.2)
    ipc: float
    cycles_per_warp: float
    warp_latency: float           # mean cycles from entry to retirement
    occupancy: dict               # mean per active cycle, and the maximum
    limits: dict                  # the sizes the occupancies must stay within
    conflicts_per_cycle: float
    oc_cycles: float              # mean cycles from CU allocation to dispatch (inclusive)
    oc_lower_bound: float         # 002 Eq. 4.1: register operands per instruction + 2
    bank_reads: list
    caches: dict
    by_class: dict
    simulated_seconds: float
    cycles_per_second: float
    jit: bool
    config: str
    timeline: list | None = None
    cycle_trace: dict | None = None
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


_warm = False


def _warm_up(cfg: CoreConfig) -> None:
    """Load (or compile) the loop once per process on one warp that only ends, so that the
    cycles per second measured are the loop's and not Numba's."""
    global _warm
    if _warm or not JIT:
        return
    static = StaticProgram(np.array([EOP]), np.full((1, 3), -1), np.array([-1]),
                           np.zeros(1, dtype=np.int64), ("EOP",), 1)
    zeros = np.zeros(1, dtype=np.int64)
    paths = WarpPaths(static, np.array([0, 1]), zeros, np.array([4]), zeros, zeros,
                        np.zeros(0, dtype=np.int64), 1, 0, "warm-up")
    run_cycles(make_state(cfg.params, paths), STALL_LIMIT, UNSLICED)
    _warm = True


def simulate(paths: WarpPaths, cfg: CoreConfig, *, timeline: bool = False,
             trace_cycles: int = 0, slice_cycles: int | None = None) -> CoreResult:
    """Runs ``paths`` on the core of ``cfg`` to the end. ``slice_cycles``: the cycles of
    each compiled call (:func:`run_sliced`; default sized to ~0.1 s, so Ctrl-C is heard);
    the result does not depend on it."""
    _warm_up(cfg)
    params = cfg.params
    if cfg["registers.per_warp"] == "fixed80":
        paths.registers_per_warp = max(FIXED_REGISTERS, paths.program.registers)
    if paths.registers_per_warp > params[P_TOTAL_REGS]:
        raise InputError(f"{paths.name}: a warp needs {paths.registers_per_warp} "
                         f"registers, the register file has {params[P_TOTAL_REGS]}")
    st = make_state(params, paths, trace_cycles)
    start = time.perf_counter()
    run_sliced(st, STALL_LIMIT, slice_cycles)
    seconds = time.perf_counter() - start
    sc = st.sc
    if sc[S_ERROR]:
        raise RuntimeError(f"{paths.name}: the core stopped moving at cycle "
                           f"{int(sc[S_CYCLE])} (a deadlock in the model)")
    return _result(paths, cfg, st, seconds, timeline, trace_cycles)


def _result(paths, cfg, st, seconds, timeline, trace_cycles) -> CoreResult:
    sc, p = st.sc, st.p
    cycles = int(sc[S_CYCLE])
    active = max(int(sc[S_ACTIVE_CYCLES]), 1)
    op_class = paths.program.op_class[paths.s_pc]
    src_count = (paths.program.op_src[paths.s_pc] >= 0).sum(axis=1)
    oc = st.stamp[:, X] - st.stamp[:, A] + 1
    texture = int((op_class == 3).sum())
    latency = st.warp_done - st.warp_enter
    by_class = {name: int((op_class == k).sum()) for k, name in enumerate(CLASS_NAMES)}
    result = CoreResult(
        name=paths.name, cycles=cycles, warps=paths.warps,
        instructions=int(sc[S_ISSUED]),
        dynamic_instructions=int((op_class != EOP).sum()),
        interpreter_instructions=paths.interpreter_instructions,
        texture_instructions=texture,
        counts={"entered_warps": int(sc[S_ENTERED]), "retired_warps": int(sc[S_RETIRED]),
                "fetched": int(sc[S_FETCHED]), "decoded": int(sc[S_DECODED]),
                "issued": int(sc[S_ISSUED]), "allocated": int(sc[S_ALLOCATED]),
                "dispatched": int(sc[S_DISPATCHED]), "executed": int(sc[S_EXECUTED]),
                "written_back": int(sc[S_WRITTEN])},
        ipc=int(sc[S_ISSUED]) / cycles if cycles else 0.0,
        cycles_per_warp=cycles / paths.warps if paths.warps else 0.0,
        warp_latency=float(latency.mean()) if len(latency) else 0.0,
        occupancy={
            "active_cycles": active,
            "warps": float(sc[S_OCC_WARPS] / active), "ibuffer": float(sc[S_OCC_IBUF] / active),
            "is_oc": float(sc[S_OCC_ISOC] / active), "oc_ex": float(sc[S_OCC_OCEX] / active),
            "collector_units": float(sc[S_OCC_CU] / active),
            "registers": float(sc[S_OCC_REGS] / active),
            "max_ibuffer": int(sc[S_MAX_IBUF]), "max_is_oc": int(sc[S_MAX_ISOC]),
            "max_oc_ex": int(sc[S_MAX_OCEX]), "max_collector_units": int(sc[S_MAX_CU])},
        limits={"issue_width": int(p[P_ISSUE_WIDTH]),
                "ibuffer": int(p[P_IBUF_SLOTS] * p[P_MAX_WARPS]),
                "is_oc": int(p[P_ISOC_SIZE]), "oc_ex": int(p[P_OCEX_SIZE]),
                "collector_units": int(p[P_CUS]), "registers": int(p[P_TOTAL_REGS]),
                "banks": int(p[P_BANKS])},
        conflicts_per_cycle=float(sc[S_CONFLICTS] / sc[S_REQ_CYCLES]) if sc[S_REQ_CYCLES] else 0.0,
        oc_cycles=float(oc.mean()) if len(oc) else 0.0,
        oc_lower_bound=float(src_count.mean()) + 2.0 if len(src_count) else 2.0,
        bank_reads=[int(b) for b in st.bank_reads],
        caches={"instruction": {"accesses": int(sc[S_IC_ACC]), "misses": int(sc[S_IC_MISS])},
                "texture": {"accesses": int(sc[S_TC_ACC]), "misses": int(sc[S_TC_MISS])}},
        by_class=by_class,
        simulated_seconds=seconds,
        cycles_per_second=cycles / seconds if seconds > 0 else float("inf"),
        jit=JIT, config=cfg.path, notes=list(paths.notes))
    if timeline:
        names = paths.program.opcodes
        rows = []
        for w in range(paths.warps):
            for i in range(paths.w_start[w], paths.w_start[w + 1]):
                row = {"warp": w, "slot": int(st.s_slot[i]), "pc": int(paths.s_pc[i]),
                       "opcode": names[paths.s_pc[i]], "lanes": int(paths.s_lanes[i])}
                row.update({n: int(st.stamp[i, k]) for k, n in enumerate(STAMP_NAMES)})
                rows.append(row)
        result.timeline = rows
    if trace_cycles:
        n = min(trace_cycles, cycles)
        result.cycle_trace = {name: st.cycle_trace[:n, k].tolist()
                              for k, name in enumerate(CYCLE_TRACE_NAMES)}
    return result
