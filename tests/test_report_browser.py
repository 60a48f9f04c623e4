"""The report of a quick `tilesim run`, opened in a real browser: Debian's chromium driven by
Playwright (no browser download). No console errors, every image and plot loads, the summary
table has a row per workload and technique; a screenshot is kept as a CI artifact
(``$TILESIM_ARTIFACTS``, default ``out/ci-artifacts``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import _unavailable, require_tools

from tilesim.render.studies.study import QUICK_WORKLOADS

CHROMIUM = "/usr/bin/chromium"


@pytest.mark.slow
def test_the_quick_study_report_loads_cleanly_in_chromium(tmp_path):
    require_tools("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    out = tmp_path / "study"
    run = subprocess.run([sys.executable, "-m", "tilesim.cli", "run", "--quick", "--out",
                          str(out)], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    expected = [(w["name"], t) for w in results["workloads"] for t in w["runs"]]
    assert len(expected) == len(QUICK_WORKLOADS) * 9

    artifacts = Path(os.environ.get("TILESIM_ARTIFACTS", "out/ci-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error"
                    else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
            page.goto((out / "index.html").as_uri(), wait_until="load")
            images = page.evaluate("""() => Array.from(document.images).map(i => (
                {src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0}))""")
            rows = page.evaluate("""() => Array.from(
                document.querySelectorAll('#summary tbody tr')).map(
                r => [r.dataset.workload, r.dataset.technique])""")
            page.screenshot(path=str(artifacts / "report.png"))
            page.screenshot(path=str(artifacts / "report-full.png"), full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert len(images) > len(QUICK_WORKLOADS) * 9 * 2
    assert [i["src"] for i in images if not i["ok"]] == []
    assert sorted(map(tuple, rows)) == sorted(expected)
    # Plots are among the images that loaded.
    assert any(i["src"].endswith("suite.png") for i in images)
    assert any("/plots/time.png" in i["src"] for i in images)
