"""Fetch (002 §3.2.1): a loose-round-robin scheduler picks one warp per cycle, skipping warps
whose I-buffer still holds an instruction and warps that are blocked (after an instruction
that may jump, until it executes); the warp fetches up to ``fetch.width`` consecutive
instructions of its path through the instruction cache (one request per cycle). On a miss
nothing reaches Decode until the line arrives."""

from __future__ import annotations

from tilesim.jit import jit
from tilesim.timing.shader_core.caches import access
from tilesim.timing.shader_core.config import (
    P_FETCH_WIDTH,
    P_IBUF_SLOTS,
    P_IC_LATENCY,
    P_IC_LINE_INSTR,
    P_IC_MISS,
    P_MAX_WARPS,
    P_WAIT_BRANCH,
)
from tilesim.timing.shader_core.state import INF, S_FETCH_PTR, S_FETCHED, S_IC_ACC, S_IC_MISS, F


@jit(inline=True)
def fetch(st, c):
    ibuf = st.ibuf
    ibuf_arrive = st.ibuf_arrive
    ibuf_dec = st.ibuf_dec
    ibuf_n = st.ibuf_n
    ic_lru = st.ic_lru
    ic_ready = st.ic_ready
    ic_tag = st.ic_tag
    op_redirect = st.op_redirect
    s_pc = st.s_pc
    slot_end = st.slot_end
    slot_fetch_at = st.slot_fetch_at
    slot_next = st.slot_next
    slot_warp = st.slot_warp
    stamp = st.stamp
    p, sc = st.p, st.sc
    m = p[P_MAX_WARPS]
    per_line = p[P_IC_LINE_INSTR]
    start = sc[S_FETCH_PTR]
    for k in range(m):
        s = (start + k) % m
        if (slot_warp[s] < 0 or ibuf_n[s] > 0 or slot_next[s] >= slot_end[s]
                or slot_fetch_at[s] > c):
            continue
        i = slot_next[s]
        line = s_pc[i] // per_line
        ready, missed = access(ic_tag, ic_lru, ic_ready, line, c, p[P_IC_LATENCY],
                               p[P_IC_MISS])
        sc[S_IC_ACC] += 1
        sc[S_IC_MISS] += missed
        n = 0
        limit = min(p[P_FETCH_WIDTH], p[P_IBUF_SLOTS])
        while n < limit and i < slot_end[s]:
            pc = s_pc[i]
            if n > 0 and (pc != s_pc[i - 1] + 1 or pc // per_line != line):
                break
            ibuf[s, n] = i
            ibuf_arrive[s, n] = ready
            ibuf_dec[s, n] = -1
            stamp[i, F] = c
            n += 1
            i += 1
            if p[P_WAIT_BRANCH] != 0 and op_redirect[pc] != 0:
                slot_fetch_at[s] = INF      # until the instruction executes
                break
        ibuf_n[s] = n
        slot_next[s] = i
        sc[S_FETCHED] += n
        sc[S_FETCH_PTR] = (s + 1) % m
        return
