"""Ground truth for ``tilesim predict``: the measured time of every command group, two backends
behind one interface, and the calibration runs of the prediction models.

Backends (``measure(frames, contexts, frame_context, groups, path=None)`` -> seconds a group):

- :class:`ModelBackend`: the tilesim timing model. Each command group is rendered as one frame
  of the tile-based pipeline (a group is what the GPU executes between two submissions, so
  its render pass ends with it: a tile-based GPU resolves its tiles when the group is
  flushed), one renderer per context, and the group's counters go through
  :func:`tilesim.timing.model.estimate_frames` (cycles at the configured clock -> seconds).
  The same render is the profiler of 000 §5.2: the fragments each group shaded.
- :class:`GLBackend`: a real OpenGL ES 2.0 driver, Mesa llvmpipe or softpipe, in a child
  process (``python -m tilesim.prediction.ground_truth``) that replays the trace through
  :class:`tilesim.render.reference.replay_gl.GLReplayer` (one EGL context and window
  framebuffer per trace context, switched with ``eglMakeCurrent``) and measures every group as
  003 §IV-F does with SERIALIZE and NOTIFY: ``glFinish`` before it, its commands, ``glFinish``
  after it (``endFrame`` is the swap: a read of the window, as the replayer does). The time
  (``timer``): GL_EXT_disjoint_timer_query's GL_TIME_ELAPSED_EXT around the commands where
  the context offers it (Mesa's GLES2 contexts do, llvmpipe and softpipe), else the wall
  clock between the two glFinish (``timer="auto"``, the default; ``"query"`` or ``"finish"``
  choose). The query's begin is executed on its own (``anchor_query``: a glFinish after
  it), as 003 §IV-F's NOTIFY is a command the GPU executes when the group starts: llvmpipe
  bins the begin into every 64x64 tile of the scene it lands in and each rasterizer thread
  overwrites its start time at every such tile (lp_rast.c, lp_rast_begin_query; lp_query.c
  takes the latest end less the earliest start), so a begin binned with the group's own
  draws would start the clock at some thread's last tile. Flushed and finished alone, it
  runs in a scene of its own, and the query spans from the group's start to its last tile.
  What the two timers see: the query the group as the driver executes it (llvmpipe: the
  calling thread's vertex processing, binning and copies as well, since the rasterizer waits
  for them); the wall clock also the glFinish before and the replayer's calls around the
  query. The measurements behind this: docs/notes/ground-truth-timers.md.
  A backend's calibrations are cached per timer (``name``), and a
  cache made by another method (``Calibration.timer``) is made again.

Calibration (:class:`Calibrator`, 003 §IV-C..E and §V, 000 §5.5): on first use of a
render-buffer size, a loop of empty flushes (c_flush and the jitter report of 003 §VI-B), 1 and
64 clearColor commands a group (c_command: what issuing any command costs between the two
glFinish, which a GPU-side measurement as 003's would not see but a software driver's wall
clock does), clears of every
mask with 1 and 16 clears a group (the slope is c_clear, the intercept less c_flush the
resolve), lone swaps (c_swap); on first use of a program, degenerate triangles (all vertices
equal: zero fragments, 003 §IV-E) of 3000 and 30000 vertices through the program itself for
c_v, plus the set-up and binning cost a vertex of tiny triangles clear of every pixel center
(no fragment either; 003 counts primitive assembly in t_VS), 1 and 32 three-vertex draws for
the per-draw cost, and half-screen triangles (1 and 8 a group) through a pass-through vertex
program linked with the program's own fragment program for c_f. Results are cached as JSON per
backend and size (programs by the hash of their GLSL) in the calibration folder.

Three more parts, calibrated on first use of a size after the base (and added to a cache that
lacks them, ``Calibration.sections``):

- ``fbo``: the same clears (1 and 16 a group, every mask) into a framebuffer object of the
  context's size (a color texture, and the depth / stencil renderbuffers the window has): the
  CLEAR constants and the resolve of framebuffer objects, apart from the default
  framebuffer's (000 §5.5: a GPU may fast-clear only the default framebuffer).
- ``textures``: square RGBA textures of ``UPLOAD_SIDES`` texels (random texels), sizes
  interleaved. On one texture: glTexImage2D into new storage (the texture held a 1x1 image),
  again at the same size (``texImage2D:same``: the storage is kept), then 1x1 again (what
  it took beyond a 1x1 upload, over the bytes freed, is ``texImage2D:release``). On another:
  glTexSubImage2D, glGenerateMipmap (new levels), glTexSubImage2D and glGenerateMipmap again
  (the levels refilled). What each group took beyond its flush and the call's issue (the
  median at each size) over the bytes moved, fitted piecewise linear as 000 Eq. 5.3 with an
  intercept (memory is faster while a buffer fits a cache): ``c_upload_call`` at 0 bytes,
  ``c_upload`` a byte up to ``upload_n_s``, ``c_upload2`` above; the release one line.
- ``buffers``: the same for a vertex buffer of ``BUFFER_UPLOAD_BYTES`` bytes: glBufferData
  into new storage (after 4 bytes), the same size again (``bufferData:same``),
  glBufferSubData of the whole buffer, and glBufferData of 4 bytes (``bufferData:release``).
- ``loads``: 000 Eq. 5.3's render-target load: a group binds a framebuffer object with a
  color texture of 1/8, 1/4, 1/2 and all of the context's size, clears one pixel of it
  (scissored: a pass that does not clear its target, which a tile-based GPU loads) and binds
  the window again. What it took beyond its predicted flush, issue, clear and resolve, over
  the texture's bytes, fitted piecewise linear (c_load1 up to N_s bytes, c_load2 above; N_s
  one of the sizes, or none where one line fits best).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.prediction.command_groups import CommandGroup, Context, split_groups
from tilesim.prediction.predictor import (
    BUFFER_UPLOAD_KINDS,
    MASK_BITS,
    TEXTURE_UPLOAD_KINDS,
    Calibration,
    ProgramCost,
    mask_key,
    program_key,
)
from tilesim.render.gl.commands import FRAME_END, Command, make_command
from tilesim.render.gl.state import GLState, Program

EXIT_INPUT = 2
CLEAR_COUNTS = (1, 16)
VERTEX_COUNTS = (3000, 30000)
TRIANGLE_COUNTS = (1, 8)
DRAW_COUNTS = (1, 32)
COMMAND_COUNTS = (1, 64)
OWN_DRAWS = (1, 3)
MIN_OWN_VERTICES = 3000
REPEATS = 3
# the clear groups' repeats: a loaded machine once slowed 2 of 3 groups of 16 clears at
# 1920x1080 and made a clear cost 104 us where it costs about 0 (llvmpipe folds clears)
CLEAR_REPEATS = 7
JITTER_LOOP = 1000
SWAPS = 8
UNLIMITED = 1 << 40
UPLOAD_SIDES = (64, 256, 512, 1024)   # texels a side of the upload calibration's textures
BUFFER_UPLOAD_BYTES = tuple(4 * side * side for side in UPLOAD_SIDES)   # the same bytes
UPLOAD_REPEATS = 5
LOAD_DIVISORS = (8, 4, 2, 1)     # the load calibration's targets: the context's size / these
TIMERS = ("auto", "query", "finish")
TIMER_METHODS = {
    "query": "GL_EXT_disjoint_timer_query (GL_TIME_ELAPSED_EXT) around each group, its begin "
             "finished on its own, glFinish before and after",
    "query-unanchored": "GL_EXT_disjoint_timer_query (GL_TIME_ELAPSED_EXT) around each group, "
                        "glFinish before and after",
    "finish": "wall clock between a glFinish before and after each group",
}
MODEL_METHOD = "tilesim timing model (cycles at the configured clock)"


def group_frames(group: CommandGroup) -> list[Command]:
    """A group's commands as one frame of the tile-based pipeline (ending with endFrame)."""
    commands = list(group.commands)
    if not commands or commands[-1].op != FRAME_END:
        commands.append(Command(FRAME_END, {}))
    return commands


class ModelBackend:
    """The tilesim timing model per command group (see the module doc)."""

    def __init__(self, config: str | None = None, energy_config: str | None = None,
                 depth_bits: int = 24):
        from tilesim.timing.config import load_energy_config, load_gpu_config

        self.cfg = load_gpu_config(config)
        self.ecfg = load_energy_config(energy_config)
        self.depth_bits = depth_bits
        self.timer, self.method = "model", MODEL_METHOD
        # calibrations are cached per backend name: the model's depends on its parameters
        self.name = "model"
        if config is not None or energy_config is not None:
            values = json.dumps([sorted(self.cfg.values.items()),
                                 sorted(self.ecfg.values.items())])
            self.name = f"model-{hashlib.sha256(values.encode()).hexdigest()[:12]}"

    def profile(self, contexts: list[Context], groups: list[CommandGroup],
                source: str = "<trace>") -> tuple[list[float], list[float]]:
        """(seconds, fragments shaded) of every group."""
        from tilesim.render.pipeline.renderer import Renderer
        from tilesim.timing.model import estimate_frames

        renderers = {c.index: Renderer(c.width, c.height, depth_bits=self.depth_bits,
                                       source=source) for c in contexts}
        counters = []
        for g in groups:
            results = list(renderers[g.context].render([group_frames(g)], first=g.index))
            counters.append(results[-1].counters)
        if not counters:
            return [], []
        estimates = estimate_frames(counters, self.cfg, self.ecfg)
        return ([float(e.seconds) for e in estimates],
                [float(c.total("fragments_shaded")) for c in counters])

    def measure(self, frames, contexts, frame_context, groups, path=None,
                source: str = "<trace>") -> list[float]:
        return self.profile(contexts, groups, source)[0]


class GLBackend:
    """Mesa ``driver`` measured with a glFinish before and after every group, timed by
    ``timer`` (``TIMERS``; see the module doc)."""

    def __init__(self, driver: str = "llvmpipe", depth_bits: int = 24, stencil_bits: int = 0,
                 timeout: float = 3600, timer: str = "auto", anchor_query: bool = True):
        from tilesim.mesa import DRIVERS

        if driver not in DRIVERS:
            raise InputError(f"unknown Mesa driver {driver!r} (known: {', '.join(DRIVERS)})")
        if timer not in TIMERS:
            raise InputError(f"unknown timer {timer!r} (known: {', '.join(TIMERS)})",
                             source="--timer")
        self.driver = driver
        self.depth_bits, self.stencil_bits, self.timeout = depth_bits, stencil_bits, timeout
        self.requested_timer = timer
        self._timer = None if timer == "auto" else timer
        # the query's begin executed on its own, a glFinish after it (the module doc);
        # False only to show what an unanchored query measures
        self.anchor = anchor_query
        self.disjoint = 0            # query results a disjoint event voided (wall clock used)
        self.wall: list[float] = []  # the last measurement's wall clock times

    @property
    def timer(self) -> str:
        """"query" or "finish": what ``measure`` times with (``auto`` asks a GL child once
        whether the context offers GL_EXT_disjoint_timer_query)."""
        if self._timer is None:
            self._timer = self._run({"trace": None, "label": "<probe>", "contexts": [[16, 16]],
                                     "frame_context": [], "groups": []}, "auto")["timer"]
        return self._timer

    @property
    def name(self) -> str:
        """The calibration cache's name: the driver, and the timer when it is a query."""
        query = "" if self.timer != "query" else "-query" if self.anchor else "-query-unanchored"
        return f"gl-{self.driver}{query}"

    @property
    def method(self) -> str:
        if self.timer == "query" and not self.anchor:
            return TIMER_METHODS["query-unanchored"]
        return TIMER_METHODS[self.timer]

    def _run(self, request: dict, timer: str) -> dict:
        """Run the GL child on ``request``; its times.json."""
        from tilesim.mesa import child_environment

        request = {**request, "depth_bits": self.depth_bits, "stencil_bits": self.stencil_bits,
                   "timer": timer, "anchor": self.anchor}
        with tempfile.TemporaryDirectory(prefix="tilesim-predict-") as tmp:
            out = Path(tmp, "out")
            out.mkdir()
            (out / "request.json").write_text(json.dumps(request), encoding="utf-8")
            with open(out / "stderr.txt", "wb") as stderr:
                proc = subprocess.run(
                    [sys.executable, "-m", "tilesim.prediction.ground_truth",
                     str(out / "request.json"), str(out)],
                    env=child_environment(self.driver, MESA_GLES_VERSION_OVERRIDE="2.0"),
                    stdout=subprocess.DEVNULL, stderr=stderr, timeout=self.timeout)
            text = (out / "stderr.txt").read_text(encoding="utf-8", errors="replace")
            if proc.returncode == EXIT_INPUT and (out / "error.json").exists():
                error = json.loads((out / "error.json").read_text(encoding="utf-8"))
                raise InputError(error["message"], source=error["source"])
            if proc.returncode != 0 or not (out / "times.json").exists():
                from tilesim.render.reference.replay_gl import MesaUnavailable

                raise MesaUnavailable(f"GL measurement on Mesa {self.driver} failed (exit "
                                      f"{proc.returncode}): {text.strip()[-500:]}")
            return json.loads((out / "times.json").read_text(encoding="utf-8"))

    def measure(self, frames, contexts, frame_context, groups, path=None,
                source: str = "<trace>") -> list[float]:
        from tilesim.render.traces.trace_file import write_trace

        with tempfile.TemporaryDirectory(prefix="tilesim-predict-") as tmp:
            if path is None:
                c0 = contexts[0]
                path = write_trace(Path(tmp, "frames.tsim"), frames, width=c0.width,
                                   height=c0.height, depth_bits=self.depth_bits,
                                   stencil_bits=self.stencil_bits, name="<frames>")
            result = self._run({"trace": str(Path(path).resolve()), "label": source,
                                "contexts": [[c.width, c.height] for c in contexts],
                                "frame_context": list(frame_context),
                                "groups": [[g.frame, g.start, g.stop] for g in groups]},
                               self._timer or "auto")
        self._timer = result["timer"]
        self.disjoint += result["disjoint"]
        self.wall = result["wall"]
        return result["seconds"]


def _child(request_path: str, out_dir: str) -> int:
    """The GL child: replay the trace and time every group (glFinish, the commands, glFinish;
    a timer query around the commands where asked for and offered)."""
    from tilesim.mesa import GL, NoMesa
    from tilesim.render.reference.replay_gl import GLReplayer
    from tilesim.render.traces.trace_file import open_trace

    out = Path(out_dir)
    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    mode = request.get("timer", "finish")
    anchor = request.get("anchor", True)
    seconds: list[float] = []
    wall: list[float] = []
    disjoint = 0
    try:
        gls, replayers, timers = [], [], []
        for w, h in request["contexts"]:
            try:
                gl = GL.create()
            except NoMesa as exc:
                print(f"no GLES2 context: {exc}", file=sys.stderr)
                return 3
            gls.append(gl)
            replayers.append(GLReplayer(gl, w, h, depth_bits=request["depth_bits"],
                                        stencil_bits=request["stencil_bits"],
                                        name=request["label"]))
            timers.append(None if mode == "finish" else gl.timer_query())
        if mode == "query" and None in timers:
            raise InputError("the Mesa GLES2 context offers no GL_EXT_disjoint_timer_query",
                             source="--timer")
        used = "query" if mode != "finish" and None not in timers else "finish"
        if used == "finish":
            timers = [None] * len(gls)
        current = len(gls) - 1
        frame_index, frame = -1, []
        with contextlib.ExitStack() as stack:
            trace = stack.enter_context(open_trace(request["trace"])) if request["groups"] \
                else None
            for f, start, stop in request["groups"]:
                if f != frame_index:
                    frame_index, frame = f, trace.frame(f)
                context = request["frame_context"][f]
                if context != current:
                    gls[context].make_current()
                    current = context
                gl, replayer, timer = gls[current], replayers[current], timers[current]
                gl.glFinish()
                t0 = time.perf_counter()
                if timer is not None:
                    timer.begin()
                    if anchor:         # the begin executed before the group (module doc)
                        gl.glFinish()
                for k in range(start, stop):
                    command = frame[k]
                    if command.op == FRAME_END:
                        replayer.read_window()
                    else:
                        replayer.execute(command, f"{request['label']}: frame {f}, command {k}")
                if timer is not None:
                    timer.end()
                gl.glFinish()
                wall.append(time.perf_counter() - t0)
                if timer is None:
                    seconds.append(wall[-1])
                elif timer.disjoint():      # the result is void: the wall clock stands in
                    disjoint += 1
                    seconds.append(wall[-1])
                else:
                    seconds.append(timer.seconds())
    except InputError as exc:
        (out / "error.json").write_text(json.dumps({"message": exc.bare_message,
                                                    "source": exc.source}), encoding="utf-8")
        return EXIT_INPUT
    (out / "times.json").write_text(json.dumps({"seconds": seconds, "wall": wall,
                                                "timer": used, "disjoint": disjoint}),
                                    encoding="utf-8")
    return 0


# --- calibration -----------------------------------------------------------------------------

def _cmd(op: str, **args) -> Command:
    return make_command(op, args, "<calibration>")


class _Plan:
    """Calibration frames built group by group, each group labelled."""

    def __init__(self):
        self.frames: list[list[Command]] = [[]]
        self.labels: list[str] = []

    def group(self, label: str, commands: list[Command], flush: bool = True) -> None:
        self.frames[-1].extend(commands)
        if flush:
            self.frames[-1].append(_cmd("flush"))
        self.labels.append(label)

    def end_frame(self, label: str = "swap") -> None:
        self.frames[-1].append(_cmd(FRAME_END))
        self.labels.append(label)
        self.frames.append([])

    def run(self, backend, context: Context) -> dict[str, list[float]]:
        if not self.frames[-1]:
            self.frames.pop()
        groups = list(split_groups(self.frames, None, limit=UNLIMITED))
        if len(groups) != len(self.labels):
            raise AssertionError(f"calibration plan: {len(groups)} groups for "
                                 f"{len(self.labels)} labels")
        times = backend.measure(self.frames, [Context(0, context.width, context.height)], [0] *
                                len(self.frames), groups, source="<calibration>")
        out: dict[str, list[float]] = {}
        for label, t in zip(self.labels, times, strict=True):
            out.setdefault(label, []).append(float(t))
        return out


def _slope(times: dict[str, list[float]], label: str, counts) -> float:
    """Seconds per unit between two counts, from the median time at each (robust to the
    odd slow group)."""
    lo, hi = (float(np.median(times[f"{label} {c}"])) for c in counts)
    return (hi - lo) / (counts[1] - counts[0])


def jitter_stats(seconds: list[float]) -> dict[str, float]:
    """003 §VI-B's report of a flush loop: the peak of the distribution (the mean of the fullest
    bin, bins 1/50 of the central 99 % range and at least 0.1 us wide, so that the odd slow
    flush does not widen them), mean, standard deviation (of all samples, and of the central
    99 %: ``std_central``), and the 2.5-97.5% interval."""
    t = np.asarray(seconds, float)
    if t.size == 0:
        return {}
    lo, hi = np.percentile(t, [0.5, 99.5])
    width = max(1e-7, (hi - lo) / 50)
    bins = np.floor((t - t.min()) / width).astype(np.int64)
    peak_bin = np.bincount(bins).argmax()
    central = t[(t >= lo) & (t <= hi)]
    return {"samples": int(t.size), "peak": float(t[bins == peak_bin].mean()),
            "mean": float(t.mean()), "std": float(t.std()), "std_central": float(central.std()),
            "p2_5": float(np.percentile(t, 2.5)), "p97_5": float(np.percentile(t, 97.5)),
            "min": float(t.min()), "max": float(t.max())}


def tiny_triangles(count: int, width: int, height: int, seed: int = 0) -> np.ndarray:
    """(3 count, 4) float32 clip positions of triangles of a quarter pixel's size spread over
    a width x height viewport, each inside one pixel and clear of its center: they go through
    set-up and binning and produce no fragment (003 §IV-E: "triangles which - when rasterized
    - do not result in any fragment")."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, width, count).astype(np.float64)
    y = rng.integers(0, height, count).astype(np.float64)
    corners = np.array([[0.05, 0.05], [0.35, 0.05], [0.05, 0.35]])
    px = x[:, None] + corners[None, :, 0]
    py = y[:, None] + corners[None, :, 1]
    out = np.zeros((count, 3, 4), np.float32)
    out[..., 0] = px / width * 2 - 1
    out[..., 1] = py / height * 2 - 1
    out[..., 3] = 1.0
    return out.reshape(-1, 4)


_VARYING_RE = re.compile(r"\bvarying\s+(?:(?:lowp|mediump|highp)\s+)?(\w+)\s+(\w+)\s*(\[[^\]]*\])?"
                         r"\s*;")


def passthrough_vertex_glsl(fragment_glsl: str) -> str:
    """A vertex program for the fragment program's calibration (003 §IV-E: the vertex operations
    as minimal as possible): the position attribute as it is, every varying the fragment program
    reads set to 0.5."""
    lines = ["attribute vec4 tilesim_position;"]
    body = []
    for type_, name, array in _VARYING_RE.findall(fragment_glsl):
        lines.append(f"varying {type_} {name}{array};")
        if not array:
            value = "true" if type_ == "bool" else "0.5"
            body.append(f"    {name} = {type_}({value});")
    lines += ["void main() {", *body, "    gl_Position = tilesim_position;", "}"]
    return "\n".join(lines) + "\n"


def fit_piecewise(nbytes, seconds, intercept: bool = False
                  ) -> tuple[float, float, float, float]:
    """000 Eq. 5.3 fitted to (bytes, seconds) points: (a, c_1, c_2, N_s) of
    ``a + c_1 * min(N, N_s) + c_2 * max(N - N_s, 0)``, with ``a = 0`` unless ``intercept``.
    N_s is one of the points' sizes or infinity (one line), whichever leaves the smallest
    squared error (one line where they tie); least squares below and at N_s, then c_2 from
    there on, none of the constants negative (a slope that comes out negative is 0: nothing
    measurable grows with the bytes there)."""
    n, t = np.asarray(nbytes, float), np.asarray(seconds, float)
    order = np.argsort(n)
    n, t = n[order], t[order]
    fewest = 2 if intercept else 1         # points a line below N_s needs
    best = None
    for n_s in (float("inf"), *n[fewest - 1:-1]):
        below, above = n <= n_s, n > n_s
        if intercept:
            c1, a = (float(v) for v in np.polyfit(n[below], t[below], 1))
            if c1 < 0:
                c1, a = 0.0, float(t[below].mean())
            a = max(a, 0.0)
        else:
            a, c1 = 0.0, max(float(np.dot(n[below], t[below]) / np.dot(n[below], n[below])),
                             0.0)
        fit = a + c1 * n
        c2 = 0.0
        if above.any():
            x, y = n[above] - n_s, t[above] - a - c1 * n_s
            c2 = max(float(np.dot(x, y) / np.dot(x, x)), 0.0)
            fit = np.where(below, fit, a + c1 * n_s + c2 * (n - n_s))
        error = float(np.sum((t - fit) ** 2))
        if best is None or error < best[0] * (1 - 1e-9) - 1e-30:
            best = (error, a, c1, c2, float(n_s))
    return best[1:]


def fit_texture_load(nbytes, seconds) -> tuple[float, float, float]:
    """000 Eq. 5.3 through the origin: (c_1, c_2, N_s) (:func:`fit_piecewise`)."""
    return fit_piecewise(nbytes, seconds)[1:]


class Calibrator:
    """Calibrates the prediction models on a backend, caching per backend, size and program."""

    def __init__(self, backend, folder: str | os.PathLike | None = None,
                 jitter_loop: int = JITTER_LOOP, stencil_bits: int = 0, depth_bits: int = 24):
        self.backend = backend
        self.folder = None if folder is None else Path(folder)
        self.jitter_loop = jitter_loop
        self.depth_bits, self.stencil_bits = depth_bits, stencil_bits
        self._cache: dict[tuple[int, int], Calibration] = {}

    def _path(self, width: int, height: int) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / f"{self.backend.name}-{width}x{height}.json"

    def _save(self, cal: Calibration) -> None:
        path = self._path(cal.width, cal.height)
        if path is not None:
            from tilesim.atomic import write_bytes

            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(path, (json.dumps(cal.to_dict(), indent=1) + "\n").encode())

    def calibration(self, context: Context) -> Calibration:
        key = (context.width, context.height)
        if key in self._cache:
            return self._cache[key]
        path = self._path(*key)
        cal = None
        if path is not None and path.exists():
            try:
                cal = Calibration.from_dict(json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, TypeError, KeyError) as exc:
                raise InputError(f"not a calibration file of tilesim predict: {exc}",
                                 source=str(path)) from None
            if cal.timer != getattr(self.backend, "method", cal.timer):
                cal = None      # measured another way (an older timer query): made again
        if cal is None:
            cal = self._calibrate_base(context)
            self._save(cal)
        self._cache[key] = cal
        for section, calibrate in (("fbo", self._calibrate_fbo),
                                   ("textures", self._calibrate_uploads),
                                   ("buffers", self._calibrate_buffers),
                                   ("loads", self._calibrate_loads)):
            if section not in cal.sections:
                calibrate(context, cal)
                cal.sections.append(section)
                self._save(cal)
        return cal

    def masks(self) -> list[list[str]]:
        bits = ["COLOR_BUFFER_BIT"] + (["DEPTH_BUFFER_BIT"] if self.depth_bits else []) + \
            (["STENCIL_BUFFER_BIT"] if self.stencil_bits else [])
        out = []
        for m in range(1, 1 << len(bits)):
            out.append([b for i, b in enumerate(bits) if m >> i & 1])
        return [sorted(m, key=MASK_BITS.index) for m in out]

    def _clear_groups(self, plan: _Plan) -> None:
        for mask in self.masks():
            for count in CLEAR_COUNTS:
                for _ in range(CLEAR_REPEATS):
                    plan.group(f"clear {mask_key(mask)} {count}",
                               [_cmd("clear", mask=mask)] * count)

    def _clear_constants(self, times: dict, cal: Calibration, kind: str, pixels: int) -> None:
        """c_clear[kind:mask] from the clear groups' slope, c_resolve[kind] from their
        intercept less the flush (the median over the masks)."""
        resolves = []
        for mask in self.masks():
            # medians at 1 and 16 clears: robust to the odd group a loaded machine slows
            lo, hi = (float(np.median(times[f"clear {mask_key(mask)} {c}"]))
                      for c in CLEAR_COUNTS)
            b = (hi - lo) / (CLEAR_COUNTS[1] - CLEAR_COUNTS[0])
            a = lo - b * CLEAR_COUNTS[0]
            b -= cal.c_command          # the clear's issue is charged as a command
            cal.c_clear[f"{kind}:{mask_key(mask)}"] = max(b, 0.0) / pixels
            resolves.append(max(a - cal.c_flush, 0.0) / pixels)
        cal.c_resolve[kind] = float(np.median(resolves))

    def _calibrate_base(self, context: Context) -> Calibration:
        pixels = context.width * context.height
        plan = _Plan()
        for _ in range(self.jitter_loop):
            plan.group("flush", [])
        for count in COMMAND_COUNTS:
            for _ in range(REPEATS):
                plan.group(f"cmd {count}", [_cmd("clearColor", red=0.0, green=0.0, blue=0.0,
                                                 alpha=1.0)] * count)
        self._clear_groups(plan)
        plan.end_frame("swap")
        for _ in range(SWAPS):
            plan.end_frame("swap")
        times = plan.run(self.backend, context)
        cal = Calibration(self.backend.name, context.width, context.height,
                          timer=getattr(self.backend, "method", ""),
                          sections=["base"])
        cal.jitter = jitter_stats(times["flush"])
        cal.c_flush = float(np.mean(times["flush"]))
        cal.c_command = max(_slope(times, "cmd", COMMAND_COUNTS), 0.0)
        self._clear_constants(times, cal, "default", pixels)
        # until the fbo part is calibrated, framebuffer objects take the window's constants
        for key, value in list(cal.c_clear.items()):
            cal.c_clear["fbo:" + key.split(":", 1)[1]] = value
        cal.c_resolve["fbo"] = cal.c_resolve["default"]
        swaps = times["swap"][1:]   # the first swap ends the frame of the loops above
        cal.c_swap = max(float(np.median(swaps)) - cal.c_flush, 0.0) / pixels
        return cal

    def _framebuffer(self, ident: int, width: int, height: int, depth: bool = True
                     ) -> list[Command]:
        """Commands that make framebuffer object ``ident`` (its color texture and depth /
        stencil renderbuffers take the same id) of ``width`` x ``height`` and bind it."""
        commands = [_cmd("createTexture", id=ident),
                    _cmd("bindTexture", target="TEXTURE_2D", id=ident),
                    _cmd("texImage2D", target="TEXTURE_2D", level=0, internalformat="RGBA",
                         width=width, height=height, format="RGBA", type="UNSIGNED_BYTE",
                         data=None),
                    _cmd("texParameter", target="TEXTURE_2D", pname="TEXTURE_MIN_FILTER",
                         value="NEAREST"),
                    _cmd("bindTexture", target="TEXTURE_2D", id=0),
                    _cmd("createFramebuffer", id=ident),
                    _cmd("bindFramebuffer", id=ident),
                    _cmd("framebufferTexture2D", attachment="COLOR_ATTACHMENT0",
                         textarget="TEXTURE_2D", texture=ident, level=0)]
        formats = []
        if depth and self.stencil_bits and self.depth_bits == 24:
            formats = [("DEPTH24_STENCIL8", ("DEPTH_ATTACHMENT", "STENCIL_ATTACHMENT"))]
        elif depth:
            if self.depth_bits:
                formats.append((f"DEPTH_COMPONENT{16 if self.depth_bits == 16 else 24}",
                                ("DEPTH_ATTACHMENT",)))
            if self.stencil_bits:
                formats.append(("STENCIL_INDEX8", ("STENCIL_ATTACHMENT",)))
        for k, (fmt, points) in enumerate(formats):
            rb = ident * 10 + k
            commands += [_cmd("createRenderbuffer", id=rb), _cmd("bindRenderbuffer", id=rb),
                         _cmd("renderbufferStorage", internalformat=fmt, width=width,
                              height=height)]
            commands += [_cmd("framebufferRenderbuffer", attachment=p, renderbuffer=rb)
                         for p in points]
        return commands

    def _calibrate_fbo(self, context: Context, cal: Calibration) -> None:
        """The clears of the base calibration into a framebuffer object (the module doc)."""
        plan = _Plan()
        plan.group("setup", self._framebuffer(1, context.width, context.height))
        self._clear_groups(plan)
        plan.group("setup", [_cmd("bindFramebuffer", id=0)])
        plan.end_frame("swap")
        times = plan.run(self.backend, context)
        self._clear_constants(times, cal, "fbo", context.width * context.height)

    def _calibrate_uploads(self, context: Context, cal: Calibration) -> None:
        """Texture uploads, re-specification and mipmap generation, linear in bytes (the
        module doc)."""
        rng = np.random.default_rng(0)
        images = {side: rng.integers(0, 256, (side, side, 4), dtype=np.uint8)
                  for side in (1, *UPLOAD_SIDES)}

        def image(side: int) -> dict:
            return dict(target="TEXTURE_2D", level=0, width=side, height=side,
                        format="RGBA", type="UNSIGNED_BYTE", data=images[side])

        def tex_image(side: int) -> Command:
            return _cmd("texImage2D", internalformat="RGBA", **image(side))

        def bind(ident: int) -> Command:
            return _cmd("bindTexture", target="TEXTURE_2D", id=ident)

        plan = _Plan()
        plan.group("setup", [_cmd("createTexture", id=1), _cmd("createTexture", id=2),
                             bind(2), tex_image(1)])
        mipmap = _cmd("generateMipmap", target="TEXTURE_2D")
        for _ in range(UPLOAD_REPEATS):
            for side in UPLOAD_SIDES:
                refill = _cmd("texSubImage2D", xoffset=0, yoffset=0, **image(side))
                plan.group("setup", [bind(2)])
                plan.group(f"texImage2D {side}", [tex_image(side)])
                plan.group(f"texImage2D:same {side}", [tex_image(side)])
                plan.group(f"texImage2D:release {side}", [tex_image(1)])
                plan.group("setup", [bind(1), tex_image(side)])
                plan.group(f"texSubImage2D {side}", [refill])
                plan.group(f"generateMipmap:new {side}", [mipmap])
                plan.group(f"texSubImage2D {side}", [refill])
                plan.group(f"generateMipmap {side}", [mipmap])
        plan.end_frame("swap")
        self._fit_uploads(plan.run(self.backend, context), cal, TEXTURE_UPLOAD_KINDS,
                          "texImage2D", UPLOAD_SIDES, [4 * s * s for s in UPLOAD_SIDES], 4)

    def _calibrate_buffers(self, context: Context, cal: Calibration) -> None:
        """Buffer uploads and re-specification, linear in bytes (the module doc)."""
        rng = np.random.default_rng(1)
        blobs = {n: rng.integers(0, 256, n, dtype=np.uint8) for n in (4, *BUFFER_UPLOAD_BYTES)}

        def buffer_data(n: int) -> Command:
            return _cmd("bufferData", target="ARRAY_BUFFER", data=blobs[n], size=n,
                        usage="DYNAMIC_DRAW")

        plan = _Plan()
        plan.group("setup", [_cmd("createBuffer", id=1),
                             _cmd("bindBuffer", target="ARRAY_BUFFER", id=1), buffer_data(4)])
        for _ in range(UPLOAD_REPEATS):
            for n in BUFFER_UPLOAD_BYTES:
                plan.group(f"bufferData {n}", [buffer_data(n)])
                plan.group(f"bufferData:same {n}", [buffer_data(n)])
                plan.group(f"bufferSubData {n}", [_cmd("bufferSubData", target="ARRAY_BUFFER",
                                                       offset=0, data=blobs[n])])
                plan.group(f"bufferData:release {n}", [buffer_data(4)])
        plan.end_frame("swap")
        self._fit_uploads(plan.run(self.backend, context), cal, BUFFER_UPLOAD_KINDS,
                          "bufferData", BUFFER_UPLOAD_BYTES, list(BUFFER_UPLOAD_BYTES), 4)

    @staticmethod
    def _fit_uploads(times: dict, cal: Calibration, kinds, respecify: str, labels,
                     nbytes: list[int], small: int) -> None:
        """The constants of ``kinds`` from the groups labelled ``"{kind} {label}"`` moving
        ``nbytes``, and ``{respecify}:release`` from its groups that re-specify ``small``
        bytes in place of ``nbytes``."""
        rest = cal.c_flush + cal.c_command    # what the predictor charges a group anyway

        def residuals(kind: str) -> list[float]:
            return [float(np.median(times[f"{kind} {label}"])) - rest for label in labels]

        # the bytes freed: the slope of what re-specifying to ``small`` bytes took (its
        # intercept is the small upload itself)
        release = f"{respecify}:release"
        slope = float(np.polyfit(np.asarray(nbytes, float), residuals(release), 1)[0])
        cal.c_upload[release] = max(slope, 0.0)
        for kind in kinds:
            measured = residuals(kind)
            if kind == respecify:      # into new storage, freeing the ``small`` bytes before
                measured = [m - cal.c_upload[release] * small for m in measured]
            a, c1, c2, n_s = fit_piecewise(nbytes, measured, intercept=True)
            cal.c_upload_call[kind], cal.c_upload[kind], cal.c_upload2[kind] = a, c1, c2
            cal.upload_n_s[kind] = n_s

    def _calibrate_loads(self, context: Context, cal: Calibration) -> None:
        """000 Eq. 5.3's render-target loads (the module doc)."""
        sizes = [(max(1, context.width // d), max(1, context.height // d))
                 for d in LOAD_DIVISORS]
        plan = _Plan()
        for k, (w, h) in enumerate(sizes):
            plan.group("setup", self._framebuffer(k + 1, w, h, depth=False) +
                       [_cmd("bindFramebuffer", id=0)])
        one_pixel = [_cmd("enable", cap="SCISSOR_TEST"),
                     _cmd("scissor", x=0, y=0, width=1, height=1),
                     _cmd("clear", mask=["COLOR_BUFFER_BIT"]),
                     _cmd("disable", cap="SCISSOR_TEST")]
        for _ in range(REPEATS + 2):
            for k in range(len(sizes)):
                plan.group(f"load {k}", [_cmd("bindFramebuffer", id=k + 1), *one_pixel,
                                         _cmd("bindFramebuffer", id=0)])
        plan.end_frame("swap")
        times = plan.run(self.backend, context)
        nbytes, residuals = [], []
        for k, (w, h) in enumerate(sizes):
            # what the predictor charges such a group but for the load: its flush, six
            # commands' issue, a one-pixel clear and the resolve of the target
            rest = (cal.c_flush + 6 * cal.c_command + cal.c_clear.get("fbo:COLOR", 0.0) +
                    cal.c_resolve.get("fbo", 0.0) * w * h)
            nbytes.append(4.0 * w * h)
            residuals.append(float(np.median(times[f"load {k}"])) - rest)
        cal.c_load1, cal.c_load2, cal.n_s = fit_texture_load(nbytes, residuals)

    def program_cost(self, context: Context, program: Program, created: dict,
                     state: GLState | None = None, command: Command | None = None
                     ) -> ProgramCost:
        """``created``: the arguments of the program's createProgram command (its TGSI);
        ``state``, ``command``: the draw that first uses the program (its vertex arrays)."""
        cal = self.calibration(context)
        key = program_key(program)
        if key not in cal.programs:
            arrays = None if state is None or command is None else \
                self._own_draw(state, command)
            shrunk = None if arrays is None else (arrays, command)
            cal.programs[key] = self._calibrate_program(context, program, created, shrunk)
            self._save(cal)
        return cal.programs[key]

    def _program_setup(self, program: Program, ident: int, vertex_glsl: str, vertex_tgsi: str,
                       fragment_tgsi: str, interface: dict) -> list[Command]:
        commands = [_cmd("createProgram", id=ident, vertex_glsl=vertex_glsl,
                         fragment_glsl=program.fragment_glsl, vertex_tgsi=vertex_tgsi,
                         fragment_tgsi=fragment_tgsi, interface=interface),
                    _cmd("useProgram", id=ident)]
        names = {u["name"] for u in interface.get("uniforms", [])}
        for name, (function, values) in program.uniforms.items():
            if name in names:
                commands.append(_cmd("uniform", name=name, function=function, values=values))
        if interface.get("samplers"):
            texels = np.full((64, 64, 4), 128, dtype=np.uint8)
            commands.append(_cmd("createTexture", id=1))
            for unit in range(8):
                commands += [_cmd("activeTexture", unit=unit),
                             _cmd("bindTexture", target="TEXTURE_2D", id=1)]
            commands += [_cmd("texImage2D", target="TEXTURE_2D", level=0, internalformat="RGBA",
                              width=64, height=64, format="RGBA", type="UNSIGNED_BYTE",
                              data=texels),
                         _cmd("texParameter", target="TEXTURE_2D", pname="TEXTURE_MIN_FILTER",
                              value="LINEAR"),
                         _cmd("activeTexture", unit=0)]
        return commands

    @staticmethod
    def _own_draw(state: GLState, command: Command) -> list[Command] | None:
        """The application's draw replayed in a calibration context: its vertex arrays and
        indices copied into new buffers (000 §5.5 calibrates c_v on the application's own
        draws with the viewport shrunk); None for draws under MIN_OWN_VERTICES vertices."""
        if command.args["count"] < MIN_OWN_VERTICES:
            return None
        commands: list[Command] = []
        ident = 100
        for index, a in enumerate(state.attribs):
            if not a.enabled:
                continue
            data = a.client_data if a.client_data is not None else state.buffers.get(a.buffer)
            if data is None:
                return None
            commands += [_cmd("createBuffer", id=ident),
                         _cmd("bindBuffer", target="ARRAY_BUFFER", id=ident),
                         _cmd("bufferData", target="ARRAY_BUFFER", data=np.asarray(data),
                              size=int(np.asarray(data).size), usage="STATIC_DRAW"),
                         _cmd("vertexAttribPointer", index=index, size=a.size, type=a.type,
                              normalized=a.normalized, stride=a.stride, offset=a.offset,
                              data=None),
                         _cmd("enableVertexAttribArray", index=index)]
            ident += 1
        if command.op == "drawElements" and command.args["indices"] is None:
            data = state.buffers.get(state.element_buffer)
            if data is None:
                return None
            commands += [_cmd("createBuffer", id=ident),
                         _cmd("bindBuffer", target="ELEMENT_ARRAY_BUFFER", id=ident),
                         _cmd("bufferData", target="ELEMENT_ARRAY_BUFFER", data=np.asarray(data),
                              size=int(np.asarray(data).size), usage="STATIC_DRAW")]
        commands.append(_cmd("viewport", x=0, y=0, width=1, height=1))
        return commands

    def _calibrate_program(self, context: Context, program: Program, created: dict,
                           own_draw: tuple[list[Command], Command] | None = None
                           ) -> ProgramCost:
        pixels = context.width * context.height
        cal = self.calibration(context)
        plan = _Plan()
        setup = self._program_setup(program, 1, program.vertex_glsl, created["vertex_tgsi"],
                                    created["fragment_tgsi"], program.interface)
        setup += [_cmd("disable", cap=c) for c in ("DEPTH_TEST", "BLEND", "CULL_FACE")]
        setup += [_cmd("disableVertexAttribArray", index=i) for i in range(8)]
        setup += [_cmd("vertexAttrib", index=i, values=[0.25, 0.25, 0.25, 1.0])
                  for i in range(8)]
        plan.group("setup", setup)
        # Unmeasured first draws: a driver compiles the program's code at its first draw.
        plan.group("warm", [_cmd("drawArrays", mode="TRIANGLES", first=0, count=3)])
        for count in VERTEX_COUNTS:
            for _ in range(REPEATS):
                plan.group(f"v {count}", [_cmd("drawArrays", mode="TRIANGLES", first=0,
                                               count=count)])
        for count in DRAW_COUNTS:
            for _ in range(REPEATS):
                plan.group(f"d {count}", [_cmd("drawArrays", mode="TRIANGLES", first=0,
                                               count=3)] * count)
        if own_draw is not None:
            arrays, draw = own_draw
            plan.group("setup", arrays)
            plan.group("warm", [draw])
            for count in OWN_DRAWS:
                for _ in range(REPEATS):
                    plan.group(f"o {count}", [draw] * count)
            plan.group("setup", [_cmd("viewport", x=0, y=0, width=context.width,
                                      height=context.height)])
        passthrough = self._passthrough(program)
        if passthrough is not None:
            compiled, vs_glsl = passthrough
            triangle = np.array([[-1, -1, 0, 1], [1, -1, 0, 1], [-1, 1, 0, 1]], np.float32)
            setup = self._program_setup(program, 2, vs_glsl, compiled.vertex_tgsi,
                                        compiled.fragment_tgsi, compiled.interface)
            location = next(a["location"] for a in compiled.interface["attributes"]
                            if a["name"] == "tilesim_position")
            plan.group("setup", setup)
            first = True
            for count in TRIANGLE_COUNTS:
                data = np.tile(triangle, (count, 1))
                draw = [_cmd("vertexAttribPointer", index=location, size=4, type="FLOAT",
                             normalized=False, stride=0, offset=0,
                             data=data.view(np.uint8).ravel()),
                        _cmd("enableVertexAttribArray", index=location),
                        _cmd("drawArrays", mode="TRIANGLES", first=0, count=3 * count)]
                if first:
                    plan.group("warm", draw)
                    first = False
                for _ in range(REPEATS):
                    plan.group(f"f {count}", draw)
            for count in VERTEX_COUNTS:
                data = tiny_triangles(count // 3, context.width, context.height)
                draw = [_cmd("vertexAttribPointer", index=location, size=4, type="FLOAT",
                             normalized=False, stride=0, offset=0,
                             data=data.view(np.uint8).ravel()),
                        _cmd("enableVertexAttribArray", index=location),
                        _cmd("drawArrays", mode="TRIANGLES", first=0, count=count)]
                for _ in range(REPEATS):
                    plan.group(f"t {count}", draw)
        plan.end_frame("swap")
        times = plan.run(self.backend, context)
        c_v = max(_slope(times, "v", VERTEX_COUNTS), 0.0)
        c_draw = max(_slope(times, "d", DRAW_COUNTS) - 3 * c_v - cal.c_command, 0.0)
        c_f = 0.0
        if passthrough is not None:
            per_triangle = _slope(times, "f", TRIANGLE_COUNTS)
            c_f = max(per_triangle - 3 * c_v, 0.0) / (pixels / 2)
            # Triangle set-up and binning, which zero-area triangles skip: 003 §IV-E counts
            # primitive assembly in t_VS (linear in n_V), so its cost a vertex joins c_v.
            c_v += max(_slope(times, "t", VERTEX_COUNTS), 0.0)
        if own_draw is not None:
            # the application's own vertices with the viewport shrunk to one pixel (000 §5.5):
            # every per-vertex and per-primitive cost of this mesh; the few fragments of a
            # 1x1 viewport are left in
            c_v = max((_slope(times, "o", OWN_DRAWS) - c_draw) / own_draw[1].args["count"],
                      0.0)
        return ProgramCost(c_v, c_f, c_draw)

    @staticmethod
    def _passthrough(program: Program):
        """(compiled pass-through program, its vertex GLSL), or None when Mesa is missing."""
        from tilesim.render.gl.commands import compile_cached

        vs = passthrough_vertex_glsl(program.fragment_glsl)
        try:
            return compile_cached(vs, program.fragment_glsl, {"tilesim_position": 0}), vs
        except Exception as exc:  # Mesa missing, or GLSL the regex got wrong
            print(f"tilesim predict: no fragment calibration for a program ({exc})",
                  file=sys.stderr)
            return None


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python -m tilesim.prediction.ground_truth REQUEST.json OUT_DIR",
              file=sys.stderr)
        sys.exit(EXIT_INPUT)
    sys.exit(_child(sys.argv[1], sys.argv[2]))
