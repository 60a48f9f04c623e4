"""The repository's folders the tests read, found from this module's own place (tests/ at the
repository root), so that a test reads them the same from any sub-folder of tests/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent   # the repository root
TESTS = ROOT / "tests"
TRACES = ROOT / "traces"                        # the bundled traces (tilesim.bundled_traces)
CORPUS = ROOT / "shaders" / "corpus"            # the TGSI / GLSL shader corpus
SCRIPTS = ROOT / "scripts"
GOLDENS = ROOT / "goldens"
DOCS = ROOT / "docs"
PYPROJECT = ROOT / "pyproject.toml"
