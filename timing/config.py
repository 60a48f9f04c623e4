"""Load and validate the GPU and energy configuration files (TOML data, never code).

Each parameter is a table ``{value = N, unit = "...", source = "..."}``. The shipped files
(``baseline_gpu.toml``, ``energy_32nm.toml``) are also the schema: a user's file must hold the
same keys with the same units, a positive (energy: non-negative) number as value (a ``flag``,
a modelling switch: 0 or 1) and a non-empty ``source``. Errors name the file and the dotted key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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
    # the documented range of an uncertain parameter (``range = [low, high]``), for
    # ``tilesim estimate --sensitivity``
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)

    def __getitem__(self, key: str) -> float:
        return self.values[key]

    def replace(self, **values: float) -> Config:
        """A copy with some values changed (keys as ``memory.bandwidth``)."""
        unknown = sorted(set(values) - set(self.values))
        if unknown:
            raise KeyError(f"unknown parameter(s): {', '.join(unknown)}")
        return Config(self.path, {**self.values, **values}, self.units, self.sources,
                      self.ranges)


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
    values, units, sources, ranges = {}, {}, {}, {}
    for name, entry in entries.items():
        extra = set(entry) - {"value", "unit", "source", "range"}
        if extra:
            raise InputError(f"{name}: unexpected field(s) {sorted(extra)}; "
                             "expected value, unit, source (and an optional range)",
                             source=where)
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
        if "range" in entry:
            ranges[name] = _range(entry["range"], float(value), unit, name, where)
    return Config(where, values, units, sources, ranges)


def _range(bounds, value: float, unit: str, name: str, where: str) -> tuple[float, float]:
    """A documented range: two finite numbers, low <= value <= high (a flag's: [0, 1])."""
    if (not isinstance(bounds, list) or len(bounds) != 2
            or any(isinstance(b, bool) or not isinstance(b, int | float)
                   or not math.isfinite(b) for b in bounds)):
        raise InputError(f"{name}.range: expected [low, high], got {bounds!r}", source=where)
    low, high = float(bounds[0]), float(bounds[1])
    if not low <= value <= high or (unit == "flag" and (low, high) != (0.0, 1.0)):
        raise InputError(f"{name}.range: [{low:g}, {high:g}] must hold the value {value:g}"
                         f"{' (a flag: [0, 1])' if unit == 'flag' else ''}", source=where)
    return low, high


def warp_instruction_floor(cfg: Config) -> float:
    """The fewest cycles a shader processor spends on one warp instruction: its
    ``processors.shader.lanes`` threads at ``processors.shader.threads_per_cycle`` a cycle
    (baseline_gpu.toml states the two readings). A derived figure of the configuration, read by
    the analytic model and the cycle-level reference alike."""
    return cfg["processors.shader.lanes"] / cfg["processors.shader.threads_per_cycle"]


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
