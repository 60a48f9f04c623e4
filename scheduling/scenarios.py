"""The multitasking scenarios MTS-1 and MTS-2 of seed 004 (*Fine-Grained Semantics Driven
Scheduling*) §6.2, from tilesim workloads.

``scenarios.toml`` holds the applications (which cluster workload, window size, how many
distinct frames), the scenarios (004 Tables 6-2 and 6-3: priority and frame rate of each
application) and the run's parameters (decision overhead, CPU costs per command, guard).

Command-block costs come from rendering: each application's frames are split into blocks
(:func:`blocks.split_frame`) and every prefix of a frame (its commands up to the end of block
``k``, then the swap) is rendered on tilesim's tile-based model and timed by the analytic
model (``tilesim.timing.model``); block ``k`` costs ``T(prefix k) - T(prefix k-1)``, with
``T(prefix -1)`` the time of an empty frame. The costs of a frame's blocks therefore add up
to the model's time for the whole frame (a block's share of the tile flush falls on the first
block that renders into the tile). Rendering takes a minute or more (the spam application's
36 full-window layers with a long fragment program), so the result is kept in
``blocks.json`` beside this module and made again with :func:`build_blocks` (``tilesim
schedule --rebuild-blocks``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from tilesim.errors import InputError, resolve_name
from tilesim.inputs import read_input_text, read_toml
from tilesim.scheduling.blocks import BlockSpec, split_frame
from tilesim.scheduling.simulation import Application, SimConfig

HERE = Path(__file__).parent
SCENARIOS_TOML = HERE / "scenarios.toml"
BLOCKS_JSON = HERE / "blocks.json"


@dataclass
class Scenarios:
    path: Path
    run: dict
    apps: dict[str, dict]
    scenarios: dict[str, list[dict]]


def load_scenarios(path: str | Path | None = None) -> Scenarios:
    """Read and check a scenarios file (default: the bundled ``scenarios.toml``)."""
    path = Path(path) if path is not None else SCENARIOS_TOML
    where = str(path)
    data = read_toml(path, "scenarios file")
    run, apps, scen = data.get("run", {}), data.get("apps", {}), data.get("scenarios", {})
    if not isinstance(apps, dict) or not apps:
        raise InputError("no [apps.NAME] tables", source=where)
    for name, app in apps.items():
        if app.get("kind") not in ("speedometer", "tachometer", "menu", "spam"):
            raise InputError(f"apps.{name}.kind must be speedometer, tachometer, menu or "
                             f"spam, got {app.get('kind')!r}", source=where)
        size = app.get("size")
        if (not isinstance(size, list) or len(size) != 2
                or not all(isinstance(v, int) and v > 0 for v in size)):
            raise InputError(f"apps.{name}.size must be [width, height] in pixels",
                             source=where)
        if not (isinstance(app.get("frames", 1), int) and app.get("frames", 1) >= 1):
            raise InputError(f"apps.{name}.frames must be a positive integer", source=where)
    out = {}
    for sname, body in scen.items():
        entries = body.get("apps") if isinstance(body, dict) else None
        if not isinstance(entries, list) or not entries:
            raise InputError(f"scenarios.{sname}.apps must be a list of applications",
                             source=where)
        for e in entries:
            if e.get("app") not in apps:
                raise InputError(f"scenarios.{sname}: unknown app {e.get('app')!r}",
                                 source=where)
            fps, prio = e.get("fps"), e.get("priority")
            if not (isinstance(fps, (int, float)) and fps > 0 and math.isfinite(fps)):
                raise InputError(f"scenarios.{sname}: {e.get('app')}.fps must be > 0",
                                 source=where)
            if not (isinstance(prio, int) and prio >= 1):
                raise InputError(f"scenarios.{sname}: {e.get('app')}.priority must be an "
                                 "integer >= 1", source=where)
        prios = [e["priority"] for e in entries]
        if len(set(prios)) != len(prios):
            raise InputError(f"scenarios.{sname}: priorities must be unique (004 §5.7.1)",
                             source=where)
        out[sname] = entries
    try:
        SimConfig(**{k: v for k, v in run.items() if k != "duration_s"})
    except (TypeError, ValueError) as exc:
        raise InputError(f"[run]: {exc}", source=where) from None
    return Scenarios(path, run, apps, out)


def sim_config(scen: Scenarios, **overrides) -> SimConfig:
    values = {**scen.run, **{k: v for k, v in overrides.items() if v is not None}}
    return SimConfig(**values)


def time_blocks(frames, width: int, height: int, keep: list[int]) -> list[list[BlockSpec]]:
    """Block specs of frames ``keep`` of recorded ``frames``, timed by rendering prefixes
    (module docstring). Frame 0's setup (its commands before its first draw) is replayed
    first, so the textures and buffers exist."""
    from tilesim.render.gl.commands import Command
    from tilesim.render.replay import render_frames
    from tilesim.timing.config import load_energy_config, load_gpu_config
    from tilesim.timing.model import estimate_frames

    end = Command("endFrame")
    first = [c.op for c in frames[0]]
    setup_end = next((k for k, op in enumerate(first) if op in ("drawArrays", "drawElements")),
                     len(first) - 1)
    sequence = [frames[0][:setup_end] + [end]]
    layout = []
    for j in keep:
        commands = frames[j]
        spans = split_frame([c.op for c in commands])
        start = len(sequence)
        sequence.append([end])
        for _, stop, _kind in spans:
            prefix = commands[:stop]
            sequence.append(prefix if prefix[-1].op == "endFrame" else prefix + [end])
        layout.append((start, spans))
    results = list(render_frames(sequence, width, height))
    seconds = [e.seconds for e in estimate_frames([r.counters for r in results],
                                                  load_gpu_config(), load_energy_config())]
    shaded = [float(r.counters.total("fragments_shaded")) for r in results]
    out = []
    for start, spans in layout:
        specs = []
        for k, (begin, stop, kind) in enumerate(spans):
            cost = max(0.0, seconds[start + 1 + k] - seconds[start + k])
            fragments = max(0.0, shaded[start + 1 + k] - shaded[start + k])
            specs.append(BlockSpec(kind, stop - begin, cost, fragments))
        out.append(specs)
    return out


def build_app(scen: Scenarios, name: str) -> list:
    """The recorded frames of application ``name``: frame 0 (its set-up, then a first frame)
    and the ``frames`` distinct frames the run cycles through (1 .. frames)."""
    from tilesim.render.workloads import cluster

    app = scen.apps[name]
    n = int(app.get("frames", 1))
    w, h = app["size"]
    extra = {k: int(app[k]) for k in ("draws", "layers", "rounds") if k in app}
    return cluster.build(app["kind"], w, h, n + 1, seed=int(app.get("seed", 0)), **extra)


def build_blocks(scen: Scenarios, names: list[str] | None = None,
                 progress=None) -> dict[str, list[list[BlockSpec]]]:
    """Render and time the applications ``names`` (default: all) of ``scen``."""
    out = {}
    for name in names or list(scen.apps):
        frames = build_app(scen, name)
        if progress:
            progress(name)
        w, h = scen.apps[name]["size"]
        out[name] = time_blocks(frames, w, h, list(range(1, len(frames))))
    return out


def blocks_to_json(blocks: dict[str, list[list[BlockSpec]]], scen: Scenarios) -> dict:
    return {"about": "command blocks of the cluster applications, timed by rendering frame "
                     "prefixes on tilesim (tilesim.scheduling.scenarios)",
            "block": ["kind", "commands", "seconds", "fragments shaded"],
            "apps": {name: {"workload": scen.apps[name],
                            "frames": [[[b.kind, b.commands, b.actual_s]
                                        + ([] if b.fragments is None else [b.fragments])
                                        for b in f] for f in frames]}
                     for name, frames in blocks.items()}}


BLOCK_KINDS = ("draw", "swap", "synchronous", "state")


def _spec(entry, where: str) -> BlockSpec:
    """A block of a block-cost file: [kind, commands, seconds] or [..., fragments]."""
    if not isinstance(entry, list) or len(entry) not in (3, 4):
        raise ValueError(f"{where}: a block is [kind, commands, seconds(, fragments)], got "
                         f"{entry!r:.80}")
    kind, commands, numbers = entry[0], entry[1], entry[2:]
    if kind not in BLOCK_KINDS:
        raise ValueError(f"{where}: kind must be one of {', '.join(BLOCK_KINDS)}, got "
                         f"{kind!r:.40}")
    if isinstance(commands, bool) or not isinstance(commands, int) or \
            not 1 <= commands <= 1 << 31:
        raise ValueError(f"{where}: commands must be an integer in 1..{1 << 31}, got "
                         f"{commands!r:.40}")
    if any(isinstance(n, bool) or not isinstance(n, (int, float)) for n in numbers):
        raise ValueError(f"{where}: seconds and fragments must be numbers, got {numbers!r:.80}")
    try:
        return BlockSpec(kind, commands, float(numbers[0]),
                         None if len(numbers) == 1 else float(numbers[1]))
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _frames(name: str, body) -> list[list[BlockSpec]]:
    frames = body.get("frames") if isinstance(body, dict) else None
    if not isinstance(frames, list) or not frames or not all(
            isinstance(f, list) and f for f in frames):
        raise ValueError(f"apps.{name}: frames must be a non-empty list of non-empty lists of "
                         "blocks")
    return [[_spec(b, f"apps.{name}.frames[{j}][{k}]") for k, b in enumerate(frame)]
            for j, frame in enumerate(frames)]


def load_blocks(path: str | Path | None = None) -> dict[str, list[list[BlockSpec]]]:
    path = Path(path) if path is not None else BLOCKS_JSON
    try:
        data = json.loads(read_input_text(path, "block-cost file"))
        apps = data.get("apps") if isinstance(data, dict) else None
        if not isinstance(apps, dict):
            raise ValueError("apps must be a JSON object of applications")
        return {name: _frames(name, body) for name, body in apps.items()}
    except (RecursionError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise InputError(f"not a block-cost file ({exc})", source=str(path)) from None


def applications(scen: Scenarios, scenario: str,
                 blocks: dict[str, list[list[BlockSpec]]]) -> list[Application]:
    """The applications of ``scenario`` with their timed blocks."""
    scenario = resolve_name("scenario", scenario, scen.scenarios, source=str(scen.path))
    apps = []
    for e in scen.scenarios[scenario]:
        if e["app"] not in blocks:
            raise InputError(f"no block costs for {e['app']!r} (rebuild them with "
                             "--rebuild-blocks)", source=str(BLOCKS_JSON))
        apps.append(Application(e["app"], e["priority"], float(e["fps"]), blocks[e["app"]]))
    return apps


def app_commands(scen: Scenarios, apps: list[Application], where: str = "blocks.json"):
    """The recorded commands of ``apps`` (built again, as their block costs were), each
    checked against its block costs: what the prediction study's estimators predict from
    (:mod:`~tilesim.scheduling.estimators`)."""
    from tilesim.scheduling.estimators import AppCommands, setup_commands

    out = {}
    for app in apps:
        recorded = build_app(scen, app.name)
        w, h = scen.apps[app.name]["size"]
        commands = AppCommands(app.name, w, h, setup_commands(recorded[0]), recorded[1:])
        commands.check([list(f) for f in app.frames], where)
        out[app.name] = commands
    return out

