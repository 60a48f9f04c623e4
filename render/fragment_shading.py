"""Fragment shading: interpolate the inputs of every quad lane and run the fragment program.

For each lane the barycentric coordinates come from the exact edge functions; depth is
interpolated linearly in window space, varyings perspective-correctly (PERSPECTIVE), linearly
(LINEAR) or from one vertex (CONSTANT). Lanes of a quad that the triangle does not cover are
helper lanes: they are interpolated (extrapolated) and run, so derivatives are defined, but
their results are dropped. gl_FragCoord and gl_FrontFacing are given as softpipe's TGSI
expects them (FS_COORD_ORIGIN / FS_COORD_PIXEL_CENTER properties, FACE = +1 / -1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .gl_state import Program
from .rasterizer import Quads
from .triangle_setup import Triangles


@dataclass
class FragmentLanes:
    """Per lane (N = 4 * Q): pixel x, y; window depth z (float64); 1/w; front-facing."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    inv_w: np.ndarray
    front: np.ndarray
    perspective: np.ndarray   # (N, 3) perspective-correct barycentrics
    linear: np.ndarray        # (N, 3) screen-space barycentrics
    vertex: np.ndarray        # (N, 3) rows of the clipped vertices


def lanes(tris: Triangles, quads: Quads) -> FragmentLanes:
    px, py = quads.pixels()
    tri = np.repeat(quads.triangle, 4)
    px, py = px.ravel(), py.ravel()
    e = quads.edges.reshape(-1, 3).astype(np.float64)         # (N, 3), from the rasterizer
    area = tris.area2[tri].astype(np.float64)[:, None]
    linear = e[:, [1, 2, 0]] / area                             # weight of vertex 0, 1, 2
    z = (linear * tris.z[tri]).sum(axis=1)
    weighted = linear * tris.inv_w[tri]
    inv_w = weighted.sum(axis=1)
    perspective = weighted / inv_w[:, None]
    return FragmentLanes(px, py, z, inv_w, tris.front[tri], perspective, linear,
                         tris.vertex[tri])


def fragment_inputs(program: Program, lanes_: FragmentLanes, vertex_rows: np.ndarray,
                    columns: dict, height: int) -> tuple[np.ndarray, dict]:
    """(IN registers (R, 4, N) float32, system values) for the fragment program."""
    fs = program.fragment.program
    n = lanes_.x.size
    inputs = np.zeros((max(fs.register_count("IN"), 1), 4, n), dtype=np.float32)
    interpolation = {}
    for d in fs.declared("IN"):
        for r in range(d.first, d.last + 1):
            interpolation[r] = d.interpolation or "PERSPECTIVE"
    props = fs.properties
    half = 0.5 if props.get("FS_COORD_PIXEL_CENTER", "HALF_INTEGER") == "HALF_INTEGER" else 0.0
    frag_coord = None
    face = None
    for reg, semantic in fs.input_semantics().items():
        name = semantic[0]
        if name == "POSITION":
            frag_coord = frag_coord if frag_coord is not None else _frag_coord(
                lanes_, props, half, height)
            inputs[reg] = frag_coord
        elif name == "FACE":
            face = _face(lanes_)
            inputs[reg] = face
        elif semantic in columns:
            col = columns[semantic]
            values = vertex_rows[:, col:col + 4][lanes_.vertex]    # (N, 3, 4)
            mode = interpolation.get(reg, "PERSPECTIVE")
            if mode == "CONSTANT":
                inputs[reg] = values[:, 2].T
            else:
                weights = lanes_.linear if mode == "LINEAR" else lanes_.perspective
                inputs[reg] = np.einsum("nk,nkc->cn", weights, values)
        # Inputs the vertex shader does not write read as zero (GL: undefined).
    system_values = {}
    for semantic in fs.system_value_semantics().values():
        if semantic[0] == "FACE":
            system_values["FACE"] = face if face is not None else _face(lanes_)
        elif semantic[0] == "POSITION":
            system_values["POSITION"] = _frag_coord(lanes_, props, half, height)
    return inputs, system_values


def _frag_coord(lanes_: FragmentLanes, props: dict, half: float, height: int) -> np.ndarray:
    x = lanes_.x.astype(np.float64) + half
    if props.get("FS_COORD_ORIGIN") == "LOWER_LEFT":
        # softpipe's rasterizer counts rows from the top; the TGSI flips back with the
        # gl_FbWposYTransform constant.
        y = (height - 1 - lanes_.y).astype(np.float64) + half
    else:
        y = lanes_.y.astype(np.float64) + half
    return np.stack([x, y, lanes_.z, lanes_.inv_w]).astype(np.float32)


def _face(lanes_: FragmentLanes) -> np.ndarray:
    return np.repeat(np.where(lanes_.front, 1.0, -1.0).astype(np.float32)[None], 4, axis=0)
