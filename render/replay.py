"""One way to render: a trace (or recorded frames) through the tile-based pipeline.

Every study renders through :func:`render_trace` or :func:`render_frames`: batch rendering,
goldens, coherence, dsr-search, conformance, characterize and the bunny benchmark. They
choose the frames, the technique and the pipeline's options, and watch the render through a
:class:`~tilesim.render.pipeline.observer.RenderObserver` (frame begin and end, commands,
pass end); replaying opens the trace, builds the renderer and runs its frames.

    for result in render_trace("traces/bunny.tsim", frames=range(0, 3), technique="re"):
        result.index, result.image, result.counters
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import numpy as np

from tilesim.render.gl.commands import Command
from tilesim.render.pipeline.hooks import PipelineHooks
from tilesim.render.pipeline.observer import RenderObserver
from tilesim.render.pipeline.renderer import (
    FrameResult,
    FramesDepend,
    Renderer,
    ReplayedFrame,
    Snapshot,
)
from tilesim.render.techniques import side_by_side
from tilesim.render.techniques.bus import Techniques
from tilesim.render.traces.trace_file import Trace, open_trace


def techniques_of(technique: str | PipelineHooks | None, *, source: str | None = None,
                  dsr_parameters=None) -> PipelineHooks | None:
    """The hooks of a technique given by name (``"re+evr"``, ``"re/xor"``, ``"dsr"``, ...:
    ``Techniques.from_name``) or already built (a ``PipelineHooks``); None: the baseline."""
    if technique is None or isinstance(technique, PipelineHooks):
        return technique
    return Techniques.from_name(technique, source=source, dsr_parameters=dsr_parameters)


def render_frames(frames: Iterable[list[Command]], width: int, height: int, *,
                  keep: Iterable[int] | None = None, replay_from: int | None = None,
                  **options) -> Iterator[FrameResult]:
    """Render recorded ``frames`` (lists of commands, each ending with ``endFrame``) in a
    ``width`` x ``height`` window; yield the results of the frame numbers in ``keep``
    (default: all; the others are rendered too, later frames may depend on them).
    ``replay_from``: the frames before it set the GL state only, undrawn (the baseline, when
    that frame clears the whole window and none before draws into a texture; otherwise
    ``FramesDepend``: ``Renderer.render``). ``options``: the renderer's (:func:`renderer_for`)."""
    renderer = renderer_for(width, height, **options)
    yield from renderer.render(frames, keep=keep, replay_from=replay_from)


def renderer_for(width: int, height: int, *, depth_bits: int = 24,
                 technique: str | PipelineHooks | None = None, dsr_parameters=None,
                 tile_size: int = 16, traversal: str = "scanline",
                 fill_rule: str = "bottom_left", tile_rates: int | np.ndarray | None = None,
                 observer: RenderObserver | None = None, source: str = "<trace>",
                 mediump: str | None = None, limits: dict | None = None) -> Renderer:
    """A renderer of a ``width`` x ``height`` window. ``technique``: a name or built hooks
    (see :func:`techniques_of`). ``tile_rates``: a sampling-rate index for every tile of the
    screen (an int: the same for all; DSR's rates, 0 = 1x .. 4 = 1/256x), to render at fixed
    rates. ``mediump``: "fp32" or "fp16", how shaders compute mediump and lowp (None: the GPU
    configuration's ``mediump_fp16``). ``limits``: the trace's GLES2 limits (``Trace.limits``;
    None: the GPU configuration's)."""
    renderer = Renderer(width, height, depth_bits=depth_bits, tile_size=tile_size,
                        traversal=traversal, fill_rule=fill_rule, source=source,
                        techniques=techniques_of(technique, source=source,
                                                 dsr_parameters=dsr_parameters),
                        observer=observer, mediump=mediump, limits=limits)
    if tile_rates is not None:
        # The pipeline reads tile_rates at each draw (superfragments for rates above 0).
        tiles = renderer.default_target.tile_count
        renderer.tile_rates = (np.full(tiles, tile_rates, dtype=np.int8)
                               if np.ndim(tile_rates) == 0 else tile_rates)
    return renderer


def render_trace(trace: str | os.PathLike | Trace, *, frames: Iterable[int] | None = None,
                 size: tuple[int, int] | None = None, **options) -> Iterator[FrameResult]:
    """Render a ``.tsim`` trace (a path, or a :class:`Trace` already open) and yield the
    results of ``frames`` (frame numbers; default: all). Every frame from the first to the
    last wanted is rendered. ``size`` (W, H) renders into a window of that size instead of
    the trace's own. Other options as :func:`render_frames`."""
    if isinstance(trace, Trace):
        yield from _render_open(trace, frames, size, options)
        return
    with open_trace(trace) as handle:
        yield from _render_open(handle, frames, size, options)


def _render_open(trace: Trace, frames, size, options) -> Iterator[FrameResult]:
    wanted = range(trace.frame_count) if frames is None else frames
    wanted = wanted if isinstance(wanted, range) else sorted(set(wanted))
    if len(wanted) == 0:
        return
    stop = wanted.stop if isinstance(wanted, range) else wanted[-1] + 1
    width, height = size or (trace.width, trace.height)
    options.setdefault("source", str(trace.path))
    options.setdefault("limits", trace.limits)
    yield from render_frames(trace.frames(0, stop), width, height, keep=wanted,
                             depth_bits=trace.depth_bits, **options)


def side_by_side_host(techniques: dict[str, PipelineHooks]) -> list[str]:
    """The names of the sets among ``techniques`` that are their render's host (none, or
    one); ValueError unless all their frames come from one host's render
    (``side_by_side.render_host``)."""
    hosts = {name: side_by_side.render_host(t) for name, t in techniques.items()}
    host_names = [n for n, t in techniques.items() if hosts[n] == t.name]
    if len(set(hosts.values())) != 1 or None in hosts.values() or len(host_names) > 1:
        raise ValueError("side by side: sets whose frames come from one host's render "
                         "(side_by_side.render_host), at most one of them the host itself")
    return host_names


def render_side_by_side(trace: str | os.PathLike, techniques: dict[str, PipelineHooks],
                        frames: Iterable[int], *, observer: RenderObserver | None = None,
                        **options) -> Iterator[tuple[str, FrameResult, PipelineHooks]]:
    """Several technique sets (name -> hooks, fresh) whose frames come from one functional
    render (``side_by_side.render_host``: one host, the baseline or EVR, and members that
    only watch it), rendered once: yields (name, result, the set's hooks as the frame left
    them) for each set's frames in ``frames``, each set's in frame order. A member whose
    render leaves the host's (an RE false positive; RE+EVR holding back other entries than
    EVR: ``side_by_side.may_diverge``) goes on from the start of the frame it left in, on a
    copy of the renderer and of itself made then (``Renderer.snapshot``), after the shared
    render. ``observer`` watches the shared render; ``options`` as :func:`render_frames`."""
    host_names = side_by_side_host(techniques)
    wanted = frames if isinstance(frames, range) else sorted(set(frames))
    if len(wanted) == 0:
        return
    members = {n: t for n, t in techniques.items() if n not in host_names}
    hooks = side_by_side.SideBySide(members, side_by_side.host_of(next(iter(
        techniques.values()))))
    watched = [n for n, m in members.items() if side_by_side.may_diverge(m)]
    done: dict[str, set[int]] = {n: set() for n in members}
    keep = set(wanted)
    stop = wanted.stop if isinstance(wanted, range) else wanted[-1] + 1

    def released():
        for name, member in members.items():
            for result in hooks.take(name):
                if result.index in keep:
                    done[name].add(result.index)
                    yield name, result, member

    with open_trace(trace) as handle:
        options.setdefault("source", str(handle.path))
        options.setdefault("limits", handle.limits)
        renderer = renderer_for(handle.width, handle.height, depth_bits=handle.depth_bits,
                                technique=hooks, observer=observer, **options)
        frames_of = _Divergences(renderer, hooks, watched)
        for result in renderer.render(frames_of.snapshots(handle.frames(0, stop)), keep=keep):
            if host_names:
                yield host_names[0], result, hooks.host
            yield from released()
        yield from released()
        for name, (first, snapshot) in frames_of.forks.items():
            rest = sorted(keep - done[name])
            if rest:
                own = snapshot.resume(name)
                for result in own.render(handle.frames(first, stop), first=first, keep=rest):
                    yield name, result, own.techniques


class _Divergences:
    """The members of a side-by-side render that may leave the host's (``watched``) with a
    copy of the renderer and of themselves at the start of every frame; for each member that
    left, the copy of the start of the frame it left in (``forks``: name -> (frame,
    snapshot)). A render copies only the last two frames' starts: a member leaves in the
    frame under way, or at its end (its state is then the next frame's start)."""

    def __init__(self, renderer: Renderer, hooks: side_by_side.SideBySide,
                 watched: list[str]):
        self.renderer, self.hooks, self.watched = renderer, hooks, watched
        self.forks: dict[str, tuple[int, Snapshot]] = {}
        self._snapshots: dict[int, Snapshot] = {}

    def snapshots(self, frames: Iterable[list[Command]]) -> Iterator[list[Command]]:
        """``frames`` (from frame 0), a snapshot taken before each is handed to the render."""
        rendered = 0
        for number, commands in enumerate(frames):
            diverged = self.hooks.diverged
            live = {n: self.hooks.members[n] for n in self.watched
                    if diverged.get(n, number) >= number}
            if live:
                self._snapshots[number] = self.renderer.snapshot(live)
            self._fork()
            self._snapshots.pop(number - 1, None)
            yield commands
            rendered = number + 1
        self._fork(rendered)

    def _fork(self, rendered: int | None = None) -> None:
        """Keep the snapshot of each member that left since the last call; ``rendered`` (at
        the end): the frames rendered, a member that left after the last has none left."""
        for name, frame in self.hooks.diverged.items():
            if name in self.forks or (rendered is not None and frame >= rendered):
                continue
            snapshot = self._snapshots.get(frame)
            if snapshot is None or name not in snapshot.techniques:
                raise RuntimeError(f"side by side: {name} left the host's render in frame "
                                   f"{frame}, which only a set side_by_side.may_diverge does")
            self.forks[name] = (frame, snapshot)


def fresh_starts(trace: Trace, stop: int, *, mediump: str | None = None) -> list[int]:
    """The frames before ``stop`` a baseline render may start at, replaying the frames before
    them for the GL state only (``Renderer.render``'s ``replay_from``): frame 0, and each
    frame that starts by clearing the window's colors (and its depth, unless no frame before
    ``stop`` depth-tests), up to the first frame that draws into a texture (a later frame may
    sample it). Costs a replay of the GL state of those frames."""
    renderer = Renderer(trace.width, trace.height, depth_bits=trace.depth_bits,
                        source=str(trace.path), mediump=mediump, limits=trace.limits)
    frames: list[ReplayedFrame] = []
    try:
        for number, commands in enumerate(trace.frames(0, stop)):
            frames.append(renderer.replay_state(number, commands))
    except FramesDepend:
        pass
    depth_read = any(f.tests_depth for f in frames)
    return [0] * (stop > 0) + [n for n, f in enumerate(frames) if n > 0 and f.clears_color
                               and (f.clears_depth or not depth_read)]
