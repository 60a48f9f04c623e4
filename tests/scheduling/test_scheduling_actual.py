"""``tilesim schedule --actual gl-*``: blocks' actual times measured on Mesa (issue 18 item 1,
``tilesim.scheduling.actual``), on a tiny scenario."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tilesim.errors import InputError
from tilesim.render.gl.commands import Command
from tilesim.scheduling import actual
from tilesim.scheduling.blocks import BlockSpec

TINY = """\
[run]
duration_s = 1.0
decision_s = 0.0002
record_s_per_command = 2e-6
dispatch_s_per_command = 2e-6

[apps.speedometer]
kind = "speedometer"
size = [48, 48]
frames = 2

[apps.spam]
kind = "spam"
size = [64, 36]
frames = 1
draws = 1
layers = 3
rounds = 1

[scenarios.TINY]
apps = [
  { app = "speedometer", priority = 1, fps = 30 },
  { app = "spam", priority = 2, fps = 20 },
]
"""


class FakeBackend:
    """Times every group by its position: group g of repeat r takes (r + 1) x (g + 1) ms
    (frame 0, the set-up, 1 s), so the median and the set-up's exclusion can be checked."""

    timer, method = "finish", "fake"

    def __init__(self):
        self.calls = []

    def measure(self, frames, contexts, frame_context, groups, path=None, source=""):
        self.calls.append((frames, groups))
        per_repeat = (len(groups) - 1) // self.repeats
        out = [1.0]
        for g in groups[1:]:
            r, k = divmod(g.index - 1, per_repeat)
            out.append([1e-3, 5e-3, 2e-3][r] * (k + 1))
        return out


def _frame(*ops: str) -> list[Command]:
    return [Command(op, {}) for op in ops]


def test_measure_app_takes_the_median_of_the_repeats_and_leaves_the_setup_out():
    frames = [_frame("clear", "drawArrays", "endFrame"),
              _frame("clear", "drawArrays", "drawArrays", "endFrame"),
              _frame("drawArrays", "endFrame")]
    backend = FakeBackend()
    backend.repeats = 3
    seconds = actual.measure_app(frames, 16, 16, backend, repeats=3)
    # frame 1: 3 blocks, frame 2: 2 blocks; the median repeat is the 2 ms one
    assert seconds == [[2e-3, 4e-3, 6e-3], [8e-3, 10e-3]]
    (replayed, groups), = backend.calls
    assert len(replayed) == 1 + 2 * 3 and replayed[0] is frames[0]
    assert [(g.frame, g.start, g.stop) for g in groups[:4]] == [(0, 0, 3), (1, 0, 2), (1, 2, 3),
                                                                 (1, 3, 4)]
    with pytest.raises(InputError, match="--actual-repeats"):
        actual.measure_app(frames, 16, 16, backend, repeats=0)


def test_with_times_keeps_the_blocks_and_their_fragments():
    specs = [[BlockSpec("draw", 2, 1e-3, 10.0), BlockSpec("swap", 1, 0.0, 0.0)]]
    timed = actual.with_times(specs, [[3e-3, 1e-4]], "app")
    assert [(b.kind, b.commands, b.actual_s, b.fragments) for b in timed[0]] == [
        ("draw", 2, 3e-3, 10.0), ("swap", 1, 1e-4, 0.0)]
    with pytest.raises(InputError, match="do not match"):
        actual.with_times(specs, [[3e-3]], "app")
    assert actual.driver_of("model") is None and actual.driver_of("gl-softpipe") == "softpipe"
    with pytest.raises(InputError, match="--actual"):
        actual.driver_of("gl-radeonsi")


@pytest.mark.mesa
@pytest.mark.slow
def test_cli_actual_gl_llvmpipe_on_a_tiny_scenario(tmp_path, capsys, mesa, monkeypatch):
    from tilesim.cli import main
    from tilesim.prediction.ground_truth import GLBackend

    config = tmp_path / "tiny.toml"
    config.write_text(TINY)
    blocks = tmp_path / "blocks.json"
    common = ["schedule", "TINY", "--config", str(config), "--duration", "1", "--json"]
    assert main([*common, "--rebuild-blocks", str(blocks)]) == 0
    model = json.loads(capsys.readouterr().out)
    cache = tmp_path / "cache"
    gl = [*common, "--blocks", str(blocks), "--actual", "gl-llvmpipe", "--actual-cache",
          str(cache), "--actual-repeats", "2", "--policy", "none,hpf"]
    assert main(gl) == 0
    measured = json.loads(capsys.readouterr().out)
    assert measured["actual"]["source"] == "gl-llvmpipe"
    about = measured["actual"]["apps"]
    assert set(about) == {"speedometer", "spam"}
    assert all(a["timer"] in ("query", "finish") and not a["cached"] and a["repeats"] == 2
               for a in about.values())
    assert sorted(p.name.split("-")[0] for p in cache.iterdir()) == ["spam", "speedometer"]
    for m, g in zip(model["applications"], measured["applications"], strict=True):
        assert m["blocks_per_frame"] == g["blocks_per_frame"]
        assert all(t > 0 for t in g["frame_ms"]) and g["frame_ms"] != m["frame_ms"]
    assert set(measured["runs"]) == {"none", "hpf"}

    # the second run reads the cache: Mesa is not asked again, the times are the same
    def refuse(*args, **kwargs):
        raise AssertionError("measured again")

    monkeypatch.setattr(GLBackend, "measure", refuse)
    assert main(gl) == 0
    again = json.loads(capsys.readouterr().out)
    assert all(a["cached"] for a in again["actual"]["apps"].values())
    assert [a["frame_ms"] for a in again["applications"]] == [
        a["frame_ms"] for a in measured["applications"]]

    # a file measured another way (llvmpipe's query before its begin was anchored) is stale:
    # the run measures again
    stale = next(cache.iterdir())
    record = json.loads(stale.read_text())
    stale.write_text(json.dumps({**record, "method": "an older method"}))
    with pytest.raises(AssertionError, match="measured again"):
        main(gl)
    capsys.readouterr()
    stale.write_text(json.dumps(record))

    # a damaged cache file is a one-line input error naming it
    victim = next(cache.iterdir())
    victim.write_text("{not json")
    assert main(gl) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and victim.name in err


def test_cli_rejects_an_unknown_actual_source(capsys):
    from tilesim.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["schedule", "MTS-1", "--actual", "gl-nvidia"])
    assert exc.value.code == 2
    assert "--actual" in capsys.readouterr().err
    assert np.isfinite(actual.REPEATS)
