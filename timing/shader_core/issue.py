"""Issue (002 §3.2.1): a loose-round-robin scheduler issues up to ``issue.width`` warps per
cycle, one instruction each, from the head of their I-buffer into the IS_OC buffer. It skips
a warp whose head instruction is not decoded yet, would cause a RAW, WAW or WAR hazard with
an instruction of the same warp in flight (the scoreboard), or is the end of the program
while instructions of the warp have not retired; it stops when IS_OC is full or its input
port is used up. The next cycle starts after the last warp that issued.

Scoreboard: per warp and register, the writes in flight (set at issue, cleared at writeback)
and the reads not yet done (set at issue, cleared when the operand collector reads them).
"""

from __future__ import annotations

from tilesim.jit import jit
from tilesim.timing.shader_core.config import (
    P_IBUF_SLOTS,
    P_ISOC_IN,
    P_ISOC_SIZE,
    P_ISSUE_WIDTH,
    P_MAX_WARPS,
)
from tilesim.timing.shader_core.state import (
    EOP,
    S_ISOC_HEAD,
    S_ISOC_N,
    S_ISSUE_PTR,
    S_ISSUED,
    S_ISSUED_NOW,
    I,
)


@jit(inline=True)
def hazard_free(op_src, op_dst, pend_w, pend_r, s, pc):
    """No RAW (a source written in flight), WAW (the destination written in flight) or WAR
    (the destination still to be read by an older instruction) for warp slot ``s``."""
    for k in range(3):
        r = op_src[pc, k]
        if r >= 0 and pend_w[s, r] > 0:
            return False
    d = op_dst[pc]
    if d >= 0 and (pend_w[s, d] > 0 or pend_r[s, d] > 0):
        return False
    return True


@jit(inline=True)
def issue(st, c):
    ibuf = st.ibuf
    ibuf_arrive = st.ibuf_arrive
    ibuf_dec = st.ibuf_dec
    ibuf_n = st.ibuf_n
    isoc = st.isoc
    op_class = st.op_class
    op_dst = st.op_dst
    op_src = st.op_src
    pend_r = st.pend_r
    pend_w = st.pend_w
    s_pc = st.s_pc
    s_slot = st.s_slot
    slot_inflight = st.slot_inflight
    slot_warp = st.slot_warp
    stamp = st.stamp
    p, sc = st.p, st.sc
    m = p[P_MAX_WARPS]
    width = min(p[P_ISSUE_WIDTH], p[P_ISOC_IN])
    size = p[P_ISOC_SIZE]
    start = sc[S_ISSUE_PTR]
    last = -1
    issued = 0
    for k in range(m):
        if issued >= width or sc[S_ISOC_N] >= size:
            break
        s = (start + k) % m
        if slot_warp[s] < 0 or ibuf_n[s] == 0:
            continue
        if ibuf_dec[s, 0] < 0 or ibuf_dec[s, 0] >= c:
            continue
        i = ibuf[s, 0]
        pc = s_pc[i]
        if op_class[pc] == EOP:
            if slot_inflight[s] > 0:
                continue
        elif not hazard_free(op_src, op_dst, pend_w, pend_r, s, pc):
            continue
        for j in range(3):
            r = op_src[pc, j]
            if r >= 0:
                pend_r[s, r] += 1
        d = op_dst[pc]
        if d >= 0:
            pend_w[s, d] += 1
        slot_inflight[s] += 1
        s_slot[i] = s
        stamp[i, I] = c
        isoc[(sc[S_ISOC_HEAD] + sc[S_ISOC_N]) % size] = i
        sc[S_ISOC_N] += 1
        # the I-buffer's head slot empties: the next instruction moves up
        n = ibuf_n[s]
        for j in range(1, p[P_IBUF_SLOTS]):
            if j < n:
                ibuf[s, j - 1] = ibuf[s, j]
                ibuf_arrive[s, j - 1] = ibuf_arrive[s, j]
                ibuf_dec[s, j - 1] = ibuf_dec[s, j]
        ibuf_n[s] = n - 1
        issued += 1
        last = s
    if last >= 0:
        sc[S_ISSUE_PTR] = (last + 1) % m
    sc[S_ISSUED] += issued
    sc[S_ISSUED_NOW] = issued
