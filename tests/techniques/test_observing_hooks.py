"""The pipeline builds an observing hook's arrays only for hooks that observe it
(``PipelineHooks.observes``): a hooks set that overrides ``written`` gets every write, the
baseline and the technique sets that do not watch writes cost nothing."""

from __future__ import annotations

import pytest
from technique_helpers import H, W, coherence_scene

from tilesim.render.pipeline.hooks import PipelineHooks
from tilesim.render.pipeline.renderer import Renderer
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.side_by_side import SideBySide


class WriteCounter(PipelineHooks):
    def __init__(self):
        self.pixels = 0
        self.late = 0

    def written(self, draw, pixel, tile, color, entry, lanes):
        assert pixel.shape[0] == tile.shape[0] == color.shape[0] == lanes.shape[0]
        self.pixels += int(pixel.shape[0])

    def late_shaded(self, draw, tile):
        self.late += int(tile.shape[0])


def test_a_hooks_set_observes_what_it_overrides():
    assert not PipelineHooks().observes("written")
    assert not PipelineHooks().observes("late_shaded")
    assert WriteCounter().observes("written")
    assert not WriteCounter().observes("shaded")


class WatchingBus(Techniques):
    def written(self, draw, pixel, tile, color, entry, lanes):
        super().written(draw, pixel, tile, color, entry, lanes)


def test_a_technique_set_observes_what_its_units_override():
    renderer = Renderer(W, H, techniques=Techniques.parse("re"))
    assert renderer.techniques.observes("written")       # RE signs the colors written
    renderer = Renderer(W, H, techniques=Techniques.parse("te"))
    assert not renderer.techniques.observes("written")   # TE signs tiles at the flush
    both = SideBySide({"re": Techniques.parse("re")})
    Renderer(W, H, techniques=both)
    assert both.observes("written") and not SideBySide({}).observes("written")
    # a subclass of the bus that watches writes itself, whatever its units do
    watching = WatchingBus(frozenset({"te"}))
    Renderer(W, H, techniques=watching)
    assert watching.observes("written") and not watching.observes("late_shaded")


@pytest.mark.slow
def test_an_observer_sees_every_write():
    hooks = WriteCounter()
    frames = list(Renderer(W, H, techniques=hooks).render(coherence_scene(1)))
    assert hooks.pixels == sum(f.counters.total("color_writes") for f in frames) > 0
