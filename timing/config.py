"""Load and validate the GPU and energy configuration files (TOML data, never code).

Each parameter is a table ``{value = N, unit = "...", source = "..."}``. The shipped files
(``baseline_gpu.toml``, ``energy_32nm.toml``) are also the schema: a user's file must hold the
same keys with the same units, a positive (energy: non-negative) number as value (a ``flag``,
a modelling switch: 0 or 1) and a non-empty ``source``. Errors name the file and the dotted key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tilesim.errors import InputError

HERE = Path(__file__).resolve().parent
BASELINE_GPU = HERE / "baseline_gpu.toml"
ENERGY_32NM = HERE / "energy_32nm.toml"


@dataclass(frozen=True)
class Config:
    """Flattened parameters: ``values["memory.bandwidth"] == 4.0``; units and sources alongside."""

    path: str
    values: dict[str, float]
    units: dict[str, str]
    sources: dict[str, str]

    def __getitem__(self, key: str) -> float:
        return self.values[key]


def _flatten(table: dict, prefix: str, out: dict, where: str) -> None:
    for key, entry in table.items():
        name = f"{prefix}{key}"
        if not isinstance(entry, dict):
            raise InputError(f"{name}: expected a table {{value, unit, source}}, got "
                             f"{type(entry).__name__}", source=where)
        if "value" in entry or "unit" in entry or "source" in entry:
            out[name] = entry
        else:
            _flatten(entry, f"{name}.", out, where)


def _parse(path: Path) -> dict[str, dict]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise InputError("config file not found", source=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", source=str(path)) from None
    entries: dict[str, dict] = {}
    _flatten(data, "", entries, str(path))
    return entries


def _build(path: Path, schema: dict[str, dict] | None, schema_file: Path,
           allow_zero: bool) -> Config:
    entries = _parse(path)
    where = str(path)
    if schema is not None:
        missing = sorted(set(schema) - set(entries))
        unknown = sorted(set(entries) - set(schema))
        if missing:
            raise InputError(f"missing key(s): {', '.join(missing)}", source=where)
        if unknown:
            raise InputError(f"unknown key(s): {', '.join(unknown)} (expected only the keys "
                             f"of {schema_file.name})", source=where)
    values, units, sources = {}, {}, {}
    for name, entry in entries.items():
        extra = set(entry) - {"value", "unit", "source"}
        if extra:
            raise InputError(f"{name}: unexpected field(s) {sorted(extra)}; "
                             "expected value, unit, source", source=where)
        value = entry.get("value")
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise InputError(f"{name}.value: expected a finite number, got {value!r}",
                             source=where)
        unit = entry.get("unit")
        if not isinstance(unit, str) or not unit:
            raise InputError(f"{name}.unit: expected a unit string", source=where)
        if unit == "flag":  # a modelling switch: 1 on, 0 off
            if value not in (0, 1):
                raise InputError(f"{name}.value: a flag is 0 or 1, got {value!r}", source=where)
        elif value < 0 or (value == 0 and not allow_zero):
            bound = "non-negative" if allow_zero else "positive"
            raise InputError(f"{name}.value: must be {bound}, got {value!r}", source=where)
        if schema is not None and unit != schema[name]["unit"]:
            raise InputError(f"{name}.unit: expected {schema[name]['unit']!r}, got {unit!r}",
                             source=where)
        src = entry.get("source")
        if not isinstance(src, str) or not src.strip():
            raise InputError(f"{name}.source: say where the number comes from (a citation or "
                             "'estimate: <reasoning>')", source=where)
        values[name], units[name], sources[name] = float(value), unit, src
    return Config(where, values, units, sources)


def load_gpu_config(path: str | Path | None = None) -> Config:
    """The GPU parameters (``baseline_gpu.toml`` when ``path`` is None), validated."""
    schema = None if path is None else _parse(BASELINE_GPU)
    cfg = _build(Path(path) if path is not None else BASELINE_GPU, schema, BASELINE_GPU,
                 allow_zero=False)
    if cfg["memory.latency_min"] > cfg["memory.latency_max"]:
        raise InputError("memory.latency_min: must not exceed memory.latency_max "
                         f"({cfg['memory.latency_min']:g} > {cfg['memory.latency_max']:g})",
                         source=cfg.path)
    return cfg


def load_energy_config(path: str | Path | None = None) -> Config:
    """The per-event energies and leakage (``energy_32nm.toml`` when ``path`` is None)."""
    schema = None if path is None else _parse(ENERGY_32NM)
    return _build(Path(path) if path is not None else ENERGY_32NM, schema, ENERGY_32NM,
                  allow_zero=True)
