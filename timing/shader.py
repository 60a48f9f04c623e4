"""Shader throughput: the one hook the shader-core model (Shader Core ch. 3) will replace.

Until a cycle-level model of the core gives cycles per warp for each program, a documented
simple model:

* Issue bound: each processor issues ``issue_rate`` warp instructions per cycle; a warp is 4
  lanes (a fragment quad, or 4 vertices), so ``issue = warp instructions / (processors x
  issue_rate)``.
* Latency bound: a texture instruction exposes its latency (texture-cache hit: cache latency +
  filter pipeline; each texture-cache miss adds the L2 latency and, for the L2's misses, the
  mean memory latency) unless other warps issue meanwhile. With ``W`` warps in flight per
  processor, ``latency = exposed texture latency / (processors x W)``.
* ``cycles = max(issue, latency)``: whichever the warps in flight cannot hide.

The fragment processors hold ``W = fragment queue entries / lanes / processors`` warps each
(64 / 4 / 4 = 4 quads: the fragment queue of Frame Coherence Table 3.1 is what keeps quads in
flight). The vertex processor has no texture unit (Shader Core §2.2.1): its texture instructions
only issue.
"""

from __future__ import annotations

import numpy as np

from tilesim.timing.config import Config
from tilesim.timing.memory_traffic import latency_avg, texture_l2_hit_ratio


def shader_cycles(warp_instructions, exposed_latency, processors: float,
                  warps_per_processor: float, cfg: Config):
    """Cycles for ``processors`` cores to run ``warp_instructions`` (arrays broadcast) whose
    texture accesses expose ``exposed_latency`` cycles in total."""
    issue = np.asarray(warp_instructions, dtype=np.float64) / (
        processors * cfg["processors.shader.issue_rate"])
    hidden = np.asarray(exposed_latency, dtype=np.float64) / (processors * warps_per_processor)
    return np.maximum(issue, hidden)


def fragment_shader_cycles(t: dict[str, np.ndarray], cfg: Config) -> np.ndarray:
    """Fragment shading cycles of each tile ((N,) arrays of quad instructions and misses)."""
    lanes = cfg["processors.shader.lanes"]
    processors = cfg["processors.fragment.count"]
    warps = cfg["queues.fragment.entries"] / lanes / processors
    hit_latency = cfg["caches.texture.latency"] + cfg["stages.texture.filter_latency"]
    miss_penalty = cfg["caches.l2.latency"] + (1.0 - texture_l2_hit_ratio(cfg)) * latency_avg(cfg)
    exposed = t["fs_quad_tex"] * hit_latency + t["tex_cache_misses"] * miss_penalty
    instructions = t["fs_quad_alu"] + t["fs_quad_tex"] + t["fs_quad_flow"]
    return shader_cycles(instructions, exposed, processors, warps, cfg)


def vertex_shader_cycles(scalars: dict[str, np.ndarray], cfg: Config) -> np.ndarray:
    """Vertex shading cycles of each frame: lane instructions packed 4 vertices per warp."""
    lanes = scalars["vs_alu"] + scalars["vs_tex"] + scalars["vs_flow"]
    warps = lanes / cfg["processors.shader.lanes"]
    return shader_cycles(warps, 0.0, cfg["processors.vertex.count"], 1.0, cfg)
