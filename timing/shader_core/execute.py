"""Execute (002 §3.2.1): up to ``oc_ex.output_width`` instructions leave the OC_EX buffer per
cycle, oldest first, an instruction that cannot start letting younger ones by:

* ALU (arithmetic, transcendental, control flow): ``execute.alus`` pipelined units, one new
  instruction each per cycle, latency by class; an instruction starts only if the write port
  of its destination's bank is free in its writeback cycle (002: such conflicts are resolved
  before an instruction is picked).
* Texture: the warp's texel lines (those its active lanes really fetch, recorded by the
  interpreter) go through the texture cache, one request sent and served per cycle (002 §3.1);
  a hit returns after ``texture.cache_latency``, a miss ``texture.miss_latency`` later; the
  result is filtered (``texture.filter_latency``) and written through the memory write ports,
  the first free cycle from then on.
* End of program: up to ``execute.eop_units`` per cycle.
"""

from __future__ import annotations

from tilesim.jit import jit
from tilesim.timing.shader_core.caches import access
from tilesim.timing.shader_core.config import (
    P_ALUS,
    P_BANK_HASH,
    P_BANKS,
    P_EOP_UNITS,
    P_LAT_ALU,
    P_LAT_BRANCH,
    P_LAT_EOP,
    P_LAT_TRANS,
    P_MEM_PORTS,
    P_OCEX_OUT,
    P_TC_FILTER,
    P_TC_LATENCY,
    P_TC_MISS,
)
from tilesim.timing.shader_core.operand_collector import bank_of
from tilesim.timing.shader_core.state import (
    ALU,
    BRANCH,
    EOP,
    RING,
    S_EX_N,
    S_EXECUTED,
    S_OCEX_N,
    S_TC_ACC,
    S_TC_MISS,
    S_TC_PORT,
    TEX,
    TRANS,
    E,
    W,
)


@jit(inline=True)
def texture_done(st, i, c):
    """The cycle the texture instruction ``i``, starting at ``c``, has its result filtered."""
    s_tex_count = st.s_tex_count
    s_tex_start = st.s_tex_start
    tc_lru = st.tc_lru
    tc_ready = st.tc_ready
    tc_tag = st.tc_tag
    tex_lines = st.tex_lines
    p, sc = st.p, st.sc
    done = c + p[P_TC_LATENCY]
    t = max(c, sc[S_TC_PORT])
    first = s_tex_start[i]
    count = s_tex_count[i]
    for k in range(count):
        ready, missed = access(tc_tag, tc_lru, tc_ready, tex_lines[first + k], t,
                               p[P_TC_LATENCY], p[P_TC_MISS])
        sc[S_TC_ACC] += 1
        sc[S_TC_MISS] += missed
        if ready > done:
            done = ready
        t += 1
    if count > 0:
        sc[S_TC_PORT] = t
    return done + p[P_TC_FILTER]


@jit(inline=True)
def execute(st, c):
    ex_list = st.ex_list
    ocex = st.ocex
    op_class = st.op_class
    op_dst = st.op_dst
    s_pc = st.s_pc
    s_slot = st.s_slot
    stamp = st.stamp
    wb_bank = st.wb_bank
    wb_mem = st.wb_mem
    p, sc = st.p, st.sc
    alus = 0
    eops = 0
    taken = 0
    kept = 0
    for k in range(sc[S_OCEX_N]):
        i = ocex[k]
        pc = s_pc[i]
        cls = op_class[pc]
        wb = -1
        if taken < p[P_OCEX_OUT] and sc[S_EX_N] < ex_list.shape[0]:
            if cls == ALU or cls == TRANS or cls == BRANCH:
                if alus < p[P_ALUS]:
                    lat = p[P_LAT_ALU]
                    if cls == TRANS:
                        lat = p[P_LAT_TRANS]
                    elif cls == BRANCH:
                        lat = p[P_LAT_BRANCH]
                    d = op_dst[pc]
                    if d < 0:
                        wb = c + lat
                    else:
                        b = bank_of(p[P_BANK_HASH], p[P_BANKS], s_slot[i], d)
                        if wb_bank[(c + lat) % RING, b] == 0:
                            wb_bank[(c + lat) % RING, b] = 1
                            wb = c + lat
                    if wb >= 0:
                        alus += 1
            elif cls == TEX:
                wb = texture_done(st, i, c)
                while wb_mem[wb % RING] >= p[P_MEM_PORTS]:
                    wb += 1
                wb_mem[wb % RING] += 1
            elif cls == EOP:
                if eops < p[P_EOP_UNITS]:
                    wb = c + p[P_LAT_EOP]
                    eops += 1
        if wb >= 0:
            stamp[i, E] = c
            stamp[i, W] = wb
            ex_list[sc[S_EX_N]] = i
            sc[S_EX_N] += 1
            sc[S_EXECUTED] += 1
            taken += 1
        else:
            ocex[kept] = i
            kept += 1
    sc[S_OCEX_N] = kept
