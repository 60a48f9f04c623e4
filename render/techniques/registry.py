"""The techniques of Frame Coherence a render may switch on, one entry each.

An entry names the technique's switch (``re``), the section of the thesis it implements, what
it acts on, its unit (the class in its module that does its work behind the pipeline's hooks,
a :class:`TechniqueUnit`), whether it combines with others, and the variants its name may take
after ``/``. :class:`~tilesim.render.techniques.bus.Techniques` builds the enabled units from
here and calls each hook on them in this order; nothing else names a technique to run it.

A technique is then its module plus its entry here. Units tell each other their decisions
through the :class:`ScreenPass` of the pass, where the hardware does (chapter 5's EVR-aided RE:
the Polygon List Builder's visibility classes reach the Signature Unit; RE's skipped tiles reach
EVR's FVP Table): each hook phase runs on every unit before the next phase starts.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Variant:
    """A name after ``/`` (``re/xor``): it sets the technique set's keyword ``option`` (a
    ``Techniques`` argument) to ``value``; ``default`` where the plain name means it."""

    option: str
    value: object
    default: bool = False


@dataclass(frozen=True)
class Technique:
    switch: str
    title: str
    source: str          # the thesis (Frame Coherence) section it implements
    acts_on: str
    unit: str            # "module:Class" of its TechniqueUnit, imported when a render uses it
    alone: bool = False  # evaluated alone in the thesis: combines with no other technique
    variants: dict[str, Variant] = field(default_factory=dict)

    def unit_class(self) -> type[TechniqueUnit]:
        module, _, name = self.unit.partition(":")
        return getattr(importlib.import_module(module), name)


_MODULE = "tilesim.render.techniques."
TECHNIQUES = (
    Technique("te", "Transaction Elimination", "§4.2.3", "tile flushes",
              _MODULE + "transaction_elimination:TransactionEliminationUnit"),
    # RE's constants block (§4.1.5): "state" signs the uniforms and the draw state,
    # "uniforms" the drawcall's constants only, as the thesis describes.
    Technique("re", "Rendering Elimination", "ch. 4", "whole tiles, from signatures",
              _MODULE + "rendering_elimination:RenderingEliminationUnit",
              variants={"crc32": Variant("signature", "crc32", default=True),
                        "xor": Variant("signature", "xor"),
                        "state": Variant("constants_block", "state", default=True),
                        "uniforms": Variant("constants_block", "uniforms")}),
    Technique("evr", "Early Visibility Resolution", "ch. 5", "display-list order, RE input",
              _MODULE + "early_visibility:EarlyVisibilityUnit"),
    Technique("dsr", "Dynamic Sampling Rate", "ch. 6", "samples per tile",
              _MODULE + "dynamic_sampling_rate:DynamicSamplingRateUnit", alone=True),
    # The LUT's key: 64 bits by default; 32 as the thesis's signature (§4.3.1).
    Technique("memo", "Fragment memoization", "§4.3.1", "fragment shader runs",
              _MODULE + "fragment_memoization:FragmentMemoizationUnit", alone=True,
              variants={"64": Variant("memo_key_bits", 64, default=True),
                        "32": Variant("memo_key_bits", 32)}),
)
REGISTRY: dict[str, Technique] = {t.switch: t for t in TECHNIQUES}
NAMES = tuple(REGISTRY)
ALONE = tuple(t.switch for t in TECHNIQUES if t.alone)


def option_values(option: str) -> tuple:
    """The values the techniques' variants give the technique set's keyword ``option``
    (``option_values("signature")``: ``("crc32", "xor")``)."""
    return tuple(v.value for t in REGISTRY.values() for v in t.variants.values()
                 if v.option == option)


@dataclass
class ScreenPass:
    """What the units of one pass over the screen tell each other (None: nobody said)."""

    # EVR, at the pass's start: tiles whose last rendered frame showed an entry that was left
    # out of the tile's signature (RE cannot skip them on the signature alone).
    unsigned: np.ndarray | None = None
    # EVR, per draw (classify): entries predicted occluded, left out of RE's signatures, and
    # those held back for the second lists.
    occluded: np.ndarray | None = None
    deferred: np.ndarray | None = None
    # RE (decide): tiles whose rendering was eliminated; they keep last frame's colors.
    skipped: np.ndarray | None = None


class TechniqueUnit:
    """A technique behind the pipeline's hooks, on the default framebuffer (the frame the
    techniques compare across frames): every hook observes and decides nothing here.

    Built by the bus with the screen's render target, the traversal order of its tiles and
    the technique set (whose options, ``signature`` and the like, the unit reads). The
    pipeline's hooks reach a unit in phases: ``classify`` then ``binned`` for a draw's display
    lists, ``decide`` then ``end_pass`` at a pass's end, every unit through one phase before
    the next."""

    # Whether ``written`` needs the display-list entry of every fragment (EVR does).
    wants_entries = False
    # The sampling rate of every screen tile ((tiles,) int, 0 = 1x), for a unit that sets
    # them (DSR); None: every tile at 1x.
    rates: np.ndarray | None = None
    # Whether the unit holds finished frames back (memoization completes frames in pairs):
    # then it answers ``release`` and ``finish``.
    holds_frames = False

    def __init__(self, screen, traversal: str, techniques) -> None:
        self.screen = screen

    def command(self, op: str) -> None:
        """Every command, before the pipeline acts on it."""

    def offscreen_pass(self) -> None:
        """A pass into a render target other than the screen starts."""

    def begin_pass(self, counters, board: ScreenPass) -> None:
        """A pass into the screen starts."""

    def tiles_to_flush(self, draw) -> np.ndarray | None:
        """The ``PipelineHooks`` hook, for a draw into the screen."""
        return None

    def classify(self, draw, board: ScreenPass) -> None:
        """The draw's display lists are written: classify their entries (``board``)."""

    def binned(self, draw, board: ScreenPass) -> None:
        """After every unit classified the draw's entries."""

    def cleared(self, counters, rect, color, depth, color_mask) -> None:
        """The screen was cleared (``PipelineHooks.cleared``)."""

    def early_z(self, draw, pixel, depth, tile) -> None:
        """``PipelineHooks.early_z``, on the screen."""

    def late_shaded(self, draw, tile) -> None:
        """``PipelineHooks.late_shaded``, on the screen."""

    def shaded(self, draw, inputs, system_values, color, tile, alive, keys=None) -> None:
        """``PipelineHooks.shaded``, on the screen; ``keys`` the batch's memoization keys
        where several technique sets share them (``fragment_memoization.MemoKeys``)."""

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        """``PipelineHooks.written``, on the screen."""

    def decide(self, counters, board: ScreenPass) -> None:
        """The screen's pass ends: decide what the pipeline does with its tiles (``board``)."""

    def end_pass(self, counters, board: ScreenPass) -> None:
        """After every unit decided: count the pass's work under those decisions."""

    def flushed(self, flush):
        """Per tile, ``flush`` (1 where the color buffer is written to memory) under this
        unit's decision."""
        return flush

    def end_frame(self, result, screen) -> None:
        """The frame is finished (``PipelineHooks.end_frame``); ``rates`` are read after."""

    def release(self, result) -> list:
        """Frames complete for output (``holds_frames``)."""
        return [result]

    def finish(self) -> list:
        """The frames still held at the end of the render (``holds_frames``)."""
        return []
