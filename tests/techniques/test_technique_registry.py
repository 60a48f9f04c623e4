"""A technique is one module plus its registry entry (issue 32): the bus names none of them,
every entry's unit is a ``TechniqueUnit`` of its own module, and a technique added to the
registry alone runs through the pipeline's hooks."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
from conftest import require_mesa
from technique_helpers import H, W, coherence_scene

from tilesim.render.techniques import bus, registry
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.registry import REGISTRY, ScreenPass, Technique, TechniqueUnit


def test_every_entry_names_a_unit_of_its_own_module():
    assert list(REGISTRY) == [t.switch for t in registry.TECHNIQUES]
    for technique in registry.TECHNIQUES:
        unit = technique.unit_class()
        assert issubclass(unit, TechniqueUnit), technique.switch
        assert unit.__module__ == technique.unit.partition(":")[0], technique.switch
        defaults = {v.option for v in technique.variants.values() if v.default}
        assert defaults == {v.option for v in technique.variants.values()}, (
            f"{technique.switch}: each option its variants set has a default")


def test_the_bus_names_no_technique():
    """No technique's switch as a string or an attribute in the bus's code (its docstring
    aside): what a technique does lives in its unit."""
    tree = ast.parse(Path(inspect.getsourcefile(bus)).read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    switches = set(REGISTRY)
    named = [(node.lineno, node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and id(node) not in docstrings
             and node.value in switches]
    named += [(node.lineno, node.attr) for node in ast.walk(tree)
              if isinstance(node, ast.Attribute) and node.attr in switches]
    assert named == []


class CountingUnit(TechniqueUnit):
    """A technique that only watches: the pixels written on the screen per pass, the tiles
    it flushes, and the order of the pass's phases."""

    def __init__(self, screen, traversal, techniques):
        super().__init__(screen, traversal, techniques)
        self.written_pixels = 0
        self.phases: list[str] = []

    def begin_pass(self, counters, board):
        self.phases.append("begin")

    def classify(self, draw, board):
        self.phases.append("classify")

    def binned(self, draw, board):
        self.phases.append("binned")

    def written(self, draw, pixel, tile, color, entry, lanes):
        self.written_pixels += int(pixel.shape[0])

    def decide(self, counters, board):
        self.phases.append("decide")

    def end_pass(self, counters, board):
        assert isinstance(board, ScreenPass)
        self.phases.append("end")


@pytest.mark.slow
@pytest.mark.mesa
def test_a_technique_added_to_the_registry_alone_runs(monkeypatch):
    """Registered, a unit that watches runs beside TE with no other change: the baseline's
    frames, and it sees every pixel written and the pass's phases in order."""
    from tilesim.render.pipeline.renderer import Renderer

    require_mesa()
    scene = coherence_scene(2)
    toy = Technique("toy", "A counting technique", "-", "nothing",
                    f"{__name__}:CountingUnit")
    monkeypatch.setattr(registry, "REGISTRY", {**REGISTRY, "toy": toy})
    monkeypatch.setattr(registry, "NAMES", (*registry.NAMES, "toy"))
    techniques = Techniques.parse("te+toy")
    assert techniques.name == "te+toy"
    frames = list(Renderer(W, H, techniques=techniques).render(scene))
    baseline = list(Renderer(W, H).render(scene))
    for ours, theirs in zip(frames, baseline, strict=True):
        np.testing.assert_array_equal(ours.image, theirs.image)
    unit = techniques.unit("toy")
    assert unit.written_pixels == sum(f.counters.total("color_writes") for f in baseline)
    # four draws a frame, each classified by every unit before any sees it binned
    assert unit.phases == (["begin"] + ["classify", "binned"] * 4 + ["decide", "end"]) * 2


def test_the_signature_variants_are_the_signature_units_kinds():
    """RE's ``/crc32`` and ``/xor`` name the hashes the Signature Unit implements: one list
    each, kept equal here (the registry stays free of the units' imports)."""
    from tilesim.render.techniques.signature_unit import SIGNATURE_KINDS

    signatures = {v.value for v in REGISTRY["re"].variants.values() if v.option == "signature"}
    assert signatures == set(SIGNATURE_KINDS)


@pytest.mark.parametrize("name", [f"{t.switch}/{v}" for t in REGISTRY.values()
                                  for v in t.variants])
def test_every_variant_names_the_option_value_it_sets(name):
    techniques = Techniques.from_name(name)
    switch, _, variant = name.partition("/")
    option = REGISTRY[switch].variants[variant]
    assert getattr(techniques, option.option) == option.value
    assert techniques.enabled == {switch}
