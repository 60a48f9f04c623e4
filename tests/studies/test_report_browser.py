"""The report of a quick `tilesim run`, opened in a real browser: Debian's chromium driven by
Playwright (no browser download). No console errors, every image and plot loads, the summary
table has a row per workload and technique; the figures a paper needs are on the page (ms,
fps and mJ per frame, the glossary, the modelled GPU) and nothing overflows sideways at 800
and 1920 px. Screenshots at both widths are kept as CI artifacts (``$TILESIM_ARTIFACTS``,
default ``out/ci-artifacts``; .ci/run keeps that folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import _unavailable, require_tools

from tilesim.studies.study import QUICK_WORKLOADS

CHROMIUM = "/usr/bin/chromium"
WIDTHS = (800, 1920)
# Text a reader of the report must find: the absolute units, the glossary, the GPU summary.
REQUIRED_TEXT = ("ms / frame", "fps", "mJ GPU", "mJ DRAM", "mJ screen", "Glossary",
                 "Rendering Elimination", "The modelled GPU", "MHz", "nm", "pixels",
                 "L2 cache", "GB/s", "energy: DRAM", "pJ per byte", "Beside the thesis",
                 "identical")


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
    seen: dict[int, dict] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            problems: list[str] = []
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1080})
                page.on("console", lambda m: problems.append(m.text) if m.type == "error"
                        else None)
                page.on("pageerror", lambda e: problems.append(str(e)))
                page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
                page.goto((out / "index.html").as_uri(), wait_until="load")
                seen[width] = page.evaluate("""() => ({
                    images: Array.from(document.images).map(i => (
                        {src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0})),
                    rows: Array.from(document.querySelectorAll('#summary tbody tr')).map(
                        r => [r.dataset.workload, r.dataset.technique]),
                    text: document.body.textContent,
                    scrollWidth: document.documentElement.scrollWidth,
                    innerWidth: window.innerWidth,
                    anchors: Array.from(document.querySelectorAll('nav a')).map(
                        a => a.getAttribute('href')),
                    ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id)})""")
                page.screenshot(path=str(artifacts / f"report-{width}.png"))
                page.screenshot(path=str(artifacts / f"report-{width}-full.png"),
                                full_page=True)
                page.close()
        finally:
            browser.close()
    assert problems == []
    for width, found in seen.items():
        assert found["scrollWidth"] <= found["innerWidth"], f"overflows sideways at {width} px"
    found = seen[1920]
    images = found["images"]
    assert len(images) > len(QUICK_WORKLOADS) * 9
    assert [i["src"] for i in images if not i["ok"]] == []
    assert sorted(map(tuple, found["rows"])) == sorted(expected)
    # Plots are among the images that loaded.
    assert any(i["src"].endswith("suite.png") for i in images)
    assert any("/plots/time.png" in i["src"] for i in images)
    assert any("/plots/tiles-re.png" in i["src"] for i in images)
    for text in REQUIRED_TEXT:
        assert text in found["text"], text
    # every technique of the study has its glossary entry; every contents link a target
    for technique in results["settings"]["techniques"]:
        assert f"g-{technique.replace('/', '-').replace('+', '_')}" in found["ids"]
    assert all(a[1:] in found["ids"] for a in found["anchors"] if a.startswith("#"))
    # the absolute figures shown are results.json's (per frame, in ms)
    first = results["workloads"][0]
    assert f"{first['runs']['baseline']['per_frame']['ms']:.3f} ms" in found["text"]
