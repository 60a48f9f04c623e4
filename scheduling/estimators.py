"""The execution-time prediction's estimators (seeds 000, 003) as the scheduler's predictors.

FG-SDS (seed 004, *Fine-Grained Semantics Driven Scheduling*, §5.5, Table 5-8) decides with
a predicted execution time (PET) per command block. ``tilesim predict`` predicts command groups
before they run (seeds 003 §IV and 000 §5.5, :mod:`tilesim.prediction.predictor`). Here each
block is given to a :class:`~tilesim.prediction.predictor.Predictor` as a command group,
so ``tilesim schedule --predictor NAME`` takes the names of ``tilesim predict --estimator``:

``bbox``, ``history-ratio``, ``history-seq``, ``oracle``
    :class:`EstimatorPredictor`. Each application gets its own Predictor: it is its own GL
    context with its own window (003 §IV-B's Context Monitor). The Predictor is calibrated on
    the backend the block costs come from (the tilesim timing model) by ``tilesim predict``'s
    :class:`~tilesim.prediction.ground_truth.Calibrator`, sharing its cache folder.
    The application's set-up (frame 0's commands before its first draw, which the block costs
    replay too) is predicted first, so the monitor knows the programs, buffers and textures.
    A rendering thread lays out a frame before any of its blocks runs, so all of frame j's
    blocks are predicted, in order, before the first one is observed. The frame is one
    submission: its flush and each render target's resolve are charged once, to the first
    block that renders into that target. The block costs put them there too, since each block
    costs what its prefix adds. After a block ran, ``observe`` gives the Predictor the block's
    time and its shaded fragments (000 §5.2's profiler). The recent-history estimators learn
    from these online, as does the run-time calibration of c_f (``E+runtime`` with
    ``--runtime-calibration N``, as in ``tilesim predict``). ``oracle`` knows each block's
    fragment count but still predicts through the calibrated model.
``history-baseline``
    :class:`HistoryBaseline`, 003 §VI-A's baseline: a hash of the block's content -> its last
    measured time, else the largest time seen so far. There is one table for the GPU, as a
    driver's would be. A block of one application may follow another application's block,
    so each block is hashed with its context enable (003 §VI-E).

The scheduler's own ``exact`` and ``history`` (``blocks.py``) need no commands.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from tilesim.errors import InputError
from tilesim.prediction.command_groups import CommandGroup, Context
from tilesim.prediction.predictor import ESTIMATORS, HistoryPredictor, Predictor
from tilesim.render.gl.commands import Command
from tilesim.scheduling.blocks import Block, BlockSpec, Exact, History, split_frame

BASELINE = "history-baseline"      # the name tilesim predict reports it under
OWN = ("exact", "history")         # blocks.py's predictors
RUNTIME = "+runtime"


def predictor_names(runtime_frames: int = 0) -> tuple[str, ...]:
    """Every name ``--predictor`` takes: the scheduler's own, tilesim predict's estimators (with
    ``+runtime`` when the run-time calibration is on) and the history baseline."""
    runtime = tuple(f"{e}{RUNTIME}" for e in ESTIMATORS) if runtime_frames > 0 else ()
    return OWN + ESTIMATORS + runtime + (BASELINE,)


@dataclass
class AppCommands:
    """An application's recorded commands, aligned with its block costs: ``setup`` is what
    runs before its first frame; frame ``j`` of the run replays ``frames[j % len(frames)]``,
    cut into blocks at ``spans`` (:func:`blocks.split_frame`)."""

    name: str
    width: int
    height: int
    setup: list[Command]
    frames: list[list[Command]]
    spans: list[list[tuple[int, int, str]]] = field(default_factory=list)

    def __post_init__(self):
        if not self.spans:
            self.spans = [split_frame([c.op for c in f]) for f in self.frames]

    def check(self, specs: list[list[BlockSpec]], where: str) -> None:
        """Raise InputError unless the block costs ``specs`` are this application's blocks."""
        mine = [[(kind, stop - start) for start, stop, kind in s] for s in self.spans]
        theirs = [[(b.kind, b.commands) for b in f] for f in specs]
        if mine != theirs:
            raise InputError(f"the block costs of {self.name!r} do not match its recorded "
                             "frames (rebuild them with --rebuild-blocks)", source=where)

    def block(self, frame: int, index: int) -> list[Command]:
        f = frame % len(self.frames)
        start, stop, _ = self.spans[f][index]
        return self.frames[f][start:stop]


def setup_commands(frame0: list[Command]) -> list[Command]:
    """Frame 0's commands before its first draw (what ``scenarios.time_blocks`` replays
    before the frames it times)."""
    ops = [c.op for c in frame0]
    end = next((k for k, op in enumerate(ops) if op in ("drawArrays", "drawElements")),
               len(ops) - 1)
    return list(frame0[:end])


@dataclass
class _App:
    commands: AppCommands
    predictor: Predictor
    frame: int = -1             # the frame being laid out
    next_index: int = 0         # its next block to predict
    charged: set = field(default_factory=set)
    pending: dict = field(default_factory=dict)   # (frame, index) -> CommandGroup


class EstimatorPredictor:
    """tilesim predict's Predictor with ``estimator`` behind the scheduler's predict/observe (see
    the module doc). ``calibration(context)`` and ``program_cost(...)`` are the Predictor's
    (a :class:`~tilesim.prediction.ground_truth.Calibrator`'s methods, or stubs in
    tests)."""

    def __init__(self, estimator: str, apps: dict[str, AppCommands],
                 calibration: Callable, program_cost: Callable, runtime_frames: int = 0):
        base, runtime = estimator, False
        if estimator.endswith(RUNTIME):
            base, runtime = estimator[:-len(RUNTIME)], True
        if base not in ESTIMATORS:
            raise InputError(f"unknown estimator {estimator!r} (known: "
                             f"{', '.join(predictor_names(runtime_frames))})",
                             source="--predictor")
        if runtime and runtime_frames < 1:
            raise InputError(f"{estimator} needs --runtime-calibration N (N >= 1)",
                             source="--predictor")
        self.name = estimator
        self._ids = itertools.count()
        self._apps: dict[str, _App] = {}
        for name, commands in apps.items():
            context = Context(0, commands.width, commands.height)
            predictor = Predictor([context], calibration, program_cost, base,
                                  runtime_frames=runtime_frames if runtime else 0)
            setup = CommandGroup(next(self._ids), 0, 0, 0, len(commands.setup),
                                 list(commands.setup), 0)
            predictor.predict(setup)
            predictor.observe(setup, None)
            self._apps[name] = _App(commands, predictor)

    def _app(self, block: Block) -> _App:
        try:
            return self._apps[block.app]
        except KeyError:
            raise ValueError(f"no recorded commands for application {block.app!r}") from None

    def predict(self, block: Block) -> float:
        app = self._app(block)
        if block.index == 0 and block.frame == app.frame + 1:
            app.frame, app.next_index, app.charged = block.frame, 0, set()
        if (block.frame, block.index) != (app.frame, app.next_index):
            raise ValueError(f"{block.app}: blocks must be predicted in order (expected frame "
                             f"{app.frame} block {app.next_index}, got frame {block.frame} "
                             f"block {block.index})")
        commands = app.commands.block(block.frame, block.index)
        if len(commands) != block.commands:
            raise ValueError(f"{block.app}: block {block.index} has {block.commands} commands, "
                             f"its recorded frame {len(commands)}")
        # group frame numbers start at 1: frame 0 is the set-up (000 §7.4: compiles, uploads)
        group = CommandGroup(next(self._ids), 0, block.frame + 1, 0, len(commands),
                             list(commands), 0, frame_position=block.index)
        prediction = app.predictor.predict(group, block.spec.fragments, app.charged)
        app.pending[(block.frame, block.index)] = group
        app.next_index += 1
        return prediction.seconds

    def observe(self, block: Block) -> None:
        app = self._app(block)
        group = app.pending.pop((block.frame, block.index))
        app.predictor.observe(group, block.spec.fragments, block.actual_s)


class HistoryBaseline:
    """003 §VI-A's history-based predictor over blocks (see the module doc)."""

    name = BASELINE

    def __init__(self, apps: dict[str, AppCommands]):
        self.apps = apps
        self.contexts = {name: k for k, name in enumerate(apps)}
        self.table = HistoryPredictor()
        self._groups: dict[tuple[str, int, int], CommandGroup] = {}

    def _group(self, block: Block) -> CommandGroup:
        commands = self.apps[block.app]
        key = (block.app, block.frame % len(commands.frames), block.index)
        group = self._groups.get(key)
        if group is None:
            body = commands.block(block.frame, block.index)
            group = CommandGroup(0, self.contexts[block.app], key[1], 0, len(body), list(body),
                                 0, switch=True)
            self._groups[key] = group
        return group

    def predict(self, block: Block) -> float:
        return self.table.predict(self._group(block))

    def observe(self, block: Block) -> None:
        self.table.observe(self._group(block), block.actual_s)


def make_predictor(name: str, apps: dict[str, AppCommands] | None = None,
                   calibration: Callable | None = None, program_cost: Callable | None = None,
                   runtime_frames: int = 0):
    """A fresh predictor by name (:func:`predictor_names`); tilesim predict's need ``apps`` (and,
    but for the baseline, the calibration callables)."""
    if name == "exact":
        return Exact()
    if name == "history":
        return History()
    if name not in predictor_names(runtime_frames) and not name.endswith(RUNTIME):
        raise InputError(f"unknown predictor {name!r} (known: "
                         f"{', '.join(predictor_names(runtime_frames))})", source="--predictor")
    if apps is None:
        raise ValueError(f"predictor {name!r} needs the applications' commands")
    if name == BASELINE:
        return HistoryBaseline(apps)
    if calibration is None or program_cost is None:
        raise ValueError(f"predictor {name!r} needs a calibration")
    return EstimatorPredictor(name, apps, calibration, program_cost, runtime_frames)


def calibrator(folder: str | None, driver: str | None = None, timer: str = "auto"):
    """``tilesim predict``'s calibrator on the backend the blocks' actual times come from:
    the tilesim timing model (``driver`` None) or Mesa ``driver`` timed by ``timer``
    (``tilesim schedule --actual gl-DRIVER``), caching in ``folder`` (None: no cache)."""
    from tilesim.prediction.ground_truth import Calibrator, GLBackend, ModelBackend

    backend = ModelBackend() if driver is None else GLBackend(driver, timer=timer)
    return Calibrator(backend, folder)
