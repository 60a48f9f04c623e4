"""The configuration options of the commands that render or estimate: ``--config``,
``--energy-config``, ``--set section.key=value`` (repeatable) and ``--tile-size``, read one way
(:func:`tilesim.timing.config.effective_config`) by ``tilesim run``, ``render`` and
``estimate``.

``--tile-size`` is ``screen.tile_size`` of the configuration: one setting, given either way
(its default is the configuration's, 16). The renderer reads a few entries of the GPU
configuration itself (``gpu_config.RENDERER_KEYS``: texture caches, Overlapped Tiles Queue,
GLES2 limits; and ``processors.shader.mediump_fp16`` as its ``mediump``): a render runs with
the effective configuration's values of those, and its folder's identity records the ones
that differ from the shipped file (:func:`renderer_values`).
"""

from __future__ import annotations

from tilesim.errors import InputError
from tilesim.render.pipeline.gpu_config import RENDERER_KEYS, renderer_config
from tilesim.timing.config import SET_HELP, EffectiveConfig, effective_config


def add_config_arguments(parser, *, energy: bool = True, tile_size: bool = True) -> None:
    """Add --config, --energy-config (``energy``), --set and --tile-size (``tile_size``)."""
    parser.add_argument("--config", metavar="FILE",
                        help="GPU parameters (TOML, default timing/baseline_gpu.toml)")
    if energy:
        parser.add_argument("--energy-config", metavar="FILE",
                            help="per-event energies and leakage (TOML, default "
                                 "timing/energy_32nm.toml)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        dest="config_set", help=SET_HELP)
    if tile_size:
        # Checked with the configuration (effective_config: an even whole number >= 2), one
        # line before anything is written.
        parser.add_argument("--tile-size", type=int, default=None, metavar="N",
                            help="tile size in pixels: screen.tile_size of the configuration "
                                 "(default 16, Table 3.1)")


def config_from_args(args) -> EffectiveConfig:
    """The effective configuration of a command's arguments (those it has)."""
    return effective_config(getattr(args, "config", None), getattr(args, "energy_config", None),
                            getattr(args, "config_set", None) or (),
                            getattr(args, "tile_size", None))


def renderer_values(cfg: EffectiveConfig) -> tuple[tuple[str, float | int], ...]:
    """The entries the renderer reads whose effective values differ from the shipped file's,
    as sorted (key, value) pairs (a render's ``Job.gpu_config``); the texture caches' geometry
    checked as the renderer checks it."""
    from tilesim.render.pipeline.texture_sampler import TextureCacheConfig

    values = tuple(sorted(cfg.renderer_values(RENDERER_KEYS).items()))
    if values:
        with renderer_config(values):
            try:
                TextureCacheConfig.from_gpu_config()
            except InputError as exc:
                raise InputError(f"caches.texture: {exc.bare_message}",
                                 source=cfg.gpu_file or "the configuration") from None
    return values


def configured_mediump_of(cfg: EffectiveConfig) -> str:
    """``processors.shader.mediump_fp16`` of the configuration as a render's ``mediump``."""
    return "fp16" if cfg.gpu["processors.shader.mediump_fp16"] else "fp32"


def tile_size_problem(technique: str, tile_size: int) -> str | None:
    """Why ``technique`` cannot render at ``tile_size`` (DSR's sampling rates are defined on
    16x16 tiles), or None; asked before any work, not when the render starts."""
    from tilesim.render.techniques.bus import Techniques
    from tilesim.render.techniques.dynamic_sampling_rate import TILE

    if "dsr" in Techniques.from_name(technique).enabled and tile_size != TILE:
        return (f"DSR's sampling rates (1x .. 1/256x) are defined on {TILE}x{TILE} tiles, "
                f"not {tile_size}x{tile_size}")
    return None
