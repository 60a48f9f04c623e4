"""The shader core's configuration: ``shader_core.toml`` (every number with its source).

A user's file holds the same keys with the same units (the shipped file is the schema); numbers
are positive integers (flags 0 or 1), choices one of their named schemes. ``CoreConfig.params``
is the int64 array the compiled cycle loop reads, indexed by the ``P_*`` constants below.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.inputs import read_toml
from tilesim.memory_budget import check_memory
from tilesim.timing.config import _some

SHADER_CORE_TOML = Path(__file__).resolve().parent / "shader_core.toml"

CHOICES = {
    "warps.id_policy": ("round_robin", "lowest"),
    "registers.bank_hash": ("warp_shift", "sequential", "xor"),
    "registers.per_warp": ("program", "fixed80"),
}
FLAGS = {"fetch.wait_for_branches"}
# Sizes in bytes and registers, and latencies, may be up to 2^24; every other number counts a
# structure the core holds and scans cycle by cycle (warp slots, queue entries, collector
# units, banks, functional units, ports, ways, widths), at most STRUCTURE_MAX: 16M collector
# units ran one `tilesim core` for hours, deaf to Ctrl-C inside its compiled loop.
SIZES = {"registers.total", "instruction_cache.size", "instruction_cache.line_size",
         "instruction_cache.instruction_size", "texture.cache_size", "texture.cache_line"}
STRUCTURE_MAX = 1 << 16

# Indices of CoreConfig.params (the compiled loop's view of the numbers).
(P_MAX_WARPS, P_THREADS, P_ENTRY_PER_CYCLE, P_ID_POLICY, P_TOTAL_REGS, P_BANKS, P_BANK_HASH,
 P_FETCH_WIDTH, P_WAIT_BRANCH, P_IC_SETS, P_IC_WAYS, P_IC_LINE_INSTR, P_IC_LATENCY, P_IC_MISS,
 P_IBUF_SLOTS, P_ISSUE_WIDTH, P_ISOC_SIZE, P_ISOC_IN, P_ISOC_OUT, P_CUS, P_DISPATCH_WIDTH,
 P_OCEX_SIZE, P_OCEX_OUT, P_ALUS, P_EOP_UNITS, P_LAT_ALU, P_LAT_TRANS, P_LAT_BRANCH, P_LAT_EOP,
 P_TC_SETS, P_TC_WAYS, P_TC_LINE, P_TC_LATENCY, P_TC_FILTER, P_TC_MISS, P_MEM_PORTS,
 P_COUNT) = range(37)

HASHES = CHOICES["registers.bank_hash"]


@dataclass(frozen=True)
class CoreConfig:
    path: str
    values: dict          # dotted key -> int or str
    sources: dict         # dotted key -> source text

    def __getitem__(self, key: str):
        return self.values[key]

    def replace(self, **changes) -> CoreConfig:
        """A copy with some values changed: ``cfg.replace(**{"registers.banks": 8})``."""
        values = dict(self.values)
        for key, value in changes.items():
            if key not in values:
                raise KeyError(key)
            values[key] = value
        checked = _check_values(values, self.path)
        return CoreConfig(self.path, checked, self.sources)

    @property
    def digest(self) -> str:
        """A short hash of the values (the throughput cache's key)."""
        text = json.dumps(self.values, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def params(self) -> np.ndarray:
        v = self.values
        p = np.zeros(P_COUNT, dtype=np.int64)
        p[P_MAX_WARPS] = v["warps.max_warps"]
        p[P_THREADS] = v["warps.threads"]
        p[P_ENTRY_PER_CYCLE] = v["warps.entry_per_cycle"]
        p[P_ID_POLICY] = CHOICES["warps.id_policy"].index(v["warps.id_policy"])
        p[P_TOTAL_REGS] = v["registers.total"]
        p[P_BANKS] = v["registers.banks"]
        p[P_BANK_HASH] = HASHES.index(v["registers.bank_hash"])
        p[P_FETCH_WIDTH] = v["fetch.width"]
        p[P_WAIT_BRANCH] = v["fetch.wait_for_branches"]
        ic_line = v["instruction_cache.line_size"]
        p[P_IC_WAYS] = v["instruction_cache.ways"]
        p[P_IC_SETS] = v["instruction_cache.size"] // (ic_line * p[P_IC_WAYS])
        p[P_IC_LINE_INSTR] = max(ic_line // v["instruction_cache.instruction_size"], 1)
        p[P_IC_LATENCY] = v["instruction_cache.latency"]
        p[P_IC_MISS] = v["instruction_cache.miss_latency"]
        p[P_IBUF_SLOTS] = v["ibuffer.slots"]
        p[P_ISSUE_WIDTH] = v["issue.width"]
        p[P_ISOC_SIZE] = v["is_oc.size"]
        p[P_ISOC_IN] = v["is_oc.input_width"]
        p[P_ISOC_OUT] = v["is_oc.output_width"]
        p[P_CUS] = v["operand_collector.collector_units"]
        p[P_DISPATCH_WIDTH] = v["operand_collector.dispatch_width"]
        p[P_OCEX_SIZE] = v["oc_ex.size"]
        p[P_OCEX_OUT] = v["oc_ex.output_width"]
        p[P_ALUS] = v["execute.alus"]
        p[P_EOP_UNITS] = v["execute.eop_units"]
        p[P_LAT_ALU] = v["execute.alu_latency"]
        p[P_LAT_TRANS] = v["execute.transcendental_latency"]
        p[P_LAT_BRANCH] = v["execute.branch_latency"]
        p[P_LAT_EOP] = v["execute.eop_latency"]
        p[P_TC_WAYS] = v["texture.cache_ways"]
        p[P_TC_LINE] = v["texture.cache_line"]
        p[P_TC_SETS] = v["texture.cache_size"] // (p[P_TC_LINE] * p[P_TC_WAYS])
        p[P_TC_LATENCY] = v["texture.cache_latency"]
        p[P_TC_FILTER] = v["texture.filter_latency"]
        p[P_TC_MISS] = v["texture.miss_latency"]
        p[P_MEM_PORTS] = v["writeback.memory_ports"]
        return p


def _flatten(table: dict, prefix: str, out: dict, where: str) -> None:
    for key, entry in table.items():
        name = f"{prefix}{key}"
        if not isinstance(entry, dict):
            raise InputError(f"{name}: expected a table {{value, unit, source}}", source=where)
        if {"value", "unit", "source"} & set(entry):
            out[name] = entry
        else:
            _flatten(entry, f"{name}.", out, where)


def _read(path: Path) -> dict[str, dict]:
    data = read_toml(path, "config file")
    entries: dict[str, dict] = {}
    _flatten(data, "", entries, str(path))
    return entries


def _check_values(values: dict, where: str) -> dict:
    out = {}
    for name, value in values.items():
        if name in CHOICES:
            if value not in CHOICES[name]:
                raise InputError(f"{name}: expected one of {', '.join(CHOICES[name])}, got "
                                 f"{value!r}", source=where)
            out[name] = value
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{name}.value: expected an integer, got {value!r}", source=where)
        low = 0 if name in FLAGS else 1
        high = (1 if name in FLAGS else 1 << 24 if name in SIZES or name.endswith("latency")
                else STRUCTURE_MAX)
        if not low <= value <= high:
            raise InputError(f"{name}.value: must be in [{low}, {high}], got {value}",
                             source=where)
        out[name] = int(value)
    for cache in ("instruction_cache", "texture"):
        size = out[f"{cache}.size" if cache == "instruction_cache" else "texture.cache_size"]
        line = out[f"{cache}.line_size" if cache == "instruction_cache" else "texture.cache_line"]
        ways = out[f"{cache}.ways" if cache == "instruction_cache" else "texture.cache_ways"]
        if size % (line * ways):
            raise InputError(f"{cache}: size must be a multiple of ways x line size", source=where)
    # the largest arrays of the core's state (timing/shader_core/state.py), 3 int64 each:
    # the warps' instruction buffers and each cache's lines, before anything is allocated
    lines = (out["warps.max_warps"] * out["ibuffer.slots"]
             + out["instruction_cache.size"] // out["instruction_cache.line_size"]
             + out["texture.cache_size"] // out["texture.cache_line"])
    check_memory("the shader core's warp slots and cache lines", 3 * 8 * lines, where)
    return out


def load_core_config(path: str | Path | None = None) -> CoreConfig:
    """The shader core's parameters (the shipped ``shader_core.toml`` when ``path`` is None)."""
    schema = _read(SHADER_CORE_TOML)
    file = SHADER_CORE_TOML if path is None else Path(path)
    entries = schema if path is None else _read(file)
    where = str(file)
    missing = sorted(set(schema) - set(entries))
    unknown = sorted(set(entries) - set(schema))
    # the first few, as the GPU configuration's errors: a file of another kind listed every
    # key of both in one line of 1,000 characters
    if missing:
        raise InputError(f"missing key(s): {_some(missing)} (expected every key of "
                         f"{SHADER_CORE_TOML.name})", source=where)
    if unknown:
        raise InputError(f"unknown key(s): {_some(unknown)} (expected only the keys of "
                         f"{SHADER_CORE_TOML.name})", source=where)
    values, sources = {}, {}
    for name, entry in entries.items():
        extra = set(entry) - {"value", "unit", "source"}
        if extra:
            raise InputError(f"{name}: unexpected field(s) {sorted(extra)}", source=where)
        if entry.get("unit") != schema[name]["unit"]:
            raise InputError(f"{name}.unit: expected {schema[name]['unit']!r}, got "
                             f"{entry.get('unit')!r}", source=where)
        source = entry.get("source")
        if not isinstance(source, str) or not source.strip():
            raise InputError(f"{name}.source: say where the number comes from", source=where)
        values[name], sources[name] = entry.get("value"), source
    return CoreConfig(where, _check_values(values, where), sources)
