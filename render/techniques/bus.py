"""The frame-coherence techniques of Frame Coherence as switches on one pipeline.

``Techniques.parse("re+evr")`` gives the set a ``Renderer`` runs with; the pipeline calls the
hooks below at the points where the hardware would act, and the bus hands each to the units of
the enabled techniques (``registry.REGISTRY``: the switch, module and variants of each), which
keep their state from frame to frame and add their counters to the per-tile records. Only the
default framebuffer's passes reach them: it is the frame the thesis's techniques compare
across frames. Combinations follow the thesis: TE, RE and EVR combine (``re+evr`` is chapter
5's EVR-aided RE); DSR and memoization run alone.
"""

from __future__ import annotations

import difflib

import numpy as np

from tilesim.backend import array_module
from tilesim.errors import InputError
from tilesim.render.pipeline.hooks import PipelineHooks, overrides
from tilesim.render.techniques import registry
from tilesim.render.techniques.registry import ScreenPass, TechniqueUnit


class Techniques(PipelineHooks):
    """The enabled techniques of one render, behind the pipeline's hooks
    (:class:`~tilesim.render.pipeline.hooks.PipelineHooks`): each hook goes to the enabled
    techniques' units (:class:`~tilesim.render.techniques.registry.TechniqueUnit`), in the
    registry's order, on the default framebuffer."""

    # Whether the memoization unit keeps each frame's outcome (the per-lookup hits) until
    # :meth:`FragmentMemoizationUnit.take_arrived` takes it: only for a watcher that does
    # (studies.quad_stream.QuadRecorder); kept for nobody, they grew a render's memory by
    # the LUT's colors of every frame.
    keeps_memo_outcomes = False

    def __init__(self, enabled: frozenset[str] = frozenset(), *, signature: str = "crc32",
                 dsr_parameters=None, memo_key_bits: int = 64, constants_block: str = "state"):
        self.enabled = frozenset(enabled)
        # The units' options (the registry's variants set them).
        self.signature = signature
        self.constants_block = constants_block
        self.memo_key_bits = memo_key_bits
        self.dsr_parameters = dsr_parameters
        self.memo_shared = None        # SharedWork with other memoizers of the render
        self.units: list = []          # the enabled techniques' units, once attached
        self._by_switch: dict = {}
        # The enabled switches in the registry's order, the order the units are called in.
        self.switches = [n for n in registry.NAMES if n in self.enabled]
        self.wants_entries = any(registry.REGISTRY[n].unit_class().wants_entries
                                 for n in self.switches)
        self.spans_frames = bool(self.enabled)   # every technique compares with past frames
        self.screen = None             # the default framebuffer's render target
        self.rates = None              # the sampling rate of every screen tile (DSR)
        self._board = ScreenPass()
        self._holder = None            # the unit that holds finished frames (memoization)

    @classmethod
    def from_name(cls, name: str | None, *, source: str | None = None,
                  dsr_parameters=None) -> Techniques:
        """A technique set from a name with an optional variant after ``/`` (the registry's
        variants): ``re/xor`` signs with XOR instead of CRC32; ``re/uniforms`` signs as each
        draw's constants block only its uniform values, as Frame Coherence §4.1.5 describes
        (``re`` alone: the uniforms and the draw state, see
        :mod:`~tilesim.render.techniques.rendering_elimination`); ``memo/32`` keys the LUT
        with the thesis's 32-bit signature (``memo`` alone: 64-bit keys)."""
        # Names without case (users type them): "RE/XOR" is re/xor.
        spec, _, variant = (name or "baseline").strip().lower().partition("/")
        if not variant:
            return cls.parse(spec, source=source, dsr_parameters=dsr_parameters)
        parts = [p for p in spec.split("+") if p in registry.REGISTRY]
        for switch in parts:
            chosen = registry.REGISTRY[switch].variants.get(variant)
            if chosen is not None:
                return cls.parse(spec, source=source, dsr_parameters=dsr_parameters,
                                 **{chosen.option: chosen.value})
        known = [v for switch in parts for v in registry.REGISTRY[switch].variants]
        close = difflib.get_close_matches(variant, known, n=1)
        hint = f"; did you mean {spec}/{close[0]}?" if close else ""
        takes = ", ".join(f"{t.switch} takes {_either(['/' + v for v in t.variants])}"
                          for t in registry.REGISTRY.values() if t.variants)
        raise InputError(f"unknown variant {variant!r} of {spec!r}{hint} ({takes})",
                         source=source)

    @classmethod
    def parse(cls, spec: str | None, *, source: str | None = None, signature: str = "crc32",
              dsr_parameters=None, memo_key_bits: int = 64,
              constants_block: str = "state") -> Techniques:
        """``baseline`` or switches joined by ``+`` (``te``, ``re``, ``evr``, ``re+evr``,
        ``dsr``, ``memo``)."""
        spec = (spec or "baseline").strip().lower()
        names = [] if spec == "baseline" else [n.strip() for n in spec.split("+")]
        unknown = [n for n in names if n not in registry.NAMES]
        if unknown or len(set(names)) != len(names) or "" in names:
            close = (difflib.get_close_matches(unknown[0], [*registry.NAMES, "baseline"], n=1,
                                               cutoff=0.5) if unknown else [])
            hint = f"; did you mean {close[0]!r}?" if close else ""
            variants = ", ".join(f"{t.switch}/{v}" for t in registry.REGISTRY.values()
                                 for v, option in t.variants.items() if not option.default)
            raise InputError(f"unknown technique {spec!r}{hint} (use baseline or a '+'-joined "
                             f"set of {', '.join(registry.NAMES)}, e.g. re+evr; variants: "
                             f"{variants})", source=source)
        alone = [n for n in names if n in registry.ALONE]
        if alone and len(names) > 1:
            combine = _either([n for n in registry.NAMES if n not in registry.ALONE], "and")
            raise InputError(f"{alone[0]} does not combine with other techniques (the thesis "
                             f"evaluates it alone); {combine} combine", source=source)
        options = {"signature": signature, "constants_block": constants_block,
                   "memo_key_bits": memo_key_bits}
        for option, value in options.items():
            values = registry.option_values(option)
            if value not in values:
                raise InputError(f"unknown {option.replace('_', ' ')} {value!r}: expected one "
                                 f"of {', '.join(map(str, values))}", source=source)
        return cls(frozenset(names), signature=signature, dsr_parameters=dsr_parameters,
                   memo_key_bits=memo_key_bits, constants_block=constants_block)

    @property
    def name(self) -> str:
        return "+".join(self.switches) or "baseline"

    def unit(self, switch: str):
        """The unit of technique ``switch`` in this render (None: not enabled or not yet
        attached)."""
        return self._by_switch.get(switch)

    # -- set-up -----------------------------------------------------------------------------

    def attach(self, screen, traversal: str) -> np.ndarray | None:
        self.screen = screen
        self._by_switch = {n: registry.REGISTRY[n].unit_class()(screen, traversal, self)
                           for n in self.switches}
        self.units = list(self._by_switch.values())
        self._holder = next((u for u in self.units if u.holds_frames), None)
        self.rates = self._rates()
        return self.rates

    def _rates(self) -> np.ndarray | None:
        return next((u.rates for u in self.units if u.rates is not None), None)

    def _on_screen(self, target) -> bool:
        return target is self.screen

    # -- hooks ------------------------------------------------------------------------------

    def command(self, op: str) -> None:
        for unit in self.units:
            unit.command(op)

    def begin_pass(self, target, counters) -> None:
        if not self._on_screen(target):
            for unit in self.units:
                unit.offscreen_pass()
            return
        self._board = ScreenPass()
        for unit in self.units:
            unit.begin_pass(counters, self._board)

    def tiles_to_flush(self, draw) -> np.ndarray | None:
        if not self._on_screen(draw.target):
            return None
        flush = None
        for unit in self.units:
            tiles = unit.tiles_to_flush(draw)
            if tiles is not None:
                flush = tiles if flush is None else flush | tiles
        return flush

    def binned(self, draw) -> np.ndarray | None:
        """The entries held back for the second lists (None: none): every unit classifies
        the draw's entries, then every unit sees them binned."""
        if not self._on_screen(draw.target):
            return None
        board = self._board
        board.occluded = board.deferred = None
        for unit in self.units:
            unit.classify(draw, board)
        for unit in self.units:
            unit.binned(draw, board)
        return board.deferred

    def cleared(self, target, counters, rect, color, depth, color_mask) -> None:
        if self._on_screen(target):
            for unit in self.units:
                unit.cleared(counters, rect, color, depth, color_mask)

    def observes(self, hook: str) -> bool:
        """Whether a unit observes ``hook`` (overrides it), or a subclass of the bus does."""
        return (overrides(self, Techniques, hook)
                or any(overrides(unit, TechniqueUnit, hook) for unit in self.units))

    def early_z(self, draw, pixel, depth, tile) -> None:
        if self._on_screen(draw.target):
            for unit in self.units:
                unit.early_z(draw, pixel, depth, tile)

    def late_shaded(self, draw, tile) -> None:
        if self._on_screen(draw.target):
            for unit in self.units:
                unit.late_shaded(draw, tile)

    def shaded(self, draw, inputs, system_values, color, tile, alive, keys=None) -> None:
        """``keys``: the batch's memoization keys when several technique sets share them
        (side by side); None: each unit that needs them makes them."""
        if self._on_screen(draw.target):
            for unit in self.units:
                unit.shaded(draw, inputs, system_values, color, tile, alive, keys)

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        """Color writes of the last shaded batch: ``lanes`` their positions in it."""
        if self._on_screen(draw.target):
            for unit in self.units:
                unit.written(draw, pixel, tile, color, entry, lanes)

    def end_pass(self, target, counters) -> np.ndarray | None:
        """Every unit decides (RE: the tiles skipped), then every unit counts the pass."""
        if not self._on_screen(target):
            return None
        board = self._board
        for unit in self.units:
            unit.decide(counters, board)
        for unit in self.units:
            unit.end_pass(counters, board)
        return board.skipped

    def flushed(self, target) -> np.ndarray | int:
        """Per tile, 1 where the color buffer is flushed to memory at the end of the pass."""
        if not self._on_screen(target):
            return 1
        xp = array_module(target.color)
        flush = xp.ones(target.tile_count, dtype=xp.int64)
        for unit in self.units:
            flush = unit.flushed(flush)
        return flush

    def end_frame(self, result, screen) -> np.ndarray | None:
        for unit in self.units:
            unit.end_frame(result, screen)
        self.rates = self._rates()
        return self.rates

    def release(self, result) -> list:
        """Frames complete for output, in order (memoization holds a frame until its pair
        is rendered)."""
        return [result] if self._holder is None else self._holder.release(result)

    def finish(self) -> list:
        return [] if self._holder is None else self._holder.finish()


def _either(items: list[str], last: str = "or") -> str:
    """``a, b or c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"
