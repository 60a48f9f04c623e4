"""Output paths are checked before the long work (issue 12): `tilesim dsr-search --out/--cache`,
`tilesim goldens update|add` and `tilesim conformance --out` refuse a path they cannot write
(a folder where a file goes, a file where a folder goes, a file on the way) with one line on
stderr and exit 2, before anything is rendered.

The commands import their engines when they run (issue 34): the work is stubbed out where
they look it up, in the studies modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from trace_helpers import sphere_trace

from tilesim.cli import main
from tilesim.studies import conformance, dsr_search, goldens


def no_work(*args, **kwargs):
    raise AssertionError("the command started its work before checking its output path")


def one_error_line(capsys, expected: str) -> None:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    assert captured.err == f"tilesim: error: {expected}\n"


@pytest.fixture
def trace(tmp_path) -> Path:
    return sphere_trace(tmp_path / "s.tsim", 2, size=(32, 24))


@pytest.mark.parametrize("option", ["--out", "--cache"])
def test_dsr_search_checks_its_outputs_before_rendering(tmp_path, trace, capsys, monkeypatch,
                                                        option):
    monkeypatch.setattr(dsr_search, "run_search", no_work)
    monkeypatch.setattr(dsr_search, "run_cross_validation", no_work)
    file = tmp_path / "a-file"
    file.write_text("")
    args = ["dsr-search", "--train", str(trace), "--out", str(tmp_path / "params"),
            "--cache", str(tmp_path / "cache")]
    bad = file   # both are folders: --out holds dsr_parameters.toml
    args[args.index(option) + 1] = str(bad)
    assert main(args) == 2
    one_error_line(capsys, f"{bad}: exists and is not a folder (give a folder to write)")
    # the cross-validation path checks them too; a file on the way of --cache
    args += ["--folds", "2"]
    if option == "--cache":
        args[args.index("--cache") + 1] = str(file / "cache")
    assert main(args) == 2
    one_error_line(capsys, f"{bad}: exists and is not a folder (give a folder to write)"
                   if option == "--out" else
                   f"{file / 'cache'}: {file} is a file, so {file / 'cache'} cannot be created")


def test_goldens_update_and_add_check_the_manifest_and_pngs_before_rendering(
        tmp_path, trace, capsys, monkeypatch):
    monkeypatch.setattr(goldens, "update", no_work)
    monkeypatch.setattr(goldens, "render_frames", no_work)
    manifest = tmp_path / "manifest.json"
    manifest.mkdir()   # a folder where the manifest goes
    assert main(["goldens", "update", "--manifest", str(manifest)]) == 2
    one_error_line(capsys, f"{manifest}: exists and is not a file (give a file to write)")
    assert main(["goldens", "add", "--manifest", str(manifest), f"{trace}:0"]) == 2
    one_error_line(capsys, f"{manifest}: exists and is not a file (give a file to write)")
    # a golden's PNG that cannot be written
    ok = tmp_path / "ok.json"
    goldens.save_manifest([goldens.Golden("s-0000", "s.tsim", 0, "s-0000.png")], ok)
    (tmp_path / "s-0000.png").mkdir()
    assert main(["goldens", "update", "--manifest", str(ok)]) == 2
    one_error_line(capsys, f"{tmp_path / 's-0000.png'}: exists and is not a file (give a file "
                           "to write)")


def test_conformance_checks_its_out_folder_before_any_scene(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(conformance, "run_conformance", no_work)
    file = tmp_path / "a-file"
    file.write_text("")
    assert main(["conformance", "--out", str(file)]) == 2
    one_error_line(capsys, f"{file}: exists and is not a folder (give a folder to write)")
    assert capsys.readouterr().out == ""     # not even the table's header
    assert main(["conformance", "--out", str(file / "images")]) == 2
    one_error_line(capsys, f"{file / 'images'}: {file} is a file, so {file / 'images'} cannot "
                           "be created")


@pytest.mark.slow
def test_a_bad_output_path_is_one_line_from_a_fresh_process(tmp_path):
    file = tmp_path / "a-file"
    file.write_text("")
    proc = subprocess.run([sys.executable, "-m", "tilesim.cli", "conformance", "--scene",
                           "fill_fan", "--out", str(file)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stderr == (f"tilesim: error: {file}: exists and is not a folder (give a folder "
                           "to write)\n")
    assert proc.stdout == ""
