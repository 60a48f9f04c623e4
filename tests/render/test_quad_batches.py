"""The record of a batch's quads (``quad_stages.QuadBatch``) that a cycle-level model replays:
its rows must name the draw's own triangles, whatever part of the draw the batch is (EVR's
second display lists, one of DSR's sampling rates), since the quad stream identifies a
primitive by (draw, triangle row)."""

from __future__ import annotations

import numpy as np
import pytest
from repo_paths import TRACES

from tilesim.render.replay import render_trace
from tilesim.render.techniques.bus import Techniques


class _Checked(Techniques):
    """The techniques of a render, checking every batch's quads against its draw's lists."""

    wants_quads = True

    def watch(self):
        self.batches = self.partial = 0
        self.bad: list[str] = []
        return self

    def quads(self, draw, batch) -> None:
        super().quads(draw, batch)
        self.batches += 1
        rows = len(draw.tris)
        tile, triangle = np.asarray(batch.tile), np.asarray(batch.triangle)
        if triangle.size and int(triangle.max()) >= rows:
            self.bad.append(f"triangle row {int(triangle.max())} of {rows}")
            return
        # every quad's (tile, triangle) is a display-list entry of the draw
        entries = np.asarray(draw.bins.tile) * rows + np.asarray(draw.bins.triangle)
        missing = ~np.isin(tile * rows + triangle, entries)
        if missing.any():
            self.bad.append(f"{int(missing.sum())} of {missing.size} quads name a triangle "
                            "with no entry in their tile")
        if len(np.unique(triangle)) < rows:
            self.partial += 1


@pytest.mark.slow
@pytest.mark.parametrize("technique", ["baseline", "evr", "dsr", "re+evr"])
def test_recorded_quads_name_the_draws_own_triangles(technique):
    hooks = _Checked.from_name(technique).watch()
    for _ in render_trace(TRACES / "runner-1196x768.tsim", frames=range(3), technique=hooks,
                          size=(598, 384)):
        pass
    assert hooks.batches > 50
    assert not hooks.bad, hooks.bad[:5]
