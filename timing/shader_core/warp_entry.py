"""Warp entry: a warp enters when a warp id is free and the register file holds its registers
(002 §3.2: a bounded register file; ids given round robin, or the lowest free id of the
baseline of §3.1); it leaves when its end-of-program instruction executes, freeing both."""

from __future__ import annotations

from tilesim.jit import jit
from tilesim.timing.shader_core.config import P_ENTRY_PER_CYCLE, P_ID_POLICY, P_MAX_WARPS
from tilesim.timing.shader_core.state import (
    S_ENTERED,
    S_FREE_REGS,
    S_LAST_ID,
    S_NEXT_WARP,
    S_NREGS,
    S_NWARPS,
    S_REGS_PER_WARP,
    S_RETIRED,
    S_WARPS_IN,
)


@jit(inline=True)
def warp_entry(st, c):
    ibuf_n = st.ibuf_n
    pend_r = st.pend_r
    pend_w = st.pend_w
    slot_end = st.slot_end
    slot_fetch_at = st.slot_fetch_at
    slot_inflight = st.slot_inflight
    slot_next = st.slot_next
    slot_warp = st.slot_warp
    w_start = st.w_start
    warp_enter = st.warp_enter
    p, sc = st.p, st.sc
    m = p[P_MAX_WARPS]
    for _ in range(p[P_ENTRY_PER_CYCLE]):
        w = sc[S_NEXT_WARP]
        if w >= sc[S_NWARPS] or sc[S_REGS_PER_WARP] > sc[S_FREE_REGS]:
            return
        start = (sc[S_LAST_ID] + 1) % m if p[P_ID_POLICY] == 0 else 0
        slot = -1
        for k in range(m):
            s = (start + k) % m
            if slot_warp[s] < 0:
                slot = s
                break
        if slot < 0:
            return
        sc[S_LAST_ID] = slot
        sc[S_FREE_REGS] -= sc[S_REGS_PER_WARP]
        slot_warp[slot] = w
        slot_next[slot] = w_start[w]
        slot_end[slot] = w_start[w + 1]
        slot_inflight[slot] = 0
        slot_fetch_at[slot] = c + 1
        ibuf_n[slot] = 0
        for r in range(sc[S_NREGS]):
            pend_w[slot, r] = 0
            pend_r[slot, r] = 0
        warp_enter[w] = c
        sc[S_NEXT_WARP] += 1
        sc[S_WARPS_IN] += 1
        sc[S_ENTERED] += 1


@jit(inline=True)
def retire(st, slot, c):
    """The warp in ``slot`` leaves at cycle ``c``: its registers and id are free."""
    slot_warp = st.slot_warp
    warp_done = st.warp_done
    sc = st.sc
    warp_done[slot_warp[slot]] = c
    slot_warp[slot] = -1
    sc[S_FREE_REGS] += sc[S_REGS_PER_WARP]
    sc[S_WARPS_IN] -= 1
    sc[S_RETIRED] += 1
