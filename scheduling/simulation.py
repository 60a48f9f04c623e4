"""The discrete-event model of FG-SDS (SimPy): rendering threads, a scheduling thread with a
decision overhead, and one non-preemptive GPU.

Seed 004 (*Fine-Grained Semantics Driven Scheduling*) ch. 5 is the model:

* A rendering thread (RT, §5.5) per application. Frame ``j`` is released at its activation
  time; the RT records it block by block (``record_s_per_command`` of CPU per command), each
  block closed with its predicted execution time (PET, Table 5-8) and put in the RT's block
  queue (GCBQ, §5.2.2). At the swap it waits for the scheduling thread's permission
  (``flag_rt_wait``, Table 5-9), dispatches the blocks it is granted
  (``dispatch_s_per_command`` each command) and acknowledges. When the frame's last block has
  run on the GPU the frame is finished (we take the GPU's completion; 004 records the time the
  swap was dispatched, line 33). Deadlines follow eq. (1) (``deadlines="grid"``, the
  default): frame ``j`` is due at ``offset + (j + 1) x period`` and is released at
  ``offset + j x period`` or when frame ``j - 1`` finished, whichever is later (FRRS: "if it
  finishes its frame before the deadline, [it] has to wait for its next activation time",
  §6.4). A late application thus falls further behind its grid, which is why 004's PD-FFTs
  of MTS-2 under FRRS need a bar for frames more than 5 periods late (§6.4.2.3).
  ``deadlines="rebase"``: each frame is due one period after its own release and the next is
  released at ``max(release + period, finish)`` (lateness never accumulates).
* The scheduling thread (ST, §5.7, Table 5-13), for the ``hpf*`` and ``edf`` policies: when
  a thread waits it spends ``decision_s`` deciding (the overhead 004 §6.4.1.1 blames for the
  lowest-priority application's lower frame rate), grants the chosen thread its blocks,
  waits for the acknowledgement, and sleeps until ``now + PET of the dispatched blocks``
  (Table 5-9 line 40: the next activation), then decides again. If no thread may dispatch
  (the deadline guard refused every candidate) it waits for a change: a thread starts
  waiting, or a block completes.
* Without a scheduler (``none``, ``frrs``) every RT hands each block to the driver as soon as
  it is recorded; the GPU runs blocks in arrival order. ``none`` releases the next frame as
  soon as the previous one finished, due one period later (no grid: an application without
  a frame-rate cap has no activation times); ``frrs`` follows the deadlines above.
* The GPU (a SimPy store, FIFO) runs each dispatched block for its actual time, to
  completion, one at a time.

Applications start together at t = 0 unless given an ``offset_s``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tilesim.errors import ToolMissing
from tilesim.scheduling.blocks import Block, BlockSpec, Exact, Predictor
from tilesim.scheduling.policies import (
    GUARDS,
    SCHEDULED,
    Costs,
    Thread,
    check_policy,
    select,
)


@dataclass
class Application:
    """An application: its name, priority (1 = highest), desired frame rate (frames per
    second) and its frames as lists of block specs; frame ``j`` of the run replays
    ``frames[j % len(frames)]``."""

    name: str
    priority: int
    fps: float
    frames: Sequence[Sequence[BlockSpec]]
    offset_s: float = 0.0

    def __post_init__(self):
        if not self.frames or any(len(f) == 0 for f in self.frames):
            raise ValueError(f"application {self.name!r}: every frame needs a block")
        if not self.fps > 0:
            raise ValueError(f"application {self.name!r}: fps must be > 0")

    @property
    def period_s(self) -> float:
        return 1.0 / self.fps


@dataclass
class SimConfig:
    """The run's parameters (seconds)."""

    duration_s: float = 10.0
    decision_s: float = 100e-6
    record_s_per_command: float = 1e-6
    dispatch_s_per_command: float = 1e-6
    guard: str = "release"
    deadlines: str = "grid"

    def __post_init__(self):
        if self.guard not in GUARDS:
            raise ValueError(f"unknown guard {self.guard!r} (known: {', '.join(GUARDS)})")
        if self.deadlines not in ("grid", "rebase"):
            raise ValueError(f"deadlines must be grid or rebase, got {self.deadlines!r}")
        for name in ("duration_s", "decision_s", "record_s_per_command",
                     "dispatch_s_per_command"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0")


@dataclass
class FrameRecord:
    app: str
    frame: int
    release_s: float
    deadline_s: float
    finish_s: float
    period_s: float

    @property
    def met(self) -> bool:
        return self.finish_s <= self.deadline_s + 1e-12

    @property
    def lateness_periods(self) -> float:
        """(finish - deadline) / period: <= 0 met, > 0 late by that many periods."""
        return (self.finish_s - self.deadline_s) / self.period_s


@dataclass
class RunResult:
    policy: str
    duration_s: float
    apps: list[Application]
    frames: list[FrameRecord] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)   # in GPU order
    predicted: list[Block] = field(default_factory=list)  # every block laid out, run or not
    decisions: int = 0
    gpu_busy_s: float = 0.0


if TYPE_CHECKING:   # annotations only: SimPy itself is imported when a model runs
    import simpy


def _simpy():
    """SimPy, an optional dependency (the ``schedule`` extra): only this model needs it."""
    try:
        import simpy
    except ModuleNotFoundError:
        raise ToolMissing("the scheduling model needs SimPy (the discrete-event simulator): "
                          "pip install 'tilesim[schedule]'") from None
    return simpy


class _RT:
    """A rendering thread's private state beside the scheduler-visible :class:`Thread`."""

    def __init__(self, env: simpy.Environment, app: Application):
        self.app = app
        self.thread = Thread(app.name, app.priority, app.period_s)
        self.frame = 0
        self.granted: simpy.Event = env.event()
        self.swap_done: simpy.Event = env.event()
        self.upcoming: list[Block] = []


class Simulation:
    """One run of ``apps`` under ``policy`` with ``predictor`` (default: exact predictions)."""

    def __init__(self, apps: Sequence[Application], policy: str,
                 predictor: Predictor | None = None, config: SimConfig | None = None):
        check_policy(policy)
        names = [a.name for a in apps]
        if len(set(names)) != len(names):
            raise ValueError(f"application names must be unique: {names}")
        self.apps, self.policy = list(apps), policy
        self.predictor = predictor or Exact()
        self.config = config or SimConfig()
        self.costs = Costs(self.config.decision_s, self.config.record_s_per_command,
                           self.config.dispatch_s_per_command)
        simpy = _simpy()
        self.env = simpy.Environment()
        self.gpu = simpy.Store(self.env)
        self.result = RunResult(policy, self.config.duration_s, self.apps)
        self.rts = [_RT(self.env, a) for a in self.apps]
        self._wake = self.env.event()

    # --- plumbing ---------------------------------------------------------------------------

    def _notify(self) -> None:
        if not self._wake.triggered:
            self._wake.succeed()

    def _layout(self, rt: _RT) -> list[Block]:
        """The blocks of the RT's next frame with their predictions (made when the frame is
        laid out, so the guard and the recording see the same PETs)."""
        j = rt.frame
        specs = rt.app.frames[j % len(rt.app.frames)]
        blocks = [Block(rt.app.name, j, k, s, last=(k == len(specs) - 1))
                  for k, s in enumerate(specs)]
        for b in blocks:
            b.predicted_s = float(self.predictor.predict(b))
        self.result.predicted.extend(blocks)
        rt.upcoming = blocks
        rt.thread.next_frame_predicted_s = sum(b.predicted_s for b in blocks)
        rt.thread.next_frame_commands = sum(b.commands for b in blocks)
        return blocks

    # --- processes --------------------------------------------------------------------------

    def _gpu(self):
        env, res = self.env, self.result
        while True:
            block, rt = yield self.gpu.get()
            block.started_at = env.now
            yield env.timeout(block.actual_s)
            block.finished_at = env.now
            res.gpu_busy_s += block.actual_s
            res.blocks.append(block)
            self.predictor.observe(block)
            if block.last:
                rt.swap_done.succeed()
            self._notify()

    def _rendering_thread(self, rt: _RT):
        env, cfg, t = self.env, self.config, rt.thread
        scheduled = self.policy in SCHEDULED
        offset, period = rt.app.offset_s, rt.app.period_s
        release = offset
        t.next_release_s, t.next_deadline_s = release, release + period
        self._layout(rt)
        while True:
            if env.now < release:
                yield env.timeout(release - env.now)
            t.release_s, t.deadline_s = release, t.next_deadline_s
            t.recording, t.frame_end, t.done = True, False, False
            rt.swap_done = env.event()
            blocks = rt.upcoming
            for b in blocks:
                yield env.timeout(cfg.record_s_per_command * b.commands)
                if scheduled:
                    t.queue.append(b)
                else:  # straight to the driver
                    yield env.timeout(cfg.dispatch_s_per_command * b.commands)
                    b.dispatched_at = env.now
                    self.gpu.put((b, rt))
            t.recording = False
            if scheduled:
                self._notify()
            else:
                t.frame_end = True
            yield rt.swap_done
            self.result.frames.append(FrameRecord(rt.app.name, rt.frame, t.release_s,
                                                  t.deadline_s, env.now, rt.app.period_s))
            rt.frame += 1
            if self.policy == "none":
                release, deadline = env.now, env.now + period
            elif cfg.deadlines == "grid":
                release = max(offset + rt.frame * period, env.now)
                deadline = offset + (rt.frame + 1) * period
            else:
                release = max(t.release_s + period, env.now)
                deadline = release + period
            t.next_release_s, t.next_deadline_s = release, deadline
            self._layout(rt)
            t.done = True
            self._notify()

    def _scheduling_thread(self):
        env, cfg = self.env, self.config
        threads = [rt.thread for rt in self.rts]
        by_thread = {id(rt.thread): rt for rt in self.rts}
        while True:
            self._wake = env.event()
            if not any(t.waiting for t in threads):
                yield self._wake
                continue
            yield env.timeout(cfg.decision_s)
            self.result.decisions += 1
            choice = select(self.policy, threads, env.now, guard=cfg.guard, costs=self.costs)
            if choice is None:
                yield self._wake
                continue
            thread, n = choice
            rt = by_thread[id(thread)]
            blocks = [thread.queue.popleft() for _ in range(n)]
            predicted = 0.0
            for b in blocks:  # the RT dispatches; the ST waits for its acknowledgement
                yield env.timeout(cfg.dispatch_s_per_command * b.commands)
                b.dispatched_at = env.now
                self.gpu.put((b, rt))
                predicted += b.predicted_s
            if not thread.queue:
                thread.frame_end = True
            wake_at = env.now + predicted  # Table 5-9 line 40: next activation
            if wake_at > env.now:
                yield env.timeout(wake_at - env.now)

    def run(self) -> RunResult:
        self.env.process(self._gpu())
        for rt in self.rts:
            self.env.process(self._rendering_thread(rt))
        if self.policy in SCHEDULED:
            self.env.process(self._scheduling_thread())
        self.env.run(until=self.config.duration_s)
        return self.result


def simulate(apps: Sequence[Application], policy: str, predictor: Predictor | None = None,
             config: SimConfig | None = None) -> RunResult:
    """Run ``apps`` under ``policy`` for ``config.duration_s`` simulated seconds."""
    return Simulation(apps, policy, predictor, config).run()
