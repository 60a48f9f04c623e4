"""Progress of a long command: tqdm's bar on a terminal, plain lines elsewhere.

Where stderr is not a terminal (a CI log, a file, a pipe) tqdm's bar is disabled and a study
would be silent for minutes; :func:`progress_bar` prints a line on stdout instead (``study:
12/36 runs (33%), 95 s``) when something finishes, at most every ``LINE_INTERVAL_S`` seconds,
and one at the end. Stdout, because stderr holds the one-line errors scripts read; a command
whose stdout is data (``--json``) turns the lines off with ``LINES = False``.
"""

from __future__ import annotations

import sys
import time

LINE_INTERVAL_S = 10.0
LINES = True        # False: no lines (stdout is a command's data, e.g. --json)


class LineProgress:
    """The part of tqdm's interface the studies use (update, set_postfix_str, close, a context
    manager), as lines on ``file`` (default stdout)."""

    def __init__(self, total: int, *, desc: str, unit: str, initial: int = 0, file=None,
                 interval: float = LINE_INTERVAL_S):
        self.total, self.desc, self.unit, self.n = total, desc, unit, initial
        self.file = file if file is not None else sys.stdout
        self.interval = interval
        self.started = time.monotonic()
        self.printed = None           # when the last line was printed
        self.postfix = ""
        self.closed = False

    def _line(self) -> None:
        share = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        postfix = f" [{self.postfix}]" if self.postfix else ""
        print(f"{self.desc}: {self.n}/{self.total} {self.unit}s{share}, "
              f"{time.monotonic() - self.started:.0f} s{postfix}", file=self.file, flush=True)
        self.printed = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.printed is None or time.monotonic() - self.printed >= self.interval:
            self._line()

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.total:
                self._line()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress_bar(total: int, *, desc: str, unit: str, initial: int = 0, enabled: bool = True,
                 leave: bool = True):
    """tqdm on a terminal (stderr), :class:`LineProgress` on stdout where neither stderr nor
    stdout is one (a CI log), a tqdm that prints nothing when ``enabled`` is False."""
    from tqdm import tqdm

    if enabled and LINES and not _terminal(sys.stderr) and not _terminal(sys.stdout):
        return LineProgress(total, desc=desc, unit=unit, initial=initial)
    return tqdm(total=total, initial=initial, desc=desc, unit=unit,
                disable=None if enabled else True, leave=leave)


def _terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):       # replaced by a test, or closed
        return False
