"""Workloads written with the recording API (traces made by programs, not captures).

``WORKLOADS`` maps the name of each game-like synthetic workload (behaving like a category of
Frame Coherence Table 3.2) to its builder ``build(width, height, frames=100, seed=0) -> frames`` (a
list of frames, each a list of :class:`tilesim.render.gl.commands.Command` ending with
``endFrame``). Static data (programs, textures, vertex and index buffers) are uploaded in
frame 0 only; later frames hold draws, state changes, uniforms and the small dynamic
uploads a game makes. The first N frames do not depend on how many frames are built (up to
``common.MAX_FRAMES`` = 1000), and the same seed gives the same commands (and, through
:func:`write_workload`, the same trace bytes).

Shaders are GLSL ES 1.00, compiled to TGSI through Mesa softpipe when a workload is built
(``Recorder.createProgram``), so building needs Mesa; the traces they make do not.

The bunny (``tilesim.render.workloads.bunny``, glmark2's build scene) is a separate,
captured-program workload and is not in this registry. ``obj_model`` reads its mesh;
``transforms`` holds the matrix helpers the programs use. The conformance scenes
(``conformance_scenes``, a module per GLES2 feature) are data of ``tilesim conformance``.

May import: ``render.traces``, ``render.gl``, ``tilesim.shaders`` and the ``tilesim`` base.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tilesim.render.workloads import match3, render_to_texture, runner, sidescroller, thesis_games

# The four hand-written games (each a genre of Frame Coherence Table 3.2, played by a seeded
# player), then one program per row of the thesis's suite (thesis_games.toml, ``like_<game>``).
GAME_LIKE = ("match3", "sidescroller", "runner", "render_to_texture")
_ROWS, _PROFILES, THESIS_SUITE = thesis_games.load_table()
WORKLOADS: dict[str, Callable] = {
    "match3": match3.build,
    "sidescroller": sidescroller.build,
    "runner": runner.build,
    "render_to_texture": render_to_texture.build,
    **{_ROWS[key].name: thesis_games.builder(key) for key in THESIS_SUITE},
}
CATEGORIES: dict[str, str] = {
    "match3": match3.CATEGORY,
    "sidescroller": sidescroller.CATEGORY,
    "runner": runner.CATEGORY,
    "render_to_texture": render_to_texture.CATEGORY,
    **{_ROWS[key].name: f"{_ROWS[key].genre}, {_ROWS[key].type} (Frame Coherence Table 3.2: "
       f"{_ROWS[key].benchmark}, its row of Tables 3.3-3.4)" for key in THESIS_SUITE},
}
SIZES = ((1196, 768), (1920, 1080))  # Frame Coherence Table 3.1 screen (ch. 4-5) and ch. 6
# The sizes each workload is built at: the hand-written ones at both, a thesis row at its
# chapter set's screen (the size its characterization was measured at).
NATIVE_SIZES: dict[str, tuple[tuple[int, int], ...]] = {
    **{name: SIZES for name in GAME_LIKE},
    **{_ROWS[key].name: (_ROWS[key].size,) for key in THESIS_SUITE},
}
DEFAULT_FRAMES = 100


def trace_name(name: str, width: int, height: int) -> str:
    """The conventional file name: ``<name>-<W>x<H>.tsim``."""
    return f"{name}-{width}x{height}.tsim"


def write_workload(name: str, path: str | os.PathLike, width: int, height: int,
                   frames: int = DEFAULT_FRAMES, seed: int = 0) -> Path:
    """Build workload ``name`` and write it atomically as a ``.tsim`` trace at ``path``;
    the trace's ``source`` records the generator, its parameters and the seed."""
    from tilesim.render.traces.trace_file import write_trace

    if name not in WORKLOADS:
        raise KeyError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})")
    commands = WORKLOADS[name](width, height, frames, seed)
    source = {"generator": WORKLOADS[name].__module__, "category": CATEGORIES[name],
              "seed": int(seed), "frames": int(frames), "width": int(width),
              "height": int(height), "made_by": "scripts/make_workloads.py"}
    return write_trace(path, commands, width=width, height=height, name=name, source=source)
