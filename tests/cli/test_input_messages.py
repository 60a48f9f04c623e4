"""Issue 35, messages: errors found where they should be and naming what they should."""

from __future__ import annotations

import json

import pytest
from trace_helpers import sphere_trace

from tilesim.cli import main
from tilesim.errors import InputError


def test_tile_size_zero_is_refused_before_anything_is_written(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(32, 24))
    out = tmp_path / "out"
    assert main(["render", str(trace), "--out", str(out), "--tile-size", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["tilesim: error: --tile-size: an even whole number of pixels >= 2, got 0"]
    assert not out.exists()          # render.json never written with it


def test_unit_folder_refusal_inside_run_advises_tilesim_run(tmp_path):
    from tilesim.studies.batch import Job, prepare_jobs

    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(32, 24))
    out = tmp_path / "unit"
    out.mkdir()
    (out / "render.json").write_text(json.dumps({"format": "tilesim render folder 2",
                                                 "tile_size": 99}))
    job = Job(str(trace), (0, 1), str(out))
    with pytest.raises(InputError) as info:
        prepare_jobs([job], command="tilesim run")
    assert "rerun `tilesim run` with --force" in str(info.value)
    assert "tilesim render" not in str(info.value)


def test_zero_byte_png_error_names_the_file(tmp_path):
    from tilesim.timing.screen import _png_histogram

    png = tmp_path / "frames" / "000000.png"
    png.parent.mkdir()
    png.write_bytes(b"")
    with pytest.raises(InputError) as info:
        _png_histogram(png)
    assert info.value.source == str(png)
    assert "BytesIO" not in str(info.value)


def test_an_error_without_a_source_names_no_placeholder():
    assert str(InputError("--frames '3': a range A:B is expected")) == (
        "--frames '3': a range A:B is expected")
    assert str(InputError("bad", line=3)) == "line 3: bad"
    assert str(InputError("bad", source="f.tsim", line=3, column=7)) == "f.tsim:3:7: bad"


def test_trace_and_frames_reads_an_existing_path_with_at_as_a_path(tmp_path):
    from tilesim.inputs import trace_and_frames

    odd = tmp_path / "x@y.tsim"
    odd.write_bytes(b"")
    assert trace_and_frames(str(odd)) == (str(odd), "")
    assert trace_and_frames(f"{odd}@1:3") == (str(odd), "1:3")
    assert trace_and_frames("a.tsim@:2") == ("a.tsim", ":2")
    assert trace_and_frames("a.tsim") == ("a.tsim", "")


def test_disk_full_while_writing_a_trace_names_the_file(tmp_path, monkeypatch):
    import errno
    import zipfile

    from tilesim.render.gl.commands import Recorder
    from tilesim.render.traces.trace_file import write_trace

    gl = Recorder(8, 8)
    gl.clear("COLOR_BUFFER_BIT")
    gl.endFrame()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", full)
    path = tmp_path / "t.tsim"
    with pytest.raises(OSError) as info:
        write_trace(path, gl.recorded_frames(), width=8, height=8)
    assert info.value.filename == str(path)
    assert not path.exists()


def test_estimate_of_render_folders_refuses_the_options_of_traces(tmp_path, capsys):
    """--technique and --frames say what to render: given with render folders only, they were
    left out in silence (a baseline folder estimated for "--technique re")."""
    trace = sphere_trace(tmp_path / "s.tsim", 2, size=(16, 16))
    out = tmp_path / "r"
    assert main(["render", str(trace), "--out", str(out)]) == 0
    capsys.readouterr()
    for option, value in (("--technique", "re"), ("--frames", "0:1")):
        assert main(["estimate", str(out), option, value]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"tilesim: error: {option} is for .tsim traces (what to render); a "
                       "render folder is estimated as it was rendered: give the trace, or "
                       f"render the folder with {option}"], err
    assert main(["estimate", str(out), "--frames", ":"]) == 0     # the default, spelled out


@pytest.mark.slow      # matplotlib's import and the plots: about 2.5 s
def test_a_file_name_that_is_not_utf8_is_shown_not_a_traceback(tmp_path, capsys):
    """A trace or render folder named with bytes that are not UTF-8 reaches Python as lone
    surrogates: matplotlib's titles and the report's UTF-8 writer raised on them."""
    import os

    pytest.importorskip("matplotlib")
    from tilesim.atomic import write_text

    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/o\xfe")
    try:
        os.mkdir(odd)
    except (OSError, UnicodeEncodeError):
        pytest.skip("the file system takes UTF-8 names only")
    os.rmdir(odd)
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    assert main(["render", str(trace), "--out", odd]) == 0
    assert main(["estimate", odd, "--plot", str(tmp_path / "plots")]) == 0
    assert "o\ufffd" in capsys.readouterr().out
    assert (tmp_path / "plots").is_dir()
    page = write_text(tmp_path / "page.html", f"<p>{odd}</p>")
    assert page.read_text(encoding="utf-8").endswith("/o\ufffd</p>")


@pytest.mark.parametrize("env, value", [("TILESIM_THREADS", "0"),
                                        ("TILESIM_CALL_DEPTH", "x"),
                                        ("TILESIM_INSTRUCTION_BUDGET", "-5"),
                                        ("TILESIM_MEMORY_BUDGET", "lots")])
def test_a_bad_limit_in_the_environment_is_refused_before_anything_is_written(
        env, value, tmp_path, monkeypatch, capsys):
    """Each is read where first used: TILESIM_THREADS=0 was refused after render.json and
    frames.json were written."""
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    monkeypatch.setenv(env, value)
    out = tmp_path / "out"
    assert main(["render", str(trace), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tilesim: error: {env}: expected a "), err
    assert not out.exists()


def test_a_bad_dsr_parameters_file_is_refused_before_the_folder_is_made(tmp_path, capsys):
    """render.json recorded the bad file's digest before the file was read: the rerun with
    the file fixed was refused as 'a render made with other settings'."""
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    params = tmp_path / "dsr.toml"
    params.write_bytes(b"[reduce\n")
    out = tmp_path / "out"
    argv = ["render", str(trace), "--out", str(out), "--technique", "dsr",
            "--dsr-parameters", str(params)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tilesim: error: {params}:") and \
        "not valid TOML" in err[0], err
    assert not out.exists()


@pytest.mark.parametrize("field, value, message", [
    ("frame", "abc", "frame 'abc' is not a whole number"),   # was a TypeError traceback
    ("trace", 5, "trace 5 is not text"),                      # likewise
    ("frame", -3, "frame -3 is negative"),
    ("mssim_vs_mesa", "high", "mssim_vs_mesa 'high' is not a number"),
])
def test_a_manifest_field_of_the_wrong_type_is_one_line(field, value, message, tmp_path,
                                                        capsys):
    entry = {"name": "x", "trace": "s.tsim", "frame": 0, "png": "x.png", field: value}
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"goldens": [entry]}))
    assert main(["goldens", "check", "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tilesim: error: {manifest}: malformed golden manifest: golden 'x': "
                   f"{message}"], err


def test_characterize_names_its_tile_size_option(tmp_path, capsys):
    """It said 'tile size must be an even number >= 2, got 3' (the renderer's words), naming
    no option; every other command's --tile-size error names it."""
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    assert main(["characterize", str(trace), "--tile-size", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["tilesim: error: --tile-size: an even whole number of pixels >= 2, got 3"]


@pytest.mark.slow      # a render: about 2.5 s
def test_goldens_check_says_a_golden_of_another_size_is_one(tmp_path, capsys):
    """It said '768 pixels differ' (the frame's every pixel) for a 10x10 golden of a 32x24
    frame."""
    from PIL import Image

    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(32, 24))
    manifest = tmp_path / "manifest.json"
    assert main(["goldens", "add", "--manifest", str(manifest), f"{trace}:0"]) == 0
    Image.new("RGBA", (10, 10)).save(tmp_path / "s-0000.png")
    capsys.readouterr()
    assert main(["goldens", "check", "--manifest", str(manifest)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == (f"FAILED s-0000: the frame's size differs from the golden "
                      f"{tmp_path / 's-0000.png'}"), err


def test_compare_names_a_file_given_for_a_folder_as_a_file(tmp_path, capsys):
    """A trace given for DIR_B was 'no such folder'."""
    from PIL import Image

    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    frames = tmp_path / "a"
    frames.mkdir()
    Image.new("RGBA", (4, 4)).save(frames / "000000.png")
    assert main(["compare", str(frames), str(trace)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tilesim: error: {trace}: is a file, not a folder of frames"], err


def test_a_golden_manifest_that_is_not_json_names_its_line(tmp_path, capsys):
    """Read as every user JSON file is (tilesim.inputs.read_json): a syntax error names the
    line and column, a manifest over the memory budget or not a regular file is refused
    before it is read."""
    manifest = tmp_path / "manifest.json"
    manifest.write_text('{"goldens": [\n  {,}]}')
    assert main(["goldens", "check", "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tilesim: error: {manifest}:2:4: malformed JSON")
