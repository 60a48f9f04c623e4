"""Uniform values into the CONST registers of a stage, and sampler uniforms into texture units.

The layout is the program's interface (from Mesa): each uniform starts on a vec4 slot,
matrices take a slot per column, array elements a slot each; floats are stored as float32
bits, ints as int32, booleans as 0 / 0xFFFFFFFF (what Mesa stores for a native-integer
driver). Mesa-internal state uniforms (gl_FbWposYTransform) are filled as st/mesa does.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from tilesim.render.gl.state import Program
from tilesim.shaders.glsl_compile import TYPE_SHAPES

XYZW = "xyzw"
_ELEMENT = re.compile(r"^(.*)\[(\d+)\]$")


@functools.lru_cache(maxsize=4096)
def _uniform_element(key: str) -> tuple[str, int]:
    """(uniform name, first element) an upload's name refers to: ``lights[2]`` -> ("lights",
    2), ``lights`` -> ("lights", 0) (every draw reads every upload: parsed once)."""
    m = _ELEMENT.match(key)
    return (m.group(1), int(m.group(2))) if m else (key, 0)


def flat_values(program: Program, name: str, array_size: int | None, element_size: int,
                dtype) -> np.ndarray:
    """All components of a uniform (every array element) from the uploads recorded so far.

    Uploads may name the uniform (``lights``), its first element (``lights[0]``) or a later
    one (``lights[2]``); unset components are 0, as GL initializes uniforms.
    """
    total = (array_size or 1) * element_size
    out = np.zeros(total, dtype=dtype)
    for key, (_, values) in program.uniforms.items():
        base, start = _uniform_element(key)
        if base != name:
            continue
        begin = start * element_size
        chunk = np.asarray(values[: max(total - begin, 0)], dtype=np.float64)
        out[begin:begin + chunk.size] = chunk.astype(dtype)
    return out


def constants(program: Program, stage: str, *, height: int,
              depth_range: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """CONST[0] of ``stage`` ('vertex' or 'fragment') as (slots, 4) uint32 bits; ``height``
    (pixels) and ``depth_range`` (glDepthRangef's near, far) fill Mesa's state uniforms."""
    interp = program.vertex if stage == "vertex" else program.fragment
    slots = interp.program.constant_slots()
    table = np.zeros((slots, 4), dtype=np.uint32)
    for uniform in program.interface.get("uniforms", []):
        place = uniform.get(stage)
        if place is None:
            continue
        cols, rows, storage = TYPE_SHAPES[uniform["type"]]
        if storage == "float32":
            bits = flat_values(program, uniform["name"], uniform["array_size"], cols * rows,
                               np.float32).view(np.uint32)
        elif storage == "int32":
            bits = flat_values(program, uniform["name"], uniform["array_size"], cols * rows,
                               np.int64).astype(np.int32).view(np.uint32)
        else:
            flat = flat_values(program, uniform["name"], uniform["array_size"], cols * rows,
                               np.float64)
            bits = np.where(flat != 0, 0xFFFFFFFF, 0).astype(np.uint32)
        k = 0
        for i, components in enumerate(place["layout"]):
            for c in components:
                if place["first_slot"] + i < slots:
                    table[place["first_slot"] + i, XYZW.index(c)] = bits[k]
                k += 1
    for state in program.interface.get("state", []):
        if state.get("stage") == stage and state["name"] == "gl_FbWposYTransform":
            # tilesim presents every render target as Mesa presents a framebuffer object
            # (fragment_shading gives POSITION.y counted from the top); this value turns it
            # back into GL's window y for the default framebuffer too.
            value = [1.0, 0.0, -1.0, float(height)]
            table[state["slot"]] = np.asarray(value, dtype=np.float32).view(np.uint32)
        elif state.get("stage") == stage and state["name"] == "state.depth.range":
            # gl_DepthRange (GLSL ES 1.00 section 7.5) as Mesa's STATE_DEPTH_RANGE holds it
            near, far = depth_range
            value = np.asarray([near, far, far - near, 1.0], dtype=np.float32)
            table[state["slot"]] = value.view(np.uint32)
    return table


# GLSL sampler types -> the texture target their unit's binding is read from (sampler3D:
# OES_texture_3D).
SAMPLER_TARGETS = {"sampler2D": "TEXTURE_2D", "samplerCube": "TEXTURE_CUBE_MAP",
                   "sampler3D": "TEXTURE_3D_OES"}


def sampler_units(program: Program, stage: str) -> dict[int, tuple[int, str]]:
    """SAMP index -> (texture unit, 'TEXTURE_2D', 'TEXTURE_CUBE_MAP' or 'TEXTURE_3D_OES') for a
    stage."""
    units: dict[int, tuple[int, str]] = {}
    for sampler in program.interface.get("samplers", []):
        place = sampler.get(stage)
        if place is None:
            continue
        target = SAMPLER_TARGETS.get(sampler["type"], "TEXTURE_2D")
        values = flat_values(program, sampler["name"], sampler["array_size"], 1, np.int64)
        for element, register in enumerate(place["samplers"]):
            units[int(register[5:-1])] = (int(values[element]), target)
    return units
