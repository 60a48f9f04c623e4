"""Load and validate the GPU and energy configuration files (TOML data, never code).

Each parameter is a table ``{value = N, unit = "...", source = "..."}``. The shipped files
(``baseline_gpu.toml``, ``energy_32nm.toml``) are also the schema: a user's file must hold the
same keys with the same units, a positive (energy: non-negative) number as value (a ``flag``,
a modelling switch: 0 or 1) and a non-empty ``source``. Errors name the file and the dotted key.

:func:`effective_config` is the one way a command builds the configuration it runs with: the
files (or the shipped ones), then ``--set section.key=value`` overrides and ``--tile-size``
(the same fact as ``screen.tile_size``), every value checked as a file's are; its canonical
contents (:meth:`EffectiveConfig.record`) and their SHA-256 are what results.json records
and what a study's units are identified by.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tilesim.errors import InputError
from tilesim.inputs import read_toml

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
    data = read_toml(path, "config file")
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
            raise InputError(f"missing key(s): {_some(missing)} (expected every key of "
                             f"{schema_file.name})", source=where)
        if unknown:
            raise InputError(f"unknown key(s): {_some(unknown)} (expected only the keys "
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
        problem = _value_problem(name, float(value), unit, allow_zero)
        if problem:
            raise InputError(f"{name}.value: {problem}", source=where)
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


def _some(keys: list[str], shown: int = 5) -> str:
    """The first few of ``keys`` and how many more: an error stays a readable line."""
    more = len(keys) - shown
    return ", ".join(keys[:shown]) + (f" and {more} more" if more > 0 else "")


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


# -- the effective configuration ------------------------------------------------------------

# Keys ``--set`` takes besides the files' own: a buffer's size in tiles, i.e. its entries over
# the pixels of a tile (``buffers.color.tiles=2`` sets ``buffers.color.entries`` to 2 x
# screen.tile_size^2, with the tile size the configuration ends with).
TILE_BUFFERS = {"buffers.color.tiles": "buffers.color.entries",
                "buffers.depth.tiles": "buffers.depth.entries"}
# Values that are counts of things, integers (the renderer's and the tile size).
INTEGER_KEYS = ("screen.tile_size", "caches.texture.count", "caches.texture.size",
                "caches.texture.ways", "caches.texture.line_size", "caches.vertex.line_size",
                "techniques.signature.ot_queue_entries", "techniques.memo.lut_sets",
                "techniques.memo.lut_ways", "techniques.memo.signature_bits",
                "limits.texture_units", "limits.viewport_max",
                "limits.renderbuffer_size_max")
# Units of entries that count whole things (processors, queue entries, cache ways and banks,
# DRAM channels and banks): the cycle-level reference builds that many of each, so 0.5 of
# a processor is refused, not truncated to none.
COUNT_UNITS = ("count", "entries", "ways", "banks", "banks/channel", "sets", "lanes/warp")
# Counts the hardware indexes by bits: a power of two (the memoization LUT's set is the key's
# low log2(sets) bits).
POWER_OF_TWO_KEYS = ("techniques.memo.lut_sets", "caches.vertex.line_size")
SET_HELP = ("change one value of the GPU or energy configuration, SECTION.KEY as in their "
            "files (e.g. memory.bandwidth=8; buffers.color.tiles=N sizes the color buffer in "
            "tiles); repeatable, checked as a file's values are")


@dataclass(frozen=True)
class EffectiveConfig:
    """The GPU and energy configuration a command runs with: the files (None: the shipped
    ones), the ``--set`` overrides applied, validated. ``sets`` keeps what was asked (for the
    record); ``gpu`` and ``energy`` are the resulting :class:`Config`."""

    gpu: Config
    energy: Config
    gpu_file: str | None = None
    energy_file: str | None = None
    sets: tuple[tuple[str, float], ...] = ()

    @property
    def tile_size(self) -> int:
        return int(self.gpu["screen.tile_size"])

    def values(self) -> dict:
        """The canonical contents: every value by dotted key, keys sorted, per file."""
        return {"gpu": dict(sorted(self.gpu.values.items())),
                "energy": dict(sorted(self.energy.values.items()))}

    @property
    def sha256(self) -> str:
        """SHA-256 of :meth:`values` as compact JSON with sorted keys: the numbers, not the
        files' paths, units or citations (a reworded source keeps the digest)."""
        text = json.dumps(self.values(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def changed(self) -> dict[str, float]:
        """The values that differ from the shipped files', by dotted key."""
        shipped = EffectiveConfig(load_gpu_config(None), load_energy_config(None)).values()
        mine = self.values()
        return {k: v for part in ("gpu", "energy") for k, v in mine[part].items()
                if shipped[part].get(k) != v}

    def renderer_values(self, keys) -> dict:
        """The values of ``keys`` (the renderer's, gpu_config.RENDERER_KEYS) that differ from
        the shipped file's: what a render made with this configuration records."""
        shipped = load_gpu_config(None)
        return {k: _number(self.gpu[k]) for k in keys if self.gpu[k] != shipped[k]}

    def record(self) -> dict:
        """What results.json keeps: the files, the overrides, the digest and the values."""
        return {"gpu": self.gpu.path, "energy": self.energy.path,
                "set": {k: _number(v) for k, v in self.sets},
                "sha256": self.sha256, "changed": {k: _number(v)
                                                   for k, v in self.changed().items()},
                "values": self.values()}

    def line(self) -> str:
        """One line for a report: the digest and what differs from the shipped files."""
        changed = self.changed()
        what = (", ".join(f"{k}={_number(v):g}" for k, v in changed.items()) if changed
                else "the shipped files")
        return f"configuration {self.sha256[:12]} ({what})"


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def config_from_record(record: dict) -> EffectiveConfig:
    """The configuration results.json recorded (:meth:`EffectiveConfig.record`); a record of
    an older tilesim (files' paths only) is loaded from those files."""
    values = record.get("values") if isinstance(record, dict) else None
    if not isinstance(values, dict):
        record = record if isinstance(record, dict) else {}
        return EffectiveConfig(load_gpu_config(record.get("gpu")),
                               load_energy_config(record.get("energy")))
    gpu, energy = load_gpu_config(None), load_energy_config(None)
    try:
        return EffectiveConfig(gpu.replace(**values["gpu"]), energy.replace(**values["energy"]),
                               record.get("gpu"), record.get("energy"))
    except (KeyError, TypeError) as exc:
        raise InputError(f"results.json: the configuration recorded does not fit this "
                         f"tilesim's ({exc})") from None


def parse_set(text: str) -> tuple[str, float]:
    """``section.key=value`` as (key, value); InputError naming the key on a malformed one."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key or not raw:
        raise InputError(f"expected SECTION.KEY=VALUE (e.g. memory.bandwidth=8), got {text!r}",
                         source="--set")
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"expected a number, got {raw!r}", source=f"--set {key}") from None
    if not math.isfinite(value):
        raise InputError(f"expected a finite number, got {raw!r}", source=f"--set {key}")
    return key, value


def effective_config(config: str | Path | None = None, energy_config: str | Path | None = None,
                     sets=(), tile_size: int | None = None) -> EffectiveConfig:
    """The configuration a command runs with: ``config`` / ``energy_config`` (None: the shipped
    files), then each of ``sets`` (``"section.key=value"`` strings or (key, value) pairs) in
    order, then ``tile_size`` (``--tile-size``: screen.tile_size; a ``--set`` of another value
    is refused). Every value is checked as a file's are (a number, finite, positive or for
    energies non-negative, a flag 0 or 1, within its documented range, integers where counted)
    and the whole as :func:`load_gpu_config` checks it, with an even tile size. Errors are
    one line naming the key."""
    gpu, energy = load_gpu_config(config), load_energy_config(energy_config)
    pairs = [parse_set(s) if isinstance(s, str) else (s[0], float(s[1])) for s in sets]
    if tile_size is not None:
        if tile_size < 2 or tile_size % 2:
            raise InputError(f"an even whole number of pixels >= 2, got {tile_size}",
                             source="--tile-size")
        given = [v for k, v in pairs if k == "screen.tile_size"]
        if given and given[-1] != tile_size:
            raise InputError(f"{tile_size} and --set screen.tile_size={_number(given[-1])} "
                             "disagree: they are one setting, give one", source="--tile-size")
        pairs.append(("screen.tile_size", float(tile_size)))
    new_gpu, new_energy, tiles = {}, {}, {}
    for key, value in pairs:
        if key in TILE_BUFFERS:
            tiles[key] = value
        elif key in gpu.values:
            new_gpu[key] = _checked(gpu, key, value, allow_zero=False)
        elif key in energy.values:
            new_energy[key] = _checked(energy, key, value, allow_zero=True)
        else:
            raise InputError("no such key in the GPU or energy configuration"
                             + _suggest(key, [*gpu.values, *energy.values, *TILE_BUFFERS]),
                             source=f"--set {key}")
    gpu = gpu.replace(**new_gpu)
    tile = gpu["screen.tile_size"]
    for key, value in tiles.items():
        if value < 1 or not value.is_integer():
            raise InputError(f"a whole number of tiles (1 or more), got {_number(value)}",
                             source=f"--set {key}")
        entries = TILE_BUFFERS[key]
        gpu = gpu.replace(**{entries: _checked(gpu, entries, value * tile * tile, False)})
    cfg = EffectiveConfig(gpu, energy.replace(**new_energy),
                          None if config is None else str(config),
                          None if energy_config is None else str(energy_config),
                          tuple(pairs))
    _check_whole(cfg)
    return cfg


def _value_problem(key: str, value: float, unit: str, allow_zero: bool) -> str | None:
    """What is wrong with ``value`` for the entry ``key`` (of ``unit``), or None: the one
    check of a value, whether a file or ``--set`` gave it. A flag is 0 or 1; anything else
    positive (energies: non-negative) and not subnormal; counts (:data:`INTEGER_KEYS`, and
    every entry counted in whole things by its unit, :data:`COUNT_UNITS`) whole, and those
    indexed by bits (:data:`POWER_OF_TWO_KEYS`) powers of two."""
    if unit == "flag":  # a modelling switch: 1 on, 0 off
        return None if value in (0, 1) else f"a flag is 0 or 1, got {_number(value)}"
    if value < 0 or (value == 0 and not allow_zero):
        return f"must be {'non-negative' if allow_zero else 'positive'}, got {_number(value)}"
    if 0 < value < sys.float_info.min:
        # A subnormal number: the model divides by some values (memory.bandwidth, the
        # clock), and 1 / 1e-320 is inf. No physical parameter is that small.
        return f"{value!r} is too small to compute with (below {sys.float_info.min:.3g})"
    if (key in INTEGER_KEYS or unit in COUNT_UNITS) and not value.is_integer():
        return f"a whole number ({unit}), got {value!r}"
    if key in POWER_OF_TWO_KEYS and int(value) & (int(value) - 1):
        return f"a power of two ({unit}), got {_number(value)}"
    return None


def _checked(cfg: Config, key: str, value: float, allow_zero: bool) -> float:
    where = f"--set {key}"
    problem = _value_problem(key, value, cfg.units[key], allow_zero)
    if problem:
        raise InputError(problem, source=where)
    low, high = cfg.ranges.get(key, (-math.inf, math.inf))
    if not low <= value <= high:
        raise InputError(f"{_number(value)} is outside its documented range "
                         f"[{_number(low)}, {_number(high)}]", source=where)
    return value


def _check_whole(cfg: EffectiveConfig) -> None:
    """What holds between values: latency bounds ordered, an even tile size of at least 2
    pixels (the renderer's). A color buffer smaller than two tiles is the model's one-tile
    buffer (its flush overlapped per buffers.color.flush_overlap), so --tile-size alone
    needs no --set of the buffers."""
    gpu = cfg.gpu
    where = cfg.gpu_file or "the configuration"
    if gpu["memory.latency_min"] > gpu["memory.latency_max"]:
        raise InputError("memory.latency_min: must not exceed memory.latency_max "
                         f"({gpu['memory.latency_min']:g} > {gpu['memory.latency_max']:g})",
                         source=where)
    tile = gpu["screen.tile_size"]
    if not tile.is_integer() or tile < 2 or tile % 2:
        raise InputError(f"screen.tile_size: an even whole number of pixels >= 2, got "
                         f"{_number(tile)}", source=where)


def non_finite(data, path: str = "") -> str | None:
    """The dotted path of the first number in ``data`` (dicts, lists, numbers) that is
    infinite or NaN, or None."""
    if isinstance(data, float):
        return None if math.isfinite(data) else (path or "the value")
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list | tuple):
        items = enumerate(data)
    else:
        return None
    for key, value in items:
        found = non_finite(value, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def check_finite(data, cfg: EffectiveConfig | None = None) -> None:
    """Refuse (InputError, one line) figures that came out infinite or NaN: a configuration
    whose values are each valid can still overflow the model (a bandwidth of 1e-300 bytes a
    cycle), and no report, results.json or ``--json`` output prints Infinity or NaN."""
    found = non_finite(data)
    if found is None:
        return
    changed = cfg.changed() if cfg is not None else {}
    what = (", ".join(f"{k}={_number(v):g}" for k, v in changed.items()) if changed
            else "the shipped files")
    raise InputError(f"the timing model gives a non-finite {found} with this configuration "
                     f"({what}): a value is out of any sensible scale",
                     source=(cfg.gpu_file if cfg is not None else None) or "the configuration")


def _suggest(key: str, known) -> str:
    import difflib

    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""
