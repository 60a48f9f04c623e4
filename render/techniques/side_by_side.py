"""Several technique sets on one functional render: the baseline's frames, each set's counters.

Transaction Elimination, Rendering Elimination and Fragment Memoization only watch the
pipeline: TE signs finished tiles and drops flushes, RE signs the display lists and, when a
tile is skipped, puts back last frame's colors (the model renders the tile anyway to check it,
Frame Coherence §4.2), memoization logs the fragments and shows its LUT's colors in the frame
it outputs (§4.3.1). None of them changes what the pipeline draws, in which order, or at which
sampling rate, so their renders are the baseline's render plus what each adds to the counters
and, for RE, the tiles it skipped. :class:`SideBySide` runs such sets ("members") beside the
baseline on one renderer: every hook goes to every member with counters of the member's own
(what it adds during the pass), and at the end of each pass a member gets the baseline's pass
counters plus its own and finishes the pass as a render of its own would
(:meth:`PipelineHooks.finish_pass`: its decisions, then the flush and written-pixel counts).
Its frames come out of :meth:`SideBySide.take` as a render with that set alone gives them.

EVR reorders the display lists and DSR renders tiles at other sampling rates: they change the
render and never run as members (:func:`shareable`).

One thing can make a member's render differ from the baseline's: an RE false positive puts
back colors that differ from the ones rendered, and later frames may build on them (a frame
that does not clear, a copy from the screen). A member whose colors leave the baseline's at
the end of a pass is dropped at once (``diverged``: its name -> the frame); its frames from
that one on must be rendered by a render of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses

from tilesim.backend import array_module
from tilesim.render.pipeline.counters import FrameCounters, PassCounters
from tilesim.render.pipeline.hooks import PipelineHooks
from tilesim.render.techniques.bus import MemoKeys, Techniques
from tilesim.render.techniques.fragment_memoization import SharedWork

# The switches whose hooks only watch the pipeline (see the module's docstring).
SHAREABLE = frozenset({"te", "re", "memo"})


def shareable(techniques: PipelineHooks) -> bool:
    """Whether a technique set can run as a member of :class:`SideBySide` (a non-empty set of
    TE, RE and memoization)."""
    return (isinstance(techniques, Techniques) and bool(techniques.enabled)
            and techniques.enabled <= SHAREABLE)


def merged_pass(shared: PassCounters, own: PassCounters) -> PassCounters:
    """A member's counters of a pass: the baseline's (``shared``) plus what the member added
    (``own``), in new arrays; the keys in the order a render of the member alone makes them
    (the pipeline's counters first, then the technique's as it added them)."""
    out = PassCounters(shared.target, shared.width, shared.height, shared.tile_size,
                       shared.tiles_x, shared.tiles_y, shared.traversal)
    tiles = {}
    for name, values in shared.tiles.items():
        added = own.tiles.get(name)
        tiles[name] = values.copy() if added is None else values + array_module(values).asarray(
            added)
    for name, values in own.tiles.items():
        if name not in tiles:
            tiles[name] = values.copy()
    out.tiles = tiles
    out.fs_programs = {d: values.copy() for d, values in shared.fs_programs.items()}
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


class SideBySide(PipelineHooks):
    """The baseline plus ``members`` (name -> a shareable :class:`Techniques`) on one render.

    The renderer's frames are the baseline's; each member's frames, in the order and at the
    moments a render of that set alone releases them, are collected for :meth:`take`."""

    name = "baseline"

    def __init__(self, members: dict[str, Techniques]):
        for name, techniques in members.items():
            if not shareable(techniques):
                raise ValueError(f"{name}: {techniques.name} changes the render and cannot run "
                                 "side by side with the baseline")
        self.members = dict(members)
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

    def _active(self):
        return [(name, m) for name, m in self.members.items() if name not in self.diverged]

    def take(self, name: str) -> list:
        """The frames member ``name`` released since the last call, in order."""
        ready, self._ready[name] = self._ready[name], []
        return ready

    # -- hooks: every member, with its own counters ------------------------------------------

    def attach(self, screen, traversal: str):
        for name, member in self._active():
            if member.attach(screen, traversal) is not None:
                raise ValueError(f"{name} sets sampling rates: not a side-by-side member")
        return None

    def command(self, op: str) -> None:
        for _, member in self._active():
            member.command(op)

    def begin_pass(self, target, counters) -> None:
        for name, member in self._active():
            own = self._own[name] = PassCounters(
                counters.target, counters.width, counters.height, counters.tile_size,
                counters.tiles_x, counters.tiles_y, counters.traversal)
            member.begin_pass(target, own)

    def binned(self, draw):
        for name, member in self._active():
            member.binned(dataclasses.replace(draw, counters=self._own[name]))
        return None

    def cleared(self, target, counters, rect, color, depth, color_mask) -> None:
        for name, member in self._active():
            member.cleared(target, self._own[name], rect, color, depth, color_mask)

    def shaded(self, draw, inputs, system_values, color, tile, alive) -> None:
        # The memoizing members hash the batch once, at the widest key any of them uses.
        widths = [m.memo_key_bits for _, m in self._active() if "memo" in m.enabled]
        keys = MemoKeys(draw, inputs, system_values, max(widths)) if widths else None
        for _, member in self._active():
            member.shaded(draw, inputs, system_values, color, tile, alive, keys=keys)

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        for _, member in self._active():
            member.written(draw, pixel, tile, color, entry, lanes)

    def finish_pass(self, target, counters, written, depth_flushed: bool) -> None:
        """Each member finishes the pass on the baseline's counters plus its own, with a
        copy of the colors; then the baseline finishes it."""
        xp = array_module(target.color)
        for name, member in self._active():
            counted = merged_pass(counters, self._own.pop(name))
            with own_color(target) as colors:
                member.finish_pass(target, counted, written, depth_flushed)
            if not bool(xp.array_equal(colors, target.color)):
                self.diverged[name] = self._frame_index
                continue
            self._passes[name].append(counted.to_host())
        super().finish_pass(target, counters, written, depth_flushed)

    def end_frame(self, result, screen):
        """Each member's frame: the baseline's image and frame counters, the member's passes;
        the member closes it as its own render would and releases what it completes."""
        self._frame_index = result.index + 1
        for name, member in self._active():
            frame = result.counters
            counters = FrameCounters(frame.frame, dict(frame.scalars), self._passes[name],
                                     dict(frame.programs), dict(frame.vs_programs))
            self._passes[name] = []
            own = dataclasses.replace(result, counters=counters)
            member.end_frame(own, screen)
            self._ready[name] += member.release(own)
        return None

    def finish(self) -> list:
        for name, member in self._active():
            self._ready[name] += member.finish()
        return []
