"""``tilesim capture`` and ``tilesim reference``: real GLES2 programs under apitrace and Mesa.

``capture`` runs a program under ``xvfb-run`` with ``apitrace trace --api egl`` on Mesa llvmpipe
(``LIBGL_ALWAYS_SOFTWARE=1 GALLIUM_DRIVER=llvmpipe``) and keeps its first N frames. Built-in
program specs:

- ``glmark2-es2[:SCENE[:OPTION=VALUE...]]``: one glmark2 benchmark, e.g.
  ``glmark2-es2:shading:shading=phong`` (no scene: glmark2's default list). glmark2 stops by
  itself after N frames: the benchmark gets ``:nframes=N`` (replacing any ``nframes`` given);
  ``--size`` is its window size (default 800x600).
- ``es2gears``: Mesa's es2gears_x11. It never exits and its window is always 300x300, so it
  runs for a while (longer until it has drawn N frames) and is stopped with SIGINT.

Either way the capture is cut to exactly N frames with ``apitrace trim --frames=0-(N-1)`` when
it holds more, and written atomically (temporary files in the output's folder, then a rename).

``reference`` writes what Mesa draws for each frame of a capture, via ``apitrace dump-images``
on EGL's surfaceless platform (softpipe by default, see ``reference_frames``; no X server
needed: under Xvfb glretrace shows the first frame black), as ``DIR/frame_NNNNNN.png`` (RGB,
frame 0 first), the images ``tilesim compare`` pairs with ``tilesim render``'s
``DIR/frames/NNNNNN.png``. Frames end where ``tilesim import`` ends them (``--frame-end``):
at each eglSwapBuffers (``--calls=frame``), or, for programs that never swap, at each
glReadPixels (a snapshot of the framebuffer bound at that call, cut to the rectangle it read)
or glFinish (the window), snapshotted by call number.

Missing programs are reported with the Debian package that provides them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tilesim.atomic import check_output, write_bytes
from tilesim.errors import InputError, ProgramTimedOut, ToolMissing
from tilesim.mesa import program_environment, run_program
from tilesim.render.traces.apitrace_import import FRAME_END_CHOICES, scan_apitrace
from tilesim.shaders.trace_capture import capture_trace, stop_after

GLMARK2 = "glmark2-es2"
ES2GEARS = "es2gears"
ES2GEARS_EXECUTABLES = ("es2gears_x11", "es2gears_x11.x86_64-linux-gnu", "es2gears")
ES2GEARS_SIZE = (300, 300)        # eglut's fixed window
GLMARK2_SIZE = (800, 600)         # glmark2's default window
DEBIAN_PACKAGES = {
    "xvfb-run": "xvfb",
    "apitrace": "apitrace",
    GLMARK2: "glmark2-es2-x11 (and glmark2-data)",
    ES2GEARS: "mesa-utils-bin",
}
ES2GEARS_MAX_SECONDS = 64.0
ES2GEARS_ATTEMPTS = 2
ES2GEARS_STARTUP_SECONDS = 60.0  # beyond its run: Xvfb, the SIGKILL grace, the capture written


@dataclass(frozen=True)
class ProgramSpec:
    """A program to capture: ``app`` (glmark2-es2 or es2gears) and, for glmark2, the
    benchmark description (``scene:option=value:...``, empty for glmark2's default list)."""

    app: str
    benchmark: str = ""

    def describe(self) -> str:
        return f"{self.app}:{self.benchmark}" if self.benchmark else self.app


def parse_program_spec(text: str) -> ProgramSpec:
    """``glmark2-es2[:BENCHMARK]`` or ``es2gears``; InputError for anything else."""
    app, _, benchmark = text.partition(":")
    if app == GLMARK2:
        return ProgramSpec(GLMARK2, benchmark)
    if app in (ES2GEARS,) + ES2GEARS_EXECUTABLES and not benchmark:
        return ProgramSpec(ES2GEARS)
    raise InputError(f"unknown program spec {text!r}: expected glmark2-es2[:SCENE[:OPTION="
                     "VALUE...]] (e.g. glmark2-es2:shading:shading=phong) or es2gears",
                     source="tilesim capture")


def glmark2_scenes(glmark2: str) -> list[str]:
    """The scene names ``glmark2-es2 --list-scenes`` knows (it runs without a display)."""
    proc = subprocess.run([glmark2, "--list-scenes"], capture_output=True, check=False,
                          env=program_environment(), timeout=60)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    return re.findall(r"^\[Scene\] (\S+)", text, flags=re.MULTILINE)


def _require(*tools: str) -> dict[str, str]:
    """Absolute paths of ``tools``; ToolMissing naming the Debian packages of missing ones."""
    found, missing = {}, []
    for tool in tools:
        if tool == ES2GEARS:
            path = next((shutil.which(n) for n in ES2GEARS_EXECUTABLES if shutil.which(n)), None)
        else:
            path = shutil.which(tool)
        if path is None:
            missing.append(tool)
        else:
            found[tool] = path
    if missing:
        raise ToolMissing("not installed: " + "; ".join(
            f"{tool} (Debian package {DEBIAN_PACKAGES[tool]})" for tool in missing))
    return found


def glmark2_benchmark(benchmark: str, frames: int) -> str:
    """The benchmark description with ``nframes=frames`` (replacing any given)."""
    parts = [p for p in benchmark.split(":") if p] if benchmark else []
    parts = [p for p in parts if not p.startswith("nframes=")]
    scene = [] if not parts or "=" in parts[0] else [parts.pop(0)]
    return ":".join(scene + parts + [f"nframes={frames}"]) if scene else \
        ":" + ":".join(parts + [f"nframes={frames}"])


def trace_frame_count(apitrace: str, trace: Path) -> int:
    """Frames (eglSwapBuffers) of an apitrace capture, from ``apitrace info``."""
    proc = subprocess.run([apitrace, "info", str(trace)], capture_output=True, check=False)
    try:
        return int(json.loads(proc.stdout.decode("utf-8", "replace"))["FramesCount"])
    except (ValueError, KeyError, TypeError):
        raise InputError(f"apitrace info cannot read the capture: "
                         f"{proc.stderr.decode('utf-8', 'replace').strip()}",
                         source=str(trace)) from None


def _run_traced(tools: dict[str, str], command: list[str], trace: Path, size: tuple[int, int],
                timeout: float) -> subprocess.CompletedProcess:
    screen = f"{max(size[0], 640)}x{max(size[1], 480)}x24"
    return capture_trace(command, trace, screen=screen, timeout=timeout,
                         xvfb_run=tools["xvfb-run"], apitrace=tools["apitrace"],
                         expect_trace=False)


@dataclass
class CaptureResult:
    path: Path
    frames: int
    width: int
    height: int
    command: list[str]
    seconds: float


def capture(spec: ProgramSpec | str, out_path: str | os.PathLike, *, frames: int,
            size: tuple[int, int] | None = None, timeout: float = 600.0) -> CaptureResult:
    """Capture the first ``frames`` frames of ``spec`` into the apitrace file ``out_path``."""
    spec = parse_program_spec(spec) if isinstance(spec, str) else spec
    if frames < 1:
        raise InputError(f"--frames must be at least 1, got {frames}",
                         source="tilesim capture")
    out = check_output(out_path, folder=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tools = _require("xvfb-run", "apitrace", spec.app)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp:
        raw = Path(tmp, "raw.trace")
        if spec.app == GLMARK2:
            size = size or GLMARK2_SIZE
            scene = spec.benchmark.split(":", 1)[0]
            scenes = glmark2_scenes(tools[GLMARK2])
            if scene and "=" not in scene and scenes and scene not in scenes:
                # glmark2 would silently run its whole default list instead
                raise InputError(f"glmark2 has no scene {scene!r} (it has "
                                 f"{', '.join(scenes)})", source=spec.describe())
            command = [tools[GLMARK2], "-s", f"{size[0]}x{size[1]}", "-b",
                       glmark2_benchmark(spec.benchmark, frames)]
            proc = _run_traced(tools, command, raw, size, timeout)
            output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
            problems = [line.strip() for line in output.split("\n")
                        if line.strip().startswith(("Warning", "Error"))]
            if proc.returncode != 0 or problems or not raw.exists():
                raise InputError(f"glmark2 failed (exit {proc.returncode}): " + "; ".join(
                    problems or output.strip().split("\n")[-3:]), source=spec.describe())
        else:
            if size is not None and tuple(size) != ES2GEARS_SIZE:
                raise InputError(f"es2gears always draws into a 300x300 window; --size "
                                 f"{size[0]}x{size[1]} cannot be honoured",
                                 source=spec.describe())
            size = ES2GEARS_SIZE
            seconds = 1.0
            while True:
                command = [*stop_after(seconds), tools[ES2GEARS]]
                for attempt in range(ES2GEARS_ATTEMPTS):
                    raw.unlink(missing_ok=True)
                    try:
                        _run_traced(tools, command, raw, size,
                                    min(timeout, seconds + ES2GEARS_STARTUP_SECONDS))
                        break
                    except ProgramTimedOut:
                        # a start that never came up (Xvfb, the driver) is tried once more
                        if attempt + 1 == ES2GEARS_ATTEMPTS:
                            raise
                if not raw.exists():
                    raise InputError("apitrace wrote no capture of es2gears",
                                     source=spec.describe())
                if trace_frame_count(tools["apitrace"], raw) >= frames or \
                        seconds >= ES2GEARS_MAX_SECONDS:
                    break
                seconds *= 4
            command = command[len(stop_after(seconds)):]
        have = trace_frame_count(tools["apitrace"], raw)
        if have < frames:
            raise InputError(f"the program drew only {have} of the {frames} frames asked for",
                             source=spec.describe())
        final = raw
        if have > frames:
            final = Path(tmp, "trimmed.trace")
            proc = subprocess.run([tools["apitrace"], "trim", f"--frames=0-{frames - 1}",
                                   "-o", str(final), str(raw)], capture_output=True,
                                  check=False)
            if proc.returncode != 0 or not final.exists():
                raise InputError("apitrace trim failed: "
                                 + proc.stderr.decode("utf-8", "replace").strip(),
                                 source=str(raw))
        os.replace(final, out)
    return CaptureResult(out, frames, size[0], size[1], command,
                         time.perf_counter() - started)


# --- reference frames --------------------------------------------------------------------------

_DUMPED = re.compile(r"^f(\d+)\.png$")


REFERENCE_DRIVERS = ("softpipe", "llvmpipe")


def reference_frames(trace_path: str | os.PathLike, out_dir: str | os.PathLike, *,
                     driver: str = "softpipe", frame_end: str = "auto",
                     timeout: float = 1800.0,
                     warn: Callable[[str], None] | None = None) -> list[Path]:
    """Mesa's image of every frame of an apitrace capture, as ``out_dir/frame_NNNNNN.png``.

    ``driver`` defaults to softpipe: it computes every shader in 32-bit floats, as the TGSI
    tilesim runs (softpipe's own) does, while llvmpipe in a GLES2 context evaluates
    ``mediump`` in 16-bit floats, which changes what precision-sensitive programs draw
    (glmark2's loop, conditionals and terrain noise, for example); tilesim's fp16 mediump mode
    (``tilesim render --mediump fp16``) is the one to compare with llvmpipe. ``frame_end`` picks the
    calls that end frames as ``tilesim import --frame-end`` does (auto, swap, readpixels,
    finish). ``warn``, when given, gets the capture's warnings, one line each, as the import
    gives them (apitrace's own, a cut stream, a capture that ends mid-frame), before Mesa
    replays it."""
    if driver not in REFERENCE_DRIVERS:
        raise InputError(f"unknown reference driver {driver!r}: expected one of "
                         f"{', '.join(REFERENCE_DRIVERS)}")
    if frame_end not in FRAME_END_CHOICES:
        raise InputError(f"unknown frame end {frame_end!r}: expected one of "
                         f"{', '.join(FRAME_END_CHOICES)}")
    trace = Path(trace_path)
    if not trace.is_file():
        raise InputError("no such apitrace file", source=str(trace))
    tools = _require("apitrace")
    out = check_output(out_dir, folder=True)
    ends = None  # None: every eglSwapBuffers (apitrace's own frames)
    swaps = None if frame_end in ("readpixels", "finish") else \
        trace_frame_count(tools["apitrace"], trace)
    if frame_end == "swap" and swaps == 0:
        raise InputError("the capture holds no complete frame (no eglSwapBuffers to end one)",
                         source=str(trace))
    # the scan also finds the swaps of surfaces not shown (a loader context's pbuffer), which
    # apitrace counts as frames and the import does not (its frames: the shown surface's)
    scan = scan_apitrace(trace, frame_end)   # where frames end, what the import warns
    for warning in scan.warnings if warn is not None else ():
        warn(warning)
    if swaps is None or (frame_end == "auto" and swaps == 0) or len(scan.ends) != swaps:
        ends = scan.ends
    with tempfile.TemporaryDirectory(prefix="tilesim-reference-") as tmp:
        calls = "--calls=frame"
        if ends is not None:
            Path(tmp, "calls.txt").write_text("\n".join(str(e.call) for e in ends) + "\n",
                                              encoding="ascii")
            calls = f"--calls=@{Path(tmp, 'calls.txt')}"
        argv = [tools["apitrace"], "dump-images", calls,
                f"--call-nos={'no' if ends is None else 'yes'}", "-o",
                str(Path(tmp, "f")), str(trace)]
        attempts = [(argv, program_environment(driver, WAFFLE_PLATFORM="surfaceless_egl"))]
        if shutil.which("xvfb-run"):
            attempts.append((["xvfb-run", "-a", "-s", "-screen 0 1920x1200x24", *argv],
                             program_environment(driver)))
        errors = []
        for command, env in attempts:
            for stale in Path(tmp).glob("f*.png"):
                stale.unlink()
            proc = run_program(command, timeout=timeout, env=env,
                               what="apitrace dump-images", source=str(trace))
            dumped = sorted(Path(tmp).glob("f*.png"))
            if proc.returncode == 0 and dumped:
                break
            errors.append(proc.stderr.decode("utf-8", "replace").strip().split("\n")[-1])
        else:
            raise InputError("apitrace dump-images wrote no frame (does the capture end any "
                             "frame with eglSwapBuffers, glReadPixels or glFinish?): "
                             f"{'; '.join(errors)}", source=str(trace))
        written = []
        if ends is None:
            numbers = sorted(int(_DUMPED.match(p.name).group(1)) for p in dumped
                             if _DUMPED.match(p.name))
            for index, number in enumerate(numbers):
                data = Path(tmp, f"f{number:010d}.png").read_bytes()
                written.append(write_bytes(out / f"frame_{index:06d}.png", data))
            return written
        for index, end in enumerate(ends):
            where = f"{trace}: call {end.call}"
            snapshot = Path(tmp, f"f{end.call:010d}.png")
            if not snapshot.exists():
                raise InputError(f"apitrace dump-images took no snapshot at {end.name}, the end "
                                 f"of frame {index}", source=where)
            data = snapshot.read_bytes()
            if end.rect is not None:
                data = _crop_png(data, end.rect, where)
            written.append(write_bytes(out / f"frame_{index:06d}.png", data))
    return written


def _crop_png(data: bytes, rect: tuple[int, int, int, int], where: str) -> bytes:
    """The rectangle (x, y, width, height; GL's origin at the bottom left) of a snapshot
    (PNG, top row first) that glReadPixels read, as a PNG."""
    import io

    import numpy as np
    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(data)))
    height, width = image.shape[:2]
    x, y, w, h = rect
    if x + w > width or y + h > height:
        raise InputError(f"glReadPixels reads the {w}x{h} rectangle at ({x}, {y}), which "
                         f"does not lie inside the {width}x{height} framebuffer Mesa had bound "
                         "there", source=where)
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image[height - y - h:height - y, x:x + w])).save(
        buffer, format="PNG")
    return buffer.getvalue()


# --- command line --------------------------------------------------------------------------------
