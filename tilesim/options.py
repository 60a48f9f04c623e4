"""Values the command line takes, parsed one way for every command: window sizes (``WxH``),
byte sizes (``8G``) and frame ranges (``A:B``). Bad values are :class:`InputError` naming the
option, which the CLI prints as one line with exit status 2."""

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


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (workers, frames, ...)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def byte_size(text: str) -> int:
    """Bytes of a size written as ``8G``, ``512M``, ``1.5GiB`` or a plain number of bytes
    (ValueError when it is none of these)."""
    m = _BYTES_RE.fullmatch(str(text))
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"expected a size such as 8G, 512M or 1073741824, got {text!r}")
    return int(float(m.group(1)) * _BYTE_UNITS[m.group(2).upper()])


def frame_range(text: str, count: int, *, option: str = "--frames",
                source: str | None = None) -> range:
    """'A:B' (either side optional, negative counting from the end) or 'N' -> the range of
    frame numbers it names within a trace of ``count`` frames (``source``: the trace, which
    an error names)."""
    try:
        if ":" in text:
            a, _, b = text.partition(":")
            start = int(a) if a.strip() else 0
            stop = int(b) if b.strip() else count
        else:
            start = int(text)
            stop = start + 1
    except ValueError:
        raise InputError(f"{option} {text!r}: expected A:B, A: , :B or N",
                         source=source) from None
    if start < 0:
        start += count
    if stop < 0:
        stop += count
    if not 0 <= start < stop <= count:
        raise InputError(f"{option} {text!r}: the trace has frames 0..{count - 1}",
                         source=source)
    return range(start, stop)
