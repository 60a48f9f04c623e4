"""The operand collector (002 §3.2.1): Allocate, Read Operands, Dispatch.

* Allocate: up to ``is_oc.output_width`` instructions leave the IS_OC buffer in order, each
  into a free collector unit (CU); its register operands become read requests to their banks.
* Read: each bank serves one request per cycle and each CU receives one operand per cycle,
  granted by a wavefront allocator (a priority diagonal over the CU x bank request matrix that
  moves one step per cycle). A source that is a constant or an immediate is no register-file
  read; an instruction reading one register twice reads it once.
* Dispatch: a loose-round-robin pass over the CUs moves those with every operand read (in an
  earlier cycle) into the OC_EX buffer, up to ``operand_collector.dispatch_width`` per cycle.

Bank of register ``r`` of the warp with id ``w`` (``registers.bank_hash``): warp_shift
``(w + r) mod banks`` (002 Eq. 3.1), sequential ``r mod banks`` (Eq. 5.2), xor
``(w xor r) mod banks``.

A conflict (002 §4.2.6) is a request that would have been served with unbounded read ports
but was not; requests of one CU waiting for each other do not count: per cycle, CUs with a
request minus requests granted.
"""

from __future__ import annotations

from tilesim.jit import jit
from tilesim.timing.shader_core.config import (
    P_BANK_HASH,
    P_BANKS,
    P_CUS,
    P_DISPATCH_WIDTH,
    P_ISOC_OUT,
    P_ISOC_SIZE,
    P_OCEX_SIZE,
)
from tilesim.timing.shader_core.state import (
    S_ALLOCATED,
    S_CONFLICTS,
    S_CUS_BUSY,
    S_DISPATCH_PTR,
    S_DISPATCHED,
    S_ISOC_HEAD,
    S_ISOC_N,
    S_OCEX_N,
    S_REQ_CYCLES,
    A,
    R,
    X,
)


@jit(inline=True)
def bank_of(hash_kind, banks, warp_id, register):
    if hash_kind == 0:
        return (warp_id + register) % banks
    if hash_kind == 1:
        return register % banks
    return (warp_id ^ register) % banks


@jit(inline=True)
def allocate(st, c):
    cu_inst = st.cu_inst
    cu_pending = st.cu_pending
    cu_reg = st.cu_reg
    cu_req = st.cu_req
    isoc = st.isoc
    op_src = st.op_src
    s_pc = st.s_pc
    s_slot = st.s_slot
    stamp = st.stamp
    p, sc = st.p, st.sc
    size = p[P_ISOC_SIZE]
    cus = p[P_CUS]
    moved = 0
    cu = 0
    while moved < p[P_ISOC_OUT] and sc[S_ISOC_N] > 0:
        while cu < cus and cu_inst[cu] >= 0:
            cu += 1
        if cu >= cus:
            break
        i = isoc[sc[S_ISOC_HEAD]]
        sc[S_ISOC_HEAD] = (sc[S_ISOC_HEAD] + 1) % size
        sc[S_ISOC_N] -= 1
        cu_inst[cu] = i
        pc = s_pc[i]
        slot = s_slot[i]
        pending = 0
        for k in range(3):
            r = op_src[pc, k]
            if r >= 0:
                cu_req[cu, k] = bank_of(p[P_BANK_HASH], p[P_BANKS], slot, r)
                cu_reg[cu, k] = r
                pending += 1
            else:
                cu_req[cu, k] = -1
                cu_reg[cu, k] = -1
        cu_pending[cu] = pending
        stamp[i, A] = c
        if pending == 0:
            stamp[i, R] = c
        sc[S_CUS_BUSY] += 1
        sc[S_ALLOCATED] += 1
        moved += 1


@jit(inline=True)
def read_operands(st, c):
    bank_reads = st.bank_reads
    col_used = st.col_used
    cu_inst = st.cu_inst
    cu_pending = st.cu_pending
    cu_reg = st.cu_reg
    cu_req = st.cu_req
    pend_r = st.pend_r
    row_used = st.row_used
    s_slot = st.s_slot
    stamp = st.stamp
    p, sc = st.p, st.sc
    cus = p[P_CUS]
    banks = p[P_BANKS]
    n = max(cus, banks)
    waiting = 0
    for i in range(n):
        row_used[i] = 0
        col_used[i] = 0
    for i in range(cus):
        if cu_inst[i] >= 0 and cu_pending[i] > 0:
            waiting += 1
    if waiting == 0:
        return
    granted = 0
    first = c % n
    for step in range(n):
        diagonal = (first + step) % n
        for i in range(cus):
            if row_used[i] != 0 or cu_inst[i] < 0 or cu_pending[i] == 0:
                continue
            j = (diagonal - i) % n
            if j >= banks or col_used[j] != 0:
                continue
            for k in range(3):
                if cu_req[i, k] == j:
                    inst = cu_inst[i]
                    cu_req[i, k] = -1
                    cu_pending[i] -= 1
                    pend_r[s_slot[inst], cu_reg[i, k]] -= 1
                    bank_reads[j] += 1
                    stamp[inst, R] = c
                    row_used[i] = 1
                    col_used[j] = 1
                    granted += 1
                    break
    sc[S_CONFLICTS] += waiting - granted
    sc[S_REQ_CYCLES] += 1


@jit(inline=True)
def dispatch(st, c):
    cu_inst = st.cu_inst
    cu_pending = st.cu_pending
    ocex = st.ocex
    stamp = st.stamp
    p, sc = st.p, st.sc
    cus = p[P_CUS]
    start = sc[S_DISPATCH_PTR]
    last = -1
    moved = 0
    for k in range(cus):
        if moved >= p[P_DISPATCH_WIDTH] or sc[S_OCEX_N] >= p[P_OCEX_SIZE]:
            break
        cu = (start + k) % cus
        i = cu_inst[cu]
        if i < 0 or cu_pending[cu] > 0 or stamp[i, A] >= c:
            continue
        ocex[sc[S_OCEX_N]] = i
        sc[S_OCEX_N] += 1
        stamp[i, X] = c
        cu_inst[cu] = -1
        sc[S_CUS_BUSY] -= 1
        sc[S_DISPATCHED] += 1
        moved += 1
        last = cu
    if last >= 0:
        sc[S_DISPATCH_PTR] = (last + 1) % cus
