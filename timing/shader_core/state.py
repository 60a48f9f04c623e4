"""The state of one shader core as arrays (what the compiled cycle loop reads and writes).

``CoreState`` is a named tuple of NumPy arrays; ``sc`` holds the scalars (cycle, schedulers'
pointers, counters) at the ``S_*`` indices, the cycle loop's own among them (the next cycle,
its deadlock watch), so that a run stopped after any cycle resumes where it stopped. Every
dynamic instruction of the warps has a row in ``stamp`` with the cycle of each stage it went
through (the cycle-by-cycle timeline of 002 §4.2.1): fetch, decode, issue, allocate (a
collector unit), last operand read, dispatch (to OC_EX), execute and writeback.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from tilesim.timing.shader_core.config import (
    P_BANKS,
    P_CUS,
    P_IBUF_SLOTS,
    P_IC_SETS,
    P_IC_WAYS,
    P_ISOC_SIZE,
    P_MAX_WARPS,
    P_OCEX_SIZE,
    P_TC_SETS,
    P_TC_WAYS,
    P_TOTAL_REGS,
)

INF = 1 << 62
# Writeback reservations are a ring over cycles; no latency may reach its length.
RING = 1 << 16

# Instruction classes (program.op_class).
ALU, TRANS, BRANCH, TEX, EOP = range(5)
CLASS_NAMES = ("alu", "transcendental", "branch", "texture", "end_of_program")

# stamp columns
F, D, I, A, R, X, E, W = range(8)
STAMP_NAMES = ("fetch", "decode", "issue", "allocate", "read", "dispatch", "execute",
               "writeback")
STAMPS = 8

# per-cycle trace columns
CT_WARPS, CT_IBUF, CT_ISOC, CT_CU, CT_OCEX, CT_ISSUED, CT_REGS = range(7)
CYCLE_TRACE_NAMES = ("warps", "ibuffer", "is_oc", "collector_units", "oc_ex", "issued",
                     "registers")

(S_NWARPS, S_NEXT_WARP, S_LAST_ID, S_FREE_REGS, S_REGS_PER_WARP, S_NREGS, S_FETCH_PTR,
 S_ISSUE_PTR, S_DISPATCH_PTR, S_ISOC_HEAD, S_ISOC_N, S_OCEX_N, S_EX_N, S_RETIRED, S_TC_PORT,
 S_WARPS_IN, S_ENTERED, S_FETCHED, S_DECODED, S_ISSUED, S_ALLOCATED, S_DISPATCHED, S_EXECUTED,
 S_WRITTEN, S_CONFLICTS, S_REQ_CYCLES, S_ACTIVE_CYCLES, S_OCC_IBUF, S_OCC_ISOC, S_OCC_OCEX,
 S_OCC_CU, S_OCC_REGS, S_OCC_WARPS, S_IC_ACC, S_IC_MISS, S_TC_ACC, S_TC_MISS, S_MAX_ISOC,
 S_MAX_OCEX, S_MAX_CU, S_MAX_IBUF, S_CYCLE, S_ERROR, S_CUS_BUSY, S_CT_CAP, S_ISSUED_NOW,
 S_QUIET, S_MOVED, S_COUNT) = range(49)

CoreState = namedtuple("CoreState", [
    "p", "sc",
    # the warps' paths: static program, dynamic streams
    "op_class", "op_src", "op_dst", "op_redirect", "w_start", "s_pc", "s_tex_start",
    "s_tex_count", "tex_lines", "s_slot",
    # warp slots
    "slot_warp", "slot_next", "slot_end", "slot_inflight", "slot_fetch_at", "ibuf",
    "ibuf_arrive", "ibuf_dec", "ibuf_n", "pend_w", "pend_r",
    # buffers and units
    "isoc", "cu_inst", "cu_req", "cu_reg", "cu_pending", "ocex", "ex_list", "wb_bank",
    "wb_mem", "row_used", "col_used",
    # caches
    "ic_tag", "ic_lru", "ic_ready", "tc_tag", "tc_lru", "tc_ready",
    # results
    "stamp", "bank_reads", "warp_enter", "warp_done", "cycle_trace",
])


def make_state(params: np.ndarray, paths, trace_cycles: int = 0) -> CoreState:
    """A core with no warp in it, ready to run ``paths`` (warp_paths.WarpPaths)."""
    p = params
    prog = paths.program
    warps = paths.warps
    n = len(paths.s_pc)
    m = int(p[P_MAX_WARPS])
    nregs = max(int(paths.registers_per_warp), 1)
    i64 = np.int64
    sc = np.zeros(S_COUNT, dtype=i64)
    sc[S_NWARPS] = warps
    sc[S_LAST_ID] = m - 1              # round robin starts at warp id 0
    sc[S_FREE_REGS] = p[P_TOTAL_REGS]
    sc[S_REGS_PER_WARP] = paths.registers_per_warp
    sc[S_NREGS] = nregs
    sc[S_CT_CAP] = trace_cycles
    sc[S_MOVED] = -1                   # the cycle loop's last sum of moves: none yet
    max_inflight = m * 64 + int(p[P_ISOC_SIZE] + p[P_CUS] + p[P_OCEX_SIZE])
    return CoreState(
        p=p.astype(i64), sc=sc,
        op_class=prog.op_class.astype(i64), op_src=prog.op_src.astype(i64),
        op_dst=prog.op_dst.astype(i64), op_redirect=prog.op_redirect.astype(i64),
        w_start=paths.w_start.astype(i64), s_pc=paths.s_pc.astype(i64),
        s_tex_start=paths.s_tex_start.astype(i64),
        s_tex_count=paths.s_tex_count.astype(i64),
        tex_lines=paths.tex_lines.astype(i64),
        s_slot=np.full(n, -1, dtype=i64),
        slot_warp=np.full(m, -1, dtype=i64), slot_next=np.zeros(m, dtype=i64),
        slot_end=np.zeros(m, dtype=i64), slot_inflight=np.zeros(m, dtype=i64),
        slot_fetch_at=np.zeros(m, dtype=i64),
        ibuf=np.full((m, int(p[P_IBUF_SLOTS])), -1, dtype=i64),
        ibuf_arrive=np.zeros((m, int(p[P_IBUF_SLOTS])), dtype=i64),
        ibuf_dec=np.full((m, int(p[P_IBUF_SLOTS])), -1, dtype=i64),
        ibuf_n=np.zeros(m, dtype=i64),
        pend_w=np.zeros((m, nregs), dtype=i64), pend_r=np.zeros((m, nregs), dtype=i64),
        isoc=np.full(int(p[P_ISOC_SIZE]), -1, dtype=i64),
        cu_inst=np.full(int(p[P_CUS]), -1, dtype=i64),
        cu_req=np.full((int(p[P_CUS]), 3), -1, dtype=i64),
        cu_reg=np.full((int(p[P_CUS]), 3), -1, dtype=i64),
        cu_pending=np.zeros(int(p[P_CUS]), dtype=i64),
        ocex=np.full(int(p[P_OCEX_SIZE]), -1, dtype=i64),
        ex_list=np.full(max_inflight, -1, dtype=i64),
        wb_bank=np.zeros((RING, int(p[P_BANKS])), dtype=i64),
        wb_mem=np.zeros(RING, dtype=i64),
        row_used=np.zeros(max(int(p[P_CUS]), int(p[P_BANKS])), dtype=i64),
        col_used=np.zeros(max(int(p[P_CUS]), int(p[P_BANKS])), dtype=i64),
        ic_tag=np.full((int(p[P_IC_SETS]), int(p[P_IC_WAYS])), -1, dtype=i64),
        ic_lru=np.zeros((int(p[P_IC_SETS]), int(p[P_IC_WAYS])), dtype=i64),
        ic_ready=np.zeros((int(p[P_IC_SETS]), int(p[P_IC_WAYS])), dtype=i64),
        tc_tag=np.full((int(p[P_TC_SETS]), int(p[P_TC_WAYS])), -1, dtype=i64),
        tc_lru=np.zeros((int(p[P_TC_SETS]), int(p[P_TC_WAYS])), dtype=i64),
        tc_ready=np.zeros((int(p[P_TC_SETS]), int(p[P_TC_WAYS])), dtype=i64),
        stamp=np.full((n, STAMPS), -1, dtype=i64),
        bank_reads=np.zeros(int(p[P_BANKS]), dtype=i64),
        warp_enter=np.full(warps, -1, dtype=i64), warp_done=np.full(warps, -1, dtype=i64),
        cycle_trace=np.zeros((max(trace_cycles, 1), len(CYCLE_TRACE_NAMES)), dtype=i64),
    )
