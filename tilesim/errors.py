"""Errors meant for users: each names the file and the place, and maps to an exit code."""

from __future__ import annotations

import functools

EXIT_OK = 0
EXIT_FAILED_CHECK = 1
EXIT_BAD_INPUT = 2


class TilesimError(Exception):
    """Base of every error tilesim reports to a user (exit code 2: bad usage or input)."""

    exit_code = EXIT_BAD_INPUT


class InputError(TilesimError):
    """Malformed input: names where (file, line, column, call number) and what was expected."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 column: int | None = None):
        self.source = source
        self.line = line
        self.column = column
        # No source: the message names what it is about (an option, a call); no "<input>:"
        # placeholder naming nothing.
        where = source or ("" if line is None else "line")
        if line is not None:
            where += f":{line}" if source else f" {line}"
            if column is not None:
                where += f":{column}"
        self.bare_message = message
        super().__init__(f"{where}: {message}" if where else message)

    def __reduce__(self):
        # Rebuilt from its parts: an error raised in a Dask worker reaches the user as it was
        # made (the default rebuilds from the formatted text, prefixing "<input>: " again).
        return (functools.partial(type(self), source=self.source, line=self.line,
                                  column=self.column), (self.bare_message,))


class ProgramTimedOut(InputError):
    """An external program (a captured GLES2 program under Xvfb, apitrace) ran past its
    bound and was killed with everything it started."""


class ToolMissing(TilesimError):
    """An external program or library (Mesa, apitrace, Xvfb) is not installed."""


def resolve_name(kind: str, name: str, known, *, source: str | None = None) -> str:
    """The one of ``known`` names that ``name`` means, compared without case ("mts-2" is
    MTS-2); anything else is an InputError listing them, with the closest as a suggestion."""
    import difflib

    known = list(known)
    folded = {k.casefold(): k for k in known}
    if name in known:
        return name
    if name.casefold() in folded:
        return folded[name.casefold()]
    close = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=0.6)
    hint = f"; did you mean {folded[close[0]]!r}?" if close else ""
    raise InputError(f"unknown {kind} {name!r}{hint} (known: {', '.join(known)})", source=source)
