"""One meaning per option across the commands (issue 33): help for every option, --frames a
range A:B everywhere (a bare N refused, never read as a count in one command and a frame in
another), --out a folder, one default for --workers."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest
from trace_helpers import sphere_trace

from tilesim.cli import build_parser, main
from tilesim.errors import InputError
from tilesim.options import default_workers, first_frames, frame_range, out_file


def _commands(parser=None, path=("tilesim",)):
    """(command words, parser) of tilesim and every subcommand, nested ones too."""
    parser = parser or build_parser()
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands())


def _option(parser, name):
    return next((a for a in parser._actions if name in a.option_strings), None)


def test_every_option_of_every_command_has_help():
    missing = [f"{' '.join(path)} {'/'.join(a.option_strings) or a.dest}"
               for path, parser in COMMANDS for a in parser._actions
               if not isinstance(a, argparse._SubParsersAction) and not a.help]
    # and every command a line in its group's --help
    missing += [f"{' '.join(path)} {c.dest}" for path, parser in COMMANDS
                for a in parser._actions if isinstance(a, argparse._SubParsersAction)
                for c in a._choices_actions if not c.help]
    assert not missing


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=" ".join)
def test_every_command_prints_its_help(path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*path[1:], "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: tilesim" in out and "%%" not in out   # a % in help is written %%


def test_frames_is_a_range_in_every_command_and_a_bare_number_is_refused():
    with_frames = {" ".join(path[1:]): _option(parser, "--frames") for path, parser in COMMANDS
                   if _option(parser, "--frames") is not None}
    # once a count here (run, capture, import, suite, predict), a frame range there
    assert {"run", "render", "capture", "import", "suite", "predict", "coherence",
            "estimate", "dsr-search", "characterize", "reference-timing"} <= set(with_frames)
    for command, action in with_frames.items():
        assert ":" in action.metavar, command
        assert action.type(":3") in (":3", 3), command
        with pytest.raises(argparse.ArgumentTypeError, match=r":3 for the first 3 frames, "
                                                              r"or 3:4 for frame 3 alone"):
            action.type("3")


def test_a_bare_frame_number_is_a_usage_error_naming_both_readings(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 2, size=(32, 24))
    with pytest.raises(SystemExit) as exit_info:
        main(["render", str(trace), "--out", str(tmp_path / "o"), "--frames", "1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--frames" in err and ":1 for the first 1 frames, or 1:2 for frame 1 alone" in err
    assert not (tmp_path / "o").exists()


def test_frame_range_and_first_frames():
    assert frame_range(":2", 5) == range(0, 2)
    assert frame_range("1:3", 5) == range(1, 3)
    assert frame_range("-2:", 5) == range(3, 5)
    with pytest.raises(InputError, match="use :4 for the first 4 frames"):
        frame_range("4", 5)
    # a negative one counts from the end: its hints were ':-1 for the first -1 frames, or
    # -1:0 for frame -1 alone' (an empty range)
    with pytest.raises(InputError, match=r"'-1': a range A:B is expected; use -1: for the "
                                         r"last frame$"):
        frame_range("-1", 5)
    with pytest.raises(InputError, match=r"use -3: for the last 3 frames, or -3:-2 for "
                                         r"frame -3 alone$"):
        frame_range("-3", 5)
    assert frame_range("-3:-2", 5) == range(2, 3)
    with pytest.raises(InputError, match="the trace has frames 0..4"):
        frame_range("3:9", 5)
    assert first_frames(":7") == first_frames("0:7") == 7
    for text in ("2:7", "7", ":", ":0"):
        with pytest.raises(InputError, match="--frames"):
            first_frames(text)


def test_run_frames_range_is_clipped_to_each_trace(tmp_path):
    from tilesim.studies.study import given_workloads

    trace = sphere_trace(tmp_path / "s.tsim", 3, size=(32, 24))
    assert given_workloads([str(trace)], "1:9")[0].frames == (1, 3)
    assert given_workloads([str(trace)], ":2")[0].frames == (0, 2)
    assert given_workloads([f"{trace}@2:3"], ":2")[0].frames == (2, 3)


def test_out_is_a_folder_in_every_command():
    for path, parser in COMMANDS:
        action = _option(parser, "--out")
        if action is not None:
            assert action.metavar == "DIR", " ".join(path)
    assert out_file("results", "coherence.json").as_posix() == "results/coherence.json"
    with pytest.raises(InputError, match=r"--out is a folder .*DIR/dsr_parameters.toml"):
        out_file("p.toml", "dsr_parameters.toml")


@pytest.mark.slow
def test_coherence_out_writes_its_report_in_the_folder(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(32, 24))
    out = tmp_path / "report"
    assert main(["coherence", str(trace), "--techniques", "te", "--out", str(out),
                 "--workers", "1"]) == 0
    report = json.loads((out / "coherence.json").read_text())
    assert report["workloads"][0]["techniques"]["te"]["frames"] == 1
    # an old command line naming the file is refused, not made a folder of that name
    assert main(["coherence", str(trace), "--techniques", "te", "--out",
                 str(tmp_path / "r.json")]) == 2
    assert "--out is a folder" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_one_default_for_workers(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert default_workers() == 8
    assert default_workers(3) == 3
    assert default_workers(0) == 1
    assert default_workers(20) == 8
    for path, parser in COMMANDS:
        action = _option(parser, "--workers")
        if action is not None:
            assert action.default is None, " ".join(path)
            assert "CPU count" in action.help, " ".join(path)


def test_print_completion_prints_the_shell_code(capsys):
    pytest.importorskip("argcomplete")
    with pytest.raises(SystemExit) as exit_info:
        main(["--print-completion", "bash"])
    assert exit_info.value.code == 0
    assert "complete " in capsys.readouterr().out


@pytest.mark.slow
def test_tab_completion_completes_commands_and_options(tmp_path):
    pytest.importorskip("argcomplete")

    def complete(line: str) -> list[str]:
        out = tmp_path / "completions"
        env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_SHELL": "bash",
               "ARGCOMPLETE_USE_TEMPFILES": "1", "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
               "COMP_LINE": line, "COMP_POINT": str(len(line)), "_ARGCOMPLETE_IFS": "\013",
               "COMP_TYPE": "9"}
        subprocess.run([sys.executable, "-m", "tilesim.cli"], env=env, check=True,
                       timeout=120)
        return out.read_text().split("\013")

    assert [c.strip() for c in complete("tilesim ren")] == ["render"]
    assert "--frames" in [c.strip() for c in complete("tilesim render --fr")]
    assert {"re", "re/xor", "re+evr"} <= {c.strip() for c in
                                           complete("tilesim render x.tsim --technique re")}
    assert "bbox" in [c.strip() for c in complete("tilesim predict x.tsim --estimator b")]


def test_technique_names_ignore_case_and_suggest_the_closest():
    from tilesim.render.techniques.bus import Techniques

    assert Techniques.from_name("RE/XOR").signature == "xor"
    assert Techniques.from_name(" Te+Re ").enabled == {"te", "re"}
    for name, hint in (("rx", "did you mean 're'?"), ("basline", "did you mean 'baseline'?"),
                       ("re/xr", "did you mean re/xor?"), ("memo/3", "did you mean memo/32?")):
        with pytest.raises(InputError, match=hint.replace("?", r"\?")):
            Techniques.from_name(name)


def test_typed_names_ignore_case_and_suggest_the_closest(capsys):
    from tilesim.studies import conformance

    args = build_parser().parse_args(["predict", "t.tsim", "--workload", "ES2GEARS",
                                      "--estimator", "BBox", "--estimator", "Oracle"])
    assert args.workload == "es2gears" and args.estimator == ["bbox", "oracle"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["predict", "t.tsim", "--estimator", "bbx"])
    assert "did you mean 'bbox'?" in capsys.readouterr().err
    assert build_parser().parse_args(["render", "t.tsim", "--out", "o", "--technique",
                                      "RE/XOR"]).technique == "re/xor"
    with pytest.raises(InputError, match="did you mean 'tiny_triangles'"):
        conformance.run_conformance(["Tiny_Triangle"])


@pytest.mark.parametrize("argv, message", [
    # a traceback (ValueError from the input generator)
    (["shader", "check", "PROGRAM", "--size", "-4"], "argument --size: must be at least 1"),
    # accepted, and the summary silently took the last 5 frames / no frames
    (["predict", "TRACE", "--warmup", "-5"], "argument --warmup: must be at least 0"),
    (["predict", "TRACE", "--max-frames", "0"], "argument --max-frames: must be at least 1"),
    (["predict", "TRACE", "--runtime-calibration", "-1"],
     "argument --runtime-calibration: must be at least 0"),
    (["predict", "TRACE", "--jitter-loop", "-1"], "argument --jitter-loop: must be at least 0"),
])
def test_counts_out_of_range_are_usage_errors(argv, message, tmp_path, capsys):
    from repo_paths import ROOT

    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    program = ROOT / "shaders" / "corpus" / "es2gears-415c9aed" / "fragment.tgsi"
    argv = [str(program) if a == "PROGRAM" else str(trace) if a == "TRACE" else a
            for a in argv]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_shader_check_sizes_its_lanes_before_running(tmp_path, capsys):
    """--size 100000 grew to 24 GB until the kernel killed the process."""
    from repo_paths import ROOT

    program = ROOT / "shaders" / "corpus" / "es2gears-415c9aed" / "fragment.tgsi"
    assert main(["shader", "check", str(program), "--size", "100000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "tilesim: error: --size: running programs over 100000x100000 lanes needs about"), err
