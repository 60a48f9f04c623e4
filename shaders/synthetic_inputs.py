"""Generated inputs for running a TGSI program without a renderer.

Fragments are laid out as a renderer lays them out: a W x H block of pixels in 2x2 quads
(lanes 4q..4q+3 = top-left, top-right, bottom-left, bottom-right), and every input varies
smoothly (an affine function of the pixel position) so that derivatives and texture LOD
behave as they would on a real triangle. Constants follow the program's interface file when
there is one (integers and booleans get small integer values), else small floats.
Everything is drawn from a seeded generator: the same seed gives the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tilesim.backend import xp as active_xp
from tilesim.shaders.ir import Program
from tilesim.shaders.program_interface import read_interface


def quad_pixels(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel x, y (int32, shape (W*H,)) in quad order; width and height must be even."""
    if width % 2 or height % 2:
        raise ValueError("quad layout needs an even width and height")
    qy, qx = np.meshgrid(np.arange(height // 2), np.arange(width // 2), indexing="ij")
    qx, qy = qx.ravel(), qy.ravel()
    x = (2 * qx[:, None] + np.array([0, 1, 0, 1])).ravel()
    y = (2 * qy[:, None] + np.array([0, 0, 1, 1])).ravel()
    return x.astype(np.int32), y.astype(np.int32)


@dataclass
class GeneratedInputs:
    inputs: Any            # (R, 4, N) float32
    constants: dict        # {buffer: (S, 4) uint32 bits}
    system_values: dict    # {semantic: (4, N)}
    lanes: int


def load_interface(tgsi_path: str | Path) -> dict | None:
    path = Path(tgsi_path).with_name("interface.json")
    if not path.exists():
        return None
    return read_interface(path)


def _typed_slots(interface: dict | None, stage: str) -> dict[int, str]:
    """CONST slot -> 'int32' or 'bool32' for the integer-stored uniforms of a stage."""
    slots: dict[int, str] = {}
    for uniform in (interface or {}).get("uniforms", []):
        where = uniform.get(stage)
        if where and uniform.get("storage") in ("int32", "bool32"):
            for s in range(where["first_slot"], where["first_slot"] + where["slots"]):
                slots[s] = uniform["storage"]
    return slots


def _state_values(interface: dict | None, stage: str, height: int) -> dict[int, np.ndarray]:
    """Mesa-internal constants the renderer fills (gl_FragCoord's y transform)."""
    values: dict[int, np.ndarray] = {}
    for state in (interface or {}).get("state", []):
        if state.get("stage") == stage and state["name"] == "gl_FbWposYTransform":
            # Drawing into a framebuffer object: y stays as the rasterizer gives it.
            values[state["slot"]] = np.array([1, 0, -1, height], dtype=np.float32)
    return values


def generate(program: Program, *, width: int = 64, height: int = 64, seed: int = 0,
             interface: dict | None = None, xp=None) -> GeneratedInputs:
    """Inputs for ``program`` over ``width * height`` lanes (quads for fragment programs)."""
    xp = xp or active_xp()
    rng = np.random.default_rng(seed)
    n = width * height
    x, y = quad_pixels(width, height)
    u = (x.astype(np.float32) + 0.5) / width
    v = (y.astype(np.float32) + 0.5) / height
    num_in = max(program.register_count("IN"), 1)
    inputs = np.empty((num_in, 4, n), dtype=np.float32)
    semantics = program.input_semantics()
    for r in range(num_in):
        name = semantics.get(r, ("GENERIC", 0))[0]
        if name == "POSITION" and program.processor == "FRAG":
            inputs[r] = np.stack([x + 0.5, y + 0.5, 0.5 + 0.25 * u, np.ones(n)])
            continue
        a, b, c = rng.uniform(-1.5, 1.5, (3, 4, 1)).astype(np.float32)
        inputs[r] = a * u + b * v + c
        if name == "COLOR":
            inputs[r] = np.clip(inputs[r] * 0.5 + 0.5, 0, 1)
        if program.processor == "VERT":
            inputs[r, 3] = 1.0
    constants: dict[int, np.ndarray] = {}
    stage = "vertex" if program.processor == "VERT" else "fragment"
    typed_slots = _typed_slots(interface, stage)
    state = _state_values(interface, stage, height)
    for d in program.declared("CONST"):
        buf = d.dimension or 0
        count = d.last + 1
        table = rng.uniform(-1.0, 1.0, (count, 4)).astype(np.float32).view(np.uint32)
        if buf == 0:
            for slot, kind in typed_slots.items():
                if slot >= count:
                    continue
                if kind == "int32":  # loop counts and indices: small and non-negative
                    table[slot] = rng.integers(0, 6, 4).astype(np.uint32)
                else:
                    table[slot] = np.where(rng.random(4) < 0.5, 0, 0xFFFFFFFF).astype(np.uint32)
            for slot, value in state.items():
                if slot < count:
                    table[slot] = value.view(np.uint32)
        previous = constants.get(buf)
        if previous is None or previous.shape[0] < count:
            constants[buf] = table
    system_values = {
        "FACE": np.where(rng.random(n) < 0.5, 1.0, -1.0).astype(np.float32)[None].repeat(4, 0),
        "POSITION": np.stack([x + 0.5, y + 0.5, 0.5 + 0.25 * u, np.ones(n)]).astype(np.float32),
        "VERTEXID": np.arange(n, dtype=np.int32).view(np.float32)[None].repeat(4, 0),
        "INSTANCEID": np.zeros((4, n), dtype=np.float32),
    }
    return GeneratedInputs(
        inputs=xp.asarray(inputs),
        constants={k: xp.asarray(t) for k, t in constants.items()},
        system_values={k: xp.asarray(s) for k, s in system_values.items()},
        lanes=n,
    )
