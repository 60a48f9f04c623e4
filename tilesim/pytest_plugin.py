"""pytest plugin: golden frames of your own traces in your own test suite.

Installed with tilesim (entry point ``pytest11``); ``-p no:tilesim.pytest_plugin`` turns it
off. Two ways to use it, one check behind both (:mod:`tilesim.studies.goldens`, the
code of ``tilesim goldens check``)::

    def test_title_screen(tilesim_golden):
        tilesim_golden.check("traces/title.tsim", frames=[0, 1], techniques=["baseline", "dsr"])

    @pytest.mark.tilesim_golden("traces/title.tsim", frames=[0, 1], techniques=["re", "dsr"])
    def test_title_screen_again():
        ...   # the frames are checked after the test's body, when it passes

A relative trace path starts at pytest's rootdir. The goldens are a manifest and PNGs,
``goldens/manifest.json`` beside the test file (or in the folder the ini option
``tilesim_golden_dir`` names, relative to the rootdir), readable by ``tilesim goldens check
--manifest``. Each golden is the trace's frame at baseline; a lossless technique (te, re,
evr, memo, ...) must reproduce it bit for bit, any other (dsr, memo/32, re/xor) must keep
``tilesim.thresholds.DSR_MIN_MSSIM`` against it (frames below the SSIM window: every channel
within ``PROBE_TOLERANCE``).

A failed check fails the test, naming each failing (technique, golden), and writes the
obtained frame, the golden and their difference with an ``index.html`` summary to
``tilesim-golden-results/<test>/`` under the rootdir (``--tilesim-golden-results DIR``).
A missing golden fails too; ``pytest --tilesim-golden-generate`` (re)writes the goldens the
tests ask for from what tilesim renders now (no acceptance against Mesa: that is ``tilesim
goldens update`` without ``--no-mesa``) and then checks the other techniques against them.

Imports tilesim's renderer only when a check runs, so a test session that uses none pays
nothing.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

GENERATE = "--tilesim-golden-generate"
RESULTS = "--tilesim-golden-results"
MARKER = "tilesim_golden"
_REPORTS = pytest.StashKey[list]()   # (test, its results' index.html) of failed checks
_WRITTEN = pytest.StashKey[list]()   # what --tilesim-golden-generate wrote, one line each


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tilesim", "tilesim golden frames")
    group.addoption(GENERATE, action="store_true",
                    help="(re)write the golden frames the tests check from what tilesim renders "
                         "now, then check the techniques against them")
    group.addoption(RESULTS, metavar="DIR",
                    help="where failed golden checks write obtained, expected and difference "
                         "images and index.html (default: tilesim-golden-results under the "
                         "rootdir)")
    parser.addini("tilesim_golden_dir",
                  "folder of the golden manifest and PNGs, relative to the rootdir (default: "
                  "goldens beside each test file)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(trace, frames=(0,), techniques=('baseline',), name=None): "
                   "check frames of a .tsim trace against golden PNGs after the test's body "
                   "(tilesim's plugin)")
    config.stash[_REPORTS] = []
    config.stash[_WRITTEN] = []


class GoldenChecker:
    """What the ``tilesim_golden`` fixture gives a test: :meth:`check`."""

    def __init__(self, config: pytest.Config, test_file: Path, nodeid: str):
        self.config = config
        self.rootdir = Path(config.rootpath)
        self.nodeid = nodeid
        folder = config.getini("tilesim_golden_dir")
        self.manifest_path = ((self.rootdir / folder) if folder else
                              (test_file.parent / "goldens")) / "manifest.json"
        results = config.getoption(RESULTS)
        results = Path(results) if results else self.rootdir / "tilesim-golden-results"
        self.results = results / re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_")

    def check(self, trace: str | os.PathLike, frames: Iterable[int] = (0,),
              techniques: Iterable[str] = ("baseline",), *, name: str | None = None
              ) -> list[dict]:
        """Render ``frames`` of ``trace`` with each of ``techniques`` and compare with the
        goldens (named ``<name or the trace's stem>-<frame:04d>``); fails the test when one
        differs or is missing. Returns the rows of
        :func:`tilesim.studies.goldens.check_techniques`."""
        from tilesim.errors import TilesimError
        from tilesim.studies import goldens

        trace = Path(trace)
        trace = trace if trace.is_absolute() else self.rootdir / trace
        frames = sorted({int(f) for f in frames})
        if isinstance(techniques, str):
            techniques = [techniques]
        generate = self.config.getoption(GENERATE)
        if not frames or not techniques:   # a check of nothing must not pass
            pytest.fail(f"{trace}: tilesim_golden needs at least one frame and one technique "
                        f"(got frames={frames}, techniques={list(techniques)})", pytrace=False)
        try:
            names = goldens.technique_names(techniques)
            manifest = goldens.open_manifest(self.manifest_path, create=True,
                                             root=self.rootdir)
            entries = manifest.register(trace, frames, name=name)
            missing = [g for g in entries if not (manifest.folder / g.png).is_file()]
            if generate:
                log = io.StringIO()
                goldens.update(entries, folder=manifest.folder, root=manifest.root,
                               mesa=False, out=log)
                manifest.save()
                self.config.stash[_WRITTEN] += [
                    f"{self.nodeid}: {line}" for line in log.getvalue().splitlines()
                    if not line.startswith("unchanged ")]
                names = [n for n in names if n != "baseline"]   # identical by construction
            elif missing:
                pytest.fail(f"no golden {', '.join(g.name for g in missing)} in "
                            f"{manifest.folder}: run pytest with {GENERATE} to make it",
                            pytrace=False)
            _clear(self.results)
            rows = goldens.check_techniques(entries, names, folder=manifest.folder,
                                            root=manifest.root, results=self.results)
        except TilesimError as exc:
            error = str(exc)   # failed outside the handler: one line, no chained traceback
        else:
            error = None
        if error is not None:
            pytest.fail(error, pytrace=False)
        failed = [r for r in rows if not r["passed"]]
        if failed:
            summary = self.results / "index.html"
            self.config.stash[_REPORTS].append((self.nodeid, summary))
            lines = [f"{r['technique']} {r['golden']} (frame {r['frame']}): {r['criterion']} "
                     f"failed ({_measure(r)})" for r in failed]
            pytest.fail(f"{len(failed)} of {len(rows)} golden checks failed against "
                        f"{manifest.path}:\n  " + "\n  ".join(lines)
                        + f"\nobtained and difference images: {summary}\n"
                          f"(if the change is intended: pytest {GENERATE})", pytrace=False)
        return rows


def _measure(row: dict) -> str:
    if row["max_diff"] is None:
        return "the frame's size differs from the golden's"
    mssim = "" if row["mssim"] is None else f"MSSIM {row['mssim']:.6f}, "
    return f"{mssim}{row['pixels']} pixels differ, by up to {row['max_diff']}/255"


def _clear(results: Path) -> None:
    """Remove the images and summary an earlier run of this test wrote (only those)."""
    if not results.is_dir():
        return
    for path in results.glob("*/*.png"):
        if path.name.endswith((".obtained.png", ".expected.png", ".diff.png", ".zoom.png")):
            path.unlink()
    (results / "index.html").unlink(missing_ok=True)


@pytest.fixture
def tilesim_golden(request: pytest.FixtureRequest) -> GoldenChecker:
    """Checks frames of a .tsim trace against golden PNGs: ``tilesim_golden.check(trace,
    frames=[...], techniques=[...])`` (see :mod:`tilesim.pytest_plugin`)."""
    return GoldenChecker(request.config, Path(request.node.path), request.node.nodeid)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield          # the test's body; an exception there skips the golden check
    marker = item.get_closest_marker(MARKER)
    if marker is not None:
        GoldenChecker(item.config, Path(item.path), item.nodeid).check(*marker.args,
                                                                        **marker.kwargs)
    return result


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    """The goldens --tilesim-golden-generate wrote (new or changed) and where failed checks
    left their images."""
    written = config.stash.get(_WRITTEN, [])
    reports = config.stash.get(_REPORTS, [])
    if written or reports:
        terminalreporter.section("tilesim golden frames")
        for line in written:
            terminalreporter.write_line(f"wrote {line}")
        for nodeid, summary in reports:
            terminalreporter.write_line(f"{nodeid}: {summary}")
