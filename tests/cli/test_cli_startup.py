"""The ``tilesim`` command line starts in a fresh process (issue 34): ``--help`` of the root and
of every command exits 0 there, and building the parser should load none of the NumPy-heavy
engines (the renderer, Numba, Dask, scikit-image, Matplotlib, SciPy, pandas), which only a
command's run needs. Nothing here times anything: what is checked is what gets imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numba", "dask", "distributed", "skimage", "matplotlib", "scipy", "pandas",
         "tilesim.render.pipeline.renderer")

# Every command path of the parser, then `<path> --help` through main() for each, all in one
# process (one import of tilesim instead of one per command); prints the paths that did not
# exit 0.
EVERY_HELP = """
import argparse, contextlib, io
from tilesim.cli import build_parser, main

def paths(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name)
                yield from paths(sub, (*path, name))

commands = list(paths(build_parser()))
assert len(commands) > 20, commands
for command in commands:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main([*command, "--help"])
            code = "no exit"
        except SystemExit as exc:
            code = exc.code
    if code != 0 or "usage: tilesim " + " ".join(command) not in out.getvalue():
        print(" ".join(command), code)
"""


def _python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300,
                          check=False)


def test_root_help_exits_0_in_a_fresh_process():
    proc = _python("-m", "tilesim.cli", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: tilesim ")


@pytest.mark.slow
def test_every_commands_help_exits_0_in_a_fresh_process():
    proc = _python("-c", EVERY_HELP)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "", f"--help did not exit 0 for:\n{proc.stdout}"


@pytest.mark.slow
def test_building_the_parser_loads_no_heavy_module():
    proc = _python("-c", "import sys\n"
                         "from tilesim.cli import build_parser\n"
                         "build_parser()\n"
                         f"print(*[name for name in {HEAVY!r} if name in sys.modules])")
    if proc.returncode:
        pytest.skip("the parser does not build (the tests above fail)")
    assert proc.stdout.split() == []
