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
(:mod:`tilesim.render.replay`, the one way to render), :func:`estimate` is ``tilesim
estimate``'s model (:mod:`tilesim.timing`), which reads only the counters (and the frames'
pixels for the OLED screen).

Errors in what is given are :class:`tilesim.errors.InputError` (a
:class:`tilesim.errors.TilesimError`, as every error tilesim reports), raised when a function
is called, never a bare TypeError or ValueError: an argument of the wrong type or out of its
range names the function and the argument; frame numbers a trace does not have name the trace
and its frame count; a selection of no frames is an error, not an empty result.

The top layer, beside the CLI: may import everything below.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.options import MAX_WINDOW_SIDE, frame_range
from tilesim.render.pipeline.renderer import FrameResult
from tilesim.render.replay import render_trace
from tilesim.render.techniques.bus import Techniques
from tilesim.render.traces.trace_file import Trace
from tilesim.render.traces.trace_file import open_trace as _open_trace
from tilesim.shaders.interpreter import MEDIUMP_MODES
from tilesim.studies.study_results import StudyResults
from tilesim.studies.study_results import open_results as _open_results
from tilesim.timing.config import load_energy_config, load_gpu_config
from tilesim.timing.model import FrameEstimate, estimate_frames
from tilesim.timing.report import estimate_render
from tilesim.timing.screen import histogram

__all__ = ["FrameEstimate", "FrameResult", "StudyResults", "Trace", "estimate", "open_results",
           "open_trace", "render_frames"]


def open_trace(path: str | os.PathLike) -> Trace:
    """Open a ``.tsim`` trace: its header (``width``, ``height``, ``frame_count``, ``name``,
    ...) and its frames, read on demand. A context manager; or call ``close()``.

    :class:`~tilesim.errors.InputError`: ``path`` is not a path, or not a readable trace."""
    return _open_trace(_path(path, "path", "open_trace"))


def render_frames(trace: str | os.PathLike | Trace, *, frames: Iterable[int] | str | None = None,
           technique: str | None = "baseline", tile_size: int = 16,
           size: tuple[int, int] | None = None,
           dsr_parameters: str | os.PathLike | None = None,
           mediump: str | None = None) -> Iterator[FrameResult]:
    """Render ``trace`` (a path or an open :class:`Trace`) and yield a
    :class:`FrameResult` per wanted frame, in order: ``index``, ``image`` ((H, W, 4) uint8
    RGBA) and ``counters`` (``FrameCounters``).

    ``frames``: frame numbers (a range or any iterable of ints), ``"A:B"`` as ``tilesim
    render --frames``, or None for all; earlier frames are rendered too, later frames depend
    on them. ``technique``: ``baseline`` (or None), ``te``, ``re``, ``evr``, ``re+evr``,
    ``dsr``, ``memo`` (variants as ``re/xor``, ``memo/32``). ``tile_size`` in pixels, even;
    ``size`` (W, H) renders into a window of that size instead of the trace's;
    ``dsr_parameters``: a TOML file from ``tilesim dsr-search`` (default: the shipped
    parameters). ``mediump``: "fp32" or "fp16", how shaders compute mediump and lowp, as
    ``tilesim render --mediump`` (default: the GPU configuration's, float32).

    The arguments are checked at the call, before any frame renders; each of these is an
    :class:`~tilesim.errors.InputError`: an argument of the wrong type or out of range, an
    unknown technique, a trace that cannot be read or is closed, a frame number the trace
    does not have (the error names the trace and its frame count) and a selection of no
    frames."""
    where = "render_frames"
    if isinstance(trace, Trace):
        if trace.closed:
            raise InputError("the trace is closed: render inside its `with` block",
                             source=str(trace.path))
        name, count = str(trace.path), trace.frame_count
    else:
        with _open_trace(_path(trace, "trace", where)) as handle:
            name, count = str(trace), handle.frame_count
    wanted = _wanted_frames(frames, count, name, where)
    if technique is not None and not isinstance(technique, str):
        raise _bad(where, "technique", technique, "a technique's name such as 're+evr'")
    _whole(tile_size, "tile_size", where, 2, MAX_WINDOW_SIDE)
    if tile_size % 2:
        raise _bad(where, "tile_size", tile_size, "an even number of pixels")
    if size is not None:
        size = _window(size, where)
    if dsr_parameters is not None:
        _path(dsr_parameters, "dsr_parameters", where)
    if mediump is not None and mediump not in MEDIUMP_MODES:
        raise _bad(where, "mediump", mediump,
                   f"one of {', '.join(map(repr, MEDIUMP_MODES))} or None")
    # Built now: an unknown name or a missing parameters file fails at the call.
    hooks = Techniques.from_name(technique, source=name, dsr_parameters=dsr_parameters)
    return render_trace(trace, frames=wanted, size=size, technique=hooks,
                        tile_size=int(tile_size), dsr_parameters=dsr_parameters,
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
    frames' pixels (``screen_energy`` None otherwise).

    :class:`~tilesim.errors.InputError`: an argument of the wrong type, a folder that holds
    no render, configuration files that cannot be read, and no frames at all (an iterator
    such as :func:`render_frames`' is used up by its first use)."""
    where = "estimate"
    for name, value in (("gpu_config", gpu_config), ("energy_config", energy_config)):
        if value is not None:
            _path(value, name, where)
    if not isinstance(screen, (bool, np.bool_)):
        raise _bad(where, "screen", screen, "True or False")
    if isinstance(frames, (str, os.PathLike)):
        cfg = load_gpu_config(gpu_config)
        ecfg = load_energy_config(energy_config)
        folder = Path(frames)
        return estimate_render(folder.name, folder, cfg, ecfg, bool(screen)).frames
    if isinstance(frames, (bytes, FrameResult, Trace)) or not isinstance(frames, Iterable):
        raise _bad(where, "frames", frames,
                   "the frames render_frames yields, or a `tilesim render --out` folder")
    results = list(frames)
    for position, result in enumerate(results):
        if not isinstance(result, FrameResult):
            raise InputError(f"frames[{position}]: expected a FrameResult (what render_frames "
                             f"yields), got {_shown(result)}", source=where)
    if not results:
        raise InputError("frames: no frames to estimate (an iterator such as render_frames' "
                         "is used up by its first use)", source=where)
    cfg = load_gpu_config(gpu_config)
    ecfg = load_energy_config(energy_config)
    histograms = (np.stack([histogram(r.image) for r in results]) if screen else None)
    return estimate_frames([r.counters for r in results], cfg, ecfg, histograms)


def open_results(folder: str | os.PathLike) -> StudyResults:
    """The results of a ``tilesim run`` folder (its results.json) for analysis in Python.

    :class:`~tilesim.errors.InputError`: ``folder`` is not a path, or not a finished study."""
    return _open_results(_path(folder, "folder", "open_results"))


def _shown(value) -> str:
    """A value as an error shows it: short, with its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _bad(where: str, name: str, value, expected: str) -> InputError:
    return InputError(f"{name}={_shown(value)}: expected {expected}", source=where)


def _path(value, name: str, where: str):
    """``value`` if it is a path (a non-empty str or an os.PathLike), else an InputError."""
    if isinstance(value, os.PathLike) or (isinstance(value, str) and value):
        return value
    raise _bad(where, name, value, "a file path (str or os.PathLike)")


def _whole(value, name: str, where: str, low: int, high: int) -> int:
    """``value`` if it is a whole number (not a bool) within ``low``..``high``."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise _bad(where, name, value, "a whole number")
    if not low <= value <= high:
        raise _bad(where, name, value, f"a whole number in {low}..{high}")
    return int(value)


def _window(size, where: str) -> tuple[int, int]:
    """``size`` as (W, H): two whole numbers in 1..MAX_WINDOW_SIDE."""
    pair = (tuple(size) if isinstance(size, Iterable) and not isinstance(size, (str, bytes))
            else None)
    if pair is None or len(pair) != 2:
        raise _bad(where, "size", size, "(W, H), two whole numbers of pixels")
    return (_whole(pair[0], "size[0] (width)", where, 1, MAX_WINDOW_SIDE),
            _whole(pair[1], "size[1] (height)", where, 1, MAX_WINDOW_SIDE))


def _wanted_frames(frames, count: int, trace: str, where: str) -> range | list[int]:
    """The frame numbers ``frames`` selects from a trace of ``count`` frames: all (None),
    ``"A:B"`` (:func:`tilesim.options.frame_range`), or an iterable of frame numbers (sorted,
    each once). An InputError for anything else, for a number the trace does not have
    (naming ``trace`` and ``count``) and for none at all."""
    if frames is None:
        return range(count)
    if isinstance(frames, str):
        return frame_range(frames, count, option="frames", source=trace)
    if isinstance(frames, bytes) or not isinstance(frames, Iterable):
        hint = (f"; one frame is frames=[{frames}]"
                if isinstance(frames, numbers.Integral) else "")
        raise _bad(where, "frames", frames,
                   f"frame numbers (a range or list of ints), 'A:B' or None{hint}")
    has = (f"the trace has {count} frames (0..{count - 1})" if count
           else "the trace has no frames")
    if isinstance(frames, range):
        if len(frames) == 0:
            raise InputError(f"frames={frames!r}: no frame selected ({has})", source=trace)
        low, high = min(frames[0], frames[-1]), max(frames[0], frames[-1])
        if low < 0 or high >= count:
            raise InputError(f"frames={frames!r}: {has}", source=trace)
        return frames if frames.step == 1 else sorted(frames)
    wanted = set()
    for number in frames:
        if not isinstance(number, numbers.Integral) or isinstance(number, (bool, np.bool_)):
            raise InputError(f"frames: {_shown(number)} is not a frame number (expected "
                             "whole numbers)", source=where)
        if not 0 <= number < count:
            raise InputError(f"frames: no frame {number}: {has}", source=trace)
        wanted.add(int(number))
    if not wanted:
        raise InputError(f"frames: no frame selected ({has})", source=trace)
    return sorted(wanted)
