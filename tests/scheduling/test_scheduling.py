"""FG-SDS scheduling (seed 004 ch. 5-6): hand-checked schedules of tiny block streams.

Times are simulated seconds (SimPy), never wall time. CPU costs are zero unless a test sets
them, so every finish time below can be worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.errors import InputError
from tilesim.scheduling import metrics, robustness
from tilesim.scheduling.blocks import (
    Block,
    BlockSpec,
    Exact,
    History,
    InjectedError,
    Margin,
    split_frame,
)
from tilesim.scheduling.policies import (
    Costs,
    Thread,
    check_policy,
    guard_allows,
    select,
)
from tilesim.scheduling.simulation import Application, SimConfig, simulate

MS = 1e-3
FREE = dict(decision_s=0.0, record_s_per_command=0.0, dispatch_s_per_command=0.0)


def frame(*draws_ms: float) -> list[BlockSpec]:
    return [BlockSpec("draw", 1, d * MS) for d in draws_ms] + [BlockSpec("swap", 1, 0.0)]


def finishes(result, app: str) -> list[float]:
    return [round(f.finish_s / MS, 6) for f in result.frames if f.app == app]


def gpu_order(result) -> list[tuple[str, int, int]]:
    return [(b.app, b.frame, b.index) for b in result.blocks]


def test_split_frame_ends_blocks_at_draws_swaps_and_reads():
    ops = ["clear", "useProgram", "drawArrays", "uniform4f", "drawElements", "readPixels",
           "bindTexture", "endFrame"]
    assert split_frame(ops) == [(0, 3, "draw"), (3, 5, "draw"), (5, 6, "synchronous"),
                                (6, 8, "swap")]
    assert split_frame(["clear", "uniform1f"]) == [(0, 2, "state")]


def test_fifo_interleaves_blocks_in_arrival_order():
    """No scheduler: both threads record at t=0 (zero CPU cost) and the driver's FIFO runs
    their blocks alternately: a0 (10) b0 (5) a1 (10) b1 (5) a-swap b-swap."""
    a = Application("a", 1, 10, [frame(10, 10)])
    b = Application("b", 2, 10, [frame(5, 5)])
    r = simulate([a, b], "none", config=SimConfig(duration_s=0.031, **FREE))
    assert gpu_order(r)[:6] == [("a", 0, 0), ("b", 0, 0), ("a", 0, 1), ("b", 0, 1),
                                ("a", 0, 2), ("b", 0, 2)]
    assert finishes(r, "a")[0] == 30.0 and finishes(r, "b")[0] == 30.0
    # none: the next frame starts at once (no frame-rate cap)
    assert r.frames[0].release_s == 0 and len([f for f in r.frames if f.app == "a"]) == 1


def test_frrs_caps_the_frame_rate():
    """FRRS: a 10 ms frame at 20 FPS finishes at 10, 60, 110, ... ms; 'none' renders it back
    to back (100 FPS)."""
    a = Application("a", 1, 20, [frame(10)])
    capped = simulate([a], "frrs", config=SimConfig(duration_s=0.2, **FREE))
    assert finishes(capped, "a") == [10.0, 60.0, 110.0, 160.0]
    free = simulate([a], "none", config=SimConfig(duration_s=0.2005, **FREE))
    assert len(free.frames) == 20
    assert metrics.summarize(capped)["apps"][0]["afr"] == pytest.approx(20.0)


def test_hpf_serves_the_highest_priority_frame_first():
    """HPF: both wait at t=0; the high-priority thread dispatches its whole frame (004's
    flag_rt_dispatch_all) and finishes at 20 ms; the low-priority blocks follow."""
    hp = Application("hp", 1, 10, [frame(20)])
    lp = Application("lp", 2, 10, [frame(30, 30)])
    r = simulate([lp, hp], "hpf", config=SimConfig(duration_s=0.1, **FREE))
    assert gpu_order(r)[:2] == [("hp", 0, 0), ("hp", 0, 1)]
    assert finishes(r, "hp") == [20.0]
    assert finishes(r, "lp") == [80.0]


def test_deadline_guard_refuses_a_block_that_would_make_hp_miss():
    """HP: 20 ms frames at 20 FPS (period 50). LP: one 70 ms block. After HP's first frame
    (t=20) the 70 ms block would end at 90 and HP's second frame (released at 50, deadline
    100) would finish at 110: the guard refuses it, every time (it never fits in a period),
    and HP meets all its deadlines. Without the guard HP misses."""
    hp = Application("hp", 1, 20, [frame(20)])
    lp = Application("lp", 2, 20, [frame(70)])
    guarded = simulate([hp, lp], "hpf", config=SimConfig(duration_s=0.5, **FREE))
    assert finishes(guarded, "hp") == [20.0 + 50 * k for k in range(10)]
    assert all(f.met for f in guarded.frames if f.app == "hp")
    assert not any(b.app == "lp" and b.index == 0 for b in guarded.blocks)
    unguarded = simulate([hp, lp], "hpf", config=SimConfig(duration_s=0.5, guard="off",
                                                          **FREE))
    assert finishes(unguarded, "hp")[:2] == [20.0, 110.0]
    assert not all(f.met for f in unguarded.frames if f.app == "hp")


def test_deadline_guard_lets_a_fitting_block_through():
    """HP 20 ms at 20 FPS; LP 25 ms blocks. At t=20 a block ends at 45 < 50: allowed; at 45
    the next would end at 70 and HP (released at 50) would finish at 90 <= 100: 'frame'
    allows it, 004's 'release' test (end before HP's next release) does not."""
    hp = Application("hp", 1, 20, [frame(20)])
    lp = Application("lp", 2, 5, [frame(25, 25, 25)])
    loose = simulate([hp, lp], "hpf", config=SimConfig(duration_s=0.1, guard="frame",
                                                      **FREE))
    assert gpu_order(loose)[:5] == [("hp", 0, 0), ("hp", 0, 1), ("lp", 0, 0), ("lp", 0, 1),
                                    ("hp", 1, 0)]
    assert finishes(loose, "hp") == [20.0, 90.0]
    strict = simulate([hp, lp], "hpf", config=SimConfig(duration_s=0.1, guard="release",
                                                       **FREE))
    assert gpu_order(strict)[:5] == [("hp", 0, 0), ("hp", 0, 1), ("lp", 0, 0), ("hp", 1, 0),
                                     ("hp", 1, 1)]
    assert finishes(strict, "hp") == [20.0, 70.0]


def test_hpf_block_mode_and_decision_overhead():
    """hpf-block: one block per decision; each decision costs 1 ms of CPU and the ST sleeps
    for the dispatched block's PET: HP's two 10 ms blocks run at 1-11 and 12-22, its swap
    (0 s) is dispatched at 23."""
    hp = Application("hp", 1, 10, [frame(10, 10)])
    cfg = SimConfig(duration_s=0.05, decision_s=1 * MS, record_s_per_command=0.0,
                    dispatch_s_per_command=0.0)
    r = simulate([hp], "hpf-block", config=cfg)
    assert [round(b.started_at / MS, 6) for b in r.blocks] == [1.0, 12.0, 23.0]
    assert r.decisions == 3
    whole = simulate([hp], "hpf", config=cfg)
    assert [round(b.started_at / MS, 6) for b in whole.blocks] == [1.0, 11.0, 21.0]


def test_edf_runs_the_earliest_deadline_first():
    """EDF: 'slow' (priority 1, 5 FPS: deadline 200 ms) and 'fast' (priority 2, 50 FPS:
    deadline 20 ms) both wait at t=0; EDF runs fast's block first, HPF slow's."""
    slow = Application("slow", 1, 5, [frame(30)])
    fast = Application("fast", 2, 50, [frame(5)])
    cfg = SimConfig(duration_s=0.015, **FREE)
    edf = simulate([slow, fast], "edf", config=cfg)
    assert gpu_order(edf)[0] == ("fast", 0, 0)
    assert finishes(edf, "fast") == [5.0]
    hpf = simulate([slow, fast], "hpf", config=SimConfig(duration_s=0.04, guard="off",
                                                        **FREE))
    assert gpu_order(hpf)[0] == ("slow", 0, 0)


def test_selection_on_thread_states():
    """select() on hand-made thread states: HP waiting wins; an LP block is refused while HP
    is still recording its frame."""
    def blk(app, ms, last=False):
        b = Block(app, 0, 0, BlockSpec("draw", 1, ms * MS), last=last)
        b.predicted_s = ms * MS
        return b
    hp = Thread("hp", 1, 0.05)
    lp = Thread("lp", 2, 0.05)
    lp.queue.extend([blk("lp", 5), blk("lp", 5, last=True)])
    hp.queue.append(blk("hp", 5, last=True))
    assert select("hpf", [lp, hp], 0.0) == (hp, 1)
    hp.queue.clear()
    hp.recording = True
    assert select("hpf", [lp, hp], 0.0) is None
    hp.recording, hp.next_release_s, hp.next_frame_predicted_s = False, 0.05, 0.02
    hp.next_deadline_s = 0.1
    assert select("hpf", [lp, hp], 0.0) == (lp, 1)
    assert select("hpf-frame", [lp, hp], 0.0) == (lp, 2)
    # HP: next release 50 ms, deadline 100 ms, next frame predicted 20 ms
    assert guard_allows(hp, [blk("lp", 40)], 0.0, "frame", Costs())      # 50 + 20 <= 100
    assert guard_allows(hp, [blk("lp", 80)], 0.0, "frame", Costs())      # 80 + 20 <= 100
    assert not guard_allows(hp, [blk("lp", 81)], 0.0, "frame", Costs())
    assert not guard_allows(hp, [blk("lp", 51)], 0.0, "release", Costs())
    assert guard_allows(hp, [blk("lp", 50)], 0.0, "release", Costs())
    hp.done = False  # its frame still runs on the GPU
    assert select("hpf", [lp, hp], 0.0) is None


def test_metrics_afr_pmd_and_pd_fft():
    hp = Application("hp", 1, 20, [frame(20)])
    lp = Application("lp", 2, 20, [frame(70)])
    summary = metrics.summarize(simulate([hp, lp], "hpf", config=SimConfig(duration_s=0.5,
                                                                           **FREE)))
    first, second = summary["apps"]
    assert first["app"] == "hp" and first["frames"] == 10 and first["pmd"] == 1.0
    assert first["afr"] == pytest.approx(20.0)
    # each HP frame finishes 20 ms after its release: 0.4 period, lateness -0.6
    assert sum(first["pd_fft"]["count"][3:5]) == 10 == sum(first["pd_fft"]["count"])
    assert second["frames"] == 0 and second["pmd"] is None and second["afr"] == 0.0
    counts = metrics.histogram(np.array([-1.0, -0.05, 0.0, 0.2, 4.9, 7.0]))
    assert counts[0] == 1 and counts[9] == 2 and counts[10] == 1 and counts[19] == 1
    assert counts[20] == 1


def test_predictors():
    b = Block("a", 3, 1, BlockSpec("draw", 1, 2 * MS), last=False)
    assert Exact().predict(b) == 2 * MS
    err = InjectedError("normal", 0.2, seed=1)
    assert err.predict(b) == err.predict(b) != 2 * MS  # deterministic per block
    assert InjectedError("under", 0.3).predict(b) <= 2 * MS
    assert InjectedError("over", 0.3).predict(b) >= 2 * MS
    assert Margin(Exact(), 1.5).predict(b) == pytest.approx(3 * MS)
    h = History(cold_s=1 * MS)
    assert h.predict(b) == 1 * MS
    h.observe(Block("a", 2, 1, BlockSpec("draw", 1, 4 * MS), last=False))
    assert h.predict(b) == 4 * MS
    assert h.predict(Block("a", 3, 0, BlockSpec("draw", 1, 2 * MS), last=False)) == 4 * MS
    with pytest.raises(InputError, match="--error"):
        InjectedError("cauchy", 0.1)
    with pytest.raises(InputError, match="--policy"):
        check_policy("rr")


def test_underestimated_predictions_break_the_guarantee_and_a_margin_restores_it():
    """LP's 70 ms block (HP: 20 ms at 20 FPS) never fits; predicted at half its time it
    looks like it does (35 ms, and HP's frame 10 ms: 20 + 35 -> 55, + 10 = 65 <= 100), runs,
    and HP's second frame finishes at 110 > 100; a 2x margin on the same predictions
    restores every deadline."""
    hp = Application("hp", 1, 20, [frame(20)])
    lp = Application("lp", 2, 20, [frame(70)])
    half = InjectedError("uniform", 0.0)
    half.factor = lambda block: 0.5  # type: ignore[method-assign]
    cfg = SimConfig(duration_s=0.5, guard="frame", **FREE)
    fooled = simulate([hp, lp], "hpf", predictor=half, config=cfg)
    assert not all(f.met for f in fooled.frames if f.app == "hp")
    safe = simulate([hp, lp], "hpf", predictor=Margin(half, 2.0), config=cfg)
    assert all(f.met for f in safe.frames if f.app == "hp")


# --- scenarios and the command line --------------------------------------------------------

def _tiny_blocks(tmp_path):
    """A block-cost file with the bundled applications' names and hand-made costs."""
    import json

    def fr(*ms):
        return [["draw", 5, m * MS] for m in ms] + [["swap", 1, 0.0]]

    body = {"apps": {"speedometer": {"frames": [fr(1, 0.5)]},
                     "tachometer": {"frames": [fr(1, 0.5)]},
                     "menu": {"frames": [fr(2)]},
                     "spam": {"frames": [fr(45, 45)]}}}
    path = tmp_path / "blocks.json"
    path.write_text(json.dumps(body))
    return path


def test_bundled_scenarios_match_004_tables():
    from tilesim.scheduling import scenarios

    scen = scenarios.load_scenarios()
    mts1 = {e["app"]: (e["priority"], e["fps"]) for e in scen.scenarios["MTS-1"]}
    mts2 = {e["app"]: (e["priority"], e["fps"]) for e in scen.scenarios["MTS-2"]}
    assert mts1 == {"speedometer": (1, 30), "tachometer": (2, 30), "menu": (3, 30)}
    assert mts2 == {"speedometer": (1, 30), "tachometer": (2, 30), "menu": (3, 20),
                    "spam": (4, 20)}


def test_mts2_shape_on_hand_made_costs(tmp_path):
    """MTS-2 with a spam whose draws (45 ms) exceed the speedometer's period: without
    scheduling everyone falls to ~10 FPS; HPF keeps the speedometer at 30 FPS with every
    deadline met and the spam renders nothing (004's guard never admits a draw longer than
    the period); the looser 'frame' guard lets spam draws overlap the speedometer's release
    and still keeps every speedometer deadline."""
    from tilesim.scheduling import scenarios

    scen = scenarios.load_scenarios()
    apps = scenarios.applications(scen, "MTS-2", scenarios.load_blocks(_tiny_blocks(tmp_path)))
    cfg = scenarios.sim_config(scen, duration_s=3.0)
    none = metrics.summarize(simulate(apps, "none", config=cfg))["apps"]
    assert 9 <= none[0]["afr"] <= 11.5 and 9 <= none[3]["afr"] <= 11.5
    hpf = metrics.summarize(simulate(apps, "hpf", config=cfg))["apps"]
    assert hpf[0]["afr"] == pytest.approx(30, abs=0.5) and hpf[0]["pmd"] == 1.0
    assert hpf[3]["frames"] == 0
    loose = metrics.summarize(simulate(apps, "hpf", config=scenarios.sim_config(
        scen, duration_s=3.0, guard="frame")))["apps"]
    assert loose[0]["pmd"] == 1.0 and loose[3]["frames"] > 0


@pytest.mark.slow
def test_cli_schedule_json_and_errors(tmp_path, capsys):
    import json

    from tilesim.cli import main

    blocks = str(_tiny_blocks(tmp_path))
    assert main(["schedule", "MTS-1", "--policy", "all", "--duration", "1", "--blocks",
                 blocks, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["runs"]) == {"none", "frrs", "hpf", "hpf-block", "hpf-frame", "edf"}
    assert report["runs"]["frrs"]["apps"][0]["afr"] == pytest.approx(30, abs=1)
    assert main(["schedule", "MTS-1", "--policy", "hpf", "--duration", "0.5",
                 "--blocks", blocks, "--plot", str(tmp_path / "plots")]) == 0
    assert "speedometer" in capsys.readouterr().out
    assert (tmp_path / "plots" / "MTS-1-afr.png").stat().st_size > 0
    assert (tmp_path / "plots" / "MTS-1-hpf-speedometer-pdfft.png").exists()
    for argv, where in ((["MTS-1", "--policy", "rr"], "--policy"),
                        (["MTS-9"], "scenarios.toml"),
                        (["MTS-1", "--error", "normal:x"], "--error"),
                        (["MTS-1", "--error", "cauchy:0.1"], "--error"),
                        (["MTS-1", "--duration", "-1"], "--duration"),
                        (["MTS-1", "--blocks", str(tmp_path / "missing.json")], "missing")):
        assert main(["schedule", *argv, "--blocks", blocks][:len(argv) + 1 + (
            0 if "--blocks" in argv else 2)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and where in err, err


def test_a_duration_whose_records_cannot_fit_is_refused_before_it_runs(capsys):
    """--duration 1e9 ran on, past 2 GB in two minutes, never to finish."""
    from tilesim.cli import main

    assert main(["schedule", "MTS-1", "--policy", "none", "--duration", "1e9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "tilesim: error: --duration: simulating 1e+09 s (9e+10 frames) needs about "), err
    assert "more than the memory budget" in err[0]


def test_cli_rejects_a_bad_scenarios_file(tmp_path, capsys):
    from tilesim.cli import main

    bad = tmp_path / "bad.toml"
    for text, what in (("[apps.a\n", "not valid TOML"),
                       ('[apps.a]\nkind = "clock"\nsize = [8, 8]\n', "apps.a.kind"),
                       ('[apps.a]\nkind = "menu"\nsize = [8, 8]\n[scenarios.S]\napps = '
                        '[{app = "a", priority = 0, fps = 30}]\n', "priority"),
                       ('[run]\nguard = "maybe"\n[apps.a]\nkind = "menu"\nsize = [8, 8]\n',
                        "[run]")):
        bad.write_text(text)
        assert main(["schedule", "S", "--config", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "bad.toml" in err and what in err, err


def test_cli_sweep(tmp_path, capsys):
    from tilesim.cli import main

    assert main(["schedule", "MTS-2", "--sweep-error", "--duration", "1", "--blocks",
                 str(_tiny_blocks(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "margin for 100%" in out and "history" in out


@pytest.mark.mesa
def test_block_costs_add_up_to_the_frame_time(mesa):
    """Blocks timed by rendering prefixes (scenarios.time_blocks) telescope: a frame's block
    costs add up to the timing model's time for the whole frame; every cluster frame has a
    block per draw and ends with its swap."""
    from tilesim.render.replay import render_frames
    from tilesim.render.workloads import cluster
    from tilesim.scheduling.scenarios import time_blocks
    from tilesim.timing.config import load_energy_config, load_gpu_config
    from tilesim.timing.model import estimate_frames

    frames = cluster.build("speedometer", 96, 96, 2)
    (specs,) = time_blocks(frames, 96, 96, [1])
    assert [s.kind for s in specs] == ["draw"] * 7 + ["swap"]
    assert sum(s.commands for s in specs) == len(frames[1])
    whole = list(render_frames(frames, 96, 96))
    model = estimate_frames([r.counters for r in whole], load_gpu_config(),
                            load_energy_config())[1].seconds
    assert sum(s.actual_s for s in specs) == pytest.approx(model, rel=1e-6)
    # the face (the fifth draw, front to back) outweighs the readout (the last)
    assert specs[4].actual_s > specs[6].actual_s > 0
    assert specs[4].fragments > specs[6].fragments


def test_grid_deadlines_accumulate_lateness_rebased_ones_do_not():
    """A 75 ms frame at 20 FPS under FRRS: on 004's grid (eq. 1: frame j due at (j+1) x 50
    ms) it finishes 0.5, 1.0, 1.5, ... periods late; rebased on each release, 0.5 each time."""
    a = Application("a", 1, 20, [frame(75)])
    grid = simulate([a], "frrs", config=SimConfig(duration_s=0.31, **FREE))
    assert [round(f.lateness_periods, 6) for f in grid.frames] == [0.5, 1.0, 1.5, 2.0]
    rebase = simulate([a], "frrs", config=SimConfig(duration_s=0.31, deadlines="rebase",
                                                    **FREE))
    assert [round(f.lateness_periods, 6) for f in rebase.frames] == [0.5] * 4
    early = simulate([Application("b", 1, 20, [frame(10)])], "frrs",
                     config=SimConfig(duration_s=0.2, **FREE))
    assert [f.release_s for f in early.frames] == pytest.approx([0, 0.05, 0.1, 0.15])


def test_hpf_frame_mode_guards_the_whole_frame():
    """HP: 20 ms at 20 FPS (idle windows 20-50, 70-100, ...). LP: two 20 ms blocks. Per block
    (hpf) the first fits at 20-40, the second at 70-90: LP's frame finishes at 90. A whole
    frame (hpf-frame, 40 ms) never fits in a 30 ms window: LP never runs."""
    hp = Application("hp", 1, 20, [frame(20)])
    lp = Application("lp", 2, 5, [frame(20, 20)])
    cfg = SimConfig(duration_s=0.2, **FREE)
    per_block = simulate([hp, lp], "hpf", config=cfg)
    assert finishes(per_block, "lp") == [90.0]
    assert [(b.app, round(b.started_at / MS, 6)) for b in per_block.blocks
            if b.app == "lp"][:2] == [("lp", 20.0), ("lp", 70.0)]
    whole = simulate([hp, lp], "hpf-frame", config=cfg)
    assert not any(b.app == "lp" for b in whole.blocks)
    assert all(f.met for f in whole.frames)


# --- robustness to prediction error: issue 17's estimators (issue 18 item 5) -----------------

class Scaled:
    """Predicts every block at ``factor`` x its actual time."""

    name = "scaled"

    def __init__(self, factor: float):
        self.factor = factor

    def predict(self, block):
        return block.actual_s * self.factor

    def observe(self, block):
        pass


def test_an_underestimate_makes_004s_guard_admit_a_block_that_misses_and_a_margin_fixes_it():
    """004's guard (release): HP takes 10 ms at 20 FPS (a 40 ms idle window after each
    frame); LP has one 100 ms block. Predicted at 0.35 x (35 ms) it ends by prediction at
    45 <= 50 (HP's next release) when tried at t = 10, so the guard admits it. It runs
    10-110 and HP's frame 1 (released 50, due 100) runs 110-120: a miss. Frame 2 (released
    120, due 150) and frame 3 (150-160) are met. A 1.1 margin (38.5 ms) is still admitted;
    1.25 (43.75 ms) never fits a 40 ms window: LP never runs, HP meets every deadline."""
    hp = Application("hp", 1, 20, [frame(10)])
    lp = Application("lp", 2, 1, [frame(100)])
    cfg = SimConfig(duration_s=0.2, **FREE)
    fooled = simulate([hp, lp], "hpf", predictor=Scaled(0.35), config=cfg)
    assert finishes(fooled, "hp") == [10.0, 120.0, 130.0, 160.0]
    assert [f.met for f in fooled.frames if f.app == "hp"] == [True, False, True, True]
    assert [(b.app, round(b.started_at / MS, 6)) for b in fooled.blocks][2] == ("lp", 10.0)
    short = simulate([hp, lp], "hpf", predictor=Margin(Scaled(0.35), 1.1), config=cfg)
    assert finishes(short, "hp") == [10.0, 120.0, 130.0, 160.0]
    safe = simulate([hp, lp], "hpf", predictor=Margin(Scaled(0.35), 1.25), config=cfg)
    assert finishes(safe, "hp") == [10.0, 60.0, 110.0, 160.0]
    assert all(f.met for f in safe.frames) and not any(b.app == "lp" for b in safe.blocks)
    # the errors of the predictions made (margin divided out): every block 65% short
    errors = robustness.prediction_errors(safe, margin=1.25)
    assert errors["all"]["mean_abs_pct"] == pytest.approx(65.0)
    assert errors["all"]["under"] == 1.0 and errors["lp"]["blocks"] == 1
    sweep = robustness.sweep_predictors([hp, lp], cfg, {"scaled": lambda: Scaled(0.35)},
                                        margins=(1.0, 1.1, 1.25, 2.0))
    assert [r["hp_pmd"] for r in sweep["rows"]] == [0.75, 0.75, 1.0, 1.0]
    assert sweep["smallest_margin_for_100pct"] == {"scaled": 1.25}


WINDOW = (100, 50)
C_F = 1e-6          # the stub calibration: 1 us a fragment, nothing else costs


def layered_app(name: str, layers: int):
    """An application drawing ``layers`` full-window quads (es2gears' program, identity
    matrices) in one draw a frame, with its recorded commands and hand-made block costs: the
    draw shades layers x 5000 fragments at C_F each."""
    from tilesim.render.gl.commands import Recorder
    from tilesim.render.workloads.prediction_programs import corpus_program
    from tilesim.scheduling.estimators import AppCommands, setup_commands

    program = corpus_program("es2gears-")
    gl = Recorder(*WINDOW)
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    eye = np.eye(4, dtype=np.float32).ravel()
    gl.uniformMatrix4fv(gl.getUniformLocation(prog, "ModelViewProjectionMatrix"), False, eye)
    gl.uniformMatrix4fv(gl.getUniformLocation(prog, "NormalMatrix"), False, eye)
    quad = np.array([[-1, -1, 0, 0, 0, 1], [1, -1, 0, 0, 0, 1], [-1, 1, 0, 0, 0, 1],
                     [-1, 1, 0, 0, 0, 1], [1, -1, 0, 0, 0, 1], [1, 1, 0, 0, 0, 1]], np.float32)
    data = np.tile(quad, (layers, 1))
    gl.vertexAttribPointer(0, 3, "FLOAT", False, 24, data.view(np.uint8).ravel())
    gl.enableVertexAttribArray(0)
    for _ in range(2):
        gl.drawArrays("TRIANGLES", 0, 6 * layers)
        gl.endFrame()
    recorded = gl.recorded_frames()
    fragments = layers * WINDOW[0] * WINDOW[1]
    specs = [BlockSpec("draw", 1, fragments * C_F, float(fragments)),
             BlockSpec("swap", 1, 0.0, 0.0)]
    commands = AppCommands(name, *WINDOW, setup_commands(recorded[0]), recorded[1:])
    return specs, commands


def stub_calibration():
    from tilesim.prediction.predictor import Calibration, ProgramCost

    return (lambda context: Calibration("test", context.width, context.height),
            lambda *args: ProgramCost(0.0, C_F, 0.0))


def layered_scenario():
    """HP: one full-window layer (5 ms) at 20 FPS; LP: 24 stacked layers in one draw
    (120 ms) at 1 FPS."""
    hp_specs, hp_commands = layered_app("hp", 1)
    lp_specs, lp_commands = layered_app("lp", 24)
    apps = [Application("hp", 1, 20, [hp_specs]), Application("lp", 2, 1, [lp_specs])]
    hp_commands.check([hp_specs], "test")
    return apps, {"hp": hp_commands, "lp": lp_commands}


def test_bbox_underestimates_stacked_layers_so_the_guard_admits_them_a_margin_fixes_it():
    """003's bounding box sees 24 stacked full-window layers as one box: 0.5 x 5000 = 2500
    fragments, 2.5 ms for a 120 ms draw (and 2.5 ms for HP's 5 ms layer). At t = 5 (HP's
    frame done) the guard admits it (7.5 <= 50): it runs 5-125, HP's frame 1 (due 100)
    finishes at 130. With a margin m the scheduling thread first sleeps for HP's predicted
    frame (2.5 m ms, 004 Table 5-9 line 40), then admits the draw only if 2.5 m + 2.5 m
    <= 50: x9 still misses, x11 keeps every deadline. The oracle estimator knows the 120000
    fragments: 120 ms, refused at x1; history-ratio starts from the box (a miss), then
    learns the frame's fragments per vertex (120000 / 144) and refuses the next frame."""
    from tilesim.scheduling.estimators import make_predictor

    apps, commands = layered_scenario()
    calibration, program_cost = stub_calibration()
    cfg = SimConfig(duration_s=0.2, **FREE)

    def run(name, margin=1.0, config=cfg):
        predictor = make_predictor(name, commands, calibration, program_cost)
        return simulate(apps, "hpf", Margin(predictor, margin), config)

    bbox = run("bbox")
    assert finishes(bbox, "hp") == [5.0, 130.0, 135.0, 155.0]
    lp_block = next(b for b in bbox.predicted if b.app == "lp")
    assert lp_block.predicted_s == pytest.approx(2.5 * MS)      # 0.5 x 5000 fragments x 1 us
    assert robustness.prediction_errors(bbox)["lp"]["mean_abs_pct"] == pytest.approx(
        100 * (1 - 2.5 / 120))
    assert not all(f.met for f in run("bbox", 9.0).frames if f.app == "hp")
    safe = run("bbox", 11.0)
    assert all(f.met for f in safe.frames) and not any(b.app == "lp" for b in safe.blocks)
    oracle = run("oracle")
    assert all(f.met for f in oracle.frames)
    assert robustness.prediction_errors(oracle)["all"]["mean_abs_pct"] == pytest.approx(0.0)
    longer = SimConfig(duration_s=2.2, **FREE)
    learned = run("history-ratio", config=longer)
    missed = [f.frame for f in learned.frames if f.app == "hp" and not f.met]
    assert missed == [1]                           # only the frame the unlearned draw hit
    assert [b.frame for b in learned.blocks if b.app == "lp" and b.spec.kind == "draw"] == [0]
    lp_draws = [b for b in learned.predicted if b.app == "lp" and b.index == 0]
    assert lp_draws[1].predicted_s == pytest.approx(120 * MS)


def test_every_estimator_name_is_accepted():
    from tilesim.prediction.predictor import ESTIMATORS
    from tilesim.scheduling.estimators import make_predictor, predictor_names

    names = predictor_names(runtime_frames=2)
    assert set(ESTIMATORS) <= set(names)
    assert {"exact", "history", "history-baseline", "bbox+runtime"} <= set(names)
    apps, commands = layered_scenario()
    calibration, program_cost = stub_calibration()
    for name in names:
        predictor = make_predictor(name, commands, calibration, program_cost, runtime_frames=2)
        run = simulate(apps, "hpf", predictor, SimConfig(duration_s=0.3, **FREE))
        assert run.frames and all(b.predicted_s >= 0 for b in run.predicted), name
    with pytest.raises(InputError, match="--predictor"):
        make_predictor("bbox+runtime", commands, calibration, program_cost)
    with pytest.raises(InputError, match="--predictor"):
        make_predictor("histogram", commands, calibration, program_cost)


def test_cli_predictor_names_and_the_predictor_sweep(tmp_path, capsys):
    import json

    from tilesim.cli import main

    blocks = str(_tiny_blocks(tmp_path))
    for argv, what in ((["--predictor", "histogram"], "unknown predictor"),
                       (["--predictor", "bbox+runtime"], "--runtime-calibration"),
                       (["--predictor", "exact,bbox"], "one predictor per run"),
                       (["--sweep-predictors", "--margins", "1,x"], "--margins"),
                       (["--sweep-predictors", "--margins", "0"], "--margins")):
        assert main(["schedule", "MTS-2", "--duration", "0.2", "--blocks", blocks, *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and what in err, err
    assert main(["schedule", "MTS-2", "--sweep-predictors", "--predictor", "exact,history",
                 "--error", "under:0.5", "--margins", "1,2", "--duration", "1", "--blocks",
                 blocks, "--json", "--plot", str(tmp_path / "plots")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["predictor"] for r in result["rows"]] == ["exact"] * 2 + ["history"] * 2 + [
        "under(0.5)"] * 2
    assert result["errors"]["exact"]["all"]["mean_abs_pct"] == 0.0
    assert result["smallest_margin_for_100pct"]["exact"] == 1.0
    assert (tmp_path / "plots" / "MTS-2-hpf-release-pmd-vs-margin.png").stat().st_size > 0


@pytest.mark.mesa
@pytest.mark.slow
def test_cli_every_estimator_on_small_cluster_applications(tmp_path, capsys, mesa):
    """The scenario's applications rebuilt in small windows: their recorded commands match
    their block costs, and every estimator name predicts them (calibrated on the timing
    model, cached in --calibration)."""
    import json

    from tilesim.cli import main
    from tilesim.prediction.predictor import ESTIMATORS
    from tilesim.scheduling import scenarios

    text = scenarios.SCENARIOS_TOML.read_text()
    for big, small in (("[480, 480]", "[48, 48]"), ("[640, 480]", "[64, 48]"),
                       ("[960, 540]", "[64, 36]")):
        text = text.replace(f"size = {big}", f"size = {small}")
    config = tmp_path / "small.toml"
    config.write_text(text.replace("frames = 4 ", "frames = 2 "))
    common = ["--config", str(config), "--calibration", str(tmp_path / "cal")]
    assert main(["schedule", "MTS-2", *common, "--rebuild-blocks", str(tmp_path / "b.json"),
                 "--duration", "0.1"]) == 0
    capsys.readouterr()
    common += ["--blocks", str(tmp_path / "b.json"), "--duration", "0.5"]
    assert main(["schedule", "MTS-2", *common, "--predictor", "bbox", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["predictor"] == "bbox"
    assert main(["schedule", "MTS-2", *common, "--sweep-predictors", "--margins", "1",
                 "--runtime-calibration", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    names = [r["predictor"] for r in result["rows"]]
    assert set(ESTIMATORS) | {f"{e}+runtime" for e in ESTIMATORS} | {
        "exact", "history", "history-baseline"} == set(names)
    oracle = result["errors"]["oracle"]
    assert oracle["spam"]["mean_abs_pct"] < 5     # it knows the spam's stacked fragments
    assert result["errors"]["bbox"]["spam"]["mean_pct"] < -80   # the box does not



@pytest.mark.slow
def test_without_simpy_the_schedule_command_names_its_extra(tmp_path):
    """SimPy is the schedule extra's: without it every other command works and `tilesim
    schedule` says, in one line, what to install."""
    import subprocess
    import sys

    blocked = ("import sys; sys.modules['simpy'] = None; from tilesim.cli import main; "
               "sys.exit(main(sys.argv[1:]))")
    help_ok = subprocess.run([sys.executable, "-c", blocked, "--help"], capture_output=True,
                             text=True, timeout=120)
    assert help_ok.returncode == 0
    done = subprocess.run([sys.executable, "-c", blocked, "schedule", "MTS-1"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "tilesim: error: the scheduling model needs SimPy (the discrete-event simulator): "
        "pip install 'tilesim[schedule]'"]
