"""Writeback (002 §3.2.1): an instruction whose result is due this cycle writes it (through the
port its execute stage reserved: one per register bank, ``writeback.memory_ports`` for
texture results) and clears its destination in the scoreboard; an instruction that may jump
lets its warp fetch again; an end-of-program instruction retires the warp."""

from __future__ import annotations

from tilesim.jit import jit
from tilesim.timing.shader_core.config import P_WAIT_BRANCH
from tilesim.timing.shader_core.state import EOP, RING, S_EX_N, S_WRITTEN, W
from tilesim.timing.shader_core.warp_entry import retire


@jit(inline=True)
def writeback(st, c):
    ex_list = st.ex_list
    op_class = st.op_class
    op_dst = st.op_dst
    op_redirect = st.op_redirect
    pend_w = st.pend_w
    s_pc = st.s_pc
    s_slot = st.s_slot
    slot_fetch_at = st.slot_fetch_at
    slot_inflight = st.slot_inflight
    stamp = st.stamp
    wb_bank = st.wb_bank
    wb_mem = st.wb_mem
    p, sc = st.p, st.sc
    kept = 0
    for k in range(sc[S_EX_N]):
        i = ex_list[k]
        if stamp[i, W] != c:
            ex_list[kept] = i
            kept += 1
            continue
        pc = s_pc[i]
        s = s_slot[i]
        d = op_dst[pc]
        if d >= 0:
            pend_w[s, d] -= 1
        slot_inflight[s] -= 1
        sc[S_WRITTEN] += 1
        if p[P_WAIT_BRANCH] != 0 and op_redirect[pc] != 0:
            slot_fetch_at[s] = c
        if op_class[pc] == EOP:
            retire(st, s, c)
    sc[S_EX_N] = kept
    # no reservation is ever made for this cycle again
    wb_mem[c % RING] = 0
    for b in range(wb_bank.shape[1]):
        wb_bank[c % RING, b] = 0
