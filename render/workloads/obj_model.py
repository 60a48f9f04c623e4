"""Wavefront OBJ meshes (such as glmark2's bunny) as arrays ready for a vertex buffer.

Reads ``v``, ``vn``, ``vt`` and ``f`` lines (polygons are fanned into triangles, negative
indices count from the end); when the file has no normals, per-vertex normals are the
area-weighted average of the adjacent face normals, as glmark2 computes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim.errors import InputError


@dataclass
class Mesh:
    positions: np.ndarray   # (V, 3) float32
    normals: np.ndarray     # (V, 3) float32, unit length
    indices: np.ndarray     # (T, 3) uint32

    def interleaved(self) -> np.ndarray:
        """(V, 6) float32 rows [position, normal] for one vertex buffer."""
        return np.concatenate([self.positions, self.normals], axis=1).astype(np.float32)


def load_obj(path: str | Path) -> Mesh:
    path = Path(path)
    positions: list[list[float]] = []
    normals: list[list[float]] = []
    faces: list[list[int]] = []
    face_normals: list[list[int]] = []
    from tilesim.inputs import read_input_text

    lines = read_input_text(path, "OBJ file").splitlines()
    for number, line in enumerate(lines, start=1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        try:
            if parts[0] == "v":
                positions.append([float(x) for x in parts[1:4]])
            elif parts[0] == "vn":
                normals.append([float(x) for x in parts[1:4]])
            elif parts[0] == "f":
                corners = [p.split("/") for p in parts[1:]]
                idx = [_index(c[0], len(positions)) for c in corners]
                nidx = [_index(c[2], len(normals)) if len(c) > 2 and c[2] else -1
                        for c in corners]
                for k in range(1, len(idx) - 1):
                    faces.append([idx[0], idx[k], idx[k + 1]])
                    face_normals.append([nidx[0], nidx[k], nidx[k + 1]])
        except (ValueError, IndexError):
            raise InputError(f"malformed {parts[0]!r} line", source=str(path),
                             line=number) from None
    if not faces:
        raise InputError("no faces", source=str(path))
    pos = np.asarray(positions, dtype=np.float64)
    tri = np.asarray(faces, dtype=np.int64)
    if tri.min() < 0 or tri.max() >= len(pos):
        raise InputError("a face refers to a vertex that does not exist", source=str(path))
    fn = np.asarray(face_normals)
    if normals and (fn >= 0).all():
        # Per-corner normals: give each vertex the normal of its corners (averaged).
        nrm = np.zeros_like(pos)
        np.add.at(nrm, tri.ravel(), np.asarray(normals)[fn.ravel()])
    else:
        a, b, c = pos[tri[:, 0]], pos[tri[:, 1]], pos[tri[:, 2]]
        face = np.cross(b - a, c - a)  # length = twice the area: area weighting
        nrm = np.zeros_like(pos)
        for k in range(3):
            np.add.at(nrm, tri[:, k], face)
    length = np.linalg.norm(nrm, axis=1, keepdims=True)
    nrm = np.where(length > 0, nrm / np.where(length > 0, length, 1), [0.0, 0.0, 1.0])
    return Mesh(pos.astype(np.float32), nrm.astype(np.float32), tri.astype(np.uint32))


def _index(text: str, count: int) -> int:
    value = int(text)
    if value == 0:
        raise ValueError("OBJ indices start at 1")
    return value - 1 if value > 0 else count + value
