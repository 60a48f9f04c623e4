"""The ``tilesim`` command line. Each package registers its own command group.

Exit codes: 0 success, 1 a check or comparison failed, 2 bad usage or input.
"""

from __future__ import annotations

import argparse
import sys

from tilesim import __version__
from tilesim.backend import BackendUnavailable, set_backend
from tilesim.errors import EXIT_BAD_INPUT, TilesimError


def build_parser() -> argparse.ArgumentParser:
    from render import (
        capture,
        coherence,
        compare,
        conformance,
        dsr_search,
        goldens,
        suite,
        trace_import,
    )
    from render import characterize as render_characterize
    from render import commands_cli as render_commands
    from shaders import commands as shader_commands
    from timing import cli as timing_cli

    parser = argparse.ArgumentParser(
        prog="tilesim",
        description="Tile-based mobile GPU simulator for OpenGL ES 2.0 command streams.")
    parser.add_argument("--version", action="version", version=f"tilesim {__version__}")
    parser.add_argument("--backend", choices=["numpy", "cupy"], default="numpy",
                        help="array backend for numeric work (default numpy)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    shader_commands.register(sub)
    render_commands.register(sub)
    render_characterize.register(sub)
    conformance.register(sub)
    goldens.register(sub)
    capture.register(sub)
    trace_import.register(sub)
    compare.register(sub)
    suite.register(sub)
    coherence.register(sub)
    dsr_search.register(sub)
    timing_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        set_backend(args.backend)
        return int(args.func(args) or 0)
    except (TilesimError, BackendUnavailable) as exc:
        print(f"tilesim: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("tilesim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
