"""The interpreter's inputs from what Mesa llvmpipe drew: the probe passes' interpolated
varyings, gl_FragCoord and gl_FrontFacing placed in IN / SV registers, and CONST[0] as the
program's interface lays it out. Shared by the differential test
(tests/shaders/test_differential_mesa.py) and the sampler's llvmpipe comparison
(tests/render/test_texture_sampler.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.shaders import mesa_fullscreen as mf
from tilesim.shaders.synthetic_inputs import quad_pixels

WIDTH = HEIGHT = 64
XYZW = "xyzw"


def parse_register(text: str) -> tuple[str, int]:
    """'IN[3]' -> ('IN', 3)."""
    file, _, rest = text.partition("[")
    return file, int(rest.rstrip("]"))


def state_value(name: str, height: int) -> list[float]:
    """Mesa's internal uniforms, as st/mesa sets them when drawing into an FBO (no y flip)."""
    if name == "gl_FbWposYTransform":
        return [1.0, 0.0, -1.0, float(height)]
    raise NotImplementedError(f"state uniform {name} is not modelled by this test")


def constant_buffer(program, interface: dict, values: dict[str, np.ndarray],
                    height: int) -> np.ndarray:
    """CONST[0] as (slots, 4) uint32 bits, laid out as the interface's fragment places say."""
    slots = max([d.last + 1 for d in program.declared("CONST") if (d.dimension or 0) == 0],
                default=1)
    table = np.zeros((slots, 4), dtype=np.uint32)
    for uniform in interface["uniforms"]:
        place = uniform["fragment"]
        if place is None:
            continue
        flat = values[uniform["name"]]
        if uniform["storage"] == "float32":
            bits = flat.astype(np.float32).view(np.uint32)
        elif uniform["storage"] == "int32":
            bits = flat.astype(np.int32).view(np.uint32)
        else:
            bits = np.where(flat != 0, 0xFFFFFFFF, 0).astype(np.uint32)
        k = 0
        for i, components in enumerate(place["layout"]):
            for c in components:
                table[place["first_slot"] + i, XYZW.index(c)] = bits[k]
                k += 1
    for state in interface["state"]:
        if state["stage"] == "fragment":
            table[state["slot"]] = np.asarray(state_value(state["name"], height),
                                              dtype=np.float32).view(np.uint32)
    return table


@dataclass
class Probe:
    """Mesa's per-pixel inputs, in the interpreter's lane order: label -> (N,) float32."""

    values: dict[str, np.ndarray]

    @classmethod
    def from_images(cls, labels: list[str], images: list[np.ndarray]) -> Probe:
        x, y = quad_pixels(WIDTH, HEIGHT)
        return cls({label: images[i // 4][y, x, i % 4] for i, label in enumerate(labels)})


def fragment_inputs(program, interface: dict, probe: Probe, height: int):
    """(IN registers (R, 4, N) float32, system values) from the probe, per the interface."""
    inputs = np.zeros((max(program.register_count("IN"), 1), 4, WIDTH * HEIGHT), np.float32)
    system_values: dict[str, np.ndarray] = {}
    for varying in interface["varyings"]:
        if varying["fragment"] is None:
            continue
        exprs = mf.Varying(varying["name"], varying["type"],
                           array_size=varying["array_size"]).component_expressions()
        for piece in varying["fragment"]:
            if piece["register"] is None:
                continue
            _, index = parse_register(piece["register"])  # always an IN register
            for i in range(piece["count"]):
                inputs[index, piece["component"] + i] = probe.values[exprs[piece["first"] + i]]
    half = 0.5 if program.properties.get("FS_COORD_PIXEL_CENTER") == "HALF_INTEGER" else 0.0
    for builtin in interface["builtins"]["fragment"]:
        name = builtin["name"]
        if name == "gl_FragCoord":
            row = probe.values["gl_FragCoord.y"] - np.float32(0.5)  # window y of the pixel
            if program.properties.get("FS_COORD_ORIGIN") == "LOWER_LEFT":
                y = np.float32(height - 1) - row + half
            else:
                y = row + half
            x = probe.values["gl_FragCoord.x"] - np.float32(0.5) + half
            value = np.stack([x, y, probe.values["gl_FragCoord.z"],
                              probe.values["gl_FragCoord.w"]])
        elif name == "gl_FrontFacing":
            face = np.where(probe.values["gl_FrontFacing"] > 0, 1.0, -1.0).astype(np.float32)
            value = np.repeat(face[None], 4, axis=0)
        elif name in ("gl_FragColor", "gl_FragData"):
            continue
        else:
            raise NotImplementedError(f"built-in input {name} is not modelled by this test")
        file, index = parse_register(builtin["register"])
        if file == "SV":
            system_values[builtin["semantic"].split("[")[0]] = value.astype(np.float32)
        else:
            inputs[index] = value
    return inputs, system_values
