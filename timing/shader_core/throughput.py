"""The per-program figure the timing model uses: cycles per warp instruction and per texture
instruction of one core running the program at a given number of warps in flight, cached
per program text and core configuration so that a frame's estimate is a lookup.

``program_throughput(path, cfg)`` (a program file) and ``text_throughput(text, cfg)`` (a
program's TGSI text, as a frame's counters keep it) run ``warps`` warps (default 512) of
generated inputs through the core with ``warps.max_warps = warps_in_flight`` (default the
configuration's), once per (program text, configuration, warps, warps in flight); the
answer is kept in a JSON file (``TILESIM_CACHE`` or ``~/.cache/tilesim``,
``shader_core_throughput.json``) and, within a process, in memory.
"""

from __future__ import annotations

import json
from pathlib import Path

from tilesim.atomic import write_text
from tilesim.inputs import read_input_text
from tilesim.kernel_cache import cache_root
from tilesim.shaders.ir import program_digest
from tilesim.shaders.parser import parse
from tilesim.shaders.synthetic_inputs import load_interface
from tilesim.timing.shader_core.config import CoreConfig
from tilesim.timing.shader_core.core import simulate
from tilesim.timing.shader_core.warp_paths import record_program

DEFAULT_WARPS = 512
CACHE_NAME = "shader_core_throughput.json"


def cache_file() -> Path:
    return cache_root() / CACHE_NAME


def _key(text: str, cfg: CoreConfig, warps: int, in_flight: int) -> str:
    return f"{program_digest(text)}:{cfg.digest}:{warps}:{in_flight}"


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


_MEMO: dict[str, dict] = {}     # this process's answers: a batch asks for each program once


def program_throughput(path: str | Path, cfg: CoreConfig, *, warps: int = DEFAULT_WARPS,
                       warps_in_flight: int | None = None, use_cache: bool = True) -> dict:
    """{cycles_per_instruction, cycles_per_tex, cycles_per_warp, ipc, ...} of the program."""
    path = Path(path)
    if path.is_dir():
        path = path / "fragment.tgsi"
    text = read_input_text(path, "program file")
    return text_throughput(text, cfg, warps=warps, warps_in_flight=warps_in_flight,
                           use_cache=use_cache, name=str(path),
                           interface=load_interface(path))


def text_throughput(text: str, cfg: CoreConfig, *, warps: int = DEFAULT_WARPS,
                    warps_in_flight: int | None = None, use_cache: bool = True,
                    name: str = "<program>", interface: dict | None = None) -> dict:
    """``program_throughput`` of a TGSI text (a program a trace ran, kept in its counters)."""
    in_flight = int(warps_in_flight or cfg["warps.max_warps"])
    key = _key(text, cfg, warps, in_flight)
    if use_cache and key in _MEMO:
        return _MEMO[key]
    file = cache_file()
    if use_cache:
        cached = _load(file).get(key)
        if cached is not None:
            _MEMO[key] = cached
            return cached
    run_cfg = cfg.replace(**{"warps.max_warps": in_flight})
    program = parse(text, source=name)
    result = simulate(record_program(program, warps, interface=interface, name=name), run_cfg)
    figure = {
        "program": name, "processor": program.processor, "warps": warps,
        "warps_in_flight": in_flight,
        "cycles": result.cycles, "ipc": result.ipc, "cycles_per_warp": result.cycles_per_warp,
        "cycles_per_instruction": result.cycles / max(result.dynamic_instructions, 1),
        "cycles_per_tex": (result.cycles / result.texture_instructions
                           if result.texture_instructions else None),
        "instructions_per_warp": result.dynamic_instructions / result.warps,
        "tex_per_warp": result.texture_instructions / result.warps,
    }
    if use_cache:
        _MEMO[key] = figure
        table = _load(file)
        table[key] = figure
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            write_text(file, json.dumps(table, indent=1, sort_keys=True))
        except OSError:
            pass          # a read-only home: the figure is still right, just not kept
    return figure
