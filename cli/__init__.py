# PYTHON_ARGCOMPLETE_OK   (argcomplete: the entry point completes, see main._complete)
"""The ``tilesim`` command line: ``main`` parses and dispatches (exit codes, errors, signals);
a module per command that is only a command line (``render``, ``predict``, ``core``,
``schedule``); the studies, the importers and the shader tools register their own commands.

A command module imports at its top only what its options need (argparse, ``tilesim.errors``,
``tilesim.options``, ``tilesim.thresholds`` and the defaults, choices and help it shows, kept in
light modules such as ``tilesim.studies.defaults`` and ``tilesim.render.pipeline.options``); its
engine is imported inside the function that runs the command, so that ``tilesim --help`` loads
no engine (``tests/cli/test_cli_startup.py``).
"""

from tilesim.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
