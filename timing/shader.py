"""Shader throughput: the cycles the fragment and vertex processors spend running programs.

With ``processors.shader.core_throughput = 1`` (the default) each program is charged what the
cycle-level shader core of Shader Core ch. 3 (``tilesim.timing.shader_core``, configured by
``shader_core.toml``: issue width 2, 32 warps, operand collector, pipelined units, texture
unit) measures for it: cycles per warp instruction at the core's warps in flight
(``text_throughput``, cached per program text and core configuration, so a frame's estimate
is a lookup). The counters name the programs (their TGSI texts, the fragment quad
instructions of each program per tile, the vertex instructions of each per frame); a tile's
figure is the instruction-weighted mean of the programs it ran:

* Issue bound: ``warp instructions x cycles per instruction / processors``.
* Latency bound: the frame's own texture-cache misses expose the miss penalty (L2 latency
  and, for the L2's misses, the mean memory latency) unless the warps in flight hide it:
  ``misses x penalty / (processors x warps in flight)``. The core's figure already holds the
  hit latency and the misses of a nominal texture; this bound binds only where the frame's
  texture locality is worse.
* ``cycles = max(issue, latency)``.

Either way a warp instruction takes at least ``lanes / processors.shader.threads_per_cycle``
cycles of its processor (``timing.config.warp_instruction_floor``): 4 by default, Frame
Coherence §2.2's 4-wide vector unit running one thread's [x,y,z,w] per cycle (the GPU the
thesis's technique results come from); 0.5 with Shader Core's two 4-thread warp instructions a
cycle (``threads_per_cycle = 8``; the core's own figure is never below it).

With ``core_throughput = 0`` (and for counters that do not name their programs) the
documented simple model of before: issue ``processors.shader.issue_rate`` warp instructions
per cycle, and a texture instruction exposes cache + filter latency and its misses, hidden by
``W = fragment queue entries / lanes / processors`` warps (64 / 4 / 4 = 4 quads). The vertex
processor has no texture unit (Shader Core §2.2.1): its texture instructions only issue.
"""

from __future__ import annotations

import functools

import numpy as np

from tilesim.timing.config import Config, warp_instruction_floor
from tilesim.timing.memory_traffic import latency_avg, texture_l2_hit_ratio


def shader_cycles(warp_instructions, exposed_latency, processors: float,
                  warps_per_processor: float, cycles_per_instruction):
    """Cycles for ``processors`` cores to run ``warp_instructions`` (arrays broadcast) at
    ``cycles_per_instruction`` each, whose texture accesses expose ``exposed_latency``."""
    issue = np.asarray(warp_instructions, dtype=np.float64) * cycles_per_instruction / processors
    hidden = np.asarray(exposed_latency, dtype=np.float64) / (processors * warps_per_processor)
    return np.maximum(issue, hidden)


@functools.lru_cache(maxsize=1)
def _core():
    """The shipped shader-core configuration (read once per process)."""
    from tilesim.timing.shader_core.config import load_core_config

    return load_core_config()


def program_cycles_per_instruction(programs: dict[str, str]) -> dict[str, float]:
    """Cycles per warp instruction of each program (digest -> TGSI text) on the shader core."""
    from tilesim.timing.shader_core.throughput import text_throughput

    core = _core()
    return {digest: text_throughput(text, core, name=f"program {digest}")[
        "cycles_per_instruction"] for digest, text in programs.items()}


def weighted_cycles_per_instruction(work: dict[str, np.ndarray], cpi: dict[str, float],
                                    fallback: float, size: int) -> np.ndarray:
    """Instruction-weighted mean cycles per instruction of the programs in ``work`` (digest ->
    (n,) instructions), ``fallback`` where no named program ran: (n,)."""
    weighted, total = np.zeros(size), np.zeros(size)
    for digest, instructions in work.items():
        if digest in cpi:
            weighted += instructions * cpi[digest]
            total += instructions
    return np.divide(weighted, total, out=np.full(size, float(fallback)), where=total > 0)


def uses_core(batch, cfg: Config) -> bool:
    return bool(cfg["processors.shader.core_throughput"]) and bool(batch.programs)


def fragment_shader_cycles(batch, t: dict[str, np.ndarray], cfg: Config) -> np.ndarray:
    """Fragment shading cycles of each tile ((N,) arrays of quad instructions and misses)."""
    lanes = cfg["processors.shader.lanes"]
    processors = cfg["processors.fragment.count"]
    miss_penalty = cfg["caches.l2.latency"] + (1.0 - texture_l2_hit_ratio(cfg)) * latency_avg(cfg)
    instructions = t["fs_quad_alu"] + t["fs_quad_tex"] + t["fs_quad_flow"]
    issue_cpi = 1.0 / cfg["processors.shader.issue_rate"]
    if uses_core(batch, cfg):
        cpi = weighted_cycles_per_instruction(
            batch.fs_programs, program_cycles_per_instruction(batch.programs), issue_cpi,
            instructions.size)
        warps = _core()["warps.max_warps"]
        exposed = t["tex_cache_misses"] * miss_penalty
    else:
        cpi = issue_cpi
        warps = cfg["queues.fragment.entries"] / lanes / processors
        hit_latency = cfg["caches.texture.latency"] + cfg["stages.texture.filter_latency"]
        exposed = t["fs_quad_tex"] * hit_latency + t["tex_cache_misses"] * miss_penalty
    cpi = np.maximum(cpi, warp_instruction_floor(cfg))
    return shader_cycles(instructions, exposed, processors, warps, cpi)


def vertex_shader_cycles(batch, cfg: Config) -> np.ndarray:
    """Vertex shading cycles of each frame: lane instructions packed 4 vertices per warp."""
    scalars = batch.scalars
    lanes = scalars["vs_alu"] + scalars["vs_tex"] + scalars["vs_flow"]
    warps = lanes / cfg["processors.shader.lanes"]
    issue_cpi = 1.0 / cfg["processors.shader.issue_rate"]
    if uses_core(batch, cfg):
        cpi = weighted_cycles_per_instruction(
            batch.vs_programs, program_cycles_per_instruction(batch.programs), issue_cpi,
            batch.frames)
    else:
        cpi = issue_cpi
    cpi = np.maximum(cpi, warp_instruction_floor(cfg))
    return shader_cycles(warps, 0.0, cfg["processors.vertex.count"], 1.0, cpi)
