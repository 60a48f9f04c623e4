"""What ``pip install .`` puts into site-packages (issue 13): one import name, ``tilesim``,
holding the repository's ``render/``, ``shaders/`` and ``timing/`` folders as subpackages,
with the data files the code reads (DSR and GPU parameters, the shader corpus)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from repo_paths import ROOT

# The top-level folders that install as tilesim.<folder> (pyproject package-dir)
ROOMS = ("render", "shaders", "timing", "studies", "prediction", "scheduling", "cli")


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
                   "tilesim/timing/model.py", "tilesim/cli/main.py",
                   "tilesim/studies/report/page.py", "tilesim/prediction/predictor.py",
                   "tilesim/scheduling/simulation.py"):
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
    tracked = subprocess.run(["git", "ls-files", *ROOMS, "tilesim", "traces"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    installed_as = {"traces": "tilesim/bundled_traces"}
    for name in tracked:
        if not name.endswith(".py"):
            top, _, rest = name.partition("/")
            wheel_name = (name if top == "tilesim"
                          else f"{installed_as.get(top, 'tilesim/' + top)}/{rest}")
            assert wheel_name in wheel_names, name
    # Every folder of Python files in the repository's packages is a package in the wheel.
    for folder in ROOMS:
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


@pytest.mark.slow
def test_an_installed_wheel_runs_the_main_job_without_a_checkout(wheel, tmp_path):
    """`pip install .` (not editable) and then `tilesim run` on the bundled workloads, from a
    folder outside the repository: the traces and every data file the run reads come with
    the package. The venv sees this environment's dependencies (no download)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    where = subprocess.run([str(python), "-c", "import tilesim; print(tilesim.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert str(venv) in where                      # the installed copy, not the checkout
    done = subprocess.run([str(venv / "bin" / "tilesim"), "run", "--quick", "--frames", ":1",
                           "--techniques", "te", "--out", str(tmp_path / "study"), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "study" / "results.json").read_text())
    assert [w["name"] for w in results["workloads"]] == ["bunny", "match3-1196x768",
                                                          "runner-1196x768",
                                                          "like_candy_crush-1196x768"]
