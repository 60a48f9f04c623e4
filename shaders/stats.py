"""Instruction statistics of TGSI programs.

Static: per program, how many instructions of each class (ALU, TEX, flow) and which opcodes.
Dynamic: per execution, arrays over lanes and warps (4 lanes; a 2x2 quad for fragments)
that later stages sum per tile: instructions executed per lane, issued per warp, active
lanes, texture samples.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.backend import array_module, to_host
from tilesim.shaders.ir import Program
from tilesim.shaders.opcodes import ALU, CATEGORIES, FLOW, TEX, category_of

WARP_SIZE = 4


@dataclass
class StaticStats:
    processor: str
    alu: int
    tex: int
    flow: int
    total: int
    opcodes: dict[str, int] = field(default_factory=dict)
    temps: int = 0
    inputs: int = 0
    outputs: int = 0
    constants: int = 0
    immediates: int = 0
    samplers: int = 0

    def to_dict(self) -> dict:
        return {
            "processor": self.processor, "alu": self.alu, "tex": self.tex, "flow": self.flow,
            "total": self.total, "alu_tex_ratio": (self.alu / self.tex) if self.tex else None,
            "registers": {"temps": self.temps, "inputs": self.inputs, "outputs": self.outputs,
                          "constants": self.constants, "immediates": self.immediates,
                          "samplers": self.samplers},
            "opcodes": dict(sorted(self.opcodes.items())),
        }


def static_stats(program: Program) -> StaticStats:
    """Counts over the instruction list. END is not an instruction that runs; it is left out."""
    counts = Counter(i.opcode for i in program.instructions if i.opcode != "END")
    by_category = Counter()
    for opcode, n in counts.items():
        by_category[category_of(opcode)] += n
    return StaticStats(
        processor=program.processor,
        alu=by_category[ALU], tex=by_category[TEX], flow=by_category[FLOW],
        total=sum(counts.values()), opcodes=dict(counts),
        temps=program.register_count("TEMP"), inputs=program.register_count("IN"),
        outputs=program.register_count("OUT"), constants=program.register_count("CONST"),
        immediates=len(program.immediates), samplers=program.register_count("SAMP"),
    )


@dataclass
class DynamicStats:
    """What one execution did, as arrays (NumPy or CuPy, like the execution).

    lane_instructions: (3, N) int32, instructions executed by each lane while active, per
        category in CATEGORIES order (alu, tex, flow).
    warp_instructions: (3, W) int32, instructions issued by each warp (any lane active).
    warp_active_lanes: (W,) int64, sum over issued instructions of the warp's active lanes
        (SIMD efficiency = warp_active_lanes / (4 * issued)).
    texture_samples: (N,) int32, texture instructions executed by each lane.

    Where every step had every lane active (the common case), lane_instructions,
    warp_instructions and texture_samples are read-only broadcast views of their per-category
    constants (stride 0 along the lanes or warps): nothing is made per lane, and the per-tile
    counters add them as constants (``PassCounters.add_each``).
    """

    lane_instructions: Any
    warp_instructions: Any
    warp_active_lanes: Any
    texture_samples: Any

    @property
    def lanes(self) -> int:
        return int(self.lane_instructions.shape[1])

    @classmethod
    def concatenate(cls, parts: list[DynamicStats]) -> DynamicStats:
        """The statistics of one execution over the lanes of ``parts``, executions over
        consecutive whole warps of them, in order."""
        if len(parts) == 1:
            return parts[0]
        xp = array_module(parts[0].lane_instructions)
        return cls(xp.concatenate([p.lane_instructions for p in parts], axis=1),
                   xp.concatenate([p.warp_instructions for p in parts], axis=1),
                   xp.concatenate([p.warp_active_lanes for p in parts]),
                   xp.concatenate([p.texture_samples for p in parts]))

    def totals(self) -> dict:
        lane = to_host(self.lane_instructions).sum(axis=1)
        warp = to_host(self.warp_instructions).sum(axis=1)
        issued = int(warp.sum())
        active = int(to_host(self.warp_active_lanes).sum())
        return {
            "lanes": self.lanes,
            "warps": int(self.warp_instructions.shape[1]),
            "lane_instructions": {c: int(v) for c, v in zip(CATEGORIES, lane, strict=True)},
            "warp_instructions": {c: int(v) for c, v in zip(CATEGORIES, warp, strict=True)},
            "texture_samples": int(to_host(self.texture_samples).sum()),
            "simd_efficiency": active / (WARP_SIZE * issued) if issued else None,
        }


class DynamicCounter:
    """Accumulates DynamicStats while the interpreter runs.

    Steps where every lane is active (the common case) cost one integer add; only divergent
    steps touch the per-lane arrays, made at the first of them.
    """

    def __init__(self, xp, lanes: int):
        self.xp = xp
        self.lanes = lanes
        self.warps = -(-lanes // WARP_SIZE)
        self.uniform_steps = [0, 0, 0]
        self.uniform_tex_samples = 0
        # Per lane / warp counts of the divergent steps (None until there is one).
        self.lane_counts = self.warp_counts = self.warp_active = self.tex_samples = None
        # Lanes beyond N (padding to a whole warp) are never active.
        self.pad = self.warps * WARP_SIZE - lanes

    def warp_lanes(self, mask):
        """(W,) active-lane count per warp for a (N,) bool mask."""
        if self.pad:
            mask = self.xp.concatenate([mask, self.xp.zeros(self.pad, dtype=bool)])
        return mask.reshape(self.warps, WARP_SIZE).sum(axis=1)

    def step(self, category_index: int, mask, full: bool, tex: bool = False) -> None:
        if full:
            self.uniform_steps[category_index] += 1
            if tex:
                self.uniform_tex_samples += 1
            return
        if self.lane_counts is None:
            self._start_divergent()
        self.lane_counts[category_index] += mask
        per_warp = self.warp_lanes(mask)
        self.warp_counts[category_index] += per_warp > 0
        self.warp_active += per_warp
        if tex:
            self.tex_samples += mask

    def _start_divergent(self) -> None:
        xp = self.xp
        self.lane_counts = xp.zeros((3, self.lanes), dtype=np.int32)
        self.warp_counts = xp.zeros((3, self.warps), dtype=np.int32)
        self.warp_active = xp.zeros(self.warps, dtype=np.int64)
        self.tex_samples = xp.zeros(self.lanes, dtype=np.int32)

    def _full_warp_lanes(self):
        """(W,) int64 lanes of each warp: WARP_SIZE, fewer in a padded last warp."""
        lanes = self.xp.full(self.warps, WARP_SIZE, dtype=np.int64)
        if self.pad:
            lanes[-1] = WARP_SIZE - self.pad
        return lanes

    def result(self) -> DynamicStats:
        xp = self.xp
        uniform = xp.asarray(self.uniform_steps, dtype=np.int32)[:, None]
        full_warp_active = self._full_warp_lanes() * sum(self.uniform_steps)
        if self.lane_counts is None:  # every step had every lane active
            return DynamicStats(
                lane_instructions=xp.broadcast_to(uniform, (3, self.lanes)),
                warp_instructions=xp.broadcast_to(uniform, (3, self.warps)),
                warp_active_lanes=full_warp_active,
                texture_samples=xp.broadcast_to(
                    xp.asarray(self.uniform_tex_samples, dtype=np.int32), (self.lanes,)),
            )
        return DynamicStats(
            lane_instructions=self.lane_counts + uniform,
            warp_instructions=self.warp_counts + uniform,
            warp_active_lanes=self.warp_active + full_warp_active,
            texture_samples=self.tex_samples + np.int32(self.uniform_tex_samples),
        )
