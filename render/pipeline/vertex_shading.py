"""Vertex shading: run the vertex program over the fetched vertices.

Produces the clip-space position (the POSITION output) and every other output by semantic
(GENERIC[k], PSIZE, ...), as the rows the clipper works on: [x, y, z, w, outputs...].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.backend import array_module, to_host
from tilesim.errors import InputError
from tilesim.render.gl.state import Program


@dataclass
class ShadedVertices:
    """rows: (V, 4 + 4*K) float64 [clip position, then 4 components per varying output];
    columns: semantic ('GENERIC', k) -> first column of that output in ``rows``;
    point_size: (V,) float64 or None; stats: the interpreter's DynamicStats."""

    rows: np.ndarray
    columns: dict[tuple[str, int], int]
    point_size: np.ndarray | None
    stats: object


def shade(program: Program, inputs: np.ndarray, constants: np.ndarray, sampler,
          where: str) -> ShadedVertices:
    execution = program.vertex.run(inputs, constants, lanes=inputs.shape[2], sampler=sampler)
    outputs = execution.outputs  # (R, 4, V) float32
    semantics = program.vertex.program.output_semantics()
    position = next((r for r, s in semantics.items() if s[0] == "POSITION"), None)
    if position is None:
        raise InputError("the vertex shader writes no position", source=where)
    xp = array_module(outputs)
    pos = outputs[position].T.astype(np.float64)
    if not bool(xp.isfinite(pos).all()):
        bad = int(xp.nonzero(~xp.isfinite(pos).all(axis=1))[0][0])
        raise InputError(f"vertex {bad} of the draw has a NaN or infinite clip-space position "
                         f"({to_host(pos[bad]).tolist()})", source=where)
    columns: dict[tuple[str, int], int] = {}
    blocks = [pos]
    point_size = None
    for reg, sem in sorted(semantics.items()):
        if sem[0] == "POSITION":
            continue
        if sem[0] == "PSIZE":
            point_size = outputs[reg, 0].astype(np.float64)
            continue
        columns[sem] = 4 * len(blocks)
        blocks.append(outputs[reg].T.astype(np.float64))
    return ShadedVertices(xp.concatenate(blocks, axis=1), columns, point_size, execution.stats)
