"""Command groups: a trace's command stream cut the way a GPU driver submits it.

Concepts for Execution Time Prediction of 3D GPU Rendering (seed 003) §III: "consecutive batches
of GPU commands are called command groups"; the driver flushes its command buffer (pushbuffer)
to the kernel at ``glFlush``, ``glFinish`` and ``eglSwapBuffers`` (the FLUSH class), when the
context changes (``eglMakeCurrent`` flushes, 003 §IV-C) and when the buffer is full (003 §VI-D:
es2gears' frames are split into 5 groups; Hua Ma's thesis, seed 000, §5.3 situation 1: "when
the command buffer is full"). A command never straddles two groups (000 §5.3: a draw or clear
split by a full buffer is mapped to the second group).

The bytes each command takes, and the buffer's size, are data: ``command_groups.toml`` (each
number with its source); ``--group-bytes`` of ``tilesim predict`` overrides the limit.

Several contexts (003 §VI-E): a trace whose manifest ``source`` holds ``"contexts": [{"width":
W, "height": H}, ...]`` and ``"frame_context": [c0, c1, ...]`` is a multi-context trace; frame
``f`` runs in context ``frame_context[f]`` (one window surface each, of its own size). Context
0 is the trace's own size. A plain trace is one context.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.render.gl.commands import FRAME_END, Command
from tilesim.timing.config import Config, _build, _parse

HERE = Path(__file__).resolve().parent
COMMAND_GROUPS_TOML = HERE / "command_groups.toml"

FLUSHES = ("flush", "finish", FRAME_END)      # the FLUSH class of 003 §III
DRAWS = ("drawArrays", "drawElements")
UPLOADS = ("bufferData", "bufferSubData", "texImage2D", "texSubImage2D", "createProgram")


def load_group_config(path: str | Path | None = None) -> Config:
    """The command-buffer model (``command_groups.toml`` when ``path`` is None), validated
    against the shipped file's keys and units (the format of ``tilesim.timing.config``)."""
    schema = None if path is None else _parse(COMMAND_GROUPS_TOML)
    return _build(Path(path) if path is not None else COMMAND_GROUPS_TOML, schema,
                  COMMAND_GROUPS_TOML, allow_zero=False)


@dataclass(frozen=True)
class Context:
    """One GL context and its window surface (003 §IV-B: the Context Monitor's record)."""

    index: int
    width: int
    height: int


def trace_contexts(trace) -> tuple[list[Context], list[int]]:
    """The contexts of an open trace and the context of every frame (see the module doc).

    Raises InputError naming the trace when ``source.contexts`` / ``frame_context`` are
    malformed."""
    source = trace.source or {}
    where = f"{trace.path}: manifest source"
    if "contexts" not in source:
        return [Context(0, trace.width, trace.height)], [0] * trace.frame_count
    raw, frame_context = source.get("contexts"), source.get("frame_context")
    if not isinstance(raw, list) or not raw or not all(
            isinstance(c, dict) and isinstance(c.get("width"), int) and
            isinstance(c.get("height"), int) and c["width"] > 0 and c["height"] > 0
            for c in raw):
        raise InputError("contexts must be a non-empty list of {width, height} with positive "
                         "integer sizes", source=where)
    if not isinstance(frame_context, list) or len(frame_context) != trace.frame_count or any(
            isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < len(raw)
            for c in frame_context):
        raise InputError(f"frame_context must list one context number (0..{len(raw) - 1}) "
                         f"for each of the {trace.frame_count} frames", source=where)
    contexts = [Context(i, c["width"], c["height"]) for i, c in enumerate(raw)]
    return contexts, list(frame_context)


def command_bytes(command: Command, cfg: Config) -> int:
    """Bytes ``command`` takes in the command buffer (the model of ``command_groups.toml``)."""
    op = command.op
    if op == "clear":
        return int(cfg["bytes.clear"])
    if op in FLUSHES:
        return int(cfg["bytes.flush"])
    if op in DRAWS:
        return int(cfg["bytes.draw"])
    if op == "uniform":
        return int(cfg["bytes.uniform_header"]) + 4 * len(command.args["values"])
    if op in UPLOADS:
        return int(cfg["bytes.upload"])
    return int(cfg["bytes.state"])


def _digest_value(h, value) -> None:
    if isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    else:
        h.update(json.dumps(value, sort_keys=True, default=str).encode())


def command_digest(command: Command) -> bytes:
    """A hash of the command's content (operation and arguments, arrays by their bytes)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(command.op.encode())
    for key in sorted(command.args):
        h.update(key.encode())
        _digest_value(h, command.args[key])
    return h.digest()


@dataclass
class CommandGroup:
    """One submitted command group: ``commands`` are frame ``frame``'s commands
    ``start:stop``, run in ``context``; ``switch`` when the group begins with a context
    change (the driver's context enable). ``index`` counts groups from 0 over the trace;
    ``frame_position`` counts them within their frame (000 §5.5 "same command group sequence
    number"); ``bytes`` is their size in the command buffer."""

    index: int
    context: int
    frame: int
    start: int
    stop: int
    commands: list[Command]
    bytes: int
    switch: bool = False
    frame_position: int = 0
    ends: str = ""          # "flush", "finish", "endFrame", "full" or "context"
    _digest: bytes | None = field(default=None, repr=False)

    def content_digest(self) -> bytes:
        """Hash of the group's content as the kernel sees it (the history-based predictor's
        key, 003 §VI-A; no sequence numbers): its commands, and the context enable when it
        starts with one (the enable names the context)."""
        if self._digest is None:
            h = hashlib.blake2b(digest_size=16)
            if self.switch:
                h.update(f"makeCurrent {self.context}".encode())
            for command in self.commands:
                h.update(command_digest(command))
            self._digest = h.digest()
        return self._digest

    def ops(self) -> list[str]:
        return [c.op for c in self.commands]


def split_groups(frames: Iterable[list[Command]], frame_context: list[int] | None = None,
                 cfg: Config | None = None, limit: int | None = None) -> Iterator[CommandGroup]:
    """Cut ``frames`` into the command groups a driver would submit (see the module doc).

    ``frame_context[f]``: the context of frame ``f`` (default: all 0). ``limit``: command-buffer
    bytes (default ``buffer.limit`` of ``cfg``). A group ends after a flush, finish or
    ``endFrame``, before a context change, and before a command that would not fit (a single
    command bigger than the buffer gets a group of its own)."""
    cfg = load_group_config() if cfg is None else cfg
    limit = int(cfg["buffer.limit"]) if limit is None else int(limit)
    if limit < 1:
        raise InputError(f"the command-buffer limit must be a positive number of bytes, got "
                         f"{limit}")
    switch_bytes = int(cfg["bytes.make_current"])
    multi = frame_context is not None and len(set(frame_context)) > 1
    index = 0
    current = None
    for f, commands in enumerate(frames):
        context = 0 if frame_context is None else frame_context[f]
        position = 0
        start, size, switch = 0, 0, False
        if context != current:
            # eglMakeCurrent: the previous context's group was flushed with its frame's end;
            # the new group begins with the context enable (003 §VI-E).
            switch = multi
            size = switch_bytes if switch else 0
            current = context

        def emit(stop: int, ends: str, context=context, f=f, commands=commands):
            nonlocal index, position, start, size, switch
            group = CommandGroup(index, context, f, start, stop, commands[start:stop], size,
                                 switch, position, ends)
            index += 1
            position += 1
            start, size, switch = stop, 0, False
            return group

        for k, command in enumerate(commands):
            nbytes = command_bytes(command, cfg)
            if size + nbytes > limit and k > start:
                yield emit(k, "full")
            size += nbytes
            if command.op in FLUSHES:
                yield emit(k + 1, command.op)
        if start < len(commands):  # a frame always ends with endFrame; kept for safety
            yield emit(len(commands), "context")
