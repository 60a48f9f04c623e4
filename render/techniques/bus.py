"""The frame-coherence techniques of Frame Coherence as switches on one pipeline.

``Techniques.parse("re+evr")`` gives the set a ``Renderer`` runs with; the pipeline calls the
hooks below at the points where the hardware would act, and each technique keeps its state
from frame to frame and adds its counters to the per-tile records:

=========  ====================================================  ============================
switch     technique (module)                                     acts on
=========  ====================================================  ============================
``te``     Transaction Elimination (``transaction_elimination``)  tile flushes
``re``     Rendering Elimination (``rendering_elimination``)      whole tiles, from signatures
``evr``    Early Visibility Resolution (``early_visibility``)     display-list order, RE input
``dsr``    Dynamic Sampling Rate (``dynamic_sampling_rate``)      samples per tile
``memo``   Fragment memoization (``fragment_memoization``)        fragment shader runs
=========  ====================================================  ============================

They apply to the default framebuffer, the frame the thesis's techniques compare across frames.
Combinations follow the thesis: TE, RE and EVR combine (``re+evr`` is chapter 5's EVR-aided RE);
DSR and memoization run alone.
"""

from __future__ import annotations

import difflib

import numpy as np

from tilesim.backend import array_module
from tilesim.errors import InputError
from tilesim.render.pipeline.hooks import PipelineHooks

NAMES = ("te", "re", "evr", "dsr", "memo")
ALONE = ("dsr", "memo")
SIGNATURE_KINDS = ("crc32", "xor")
# RE's constants block (Frame Coherence §4.1.5): "state" signs the uniforms and the draw state,
# "uniforms" the drawcall's constants only, as the thesis describes (rendering_elimination).
CONSTANTS_BLOCKS = ("state", "uniforms")
MEMO_KEY_BITS = ("64", "32")


class Techniques(PipelineHooks):
    """The enabled techniques of one render, behind the pipeline's hooks
    (:class:`~tilesim.render.pipeline.hooks.PipelineHooks`)."""

    def __init__(self, enabled: frozenset[str] = frozenset(), *, signature: str = "crc32",
                 dsr_parameters=None, memo_key_bits: int = 64, constants_block: str = "state"):
        self.enabled = frozenset(enabled)
        self.signature = signature
        self.constants_block = constants_block
        self.memo_key_bits = memo_key_bits
        self.dsr_parameters = dsr_parameters
        self.te = self.re = self.evr = self.dsr = self.memo = None
        self.wants_entries = "evr" in self.enabled
        self.spans_frames = bool(self.enabled)   # every technique compares with past frames
        self.screen = None             # the default framebuffer's render target
        self.rates = None              # DSR: the sampling rate of every screen tile
        self._held: list = []          # frames memoization has not completed yet
        self.memo_shared = None        # SharedWork with other memoizers of the render
        self._memo_done: set[int] = set()

    @classmethod
    def from_name(cls, name: str | None, *, source: str | None = None,
                  dsr_parameters=None) -> Techniques:
        """A technique set from a name with an optional variant after ``/``: ``re/xor`` signs
        with XOR instead of CRC32; ``re/uniforms`` signs as each draw's constants block only its
        uniform values, as Frame Coherence §4.1.5 describes (``re`` alone: the uniforms and the
        draw state, see :mod:`~tilesim.render.techniques.rendering_elimination`); ``memo/32``
        keys the LUT with the thesis's 32-bit signature (``memo`` alone: 64-bit keys)."""
        # Names without case (users type them): "RE/XOR" is re/xor.
        spec, _, variant = (name or "baseline").strip().lower().partition("/")
        if not variant:
            return cls.parse(spec, source=source, dsr_parameters=dsr_parameters)
        if variant in SIGNATURE_KINDS and "re" in spec.split("+"):
            return cls.parse(spec, source=source, signature=variant,
                             dsr_parameters=dsr_parameters)
        if variant in CONSTANTS_BLOCKS and "re" in spec.split("+"):
            return cls.parse(spec, source=source, constants_block=variant,
                             dsr_parameters=dsr_parameters)
        if variant in MEMO_KEY_BITS and "memo" in spec.split("+"):
            return cls.parse(spec, source=source, dsr_parameters=dsr_parameters,
                             memo_key_bits=int(variant))
        parts = spec.split("+")
        known = ((SIGNATURE_KINDS + CONSTANTS_BLOCKS if "re" in parts else ())
                 + (MEMO_KEY_BITS if "memo" in parts else ()))
        close = difflib.get_close_matches(variant, known, n=1)
        hint = f"; did you mean {spec}/{close[0]}?" if close else ""
        raise InputError(f"unknown variant {variant!r} of {spec!r}{hint} (RE takes /crc32, "
                         "/xor, /state or /uniforms, memo /64 or /32)", source=source)

    @classmethod
    def parse(cls, spec: str | None, *, source: str | None = None, signature: str = "crc32",
              dsr_parameters=None, memo_key_bits: int = 64,
              constants_block: str = "state") -> Techniques:
        """``baseline`` or switches joined by ``+`` (``te``, ``re``, ``evr``, ``re+evr``,
        ``dsr``, ``memo``)."""
        spec = (spec or "baseline").strip().lower()
        names = [] if spec == "baseline" else [n.strip() for n in spec.split("+")]
        unknown = [n for n in names if n not in NAMES]
        if unknown or len(set(names)) != len(names) or "" in names:
            close = (difflib.get_close_matches(unknown[0], [*NAMES, "baseline"], n=1,
                                               cutoff=0.5) if unknown else [])
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InputError(f"unknown technique {spec!r}{hint} (use baseline or a '+'-joined "
                             f"set of {', '.join(NAMES)}, e.g. re+evr; variants: re/xor, "
                             "re/uniforms, memo/32)", source=source)
        alone = [n for n in names if n in ALONE]
        if alone and len(names) > 1:
            raise InputError(f"{alone[0]} does not combine with other techniques (the thesis "
                             "evaluates it alone); te, re and evr combine", source=source)
        if signature not in SIGNATURE_KINDS:
            raise InputError(f"unknown signature {signature!r}: expected one of "
                             f"{', '.join(SIGNATURE_KINDS)}", source=source)
        if constants_block not in CONSTANTS_BLOCKS:
            raise InputError(f"unknown RE constants block {constants_block!r}: expected one of "
                             f"{', '.join(CONSTANTS_BLOCKS)}", source=source)
        return cls(frozenset(names), signature=signature, dsr_parameters=dsr_parameters,
                   memo_key_bits=memo_key_bits, constants_block=constants_block)

    @property
    def name(self) -> str:
        return "+".join(n for n in NAMES if n in self.enabled) or "baseline"

    # -- set-up -----------------------------------------------------------------------------

    def attach(self, screen, traversal: str) -> np.ndarray | None:
        self.screen = target = screen
        if "te" in self.enabled:
            from tilesim.render.techniques.transaction_elimination import TransactionElimination

            self.te = TransactionElimination(target)
        if "re" in self.enabled:
            from tilesim.render.techniques.rendering_elimination import RenderingElimination

            self.re = RenderingElimination(target, kind=self.signature,
                                           constants_block=self.constants_block)
        if "evr" in self.enabled:
            from tilesim.render.techniques.early_visibility import EarlyVisibility

            self.evr = EarlyVisibility(target)
        if "dsr" in self.enabled:
            from tilesim.render.techniques.dynamic_sampling_rate import (
                DSRParameters,
                SamplingRateTable,
            )

            params = self.dsr_parameters
            if params is None or not isinstance(params, DSRParameters):
                params = DSRParameters.load(params)
            if target.tile_size != 16:
                raise InputError("DSR's sampling rates (1x .. 1/256x) are defined on 16x16 "
                                 f"tiles, not {target.tile_size}x{target.tile_size}")
            self.dsr = SamplingRateTable(target.tile_count, params, tile=target.tile_size)
            self.rates = self.dsr.read()
        if "memo" in self.enabled:
            from tilesim.render.techniques.fragment_memoization import ScreenMemo

            self.memo = ScreenMemo(target, traversal=target.traversal(traversal),
                                   key_bits=self.memo_key_bits, shared=self.memo_shared)
        return self.rates

    def _on_screen(self, target) -> bool:
        return target is self.screen

    # -- hooks ------------------------------------------------------------------------------

    def command(self, op: str) -> None:
        if self.re is not None:
            self.re.command(op)

    def begin_pass(self, target, counters) -> None:
        if self.re is not None and not self._on_screen(target):
            self.re.offscreen_pass()

    def tiles_to_flush(self, draw) -> np.ndarray | None:
        if self.evr is None or not self._on_screen(draw.target):
            return None
        return self.evr.tiles_to_flush(draw)

    def binned(self, draw) -> np.ndarray | None:
        """The entries EVR holds back for the second lists (None: none); RE signs the
        others."""
        if not self._on_screen(draw.target):
            return None
        occluded = deferred = None
        if self.evr is not None:
            occluded, deferred = self.evr.binned(draw, draw.counters)
        if self.re is not None:
            self.re.binned(draw, draw.counters, None if occluded is None else ~occluded)
        return deferred

    def cleared(self, target, counters, rect, color, depth, color_mask) -> None:
        if not self._on_screen(target):
            return
        if self.re is not None:
            self.re.cleared(target, counters, rect, color, depth, color_mask)
        if self.evr is not None and color is not None:
            self.evr.cleared(target, rect)
        if self.memo is not None:
            self.memo.cleared(rect, color, color_mask)

    def early_z(self, draw, pixel, depth, tile) -> None:
        if self.evr is not None and self._on_screen(draw.target):
            self.evr.early_z(draw, pixel, depth, tile)

    def late_shaded(self, draw, tile) -> None:
        xp = array_module(tile)
        if self.evr is not None and self._on_screen(draw.target):
            self.evr.late_shaded += xp.bincount(tile, minlength=self.evr.tiles)

    def shaded(self, draw, inputs, system_values, color, tile, alive,
               keys: MemoKeys | None = None) -> None:
        """``keys``: the batch's memoization keys when several technique sets share them
        (side by side); None: made here."""
        if self.memo is None or not self._on_screen(draw.target):
            return
        if keys is None:
            keys = MemoKeys(draw, inputs, system_values, self.memo_key_bits)
        self.memo.shaded(keys.of(self.memo_key_bits), color, tile, alive)

    def written(self, draw, pixel, tile, color, entry, lanes) -> None:
        """Color writes of the last shaded batch: ``lanes`` their positions in it."""
        if not self._on_screen(draw.target):
            return
        if self.re is not None:
            self.re.written(draw, pixel)
        if self.evr is not None:
            self.evr.written(draw, draw.counters, pixel, tile, color, entry)
        if self.memo is not None:
            self.memo.written(pixel, lanes, draw.fragment, draw.target.has_alpha)

    def end_pass(self, target, counters) -> np.ndarray | None:
        if not self._on_screen(target):
            return None
        xp = array_module(target.color)
        skipped = None
        if self.re is not None:
            # With EVR, a tile whose last rendered frame showed an entry left out of its
            # signature cannot be skipped on the signature alone.
            skipped = self.re.end_pass(target, counters,
                                       None if self.evr is None else self.evr.tainted)
        if self.te is not None:
            self.te.end_pass(target, counters)
        if self.evr is not None:
            self.evr.end_pass(target, counters, None if self.re is None else self.re.skip)
        if self.dsr is not None:
            tiles = target.tile_count
            counters.add_per_tile("dsr_rate", xp.asarray(self.rates))
            counters.add_per_tile("dsr_dcts", xp.ones(tiles, dtype=xp.int64))
            counters.add_per_tile("dsr_srt_accesses", xp.full(tiles, 2, dtype=xp.int64))
        return skipped

    def flushed(self, target) -> np.ndarray | int:
        """Per tile, 1 where the color buffer is flushed to memory at the end of the pass."""
        if not self._on_screen(target):
            return 1
        xp = array_module(target.color)
        flush = xp.ones(target.tile_count, dtype=xp.int64)
        if self.re is not None:
            flush &= ~self.re.skip
        if self.te is not None:
            flush &= self.te.flush
        return flush

    def end_frame(self, result, screen) -> np.ndarray | None:
        if self.re is not None:
            self.re.end_frame(result.counters)
        if self.te is not None:
            self.te.end_frame()
        if self.evr is not None:
            self.evr.end_frame()
        if self.dsr is not None:
            # The finished frame, row 0 at the top, where it lies (the device).
            self.dsr.update(screen.color[::-1])
            self.rates = self.dsr.read()
        if self.memo is not None:
            self._memo_frame(result, screen)
        return self.rates

    # -- memoization renders frames in pairs ------------------------------------------------

    def _memo_frame(self, result, screen) -> None:
        self._held.append(result)
        self._apply_memo(self.memo.end_frame(result.index, screen.image()))

    def _apply_memo(self, done) -> None:
        for outcome in done:
            result = next(r for r in self._held if r.index == outcome.frame_index)
            screen = next((p for p in result.counters.passes if p.target == "default"), None)
            if screen is not None:
                for name, values in outcome.counters().items():
                    if name != "memo_collisions":
                        screen.add_per_tile(name, values)
            result.counters.scalars["memo_collisions"] = int(outcome.memo_collisions)
            # What the hardware displays: the LUT's colors on hits, so a collision shows. (A
            # frame whose image is not the default framebuffer, a readPixels of another
            # target, keeps its image; its collisions are still counted.)
            shown = self.memo.show(outcome)
            if shown is not None and np.array_equal(result.image, shown[0]):
                result.image = shown[1]
            self._memo_done.add(outcome.frame_index)

    def release(self, result) -> list:
        """Frames complete for output, in order (memoization holds a frame until its pair
        is rendered)."""
        if self.memo is None:
            return [result]
        ready = []
        while self._held and self._held[0].index in self._memo_done:
            ready.append(self._held.pop(0))
        return ready

    def finish(self) -> list:
        if self.memo is None:
            return []
        self._apply_memo(self.memo.finish())
        ready, self._held = self._held, []
        return ready


class MemoKeys:
    """The memoization keys of one shaded batch, computed on first use and once for every
    technique set that asks (side by side, ``memo`` and ``memo/32`` hash the same inputs):
    ``bits`` the widest asked for; a 32-bit key is the low half of the 64-bit one
    (``fragment_keys``)."""

    def __init__(self, draw, inputs, system_values: dict, bits: int):
        self._batch = (draw, inputs, system_values)
        self.bits = bits
        self._keys = None

    def of(self, bits: int):
        """(n,) uint64 keys of ``bits`` (at most :attr:`bits`)."""
        if bits > self.bits:
            raise ValueError(f"MemoKeys: {bits}-bit keys asked of {self.bits}-bit ones")
        if self._keys is None:
            import zlib

            from tilesim.render.techniques import fragment_memoization
            from tilesim.render.techniques.rendering_elimination import draw_state_bytes

            draw, inputs, system_values = self._batch
            self._keys = fragment_memoization.fragment_keys(
                _memo_inputs(inputs, system_values), zlib.crc32(draw_state_bytes(draw)),
                draw.program.fragment_uses_derivatives, bits=self.bits)
        if bits == self.bits:
            return self._keys
        return self._keys & self._keys.dtype.type((1 << bits) - 1)


def _memo_inputs(inputs: np.ndarray, system_values: dict) -> np.ndarray:
    """Everything a fragment program reads per lane: its IN registers and system values."""
    xp = array_module(inputs)
    inputs = xp.asarray(inputs, dtype=xp.float32)
    if not system_values:
        return inputs           # the usual case: nothing to append, so no copy
    extra = [xp.asarray(v, dtype=xp.float32).reshape(1, 4, -1) for _, v in
             sorted(system_values.items())]
    return xp.concatenate([inputs, *extra], axis=0)
