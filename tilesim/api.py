"""tilesim as a library: open a trace, render its frames, estimate their time and energy.

    import tilesim

    with tilesim.open_trace("traces/bunny.tsim") as trace:
        print(trace.width, trace.height, trace.frame_count)
    frames = list(tilesim.render_frames("traces/bunny.tsim", frames=range(2), technique="re"))
    frames[0].image          # (H, W, 4) uint8 RGBA, row 0 at the top
    frames[0].counters       # per-frame and per-tile activity counters
    for e in tilesim.estimate(frames):
        print(e.frame, e.seconds, e.energy)   # GPU + memory joules; e.screen_energy beside

The same code paths as the commands: :func:`render_frames` is ``tilesim render``'s renderer
(the studies' runner, :mod:`tilesim.render.studies.runner`), :func:`estimate` is ``tilesim
estimate``'s model (:mod:`tilesim.timing`), which reads only the counters (and the frames'
pixels for the OLED screen). Errors in what is given are :class:`tilesim.errors.InputError`.

The top layer, beside the CLI: may import everything below.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from tilesim.options import frame_range
from tilesim.render.pipeline.renderer import FrameResult
from tilesim.render.studies.runner import render_trace
from tilesim.render.studies.study_results import StudyResults, open_results
from tilesim.render.traces.trace_file import Trace
from tilesim.render.traces.trace_file import open_trace as _open_trace
from tilesim.timing.config import load_energy_config, load_gpu_config
from tilesim.timing.model import FrameEstimate, estimate_frames
from tilesim.timing.report import estimate_workload
from tilesim.timing.screen import histogram

__all__ = ["FrameEstimate", "FrameResult", "StudyResults", "Trace", "estimate", "open_results",
           "open_trace", "render_frames"]


def open_trace(path: str | os.PathLike) -> Trace:
    """Open a ``.tsim`` trace: its header (``width``, ``height``, ``frame_count``, ``name``,
    ...) and its frames, read on demand. A context manager; or call ``close()``."""
    return _open_trace(path)


def render_frames(trace: str | os.PathLike | Trace, *, frames: Iterable[int] | str | None = None,
           technique: str = "baseline", tile_size: int = 16,
           size: tuple[int, int] | None = None,
           dsr_parameters: str | os.PathLike | None = None,
           mediump: str | None = None) -> Iterator[FrameResult]:
    """Render ``trace`` (a path or an open :class:`Trace`) and yield a
    :class:`FrameResult` per wanted frame, in order: ``index``, ``image`` ((H, W, 4) uint8
    RGBA) and ``counters`` (``FrameCounters``).

    ``frames``: frame numbers (a range or any iterable), ``"A:B"`` as ``tilesim render
    --frames``, or None for all; earlier frames are rendered too, later frames depend on
    them. ``technique``: ``baseline``, ``te``, ``re``, ``evr``, ``re+evr``, ``dsr``, ``memo``
    (variants as ``re/xor``, ``memo/32``). ``tile_size`` in pixels; ``size`` (W, H) renders
    into a window of that size instead of the trace's; ``dsr_parameters``: a TOML file from
    ``tilesim dsr-search`` (default: the shipped parameters). ``mediump``: "fp32" or "fp16",
    how shaders compute mediump and lowp, as ``tilesim render --mediump`` (default: the GPU
    configuration's, float32)."""
    if isinstance(frames, str):
        if isinstance(trace, Trace):
            frames = frame_range(frames, trace.frame_count, option="frames",
                                 source=str(trace.path))
        else:
            with _open_trace(trace) as handle:
                frames = frame_range(frames, handle.frame_count, option="frames",
                                     source=str(trace))
    yield from render_trace(trace, frames=frames, size=size, technique=technique,
                            tile_size=tile_size, dsr_parameters=dsr_parameters,
                            mediump=mediump)


def estimate(frames: Iterable[FrameResult] | str | os.PathLike, *,
             gpu_config: str | os.PathLike | None = None,
             energy_config: str | os.PathLike | None = None,
             screen: bool = True) -> list[FrameEstimate]:
    """Time and energy of every frame (a :class:`FrameEstimate` each: ``cycles``,
    ``seconds``, ``energy`` (GPU + main memory, J), ``gpu_energy``, ``memory_energy``,
    ``screen_energy``, ``traffic`` by source, ``to_dict()``), from the counters of rendered
    ``frames`` (what :func:`render_frames` yields) or of a ``tilesim render --out DIR`` folder.

    ``gpu_config`` / ``energy_config``: TOML files (default: the thesis's GPU and the 32 nm
    energies, ``timing/*.toml``). ``screen``: estimate the OLED screen's energy from the
    frames' pixels (``screen_energy`` None otherwise)."""
    cfg = load_gpu_config(gpu_config)
    ecfg = load_energy_config(energy_config)
    if isinstance(frames, (str, os.PathLike)):
        folder = Path(frames)
        return estimate_workload(folder.name, folder, cfg, ecfg, screen).frames
    results = list(frames)
    if not results:
        return []
    histograms = (np.stack([histogram(r.image) for r in results]) if screen else None)
    return estimate_frames([r.counters for r in results], cfg, ecfg, histograms)
