"""Several technique sets on one functional render: the host's frames, each set's counters.

Transaction Elimination, Rendering Elimination and Fragment Memoization only watch the
pipeline: TE signs finished tiles and drops flushes, RE signs the display lists and, when a
tile is skipped, puts back last frame's colors (the model renders the tile anyway to check it,
Frame Coherence §4.2), memoization logs the fragments and shows its LUT's colors in the frame
it outputs (§4.3.1). None of them changes what the pipeline draws, in which order, or at which
sampling rate, so their renders are the host's render (the baseline's, or another set's, e.g.
EVR's) plus what each adds to the counters and, for RE, the tiles it skipped.
:class:`SideBySide` runs such sets ("members") beside the host on one renderer. A member is a
whole technique set, the host's switches plus watch-only ones (``re+evr`` beside the host
``evr``), with state of its own: every hook goes to every member with counters of the member's
own (what it adds during the pass), and at the end of each pass a member gets the pipeline's
pass counters plus its own and finishes the pass as a render of its own would
(:meth:`PipelineHooks.finish_pass`: its decisions, then the flush and written-pixel counts).
Its frames come out of :meth:`SideBySide.take` as a render with that set alone gives them.

DSR renders tiles at other sampling rates and never runs beside a member (:func:`shareable`).

A member's own render can leave the host's in two ways, and the member is then dropped at once
(``diverged``: its name -> the frame; its frames from that one on must be rendered by a render
of its own, ``replay.render_side_by_side`` goes on from a copy made at that frame's start;
both ways need RE: :func:`may_diverge`):

* its colors leave the host's at the end of a pass: an RE false positive puts back colors
  that differ from the ones rendered, and later frames may build on them (a frame that does
  not clear, a copy from the screen);
* it decides the order of the display lists otherwise than the host (``tiles_to_flush``,
  ``binned``). With RE, EVR keeps the farthest visible point and taint of a tile RE skipped
  from the frame that rendered it (early_visibility: RE's decisions feed EVR), where the
  host's EVR takes the skipped frame's: a later prediction may then differ, and with it
  what ``re+evr`` holds back for the second lists.
"""

from __future__ import annotations

import contextlib
import dataclasses

from tilesim.backend import array_module
from tilesim.render.pipeline.counters import TILE_COUNTERS, FrameCounters, PassCounters
from tilesim.render.pipeline.hooks import PipelineHooks, overrides
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.fragment_memoization import MemoKeys, SharedWork

# The switches whose hooks only watch the pipeline (see the module's docstring).
SHAREABLE = frozenset({"te", "re", "memo"})
# Host switches a member may add watch-only ones to (EVR: it decides the display lists' order,
# which a member with EVR decides again and checks).
HOSTS = frozenset({"evr"})


def shareable(techniques: PipelineHooks, host: PipelineHooks | None = None) -> bool:
    """Whether a technique set can run as a member of :class:`SideBySide` beside ``host``
    (None: the baseline): the host's switches (none, or EVR) plus at least one of TE, RE and
    memoization."""
    if not isinstance(techniques, Techniques):
        return False
    hosted = frozenset() if host is None else getattr(host, "enabled", None)
    if hosted is None or not hosted <= HOSTS:
        return False
    added = techniques.enabled - hosted
    return hosted <= techniques.enabled and bool(added) and added <= SHAREABLE


def may_diverge(member: Techniques) -> bool:
    """Whether a member's render may leave its host's (module docstring): both ways need RE
    (its skipped tiles' colors; its skips fed to EVR). TE and memoization never change what
    the pipeline keeps (memoization changes only the image it outputs)."""
    return "re" in member.enabled


def host_of(techniques: Techniques) -> Techniques | None:
    """The host whose render a technique set's frames can come from: its EVR (None: the
    baseline)."""
    hosted = techniques.enabled & HOSTS
    return Techniques(hosted) if hosted else None


def render_host(techniques: PipelineHooks) -> str | None:
    """The technique set whose functional render gives ``techniques``' frames, side by side
    or as the host: ``baseline`` (the baseline, TE, RE, memoization), ``evr`` (EVR, and EVR
    with TE or RE); None for a set rendered on its own (DSR)."""
    if not isinstance(techniques, Techniques):
        return None
    host = host_of(techniques)
    name = "baseline" if host is None else host.name
    is_host = techniques.enabled == (frozenset() if host is None else host.enabled)
    return name if is_host or shareable(techniques, host) else None


def merged_pass(shared: PassCounters, own: PassCounters) -> PassCounters:
    """A member's counters of a pass: the pipeline's counters of the host's render
    (``shared``, without what the host's techniques added) plus what the member added
    (``own``), in new arrays; the keys in the order a render of the member alone makes them
    (the pipeline's counters first, then the technique's as it added them)."""
    out = PassCounters(shared.target, shared.width, shared.height, shared.tile_size,
                       shared.tiles_x, shared.tiles_y, shared.traversal)
    tiles = {}
    for name, values in shared.tiles.items():
        if name not in TILE_COUNTERS:
            continue
        added = own.tiles.get(name)
        tiles[name] = values.copy() if added is None else values + array_module(values).asarray(
            added)
    for name, values in own.tiles.items():
        if name not in tiles:
            tiles[name] = values.copy()
    out.tiles = tiles
    out.fs_programs = {d: values.copy() for d, values in shared.fs_programs.items()}
    out.texture_caches = shared.texture_caches
    return out


@contextlib.contextmanager
def own_color(target):
    """``target`` holding a copy of its color buffer for the length of the block (a member's
    end of pass may put colors back); yields the copy."""
    shared = target.color
    target.color = shared.copy()
    try:
        yield target.color
    finally:
        target.color = shared


def same_decision(a, b) -> bool:
    """Whether two masks a hook returned are the same decision (None only equals None: the
    pipeline takes None and a mask through different paths)."""
    if a is None or b is None:
        return a is None and b is None
    return bool(array_module(a).array_equal(a, b))


class SideBySide(PipelineHooks):
    """The ``host`` (None: the baseline; or an EVR set) plus ``members`` (name -> a
    :class:`Techniques` :func:`shareable` beside it) on one render.

    The renderer's frames are the host's; each member's frames, in the order and at the
    moments a render of that set alone releases them, are collected for :meth:`take`."""

    spans_frames = True          # its members compare frames with the ones before

    def __init__(self, members: dict[str, Techniques], host: Techniques | None = None):
        for name, techniques in members.items():
            if not shareable(techniques, host):
                beside = "the baseline" if host is None else host.name
                raise ValueError(f"{name}: {techniques.name} changes the render and cannot run "
                                 f"side by side with {beside}")
        self.host = PipelineHooks() if host is None else host
        self.name = self.host.name
        self.members = dict(members)
        self.wants_entries = self.host.wants_entries or any(
            m.wants_entries for m in members.values())
        # The memoizing members log the same fragments: they join and order them once.
        shared = SharedWork()
        for member in self.members.values():
            if "memo" in member.enabled:
                member.memo_shared = shared
        self.diverged: dict[str, int] = {}
        self._own: dict[str, PassCounters] = {}       # per member: this pass's additions
        self._passes: dict[str, list] = {name: [] for name in members}
        self._ready: dict[str, list] = {name: [] for name in members}
        self._frame_index = 0
        # Each member's copy of a draw (its own counters, EVR's layers and prediction): of
        # the last draw binned, and of the draws whose entries wait in second lists.
        self._last_draw = None
        self._last_copies: dict[str, object] = {}
        self._held_draws: dict[int, tuple[object, dict[str, object]]] = {}

    def _active(self):
        return [(name, m) for name, m in self.members.items() if name not in self.diverged]

    def _diverge(self, name: str) -> None:
        self.diverged[name] = self._frame_index

    def _copy(self, name: str, draw):
        """Member ``name``'s copy of ``draw`` (the draw itself when it made none)."""
        if draw is self._last_draw:
            return self._last_copies.get(name, draw)
        held = self._held_draws.get(id(draw))
        return draw if held is None else held[1].get(name, draw)

    def take(self, name: str) -> list:
        """The frames member ``name`` released since the last call, in order."""
        ready, self._ready[name] = self._ready[name], []
        return ready

    # -- hooks: the host, then every member with its own counters ---------------------------

    def attach(self, screen, traversal: str):
        rates = self.host.attach(screen, traversal)
        if rates is not None:
            raise ValueError(f"{self.host.name} sets sampling rates: not a side-by-side host")
        for name, member in self._active():
            if member.attach(screen, traversal) is not None:
                raise ValueError(f"{name} sets sampling rates: not a side-by-side member")
        return None

    def command(self, op: str) -> None:
        self.host.command(op)
        for _, member in self._active():
            member.command(op)

    def begin_pass(self, target, counters) -> None:
        self.host.begin_pass(target, counters)
        for name, member in self._active():
            own = self._own[name] = PassCounters(
                counters.target, counters.width, counters.height, counters.tile_size,
                counters.tiles_x, counters.tiles_y, counters.traversal)
            member.begin_pass(target, own)

    def tiles_to_flush(self, draw):
        flush = self.host.tiles_to_flush(draw)
        for name, member in self._active():
            if not same_decision(member.tiles_to_flush(draw), flush):
                self._diverge(name)
        return flush

    def binned(self, draw):
        """The host's entries to hold back; a member that would hold back others leaves."""
        deferred = self.host.binned(draw)
        copies = {}
        for name, member in self._active():
            copies[name] = dataclasses.replace(draw, counters=self._own[name])
            if not same_decision(member.binned(copies[name]), deferred):
                self._diverge(name)
        self._last_draw, self._last_copies = draw, copies
        if deferred is not None and bool(deferred.any()):
            self._held_draws[id(draw)] = (draw, copies)   # drawn again at a flush
        return deferred

    def cleared(self, target, counters, rect, color, depth, color_mask) -> None:
        self.host.cleared(target, counters, rect, color, depth, color_mask)
        for name, member in self._active():
            member.cleared(target, self._own[name], rect, color, depth, color_mask)

    def observes(self, hook: str) -> bool:
        """Whether the host or a member observes ``hook``, or a subclass of this set does."""
        return (overrides(self, SideBySide, hook) or self.host.observes(hook)
                or any(m.observes(hook) for m in self.members.values()))

    def early_z(self, draw, pixel, depth, tile) -> None:
        self.host.early_z(draw, pixel, depth, tile)
        for name, member in self._active():
            member.early_z(self._copy(name, draw), pixel, depth, tile)

    def late_shaded(self, draw, tile) -> None:
        self.host.late_shaded(draw, tile)
        for name, member in self._active():
            member.late_shaded(self._copy(name, draw), tile)

    def shaded(self, draw, inputs, system_values, color, tile, alive) -> None:
        self.host.shaded(draw, inputs, system_values, color, tile, alive)
        # The memoizing members hash the batch once, at the widest key any of them uses.
        widths = [m.memo_key_bits for _, m in self._active() if "memo" in m.enabled]
        keys = MemoKeys(draw, inputs, system_values, max(widths)) if widths else None
        for name, member in self._active():
            member.shaded(self._copy(name, draw), inputs, system_values, color, tile, alive,
                          keys=keys)

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        self.host.written(draw, pixel, tile, color, entry, lanes)
        for name, member in self._active():
            member.written(self._copy(name, draw), pixel, tile, color, entry, lanes)

    def finish_pass(self, target, counters, written, depth_flushed: bool) -> None:
        """Each member finishes the pass on the pipeline's counters plus its own, with a
        copy of the colors; then the host finishes it, and a member whose colors differ from
        the host's leaves."""
        xp = array_module(target.color)
        finished = {}
        caches = counters.texture_caches
        with caches.finishing() if caches is not None else contextlib.nullcontext():
            for name, member in self._active():
                counted = merged_pass(counters, self._own.pop(name))
                with own_color(target) as colors:
                    member.finish_pass(target, counted, written, depth_flushed)
                finished[name] = (colors, counted)
            self._held_draws.clear()
            self._last_draw, self._last_copies = None, {}
            self.host.finish_pass(target, counters, written, depth_flushed)
        for name, (colors, counted) in finished.items():
            if not bool(xp.array_equal(colors, target.color)):
                self._diverge(name)
                continue
            self._passes[name].append(counted.to_host())

    def end_frame(self, result, screen):
        """Each member's frame: the host's image and frame counters, the member's passes;
        the member closes it as its own render would and releases what it completes. Then
        the host closes it."""
        self._frame_index = result.index + 1
        for name, member in self._active():
            frame = result.counters
            counters = FrameCounters(frame.frame, dict(frame.scalars), self._passes[name],
                                     dict(frame.programs), dict(frame.vs_programs))
            self._passes[name] = []
            own = dataclasses.replace(result, counters=counters)
            member.end_frame(own, screen)
            self._ready[name] += member.release(own)
        return self.host.end_frame(result, screen)

    def release(self, result) -> list:
        return self.host.release(result)

    def finish(self) -> list:
        for name, member in self._active():
            self._ready[name] += member.finish()
        return self.host.finish()
