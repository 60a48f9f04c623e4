"""A render kept whole for comparison, and the comparison: two ways of running the same
frames (one thread or several, the fragment program in one run or in parts) must give the
same images, scalars, per-tile counters (present or absent alike) and per-program counts
(tests/render/test_threads.py, tests/render/test_shading_parts.py)."""

from __future__ import annotations

import numpy as np

from tilesim.render.replay import render_frames
from tilesim.render.techniques.bus import Techniques


def render_snapshot(frames, width: int, height: int, techniques: str | None = None) -> list:
    """Per frame: (image, scalar counters, per pass (target, tile counters, program
    counts)), copied out of the renderer's reused arrays."""
    hooks = None if techniques is None else Techniques.from_name(techniques)
    return [(r.image, r.counters.scalars,
             [(p.target, {k: np.asarray(v).copy() for k, v in p.tiles.items()},
               {k: np.asarray(v).copy() for k, v in p.fs_programs.items()})
              for p in r.counters.passes])
            for r in render_frames(frames, width, height, technique=hooks)]


def assert_same_renders(expected: list, actual: list) -> None:
    """Every frame of two :func:`render_snapshot` results identical, naming the first
    difference (frame, pass, counter)."""
    assert len(actual) == len(expected)
    for frame, ((image, scalars, passes), (image2, scalars2, passes2)) in enumerate(
            zip(expected, actual, strict=True)):
        np.testing.assert_array_equal(image2, image, f"frame {frame}")
        assert scalars2 == scalars, f"frame {frame}"
        assert len(passes2) == len(passes), f"frame {frame}"
        for k, ((target, tiles, programs), (target2, tiles2, programs2)) in enumerate(
                zip(passes, passes2, strict=True)):
            assert target2 == target, f"frame {frame} pass {k}"
            assert tiles2.keys() == tiles.keys(), f"frame {frame} pass {k}"
            for name in tiles:
                np.testing.assert_array_equal(tiles2[name], tiles[name],
                                              f"frame {frame} pass {k} counter {name}")
            assert programs2.keys() == programs.keys(), f"frame {frame} pass {k}"
            for digest in programs:
                np.testing.assert_array_equal(programs2[digest], programs[digest],
                                              f"frame {frame} pass {k} program {digest}")
