# PYTHON_ARGCOMPLETE_OK   (argcomplete: the entry point completes, see main._complete)
"""The ``tilesim`` command line: ``main`` parses and dispatches (exit codes, errors, signals);
a module per command that is only a command line (``render``, ``predict``, ``core``,
``schedule``); the studies, the importers and the shader tools register their own commands.
"""

from tilesim.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
