"""``tilesim shader check``: parse and run every TGSI file under a folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.backend import to_host
from tilesim.backend import xp as active_xp
from tilesim.errors import TilesimError
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse_file
from tilesim.shaders.synthetic_inputs import generate, load_interface


@dataclass
class CheckResult:
    path: str
    ok: bool
    error: str | None = None
    instructions: int = 0
    lanes: int = 0
    nonfinite_outputs: int = 0
    killed: int = 0
    dynamic: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def find_tgsi(paths: list[str | Path]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(p.rglob("*.tgsi"))
        elif p.exists():
            found.append(p)
        else:
            raise TilesimError(f"{p}: no such file or folder")
    return found


def check_file(path: Path, *, width: int = 32, height: int = 32, seed: int = 0,
               instruction_budget: int | None = None) -> CheckResult:
    """Parse ``path``, run it over generated inputs, and summarize what happened."""
    try:
        program = parse_file(path)
        interp = Interpreter(program, instruction_budget=instruction_budget)
        gen = generate(program, width=width, height=height, seed=seed,
                       interface=load_interface(path), xp=active_xp())
        execution = interp.run(gen.inputs, gen.constants, lanes=gen.lanes,
                               system_values=gen.system_values)
    except TilesimError as exc:
        return CheckResult(str(path), False, str(exc))
    outputs = to_host(execution.outputs)
    written = sorted(program.output_semantics())
    nonfinite = int((~np.isfinite(outputs[written])).sum()) if written else 0
    return CheckResult(
        str(path), True, instructions=len(program.instructions), lanes=gen.lanes,
        nonfinite_outputs=nonfinite, killed=int(to_host(execution.killed).sum()),
        dynamic=execution.stats.totals())
