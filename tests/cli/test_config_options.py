"""The GPU and energy configuration as an input of `tilesim run`, `render` and `estimate`:
one effective configuration (files, ``--set`` overrides, ``--tile-size``), validated with
one-line errors, its digest in results.json, a unit's identity and the report; the entries
the renderer reads in a render folder's identity; no Infinity or NaN in any output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from trace_helpers import sphere_trace

from tilesim.cli import main
from tilesim.errors import InputError
from tilesim.render.pipeline.gpu_config import renderer_config
from tilesim.render.pipeline.texture_sampler import TextureCacheConfig
from tilesim.render.techniques.rendering_elimination import ot_queue_entries
from tilesim.timing.config import effective_config

PROOF = ["--set", "buffers.color.tiles=2", "--tile-size", "32"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """`tilesim run --set buffers.color.tiles=2 --tile-size 32` on a small trace (the issue's
    proof, with a trace of 2 frames and one technique in place of --quick's ~50 s)."""
    root = tmp_path_factory.mktemp("configured")
    trace = sphere_trace(root / "sphere.tsim", 2, size=(64, 48), clear_step=0.0)
    out = root / "out"
    code = main(["run", "--trace", str(trace), "--out", str(out), "--workers", "1",
                 "--techniques", "re", *PROOF])
    return trace, out, code


def run_args(trace, out, *extra):
    return ["run", "--trace", str(trace), "--out", str(out), "--workers", "1",
            "--techniques", "re", *extra]


@pytest.mark.slow
def test_run_records_the_configuration_everywhere(study):
    trace, out, code = study
    assert code == 0
    wanted = effective_config(sets=["buffers.color.tiles=2"], tile_size=32)
    assert wanted.gpu["buffers.color.entries"] == 2 * 32 * 32
    results = json.loads((out / "results.json").read_text())
    config = results["config"]
    assert config["sha256"] == wanted.sha256
    assert config["set"] == {"buffers.color.tiles": 2, "screen.tile_size": 32}
    assert config["changed"] == {"buffers.color.entries": 2048, "screen.tile_size": 32}
    assert config["values"]["gpu"]["screen.tile_size"] == 32
    assert results["settings"]["tile_size"] == 32
    study_json = json.loads((out / "study.json").read_text())
    assert study_json["config"]["sha256"] == wanted.sha256
    for technique in ("baseline", "re"):
        unit = out / "runs" / "sphere" / technique
        assert json.loads((unit / "render.json").read_text())["tile_size"] == 32
        identity = json.loads((unit / "quality.json").read_text())["identity"]
        assert identity["config_sha256"] == wanted.sha256
    assert f"configuration {wanted.sha256[:12]} (buffers.color.entries=2048" in \
        (out / "index.html").read_text()


@pytest.mark.slow
def test_a_resume_with_another_configuration_is_refused(study, tmp_path, capsys):
    trace, out, _ = study
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    before = (copy / "results.json").read_bytes()
    capsys.readouterr()
    # the same configuration resumes (nothing to do)
    assert main(run_args(trace, copy, *PROOF)) == 0
    for other, named in ((["--set", "memory.bandwidth=8", *PROOF], "memory.bandwidth 4 there, "
                                                                   "8 asked"),
                         (["--tile-size", "32"], "buffers.color.entries 2048 there, 256 asked"),
                         ([], "screen.tile_size 32 there, 16 asked")):
        capsys.readouterr()
        assert main(run_args(trace, copy, *other)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "another configuration" in err[0] and named in err[0], err
    # refused before anything was changed
    assert json.loads((copy / "results.json").read_bytes()) != {} and \
        json.loads((copy / "study.json").read_text())["config"]["sha256"] == \
        json.loads(before)["config"]["sha256"]


@pytest.mark.parametrize("argv, message", [
    (["--set", "buffers.color.tile=2"], "--set buffers.color.tile: no such key in the GPU or "
                                        "energy configuration (did you mean buffers.color.tiles?)"),
    (["--set", "memory.bandwidth=fast"], "--set memory.bandwidth: expected a number, got 'fast'"),
    (["--set", "memory.bandwidth=-4"], "--set memory.bandwidth: must be positive, got -4"),
    (["--set", "memory.bandwidth=0"], "--set memory.bandwidth: must be positive, got 0"),
    (["--set", "memory.bandwidth=inf"], "--set memory.bandwidth: expected a finite number"),
    (["--set", "memory.bandwidth=nan"], "--set memory.bandwidth: expected a finite number"),
    (["--set", "memory.bandwidth=1e-320"], "--set memory.bandwidth: 1e-320 is too small"),
    (["--set", "memory.bandwidth"], "--set: expected SECTION.KEY=VALUE"),
    (["--set", "memory.read_per_byte=-1"], "--set memory.read_per_byte: must be non-negative"),
    (["--set", "buffers.color.flush_overlap=2"], "a flag is 0 or 1, got 2"),
    (["--set", "techniques.signature.accumulate_rate=100"], "outside its documented range"),
    (["--set", "caches.texture.ways=2.5"], "a whole number"),
    (["--set", "caches.texture.size=1000"], "caches.texture: TextureCacheConfig: size must be"),
    (["--set", "techniques.memo.lut_sets=1000"], "--set techniques.memo.lut_sets: a power of "
                                                 "two (sets), got 1000"),
    (["--set", "techniques.memo.lut_ways=2.5"], "--set techniques.memo.lut_ways: a whole number"),
    (["--set", "screen.tile_size=15"], "screen.tile_size: an even whole number"),
    (["--set", "buffers.color.tiles=0.5"], "a whole number of tiles"),
    (["--tile-size", "32", "--set", "screen.tile_size=16"], "--tile-size: 32 and --set "
                                                           "screen.tile_size=16 disagree"),
    (["--tile-size", "0"], "--tile-size: an even whole number of pixels >= 2, got 0"),
    (["--tile-size", "7"], "--tile-size: an even whole number of pixels >= 2, got 7"),
    (["--config", "EMPTY"], "missing key(s): buffers.color.entries, "),
])
@pytest.mark.parametrize("command", ["run", "render", "estimate"])
def test_a_bad_configuration_is_one_line_and_exit_2(command, argv, message, tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    (tmp_path / "empty.toml").write_text("")
    argv = [str(tmp_path / "empty.toml") if a == "EMPTY" else a for a in argv]
    if command == "render" and argv[-1].startswith("memory.read_per_byte"):
        pytest.skip("render takes no energy configuration")
    base = {"run": ["run", "--trace", str(trace), "--out", str(tmp_path / "o")],
            "render": ["render", str(trace), "--out", str(tmp_path / "o")],
            "estimate": ["estimate", str(trace), "--work", str(tmp_path / "w")]}[command]
    assert main(base + argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "o").exists() and not (tmp_path / "w").exists()


def test_the_renderer_reads_the_effective_values_only_within_its_render():
    shipped = TextureCacheConfig.from_gpu_config()
    with renderer_config({"caches.texture.size": 4096, "techniques.signature."
                          "ot_queue_entries": 4}):
        assert TextureCacheConfig.from_gpu_config().size_bytes == 4096
        assert ot_queue_entries() == 4
    assert TextureCacheConfig.from_gpu_config() == shipped
    assert ot_queue_entries() == 128
    with pytest.raises(ValueError, match="memory.bandwidth"):
        with renderer_config({"memory.bandwidth": 8}):
            pass


def test_a_render_records_the_renderer_entries_it_ran_with(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 2, size=(64, 48))
    shipped, small = tmp_path / "shipped", tmp_path / "small"
    assert main(["render", str(trace), "--out", str(shipped), "--technique", "re",
                 "--tile-size", "8"]) == 0
    assert main(["render", str(trace), "--out", str(small), "--technique", "re",
                 "--tile-size", "8", "--set", "techniques.signature.ot_queue_entries=1"]) == 0
    assert "gpu_config" not in json.loads((shipped / "render.json").read_text())
    assert json.loads((small / "render.json").read_text())["gpu_config"] == {
        "techniques.signature.ot_queue_entries": 1}
    # the render ran with it: primitives covering more than one tile overflow a 1-entry queue
    frames = [json.loads((d / "frames.json").read_text())["frames"] for d in (shipped, small)]
    assert sum(f["re_otq_overflow_entries"] for f in frames[1]) > \
        sum(f["re_otq_overflow_entries"] for f in frames[0])
    capsys.readouterr()
    # a resume without it is refused; so is an estimate with other renderer entries
    assert main(["render", str(trace), "--out", str(small), "--technique", "re",
                 "--tile-size", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GPU configuration the renderer reads" in err[0]
    assert main(["estimate", str(small)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "techniques.signature.ot_queue_entries 1 there" in err[0]
    assert main(["estimate", str(small), "--set",
                 "techniques.signature.ot_queue_entries=1"]) == 0


def test_estimate_takes_the_renders_tile_size_and_refuses_another(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(32, 32))
    out = tmp_path / "r"
    assert main(["render", str(trace), "--out", str(out), "--tile-size", "8"]) == 0
    capsys.readouterr()
    # not given: the render's tile size is the model's
    assert main(["estimate", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["config_sha256"] == effective_config(tile_size=8).sha256
    # given, and not the render's: refused
    for given in (["--tile-size", "16"], ["--set", "screen.tile_size=16"]):
        assert main(["estimate", str(out), *given]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "rendered at tile size 8" in err[0] and \
            "screen.tile_size is 16" in err[0], err
    assert main(["estimate", str(out), "--tile-size", "8"]) == 0


@pytest.mark.parametrize("bandwidth", ["3e-308", "1e-320"])
def test_no_infinity_or_nan_is_ever_printed(bandwidth, tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(32, 32))
    out = tmp_path / "r"
    assert main(["render", str(trace), "--out", str(out)]) == 0
    capsys.readouterr()
    for extra in (["--json"], []):
        assert main(["estimate", str(out), "--set", f"memory.bandwidth={bandwidth}",
                     *extra]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        err = captured.err.strip().splitlines()
        assert len(err) == 1 and "memory.bandwidth" in err[0], err   # no NumPy warnings


def test_the_digest_is_of_the_numbers():
    shipped = effective_config()
    assert shipped.sha256 == effective_config().sha256 and shipped.changed() == {}
    assert effective_config(sets=["memory.bandwidth=8"]).sha256 != shipped.sha256
    # --tile-size and --set screen.tile_size are one setting
    assert effective_config(tile_size=32).sha256 == \
        effective_config(sets=["screen.tile_size=32"]).sha256
    with pytest.raises(InputError, match="disagree"):
        effective_config(sets=["screen.tile_size=16"], tile_size=32)
    assert Path(shipped.gpu.path).name == "baseline_gpu.toml"


def test_a_technique_that_cannot_render_at_the_tile_size_is_refused_or_left_out(tmp_path,
                                                                                capsys):
    import argparse

    from tilesim.cli.run import _settings, register

    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    # the default techniques at 32x32 tiles: DSR (defined on 16x16 tiles) left out, said so
    settings = _settings(parser.parse_args(["run", "--trace", str(trace), "--tile-size", "32"]))
    assert "dsr" not in settings.techniques and "re" in settings.techniques
    assert [s["spec"] for s in settings.skipped] == ["dsr"]
    assert "16x16 tiles" in settings.skipped[0]["reason"]
    # asked for: refused before any work
    for argv in (["run", "--trace", str(trace), "--out", str(tmp_path / "o"),
                  "--techniques", "re,dsr", "--tile-size", "32"],
                 ["render", str(trace), "--out", str(tmp_path / "o"), "--technique", "dsr",
                  "--tile-size", "32"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "defined on 16x16 tiles, not 32x32" in err[0], err
        assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_reference_timing_renders_at_the_configurations_tile_size(tmp_path, capsys,
                                                                  monkeypatch):
    from tilesim.studies import quad_stream

    trace = sphere_trace(tmp_path / "s.tsim", 2, size=(32, 32))
    sizes = []
    real = quad_stream.record_frames

    def recording(*args, **kwargs):
        sizes.append(kwargs.get("tile_size"))
        return real(*args, **kwargs)

    monkeypatch.setattr(quad_stream, "record_frames", recording)
    assert main(["reference-timing", str(trace), "--frames", "1:2", "--tile-size", "8",
                 "--json"]) == 0
    assert sizes == [8]
    capsys.readouterr()
    # a configuration of absurd scale: one line naming it, never a traceback or Infinity
    assert main(["reference-timing", str(trace), "--frames", "1:2", "--tiles", "1", "--set",
                 "memory.bandwidth=3e-308", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "memory.bandwidth=3e-308" in err[0], err


@pytest.mark.parametrize("key, value, message", [
    ("caches.texture.ways", "1.5", "caches.texture.ways.value: a whole number (ways), got 1.5"),
    ("caches.texture.count", "1.5", "caches.texture.count.value: a whole number (count)"),
    ("limits.texture_units", "2.5", "limits.texture_units.value: a whole number (count)"),
    ("techniques.memo.lut_sets", "3", "techniques.memo.lut_sets.value: a power of two (sets)"),
    # the cycle-level reference builds that many processors: 0.5 of one was none (a
    # ZeroDivisionError in its loop)
    ("processors.fragment.count", "0.5", "processors.fragment.count.value: a whole number"),
    ("memory.channels", "1.5", "memory.channels.value: a whole number (count)"),
])
def test_a_config_file_is_checked_as_set_is(key, value, message, tmp_path, capsys):
    """A value --set refuses is refused from a --config file too (it was truncated: a file's
    caches.texture.ways = 1.5 rendered with a 1-way cache)."""
    import re

    from tilesim.timing.config import BASELINE_GPU

    table, _, name = key.rpartition(".")
    lines, section = BASELINE_GPU.read_text().splitlines(), None
    for i, line in enumerate(lines):
        if line.startswith("["):
            section = line.strip("[]")
        elif section == table and line.startswith(f"{name} ="):
            lines[i] = re.sub(r"value = [^,]*,", f"value = {value},", line, count=1)
    config = tmp_path / "gpu.toml"
    config.write_text("\n".join(lines))
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    assert main(["render", str(trace), "--out", str(tmp_path / "o"), "--config",
                 str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tilesim: error: {config}: {message}"), err
    assert not (tmp_path / "o").exists()
    with pytest.raises(InputError, match=f"--set {key}: a "):
        effective_config(sets=[f"{key}={value}"])


@pytest.mark.parametrize("option", ["--config", "--energy-config"])
def test_a_config_file_not_utf8_is_one_line(option, tmp_path, capsys):
    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(16, 16))
    config = tmp_path / "latin1.toml"
    config.write_bytes(b"# caf\xe9\n[tech]\n")      # tomllib.load: a UnicodeDecodeError
    assert main(["estimate", str(trace), "--work", str(tmp_path / "w"), option,
                 str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tilesim: error: {config}: not UTF-8 text (invalid continuation byte at "
                   "byte 5), not a config file"], err


def test_the_renderers_config_reader_refuses_non_utf8_by_name(tmp_path):
    config = tmp_path / "latin1.toml"
    config.write_bytes(b"# caf\xe9\n[caches.texture]\n")
    with pytest.raises(InputError, match="not UTF-8 text") as info:
        TextureCacheConfig.from_gpu_config(config)
    assert info.value.source == str(config)
