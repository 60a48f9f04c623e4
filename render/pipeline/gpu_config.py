"""The GPU configuration file as the renderer reads it.

A few entries of ``timing/baseline_gpu.toml`` decide what the renderer counts (the texture
caches' geometry, the Overlapped Tiles Queue) or computes (mediump in fp16). The timing model
reads the same file, so each number has one source; the renderer reads the data file, not
``tilesim.timing``, which sits above it.
"""

from __future__ import annotations

import contextlib
import functools
from importlib.resources import files
from pathlib import Path

from tilesim.errors import InputError
from tilesim.inputs import read_toml

# Found as a resource of the installed package (the timing package's __init__ runs no code),
# not by a path relative to this file: the repository's folders and the installed package's
# are laid out differently.
GPU_CONFIG = Path(str(files("tilesim.timing") / "baseline_gpu.toml"))


# The entries of the GPU configuration the renderer reads: the texture caches' geometry and the
# warps in flight that order their accesses (the texture counters), the vertex cache's line
# (its misses), the Overlapped Tiles Queue (RE's overflow counter), the memoization LUT's
# geometry (its hits) and the GLES2 limits.
# ``processors.shader.mediump_fp16`` is read too, but a render takes it as its own setting
# (``mediump``); ``screen.tile_size`` likewise (``tile_size``). A render made with other values
# of these holds other counters or frames: batch.job_identity records them.
RENDERER_KEYS = ("caches.texture.count", "caches.texture.size", "caches.texture.ways",
                 "caches.texture.line_size", "processors.fragment.warps_in_flight",
                 "caches.vertex.line_size",
                 "techniques.signature.ot_queue_entries",
                 "techniques.memo.lut_sets", "techniques.memo.lut_ways",
                 "limits.texture_units", "limits.point_size_max", "limits.viewport_max",
                 "limits.renderbuffer_size_max")

# The values that replace the shipped file's for the render running in this process
# (:func:`renderer_config`), as a sorted tuple of (dotted key, value): part of every cache key.
_OVERRIDES: tuple[tuple[str, float | int], ...] = ()


@contextlib.contextmanager
def renderer_config(values: dict | tuple = ()):
    """Within the block, reads of the shipped GPU configuration (:data:`GPU_CONFIG`) by the
    renderer see ``values`` (``{"caches.texture.size": 16384, ...}``, keys of
    :data:`RENDERER_KEYS`) in place of the file's: how a render runs with an effective
    configuration (``tilesim run/render --config/--set``) in whichever process renders it."""
    global _OVERRIDES
    values = dict(values)
    unknown = sorted(set(values) - set(RENDERER_KEYS))
    if unknown:
        raise ValueError(f"renderer_config: not read by the renderer: {', '.join(unknown)}")
    held, _OVERRIDES = _OVERRIDES, tuple(sorted(values.items()))
    try:
        yield
    finally:
        _OVERRIDES = held


def overrides_key() -> tuple:
    """The renderer's configuration overrides now in force (a cache key part)."""
    return _OVERRIDES


def counted_entry(path: str, name: str, *, power_of_two: bool = False, least: int = 1) -> int:
    """A count the renderer reads (``"techniques.memo.lut_sets"``): a whole number of at
    least ``least`` (and a power of two where the hardware indexes it by bits), else an
    InputError naming the entry and the file; within :func:`renderer_config`, its value."""
    return _counted_entry(path, name, power_of_two, least, _OVERRIDES)


@functools.lru_cache(maxsize=32)
def _counted_entry(path: str, name: str, power_of_two: bool, least: int,
                   _overrides: tuple) -> int:
    table, _, key = name.rpartition(".")
    value = gpu_config_values(path, table, (key,))[key]
    whole = not isinstance(value, bool) and float(value).is_integer() and value >= least
    if not whole or (power_of_two and int(value) & (int(value) - 1)):
        kind = "a power of two" if power_of_two else "a whole number"
        raise InputError(f"{name}: expected {kind} of at least {least}, got {value!r}",
                         source=path)
    return int(value)


def gpu_config_values(path: str, table: str, keys: tuple[str, ...]) -> dict:
    """``{key: value}`` of the entries ``keys`` of the dotted ``table`` (``"caches.texture"``)
    of the GPU configuration file at ``path``; a missing file, table or entry is an InputError
    naming the file. Reads of the shipped file see :func:`renderer_config`'s values."""
    values = dict(_file_values(path, table, keys))
    if _OVERRIDES and path == str(GPU_CONFIG):
        for name, value in _OVERRIDES:
            prefix, _, key = name.rpartition(".")
            if prefix == table and key in values:
                values[key] = value
    return values


@functools.lru_cache(maxsize=16)
def _file_values(path: str, table: str, keys: tuple[str, ...]) -> dict:
    node = read_toml(path, "configuration file")
    try:
        for part in table.split("."):
            node = node[part]
        return {key: node[key]["value"] for key in keys}
    except (KeyError, TypeError) as error:
        raise InputError(f"no [{table}] {', '.join(keys)}: {error}", source=path) from None


# The GL state never has fewer texture units than the importer accepts (``glActiveTexture``
# of GL_TEXTURE0 + 0..31) and Mesa's GLES2 contexts offer per stage (32).
MIN_TEXTURE_UNITS = 32


def gl_limits(limits: dict | None = None, path: str | None = None) -> dict:
    """The GLES2 limits a renderer applies: ``{"texture_units": int, "point_size_max":
    float, "viewport_max_width": int, "viewport_max_height": int, "renderbuffer_size_max":
    int}``. ``limits`` (a trace's, what its program queried: :mod:`tilesim.render.traces`)
    wins over the ``[limits]`` table of the GPU configuration at ``path`` (default
    :data:`GPU_CONFIG`; one ``viewport_max`` there for both dimensions); texture units are at
    least :data:`MIN_TEXTURE_UNITS`."""
    values = gpu_config_values(str(path or GPU_CONFIG), "limits",
                               ("texture_units", "point_size_max", "viewport_max",
                                "renderbuffer_size_max"))
    given = limits or {}
    units = int(given.get("texture_units") or values["texture_units"])
    size = float(given.get("point_size_max") or values["point_size_max"])
    return {"texture_units": max(units, MIN_TEXTURE_UNITS), "point_size_max": max(size, 1.0),
            **{key: max(1, int(given.get(key) or values["viewport_max"]))
               for key in ("viewport_max_width", "viewport_max_height")},
            "renderbuffer_size_max": max(1, int(given.get("renderbuffer_size_max")
                                                or values["renderbuffer_size_max"]))}
