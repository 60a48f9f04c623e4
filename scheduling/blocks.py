"""Command blocks and their predicted execution times.

A command block (seed 004, *Fine-Grained Semantics Driven Scheduling*, §4.1.3 and §5.2.3: a
GPU Command Queue, GCQ) is the scheduler's unit: a few commands run in order and without
preemption on the GPU, with a Predicted Execution Time (PET) known before dispatch. Blocks
are cut by command semantics (§5.3, Table 5-4): a block ends at a draw, at the swap
(``endFrame``, eglSwapBuffers) and at a synchronous command (a read-back), so that
interleaving blocks of several applications never splits what must run together.

The scheduler needs two numbers per block: ``predicted_s`` (what it decides with) and
``actual_s`` (what the GPU takes). Predictions come from a :class:`Predictor`; the
execution-time predictors of the prediction issue plug in through the same small interface
(``predict(block) -> seconds``, ``observe(block)`` after the block ran; ``estimators.py``
adapts them). Here: exact prediction, actual times with an injected error distribution, the
history predictor (the same block of the last frame observed, 000 §5.5's "same sequence
number" applied to times) and a safety margin on any of them.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from tilesim.errors import InputError

# Command classes of 004 Table 5-4 (GPU_COMMAND_*), by the recorded op names.
DRAW_OPS = frozenset({"drawArrays", "drawElements"})
SWAP_OPS = frozenset({"endFrame"})
SYNCHRONOUS_OPS = frozenset({"readPixels", "finish", "getError"})
MEMCOPY_OPS = frozenset({"texImage2D", "texSubImage2D", "bufferData", "bufferSubData",
                         "compressedTexImage2D", "copyTexImage2D", "copyTexSubImage2D",
                         "generateMipmap"})


def command_class(op: str) -> str:
    """The FG-SDS command class (004 Table 5-4) of a recorded op: ``draw``, ``swap``,
    ``synchronous``, ``memcopy`` or ``state`` (every other command: state changes, uniforms,
    clears; 004 calls glClear CPU-only)."""
    if op in DRAW_OPS:
        return "draw"
    if op in SWAP_OPS:
        return "swap"
    if op in SYNCHRONOUS_OPS:
        return "synchronous"
    if op in MEMCOPY_OPS:
        return "memcopy"
    return "state"


def split_frame(ops: list[str]) -> list[tuple[int, int, str]]:
    """Cut a frame's ops into command blocks: ``(start, stop, kind)`` half-open ranges, each
    ending at a draw, a swap or a synchronous command (004 §5.5.3, Table 5-8: the block's
    last command class decides whether the rendering thread dispatches); ``kind`` is that
    last command's class. Commands after the last such command form a final ``state`` block.
    """
    blocks, start = [], 0
    for k, op in enumerate(ops):
        kind = command_class(op)
        if kind in ("draw", "swap", "synchronous"):
            blocks.append((start, k + 1, kind))
            start = k + 1
    if start < len(ops):
        blocks.append((start, len(ops), "state"))
    return blocks


@dataclass(frozen=True)
class BlockSpec:
    """A command block as an application's frame holds it: its kind (the class of its last
    command), how many commands it has, the GPU seconds it actually takes and, where known,
    the fragments it shades (what a profiler reports after it ran, 000 §5.2: the
    recent-history estimators learn from it, the ``oracle`` estimator predicts with it)."""

    kind: str
    commands: int
    actual_s: float
    fragments: float | None = None

    def __post_init__(self):
        if not (self.actual_s >= 0 and math.isfinite(self.actual_s)):
            raise ValueError(f"block actual time must be finite and >= 0, got {self.actual_s}")
        if self.fragments is not None and not (self.fragments >= 0
                                               and math.isfinite(self.fragments)):
            raise ValueError(f"block fragments must be finite and >= 0, got {self.fragments}")
        if self.commands < 1:
            raise ValueError(f"a block has at least one command, got {self.commands}")


@dataclass
class Block:
    """One block of one frame of one application, as the scheduler and the GPU see it."""

    app: str
    frame: int
    index: int
    spec: BlockSpec
    last: bool                 # the frame's last block (its swap): the frame ends with it
    predicted_s: float = 0.0   # PET (004 Table 5-3), set by the predictor when recorded
    dispatched_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def actual_s(self) -> float:
        return self.spec.actual_s

    @property
    def commands(self) -> int:
        return self.spec.commands


class Predictor(Protocol):
    """What the scheduler asks of an execution-time predictor (the prediction issue's
    estimators plug in here): seconds for a block before it runs; the block after it ran."""

    def predict(self, block: Block) -> float: ...

    def observe(self, block: Block) -> None: ...


class Exact:
    """Predictions equal to the actual times (perfect prediction). Not the prediction
    issue's ``oracle`` estimator, which knows each draw's fragment count but still predicts
    through its calibrated model (``estimators.py``)."""

    name = "exact"

    def predict(self, block: Block) -> float:
        return block.actual_s

    def observe(self, block: Block) -> None:
        pass


DISTRIBUTIONS = ("normal", "uniform", "lognormal", "under", "over")


@dataclass
class InjectedError:
    """actual x (1 + e), e drawn per block from ``distribution`` with spread ``scale``:
    ``normal`` N(0, scale) (factor clipped at 0.05), ``uniform`` U(-scale, scale),
    ``lognormal`` (factor exp(N(0, scale))), ``under`` (factor 1 - |N(0, scale)|, always
    optimistic), ``over`` (1 + |N(0, scale)|, always pessimistic). The draw of a block depends
    only on ``seed`` and the block's (application, frame, index), not on the schedule."""

    distribution: str = "normal"
    scale: float = 0.1
    seed: int = 0
    name: str = field(init=False, default="error")

    def __post_init__(self):
        if self.distribution not in DISTRIBUTIONS:
            raise InputError(f"unknown error distribution {self.distribution!r} (known: "
                             f"{', '.join(DISTRIBUTIONS)})", source="--error")
        if not (self.scale >= 0 and math.isfinite(self.scale)):
            raise InputError(f"error scale must be >= 0, got {self.scale}", source="--error")
        self.name = f"{self.distribution}({self.scale:g})"

    def factor(self, block: Block) -> float:
        rng = np.random.default_rng(
            [self.seed, zlib.crc32(block.app.encode()), block.frame, block.index])
        z = rng.standard_normal()
        if self.distribution == "normal":
            return max(0.05, 1.0 + self.scale * z)
        if self.distribution == "uniform":
            return 1.0 + self.scale * (2.0 * rng.random() - 1.0)
        if self.distribution == "lognormal":
            return math.exp(self.scale * z)
        if self.distribution == "under":
            return max(0.05, 1.0 - abs(self.scale * z))
        return 1.0 + abs(self.scale * z)

    def predict(self, block: Block) -> float:
        return block.actual_s * self.factor(block)

    def observe(self, block: Block) -> None:
        pass


class History:
    """A history-based predictor of block times (000 §5.5's "same sequence number" applied
    to measured times; 003 §VI-A's baseline keys by content instead, ``history-baseline`` in
    ``estimators.py``): a block is predicted to take what the block with the same index took
    in the application's most recent frame that ran it. Before any such observation: the mean of
    the application's observed blocks; before any observation at all, ``cold_s``."""

    name = "history"

    def __init__(self, cold_s: float = 1e-3):
        self.cold_s = cold_s
        self.last: dict[tuple[str, int], float] = {}
        self.sums: dict[str, list[float]] = {}

    def predict(self, block: Block) -> float:
        if (block.app, block.index) in self.last:
            return self.last[(block.app, block.index)]
        seen = self.sums.get(block.app)
        return seen[0] / seen[1] if seen else self.cold_s

    def observe(self, block: Block) -> None:
        self.last[(block.app, block.index)] = block.actual_s
        total = self.sums.setdefault(block.app, [0.0, 0])
        total[0] += block.actual_s
        total[1] += 1


class Margin:
    """A safety factor on another predictor's times (``factor`` >= 1 is pessimistic)."""

    def __init__(self, inner: Predictor, factor: float):
        if not (factor > 0 and math.isfinite(factor)):
            raise InputError(f"margin must be > 0, got {factor}", source="--margin")
        self.inner, self.factor = inner, factor
        self.name = f"{getattr(inner, 'name', 'predictor')}x{factor:g}"

    def predict(self, block: Block) -> float:
        return self.inner.predict(block) * self.factor

    def observe(self, block: Block) -> None:
        self.inner.observe(block)
