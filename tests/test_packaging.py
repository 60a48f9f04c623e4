"""What ``pip install .`` puts into site-packages (issue 13): one import name, ``tilesim``,
holding the repository's ``render/``, ``shaders/`` and ``timing/`` folders as subpackages,
with the data files the code reads (DSR and GPU parameters, the shader corpus)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(out), str(ROOT)], check=True, capture_output=True,
                   timeout=600)
    (wheel,) = out.glob("tilesim-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel_names(wheel) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


@pytest.mark.slow
def test_the_wheel_installs_one_import_name(wheel_names):
    tops = {name.split("/")[0] for name in wheel_names if ".dist-info/" not in name}
    assert tops == {"tilesim"}
    for module in ("tilesim/render/pipeline/renderer.py", "tilesim/shaders/interpreter.py",
                   "tilesim/timing/model.py", "tilesim/cli.py"):
        assert module in wheel_names


@pytest.mark.slow
def test_the_wheel_carries_the_data_files_the_code_reads(wheel_names):
    for data in ("tilesim/render/techniques/dsr_parameters.toml",
                 "tilesim/timing/baseline_gpu.toml", "tilesim/timing/energy_32nm.toml"):
        assert data in wheel_names
    assert any(n.startswith("tilesim/shaders/corpus/") and n.endswith(".tgsi")
               for n in wheel_names)
    # Every data file the repository keeps in its packages is in the wheel (a TOML the code
    # reads left out of package-data broke `pip install .` once: thesis_games.toml).
    tracked = subprocess.run(["git", "ls-files", "render", "shaders", "timing", "tilesim"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        if not name.endswith(".py"):
            wheel_name = name if name.startswith("tilesim/") else f"tilesim/{name}"
            assert wheel_name in wheel_names, name
    # Every folder of Python files in the repository's packages is a package in the wheel.
    for folder in ("render", "shaders", "timing"):
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.relative_to(ROOT).as_posix()
            assert f"tilesim/{relative}" in wheel_names, relative


@pytest.mark.slow
def test_the_wheel_carries_the_license_and_the_pytest_plugin(wheel):
    """Issue 33: the MIT license text, and the golden-frame plugin's pytest11 entry point."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [license_file] = [n for n in names if ".dist-info/" in n and n.endswith("LICENSE")]
        assert archive.read(license_file).decode().startswith("MIT License\n\nCopyright (c)")
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        text = archive.read(entry_points).decode()
    assert "[pytest11]\ntilesim.pytest_plugin = tilesim.pytest_plugin\n" in text
    assert "tilesim/pytest_plugin.py" in names
