"""Actual block times measured on a real OpenGL ES 2.0 driver (seed 004: a block's
actual time from "the timing model, or measured on a real driver").

``tilesim schedule --actual gl-llvmpipe`` (or ``gl-softpipe``) replaces the GPU seconds of
every block by what Mesa takes to run it, measured by the prediction issue's ground truth
(:class:`tilesim.prediction.ground_truth.GLBackend`: a glFinish before and after each
command group, timed by GL_EXT_disjoint_timer_query where the context offers it, else the
wall clock; seeds 003 §IV-F and 000 §5.2). Each application is replayed in its own context
and window: its frame 0 (the set-up and a first frame, so the driver has compiled its shaders
and made its textures; measured and left out, as 000 §7.4 leaves the first frames out), then
its distinct frames ``repeats`` times over, every block a command group. A block's actual
time is the median of its repeats, so a stray preemption of the (shared) CPU does not become a
block cost. The blocks' structure and their shaded fragments (what the ``oracle`` estimator
and the recent-history estimators read) stay those of the model's block costs: the same
commands, checked.

Measuring takes seconds on llvmpipe and minutes on softpipe, so the times are cached per
application, driver and timer under a key of the application's commands (a changed workload
is measured again).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.scheduling.blocks import BlockSpec, split_frame

SOURCES = ("model", "gl-llvmpipe", "gl-softpipe")
REPEATS = 3


def driver_of(source: str) -> str | None:
    """The Mesa driver of an ``--actual`` source, None for the timing model."""
    if source not in SOURCES:
        raise InputError(f"unknown source of actual times {source!r} (known: "
                         f"{', '.join(SOURCES)})", source="--actual")
    return None if source == "model" else source.removeprefix("gl-")


def commands_key(frames, width: int, height: int) -> str:
    """A digest of an application's recorded frames and window: its cache key."""
    from tilesim.prediction.command_groups import command_digest

    h = hashlib.sha256(f"{width}x{height}".encode())
    for frame in frames:
        for command in frame:
            h.update(command_digest(command))
        h.update(b"|")
    return h.hexdigest()[:16]


def measure_app(frames, width: int, height: int, backend, repeats: int = REPEATS,
                label: str = "<app>") -> list[list[float]]:
    """Seconds of every block of ``frames[1:]`` (frame 0 is the set-up), the median of
    ``repeats`` replays on ``backend`` (a GLBackend, or anything with its ``measure``)."""
    from tilesim.prediction.command_groups import CommandGroup, Context

    if repeats < 1:
        raise InputError(f"must be >= 1, got {repeats}", source="--actual-repeats")
    distinct = frames[1:]
    spans = [split_frame([c.op for c in f]) for f in distinct]
    replay = [frames[0]] + list(distinct) * repeats
    groups = [CommandGroup(0, 0, 0, 0, len(frames[0]), list(frames[0]), 0)]
    for f in range(1, len(replay)):
        for k, (start, stop, _) in enumerate(spans[(f - 1) % len(distinct)]):
            groups.append(CommandGroup(len(groups), 0, f, start, stop,
                                       list(replay[f][start:stop]), 0, frame_position=k))
    seconds = backend.measure(replay, [Context(0, width, height)], [0] * len(replay), groups,
                              source=label)
    return block_medians(seconds, spans, repeats)


def block_medians(seconds, spans: list[list], repeats: int) -> list[list[float]]:
    """Per block of each distinct frame (``spans``), the median over ``repeats`` of the
    measured ``seconds`` (one per group of :func:`measure_app`, the set-up's first)."""
    per_repeat = np.asarray(seconds[1:], dtype=np.float64).reshape(repeats, -1)
    median = np.median(per_repeat, axis=0)
    out, k = [], 0
    for s in spans:
        out.append([float(v) for v in median[k:k + len(s)]])
        k += len(s)
    return out


def with_times(specs: list[list[BlockSpec]], seconds: list[list[float]], name: str
               ) -> list[list[BlockSpec]]:
    """The model's block specs of application ``name`` with the measured seconds."""
    if [len(f) for f in specs] != [len(f) for f in seconds]:
        raise InputError(f"the measured blocks of {name!r} do not match its block costs "
                         "(rebuild them with --rebuild-blocks)", source="--actual")
    return [[BlockSpec(b.kind, b.commands, max(0.0, t), b.fragments)
             for b, t in zip(f, ts, strict=True)] for f, ts in zip(specs, seconds, strict=True)]


def measured_blocks(scen, names: list[str], model_blocks: dict, source: str,
                    timer: str = "auto", cache: str | Path | None = None,
                    repeats: int = REPEATS, progress=None) -> tuple[dict, dict]:
    """(blocks, about): the applications ``names`` of ``scen`` with their blocks' actual
    times from ``source`` (``SOURCES``), cached in ``cache``; ``about`` says, per
    application, the driver, the timer used, the repeats and whether the cache answered."""
    from tilesim.atomic import write_json
    from tilesim.prediction.ground_truth import TIMER_METHODS, GLBackend
    from tilesim.scheduling.estimators import AppCommands, setup_commands
    from tilesim.scheduling.scenarios import build_app

    driver = driver_of(source)
    if driver is None:
        return {n: model_blocks[n] for n in names}, {}
    backend = None
    blocks, about = {}, {}
    for name in names:
        frames = build_app(scen, name)
        w, h = scen.apps[name]["size"]
        AppCommands(name, w, h, setup_commands(frames[0]), frames[1:]).check(
            [list(f) for f in model_blocks[name]], "--actual")
        key = commands_key(frames, w, h)
        path = (Path(cache) / f"{name}-{source}-{timer}-r{repeats}-{key}.json"
                if cache else None)
        cached = None
        if path is not None and path.exists():
            try:
                cached = json.loads(path.read_text(encoding="utf-8"))
                seconds = cached["seconds"]
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"not a measured block-time file ({exc})",
                                 source=str(path)) from None
            if cached.get("method") != TIMER_METHODS.get(cached.get("timer")):
                cached = None   # measured another way (llvmpipe's query before its anchor)
        if cached is None:
            if progress:
                progress(name)
            backend = backend or GLBackend(driver, timer=timer)
            seconds = measure_app(frames, w, h, backend, repeats, label=name)
            cached = {"about": "median GPU seconds of each block of each distinct frame, "
                               "measured on Mesa (tilesim.scheduling.actual)",
                      "app": name, "driver": driver, "timer": backend.timer,
                      "method": backend.method, "repeats": repeats, "seconds": seconds}
            if backend.timer == "query":
                # what the wall clock between the two glFinish saw at the same time: a
                # software driver's query may not see all of its work (the note compares)
                spans = [split_frame([c.op for c in f]) for f in frames[1:]]
                cached["wall_seconds"] = block_medians(backend.wall, spans, repeats)
            if path is not None:
                write_json(path, cached)
            cached["cached"] = False
        blocks[name] = with_times(model_blocks[name], seconds, name)
        about[name] = {"driver": cached["driver"], "timer": cached["timer"],
                       "repeats": cached["repeats"], "cached": cached.get("cached", True),
                       "file": None if path is None else str(path)}
    return blocks, about
