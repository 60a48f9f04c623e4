"""The ``tilesim`` command line: help everywhere, JSON output, meaningful exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from repo_paths import ROOT

from tilesim.cli import main

CORPUS = ROOT / "shaders" / "corpus"


@pytest.mark.parametrize("argv", [["--help"], ["shader", "--help"], ["shader", "check", "--help"],
                                  ["shader", "stats", "--help"], ["shader", "compile", "--help"]])
def test_every_command_has_help(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "usage: tilesim" in capsys.readouterr().out


def test_shader_check_runs_the_whole_corpus(capsys):
    assert main(["shader", "check", str(CORPUS)]) == 0
    out = capsys.readouterr().out.strip().splitlines()[-1]
    count = int(out.split()[0])
    programs = len(json.loads((CORPUS / "index.json").read_text())["programs"])
    assert out == f"{count} shaders ok"
    assert count == 2 * programs >= 2 * 85  # a vertex and a fragment shader per program


def test_shader_check_fails_with_exit_1_and_names_the_file(tmp_path, capsys):
    (tmp_path / "good.tgsi").write_text("FRAG\nDCL OUT[0], COLOR\n  0: END\n")
    (tmp_path / "bad.tgsi").write_text("FRAG\n  0: MOV OUT[0], IN[0].xyzq\n  1: END\n")
    assert main(["shader", "check", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "1 shaders ok, 1 failed" in captured.out
    assert "bad.tgsi:2:" in captured.err


def test_shader_stats_json_and_bad_input_exit_2(tmp_path, capsys):
    frag = next(CORPUS.rglob("fragment.tgsi"))
    assert main(["shader", "stats", "--json", str(frag)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["processor"] == "FRAG"
    assert stats["total"] == stats["alu"] + stats["tex"] + stats["flow"] > 0
    broken = tmp_path / "broken.tgsi"
    broken.write_text("VERT\nDCL IN[0\n")
    assert main(["shader", "stats", str(broken)]) == 2
    assert "broken.tgsi:2:" in capsys.readouterr().err


@pytest.mark.slow
def test_console_script_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "tilesim.cli", "--version"],
                            capture_output=True, text=True, check=True)
    assert result.stdout.startswith("tilesim ")


def test_no_command_help_shows_a_doubled_percent_sign():
    """Descriptions and epilogs are printed as written, help strings %-formatted: a "%%" in
    the former reaches the user doubled (``conformance --help`` once printed "99.9%%")."""
    import argparse

    from tilesim.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(commands.choices) > 10
    for name, sub in commands.choices.items():
        assert "%%" not in sub.format_help(), name
