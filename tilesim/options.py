"""Values the command line takes, parsed one way for every command: window sizes (``WxH``),
byte sizes (``8G``), frame ranges (``A:B``; a bare ``N`` is refused, :func:`frame_span`) and
the default of ``--workers`` (:func:`default_workers`). Bad values are :class:`InputError`
naming the option, which the CLI prints as one line with exit status 2."""

from __future__ import annotations

import argparse
import re

from tilesim.errors import InputError

# The largest window side GLES2 programs ask for in practice (GL_MAX_VIEWPORT_DIMS of Mesa's
# software drivers is 16384).
MAX_WINDOW_SIDE = 16384

_BYTES_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", re.IGNORECASE)
_BYTE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def window_size(text: str, *, option: str = "--size", minimum: int = 1,
                maximum: int = MAX_WINDOW_SIDE) -> tuple[int, int]:
    """'WxH' -> (W, H) in pixels, each side within ``minimum``..``maximum``."""
    width, sep, height = str(text).lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        size = None
    if not sep or size is None:
        raise InputError(f"{option} {text!r}: expected WxH, e.g. 800x600")
    if not all(minimum <= side <= maximum for side in size):
        raise InputError(f"{option} {text!r}: width and height must lie in "
                         f"{minimum}..{maximum}")
    return size


def window_size_argument(*, minimum: int = 1, maximum: int = MAX_WINDOW_SIDE):
    """:func:`window_size` as an argparse ``type=``: a bad value is a usage error."""
    def parse(text: str) -> tuple[int, int]:
        try:
            return window_size(text, minimum=minimum, maximum=maximum)
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.bare_message) from None
    return parse


def _whole_number(text: str, minimum: int) -> int:
    """``text`` as an int of at least ``minimum``, or argparse's one-line error."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (workers, frames, ...)."""
    return _whole_number(text, 1)


def nonnegative_int(text: str) -> int:
    """An argparse type: a whole number of at least 0 (frames left out, loop counts where 0
    means none)."""
    return _whole_number(text, 0)


def byte_size(text: str) -> int:
    """Bytes of a size written as ``8G``, ``512M``, ``1.5GiB`` or a plain number of bytes
    (ValueError when it is none of these)."""
    m = _BYTES_RE.fullmatch(str(text))
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"expected a size such as 8G, 512M or 1073741824, got {text!r}")
    return int(float(m.group(1)) * _BYTE_UNITS[m.group(2).upper()])


FRAMES_HELP = ("frames A:B (from A up to, not including, B; either side optional, negative "
               "counting from the end; :N is the first N)")


def _bare_frame(text: str, option: str, source: str | None = None) -> InputError:
    """The error of a bare 'N': once a count in some commands and a frame number in others,
    it is refused rather than read one way (an old command line never silently means
    something else)."""
    n = text.strip()
    if not n.lstrip("-").isdigit():
        hint = "expected A:B, A: or :B"
    elif int(n) < 0:     # counting from the end: -1:0 would be empty, :-1 not a count
        last = "the last frame" if int(n) == -1 else f"the last {-int(n)} frames, or " \
            f"{n}:{int(n) + 1} for frame {n} alone"
        hint = f"use {n}: for {last}"
    else:
        hint = f"use :{n} for the first {n} frames, or {n}:{int(n) + 1} for frame {n} alone"
    return InputError(f"{option} {text!r}: a range A:B is expected; {hint}", source=source)


def frame_span(text: str, *, option: str = "--frames",
               source: str | None = None) -> tuple[int | None, int | None]:
    """'A:B' -> (A, B), a side left out None; a bare 'N' is refused (:func:`_bare_frame`)."""
    text = str(text)
    if ":" not in text:
        raise _bare_frame(text, option, source)
    a, _, b = text.partition(":")
    try:
        return (int(a) if a.strip() else None, int(b) if b.strip() else None)
    except ValueError:
        raise InputError(f"{option} {text!r}: expected A:B, A: or :B",
                         source=source) from None


def frames_argument(option: str = "--frames"):
    """An argparse ``type=`` checking a frame range's form (the text is kept: its frames
    depend on the trace, :func:`frame_range`); a bare 'N' is a usage error."""
    def parse(text: str) -> str:
        try:
            frame_span(text, option=option)
        except InputError as exc:
            # argparse names the option itself ("argument --frames: '3': ...")
            raise argparse.ArgumentTypeError(
                exc.bare_message.removeprefix(f"{option} ")) from None
        return text
    return parse


def first_frames(text: str, *, option: str = "--frames") -> int:
    """The N of ':N' (or '0:N'): for commands that make frames from a program's start
    (capture, import, generated workloads), where a range must begin at frame 0."""
    start, stop = frame_span(text, option=option)
    if start not in (None, 0) or stop is None or stop < 1:
        raise InputError(f"{option} {text!r}: frames are made from the program's start; "
                         f"give :N (the first N frames)")
    return stop


def first_frames_argument(option: str = "--frames"):
    """:func:`first_frames` as an argparse ``type=`` (the value is N)."""
    def parse(text: str) -> int:
        try:
            return first_frames(text, option=option)
        except InputError as exc:
            raise argparse.ArgumentTypeError(
                exc.bare_message.removeprefix(f"{option} ")) from None
    return parse


def frame_range(text: str, count: int, *, option: str = "--frames",
                source: str | None = None) -> range:
    """'A:B' (either side optional, negative counting from the end) -> the range of frame
    numbers it names within a trace of ``count`` frames (``source``: the trace, which an
    error names). A bare 'N' is refused (:func:`_bare_frame`)."""
    start, stop = frame_span(text, option=option, source=source)
    start = 0 if start is None else start
    stop = count if stop is None else stop
    if start < 0:
        start += count
    if stop < 0:
        stop += count
    if not 0 <= start < stop <= count:
        raise InputError(f"{option} {text!r}: the trace has frames 0..{count - 1}",
                         source=source)
    return range(start, stop)


def default_workers(work: int | None = None) -> int:
    """The one default of every command's ``--workers``: the CPU count, capped by the pieces
    of work there are (``work``, when known; at least 1)."""
    import os

    cpus = os.cpu_count() or 1
    return max(1, cpus if work is None else min(cpus, work))


WORKERS_HELP = "worker processes (default: the CPU count, capped by the work to do)"


# Suffixes of the files `--out` once named in some commands (coherence, dsr-search), before it
# was a folder everywhere: such a value is refused, not made a folder of that name.
_FILE_SUFFIXES = (".json", ".toml")


def out_file(folder: str, name: str, *, option: str = "--out"):
    """The file ``name`` in the output folder ``folder`` (a Path). ``folder`` ending in .json
    or .toml and not an existing folder is refused: an old command line naming the file."""
    from pathlib import Path

    path = Path(folder)
    if path.suffix.lower() in _FILE_SUFFIXES and not path.is_dir():
        raise InputError(f"{option} {folder!r}: {option} is a folder (the file written is "
                         f"DIR/{name}); give {str(path.parent)!r} or another folder")
    return path / name


def name_argument(kind: str, known):
    """An argparse ``type=`` for a name users type (an estimator, a workload): compared
    without case, a misspelling answered with the closest name (:func:`resolve_name`)."""
    from tilesim.errors import resolve_name

    def parse(text: str) -> str:
        try:
            return resolve_name(kind, text, known)
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.bare_message) from None
    parse.known = tuple(known)   # what tab completion offers
    return parse


def technique_name(text: str) -> str:
    """An argparse ``type=`` for ``--technique``: the name as the techniques know it, without
    case or spaces ("RE/XOR" is re/xor; Techniques.from_name checks it and suggests)."""
    return text.strip().lower()
