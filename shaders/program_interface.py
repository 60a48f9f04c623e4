"""The checks a program's ``interface.json`` passes before anything reads it.

An interface comes from a file a user gives (a trace's ``createProgram``, a corpus folder's
``interface.json``) and is read in many places (vertex fetch, uniform and sampler tables,
synthetic inputs, the predictor): each reads the fields it needs and trusts their types. So
the fields they read are checked once, where the interface is loaded; what is wrong is an
:class:`~tilesim.errors.InputError` naming the place and the field (``uniforms[2].type``),
never a TypeError deep in a draw. The layout is :mod:`tilesim.shaders.glsl_compile`'s.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tilesim.errors import InputError
from tilesim.inputs import read_json
from tilesim.shaders.glsl_compile import STAGES, TYPE_SHAPES

# Bounds far above what a GLES2 program declares (GL_MAX_VERTEX_ATTRIBS 16, a few hundred
# uniform vectors), low enough that no table sized by them exhausts memory or time.
MAX_INDEX = 1 << 16
_REGISTER = {kind: re.compile(rf"{kind}\[(\d{{1,5}})\]") for kind in ("IN", "SAMP")}
_COMPONENTS = re.compile(r"[xyzw]{0,4}")


class _Checker:
    def __init__(self, where: str):
        self.where = where

    def fail(self, field: str, expected: str, value: Any) -> InputError:
        return InputError(f"program interface: {field} must be {expected}, got {value!r:.60}",
                          source=self.where)

    def table(self, value, field: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(field, "a JSON object", value)
        return value

    def entries(self, interface: dict, key: str) -> list[dict]:
        value = interface.get(key, [])
        if not isinstance(value, list):
            raise self.fail(key, "a list", value)
        return [self.table(entry, f"{key}[{k}]") for k, entry in enumerate(value)]

    def integer(self, value, field: str, low: int, high: int = MAX_INDEX, *,
                null: bool = False) -> None:
        if value is None and null:
            return
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(field, f"an integer in {low}..{high}" + " or null" * null, value)

    def string(self, value, field: str) -> None:
        if not isinstance(value, str):
            raise self.fail(field, "a string", value)

    def registers(self, value, field: str, kind: str) -> None:
        if not isinstance(value, list) or not all(
                isinstance(r, str) and _REGISTER[kind].fullmatch(r) for r in value):
            raise self.fail(field, f'a list of registers like "{kind}[0]"', value)


def check_interface(interface: Any, where: str) -> dict:
    """``interface`` when its fields are of the types and ranges the renderer reads;
    InputError naming ``where`` and the field otherwise."""
    c = _Checker(where)
    c.table(interface, "the interface")
    for k, a in enumerate(c.entries(interface, "attributes")):
        c.string(a.get("name"), f"attributes[{k}].name")
        c.integer(a.get("location"), f"attributes[{k}].location", -1)
        if a.get("registers") is not None:
            c.registers(a["registers"], f"attributes[{k}].registers", "IN")
    for k, u in enumerate(c.entries(interface, "uniforms")):
        field = f"uniforms[{k}]"
        c.string(u.get("name"), f"{field}.name")
        if not isinstance(u.get("type"), str) or u["type"] not in TYPE_SHAPES:
            raise c.fail(f"{field}.type", f"a GLSL type ({', '.join(TYPE_SHAPES)})",
                         u.get("type"))
        c.integer(u.get("array_size"), f"{field}.array_size", 1, null=True)
        for stage in STAGES:
            place = u.get(stage)
            if place is None:
                continue
            c.table(place, f"{field}.{stage}")
            c.integer(place.get("first_slot"), f"{field}.{stage}.first_slot", 0)
            c.integer(place.get("slots", 0), f"{field}.{stage}.slots", 0)
            layout = place.get("layout")
            if not isinstance(layout, list) or not all(
                    isinstance(s, str) and _COMPONENTS.fullmatch(s) for s in layout):
                raise c.fail(f"{field}.{stage}.layout", 'a list of components like "xyzw"',
                             layout)
    for k, s in enumerate(c.entries(interface, "samplers")):
        field = f"samplers[{k}]"
        c.string(s.get("name"), f"{field}.name")
        c.string(s.get("type"), f"{field}.type")
        c.integer(s.get("array_size"), f"{field}.array_size", 1, null=True)
        for stage in STAGES:
            place = s.get(stage)
            if place is None:
                continue
            c.table(place, f"{field}.{stage}")
            c.registers(place.get("samplers"), f"{field}.{stage}.samplers", "SAMP")
            if len(place["samplers"]) > (s.get("array_size") or 1):
                raise InputError(f"program interface: {field}.{stage}.samplers lists "
                                 f"{len(place['samplers'])} registers for "
                                 f"{s.get('array_size') or 1} sampler(s)", source=where)
    for k, s in enumerate(c.entries(interface, "state")):
        c.string(s.get("stage", ""), f"state[{k}].stage")
        c.string(s.get("name"), f"state[{k}].name")
        c.integer(s.get("slot"), f"state[{k}].slot", 0)
    precision = interface.get("precision")
    if precision is not None:
        c.table(precision, "precision")
        for stage in STAGES:
            lines = c.table(precision.get(stage), f"precision.{stage}").get("instructions")
            if not isinstance(lines, list) or not all(isinstance(s, str) for s in lines):
                raise c.fail(f"precision.{stage}.instructions", "a list of strings", lines)
    bound = interface.get("bound_attrib_locations", {})
    if bound is not None:
        c.table(bound, "bound_attrib_locations")
        for name, location in bound.items():
            c.integer(location, f"bound_attrib_locations.{name}", 0)
    return interface


def read_interface(path: str | Path) -> dict:
    """The checked interface in the JSON file ``path``; InputError naming it otherwise."""
    return check_interface(read_json(path, "program interface"), str(path))
