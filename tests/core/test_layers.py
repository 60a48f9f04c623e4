"""The layering of the package (issue 13): imports point down only, as the import-linter
contracts in ``pyproject.toml`` declare, and a back-arrow fails this test.

The repository keeps the design card's top-level folders (``render/``, ``shaders/``,
``timing/``) and installs them as ``tilesim.render``, ``tilesim.shaders`` and
``tilesim.timing`` through a package-dir mapping. import-linter reads a package from its
folder, so the test lays out the tree as it is installed (a copy of the sources, mapped as
``pyproject.toml`` maps them) and runs ``lint-imports`` there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from repo_paths import ROOT


def installed_tree(dest: Path) -> Path:
    """Copy the Python sources into ``dest`` laid out as installed; returns ``dest``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapping = config["tool"]["setuptools"]["package-dir"]
    for package, folder in mapping.items():
        target = dest.joinpath(*package.split("."))
        for source in (ROOT / folder).rglob("*.py"):
            relative = source.relative_to(ROOT / folder)
            # A sub-folder mapped on its own (tilesim.render inside tilesim) is copied once.
            if relative.parts and f"{package}.{relative.parts[0]}" in mapping:
                continue
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / relative)
    shutil.copyfile(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    executable = shutil.which("lint-imports")
    if executable is None:
        pytest.fail("lint-imports is missing: pip install -e '.[test]' installs import-linter")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([executable, "--config", str(tree / "pyproject.toml"),
                           "--no-cache"], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=300)


def test_every_package_keeps_to_its_layer(tmp_path):
    result = lint_imports(installed_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


def test_contracts_cover_every_package():
    """Every package and top-level module of the installed tree is named by a contract, so
    a new package cannot slip past the layers."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    named = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        for layer in contract.get("layers", []):
            named.update(part.strip() for part in layer.replace("|", ":").split(":"))
        named.update(contract.get("source_modules", []))
    packages = set(config["tool"]["setuptools"]["packages"]) - {"tilesim", "tilesim.render"}
    base_modules = {f"tilesim.{p.stem}" for p in (ROOT / "tilesim").glob("*.py")
                    if p.stem != "__init__"}
    # A layer holds its sub-packages too (render.workloads.conformance_scenes is workloads').
    unnamed = {m for m in packages | base_modules
               if not any(m == n or m.startswith(f"{n}.") for n in named)}
    assert not unnamed, sorted(unnamed)


@pytest.mark.parametrize("lower, higher", [
    ("render/pipeline/rasterizer.py", "tilesim.render.techniques.bus"),
    ("shaders/parser.py", "tilesim.render.gl.state"),
    ("timing/model.py", "tilesim.render.pipeline.renderer"),
    # into timing: the renderer never reads the timing model
    ("render/pipeline/rasterizer.py", "tilesim.timing.model"),
    # into the rooms: the study engine under its report, the rooms under the command line,
    # prediction under the scheduler, the studies and the scheduler apart
    ("studies/coherence.py", "tilesim.studies.report.page"),
    ("studies/study_results.py", "tilesim.studies.study"),
    ("studies/compare.py", "tilesim.cli.render"),
    ("prediction/predictor.py", "tilesim.scheduling.blocks"),
    ("studies/study.py", "tilesim.scheduling.simulation"),
])
def test_a_back_arrow_breaks_the_contracts(tmp_path, lower, higher):
    tree = installed_tree(tmp_path)
    module = tree / "tilesim" / lower
    module.write_text(module.read_text() + f"\nimport {higher}  # a back-arrow\n")
    result = lint_imports(tree)
    assert result.returncode != 0
    assert higher in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("module, analytic", [
    ("inputs.py", "from tilesim.timing.memory_traffic import tile_memory"),
    ("raster.py", "from tilesim.timing.model import tile_rendered"),
])
def test_the_reference_cannot_read_the_analytic_memory_split(tmp_path, module, analytic):
    """Issue 30 (DESIGN.md section 8, the reference must be able to disagree): an added import
    of the analytic model's memory split or tile decisions into the cycle-level reference
    breaks its contract, while compare.py, where the two meet, may import the model."""
    tree = installed_tree(tmp_path)
    target = tree / "tilesim" / "timing" / "cycle_level" / module
    target.write_text(target.read_text() + f"\n{analytic}  # the analytic model's answer\n")
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "tilesim.timing.cycle_level imports nothing of the analytic model" in result.stdout
    assert analytic.split()[1] in result.stdout
    assert "BROKEN" in result.stdout


# PYTHONPATH=tests python tests/core/test_layers.py: lint-imports on the installed layout
if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        done = lint_imports(installed_tree(Path(tmp)))
        print(done.stdout, done.stderr)
        sys.exit(done.returncode)


def test_numba_kernels_are_cached_per_source():
    """Numba keys a cached kernel by its own file only; tilesim keys the whole cache by a digest
    of every source file (tilesim.kernel_cache), so a changed helper inlined from another file
    cannot bring back old machine code."""
    import hashlib
    import importlib.util
    from pathlib import Path

    numba = pytest.importorskip("numba")
    import tilesim.render.pipeline.rasterizer  # noqa: F401  (its kernel configures the cache)
    from tilesim.kernel_cache import PACKAGES, source_digest

    digest = hashlib.sha256()
    for name in PACKAGES:
        base = Path(importlib.util.find_spec(name).submodule_search_locations[0])
        for path in sorted(base.rglob("*.py")):
            digest.update(f"{name}/{path.relative_to(base).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    assert source_digest() == digest.hexdigest()[:16]
    assert Path(numba.config.CACHE_DIR).name == f"numba-{source_digest()}"


# Source and configuration text says what and why with its document; the story of how a value
# came about (earlier models, fits, issue numbers) belongs to docs/notes and the commits.
HISTORY = re.compile(r"\bissue[ -]?\d+", re.IGNORECASE)
SOURCE_MAX_CHARS = 900


def test_history_stays_out_of_the_code():
    roots = [ROOT / name for name in ("render", "shaders", "timing", "tilesim", "studies",
                                      "prediction", "scheduling", "cli")]
    found = [f"{path.relative_to(ROOT)}:{number}" for root in roots
             for path in sorted([*root.rglob("*.py"), *root.rglob("*.toml")])
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if HISTORY.search(line) and "docs/notes/issue-" not in line]
    assert found == []


def test_configuration_sources_stay_short():
    def sources(table, prefix=""):
        for key, value in table.items():
            if isinstance(value, dict) and isinstance(value.get("source"), str):
                yield prefix + key, value["source"]
            elif isinstance(value, dict):
                yield from sources(value, f"{prefix}{key}.")

    long = [(path.name, key, len(text)) for path in sorted((ROOT / "timing").rglob("*.toml"))
            for key, text in sources(tomllib.loads(path.read_text(encoding="utf-8")))
            if len(text) > SOURCE_MAX_CHARS]
    assert long == []
