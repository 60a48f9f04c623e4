"""Opening an input file the one safe way: regular files only, sizes within the budget.

A user-given path may name a fifo (``open`` waits for a writer forever), a device such as
``/dev/zero`` (reading never ends and memory grows until the machine kills the process) or a
file larger than the memory budget. :func:`open_input` opens without blocking, refuses
anything but a regular file at once (InputError naming the path) and, for a file read whole,
checks its size against :func:`tilesim.memory_budget.check_memory` before reading; every
command's input opens go through it (traces, ``--config``, ``--energy-config``,
``--dsr-parameters``). Every TOML file, a user's or a shipped one, is read by
:func:`read_toml` (:func:`parse_toml` for text already read); a user's JSON by
:func:`read_json` (:func:`parse_json`).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from typing import Any, BinaryIO

from tilesim.errors import InputError
from tilesim.memory_budget import check_memory


def open_input(path: str | os.PathLike, what: str = "input file", *,
               whole: bool = True) -> BinaryIO:
    """``path`` opened for binary reading; InputError naming it when it does not exist, is a
    folder or is not a regular file (fifo, device, socket), or, with ``whole`` (it will be
    read whole), is larger than the memory budget. Never blocks: a fifo is refused, not
    waited on."""
    where = os.fspath(path)
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"no such {what}", source=where) from None
    except IsADirectoryError:
        raise InputError(f"is a folder, not a {what}", source=where) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}",
                         source=where) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"is a folder, not a {what}", source=where)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"not a regular file (a fifo, device or socket); the {what} "
                             "must be one", source=where)
        if whole:
            check_memory(f"reading the {what}", info.st_size, where)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input_bytes(path: str | os.PathLike, what: str = "input file") -> bytes:
    """The bytes of ``path``, opened by :func:`open_input`."""
    with open_input(path, what) as handle:
        try:
            return handle.read()
        except OSError as exc:
            raise InputError(f"cannot read the {what}: {exc.strerror or exc}",
                             source=os.fspath(path)) from None


def read_input_text(path: str | os.PathLike, what: str = "input file") -> str:
    """The UTF-8 text of ``path``, opened by :func:`open_input`; InputError when it is not
    UTF-8."""
    data = read_input_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start}), not a {what}",
                         source=os.fspath(path)) from None


# tomllib (3.11-3.13) gives the place only in its message: "Invalid value (at line 2, column
# 5)" or "Unclosed array (at end of document)".
_TOML_PLACE = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at (end of document))\)$")


def parse_toml(text: str, source: str | os.PathLike) -> dict:
    """The tables of TOML ``text`` read from ``source``; InputError naming ``source`` and, for
    a syntax error, its line and column (the end of the text for one found there), never a
    TOMLDecodeError or RecursionError traceback."""
    where = os.fspath(source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "syntax error"
        place = _TOML_PLACE.search(reason)
        line = column = None
        if place is not None:
            reason = reason[:place.start()]
            if place.group(3):
                line = text.count("\n") + 1
                column = len(text) - (text.rfind("\n") + 1) + 1
                reason += " at the end of the file"
            else:
                line, column = int(place.group(1)), int(place.group(2))
        raise InputError(f"not valid TOML: {reason}", source=where, line=line,
                         column=column) from None
    except RecursionError:
        raise InputError("not valid TOML: arrays or tables nested too deeply",
                         source=where) from None


def read_toml(path: str | os.PathLike, what: str = "TOML file") -> dict:
    """The tables of the TOML file ``path``, read by :func:`read_input_text` (a missing,
    folder, fifo, over-budget or non-UTF-8 file is an InputError naming it) and parsed by
    :func:`parse_toml` (a syntax error is an InputError naming the file, line and column)."""
    return parse_toml(read_input_text(path, what), path)


def trace_and_frames(spec: str) -> tuple[str, str]:
    """``TRACE[@A:B]`` -> (TRACE, 'A:B' or ''). A path that exists is a path, '@' in its
    name or not; otherwise the frames follow the last '@' (a folder name may hold one)."""
    if os.path.lexists(spec) or "@" not in spec:
        return spec, ""
    path, _, frames = spec.rpartition("@")
    return path, frames


def shown_name(text: str) -> str:
    """``text`` (a name taken from a path) as text a report, a plot or a UTF-8 file can hold:
    the bytes of a file name that are not UTF-8 (os.fsdecode's lone surrogates, which
    matplotlib and UTF-8 encoders refuse with a traceback) as U+FFFD, as a browser shows them."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def parse_json(text: str, source: str | os.PathLike, **options) -> Any:
    """The value of JSON ``text`` read from ``source`` (``options``: ``json.loads``'); an
    InputError naming ``source`` and, for a syntax error, its line and column, never a
    JSONDecodeError or RecursionError traceback (absurd nesting, an integer too long to
    convert)."""
    where = os.fspath(source)
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}", source=where, line=exc.lineno,
                         column=exc.colno) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"malformed JSON: {exc}", source=where) from None


def read_json(path: str | os.PathLike, what: str = "JSON file") -> Any:
    """The value of the JSON file ``path``, read by :func:`read_input_text` (a missing,
    folder, fifo, over-budget or non-UTF-8 file is an InputError naming it) and parsed by
    :func:`parse_json`."""
    return parse_json(read_input_text(path, what), path)
