"""Decode (002 §3.2.1): instructions that reached the I-buffer are decoded in place (the slot's
valid bit stays; the decoded bit is set); an instruction issues in a later cycle."""

from __future__ import annotations

from tilesim.jit import jit
from tilesim.timing.shader_core.config import P_MAX_WARPS
from tilesim.timing.shader_core.state import S_DECODED, D


@jit(inline=True)
def decode(st, c):
    ibuf = st.ibuf
    ibuf_arrive = st.ibuf_arrive
    ibuf_dec = st.ibuf_dec
    ibuf_n = st.ibuf_n
    stamp = st.stamp
    for s in range(st.p[P_MAX_WARPS]):
        for k in range(ibuf_n[s]):
            if ibuf_dec[s, k] < 0 and ibuf_arrive[s, k] <= c:
                ibuf_dec[s, k] = c
                stamp[ibuf[s, k], D] = c
                st.sc[S_DECODED] += 1
