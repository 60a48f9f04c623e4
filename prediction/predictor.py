"""Execution-time prediction of command groups: the Predictor, its command models and its
fragment-count estimators, and the history-based baseline.

Concepts for Execution Time Prediction of 3D GPU Rendering (seed 003) §IV and Hua Ma's thesis
Concepts and Metrics for Measurement and Prediction of the Execution Time of GPU Rendering
Commands (seed 000) §5.5. A :class:`Predictor` sees every command group before it runs
(``predict``), keeps a copy of each GL context's state (003 §IV-B, the Context Monitor: a
:class:`tilesim.render.gl.state.GLState` per context, fed every state command) and sums the
predicted time of the group's commands (003 §IV-A). After the group ran, ``observe`` gives it
the measured time and the fragments the group shaded (000 §5.2's profiler), which the
recent-history estimators use. Models (seconds; constants from :class:`Calibration`):

- FLUSH (003 Eq. IV-C.1): ``c_flush`` for every group (each is submitted and acknowledged once).
- Command issue: ``c_command`` per command of the group (what the wall clock between two
  glFinish sees of the API calls on a software driver; 0 on the model backend).
- CLEAR (003 Eq. IV-D.1; 000 Eq. 5.2): ``c_clear[target, mask] * pixels`` of the render buffer
  (the scissor box when enabled), one constant per buffer mask and per target kind: the
  default framebuffer (which a GPU may fast-clear, 000 §5.5) and framebuffer objects.
- Resolve: a group that renders into a target pays ``c_resolve[target] * pixels`` once, the
  write of the render target a tile-based GPU does when the group is flushed (000 Eq. 5.1's
  write term, charged per group instead of per swap; 0 where the backend has none).
- DRAW (003 Eq. IV-E.1; 000 Eq. 5.4): ``c_v[p] * N_v + c_f[p] * N_f`` per program ``p``.
- SWAP (000 Eq. 5.1): ``c_swap * pixels`` of the window.
- Texture load (000 Eq. 5.3): binding a framebuffer object with a texture of ``N`` bytes costs
  ``c_load1 * N`` up to ``N_s`` bytes and ``c_load2`` a byte above.
- Texture upload (000 §5.5's buffer-size class, in Eq. 5.3's piecewise-linear form for the
  bytes moved): ``glTexImage2D`` / ``glTexSubImage2D`` with client data of ``N`` bytes and
  ``glGenerateMipmap`` of a texture whose level 0 holds ``N`` bytes (every face of a cube
  map) cost ``c_upload_call[k] + c_upload[k] * N`` up to ``upload_n_s[k]`` bytes and
  ``c_upload2[k]`` a byte above (the call's own issue is ``c_command``). The kind ``k`` is the
  call, and for glGenerateMipmap whether it makes new levels (``generateMipmap:new``: level 1
  is missing or of another size, after the texture's first image or a size change: a driver
  allocates the levels, and may move level 0, as well) or refills the levels it has.
  A glTexImage2D of the size and format its level already has is ``texImage2D:same``: the
  driver keeps the storage (Mesa: 0.33-0.69 ms for 4 MB, against 4.6-10.7 ms into new
  storage, whose pages the copy touches first; docs/results/2026-11-25-prediction §3).
- Buffer upload (the same form): ``glBufferData`` / ``glBufferSubData`` with client data of
  ``N`` bytes (a vertex or index buffer filled or refilled, as a program that streams its
  vertices does every frame) cost ``c_upload_call[k] + c_upload[k] * N`` (and
  ``c_upload2[k]`` a byte above ``upload_n_s[k]``), ``k`` the call, ``bufferData:same`` for
  a glBufferData of the size the buffer has.
- Release: a glTexImage2D or glBufferData that changes the size frees the old storage,
  ``c_upload["texImage2D:release"]`` (``bufferData:release``) a byte of it.

``N_f`` estimators: ``bbox`` (003 §IV-E: the draw's vertices' 3D bounding box through the
program's own vertex transform, the projected area clipped to the viewport times the coverage
factor 0.5 of 003 §V), ``history-ratio`` (000 §5.5 approach 1: the last frame's fragments per
vertex of the context times the group's vertices), ``history-seq`` (000 §5.5 approach 2: the
fragments of the draw-containing group with the same sequence number in the last frame) and
``oracle`` (the fragments the group actually shades, to bound the error). The history
estimators fall back to ``bbox`` until their context has finished a frame.

:class:`HistoryPredictor` is 003 §VI-A's baseline: a hash of the group's content -> its last
measured time, else the largest time seen so far (0 at first); no sequence numbers exist in a
trace, so none are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tilesim.prediction.command_groups import DRAWS, CommandGroup, Context
from tilesim.render.gl.commands import CUBE_FACES, FRAME_END
from tilesim.render.gl.state import GLState, Program
from tilesim.render.gl.textures import bytes_per_texel
from tilesim.render.gl.uniforms import constants as uniform_constants
from tilesim.render.pipeline import vertex_fetch

ESTIMATORS = ("bbox", "history-ratio", "history-seq", "oracle")
COVERAGE = 0.5          # 003 §V: "we use a constant coverage factor of 0.5"
MASK_BITS = ("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT", "STENCIL_BUFFER_BIT")
POSITION_NAMES = ("position", "pos", "vertex", "a_position", "in_position", "avertex")
TEXTURE_UPLOAD_OPS = ("texImage2D", "texSubImage2D", "generateMipmap")
TEXTURE_UPLOAD_KINDS = (*TEXTURE_UPLOAD_OPS, "texImage2D:same", "generateMipmap:new")
BUFFER_UPLOAD_OPS = ("bufferData", "bufferSubData")
BUFFER_UPLOAD_KINDS = (*BUFFER_UPLOAD_OPS, "bufferData:same")
UPLOAD_OPS = (*TEXTURE_UPLOAD_OPS, *BUFFER_UPLOAD_OPS)
UPLOAD_KINDS = (*TEXTURE_UPLOAD_KINDS, *BUFFER_UPLOAD_KINDS)     # the kinds of upload_kind


def mask_key(mask) -> str:
    """A clear mask as a key: 'COLOR', 'DEPTH', 'COLOR+DEPTH', ... (003 §IV-D's b_types)."""
    return "+".join(b.split("_")[0] for b in MASK_BITS if b in mask)


@dataclass
class ProgramCost:
    """A program's calibrated DRAW constants: seconds per vertex and per fragment, and per
    draw (``c_draw``: the driver's set-up of a draw, an addition to 003 Eq. IV-E.1 that
    matters where draws are small, 0 where the backend has none)."""

    c_v: float
    c_f: float
    c_draw: float = 0.0


@dataclass
class Calibration:
    """The calibrated constants of one backend at one render-buffer size (seconds)."""

    backend: str
    width: int
    height: int
    c_flush: float = 0.0
    c_command: float = 0.0                                    # per command issued
    c_swap: float = 0.0                                       # per window pixel
    c_clear: dict[str, float] = field(default_factory=dict)   # "default:COLOR" -> s / pixel
    c_resolve: dict[str, float] = field(default_factory=dict)  # "default" / "fbo" -> s / pixel
    c_load1: float = 0.0                                      # per byte, up to n_s bytes
    c_load2: float = 0.0
    n_s: float = float("inf")
    c_upload: dict[str, float] = field(default_factory=dict)  # "texImage2D" -> s / byte
    c_upload2: dict[str, float] = field(default_factory=dict)  # s / byte above upload_n_s
    upload_n_s: dict[str, float] = field(default_factory=dict)  # bytes (absent: infinite)
    c_upload_call: dict[str, float] = field(default_factory=dict)  # "texImage2D" -> s / call
    jitter: dict[str, float] = field(default_factory=dict)    # the flush loop's statistics
    timer: str = ""                                           # how the backend measured
    # the parts calibrated ("base", "fbo", "uploads", "loads"): a cache written before a part
    # existed gets it on first use
    sections: list[str] = field(default_factory=list)
    programs: dict[str, ProgramCost] = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = dict(self.__dict__)
        out["programs"] = {k: v.__dict__ for k, v in self.programs.items()}
        out["n_s"] = None if self.n_s == float("inf") else self.n_s
        out["upload_n_s"] = {k: v for k, v in self.upload_n_s.items() if v != float("inf")}
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Calibration:
        data = dict(data)
        data["programs"] = {k: ProgramCost(**v) for k, v in data.get("programs", {}).items()}
        data["n_s"] = float("inf") if data.get("n_s") is None else data["n_s"]
        data.setdefault("sections", ["base"])     # a cache of before the sections
        return cls(**data)

    def texture_load(self, nbytes: float) -> float:
        """000 Eq. 5.3: seconds to load a render target of ``nbytes`` bytes."""
        if nbytes <= self.n_s:
            return self.c_load1 * nbytes
        return self.c_load1 * self.n_s + self.c_load2 * (nbytes - self.n_s)

    def upload(self, op: str, nbytes: float) -> float:
        """Seconds of a texture or buffer upload of kind ``op`` (``UPLOAD_KINDS``) moving
        ``nbytes`` bytes (the old storage it frees apart: :func:`upload_seconds`)."""
        n_s = self.upload_n_s.get(op, float("inf"))
        seconds = self.c_upload_call.get(op, 0.0) + self.c_upload.get(op, 0.0) * min(nbytes, n_s)
        if nbytes > n_s:
            seconds += self.c_upload2.get(op, 0.0) * (nbytes - n_s)
        return seconds


def program_key(program: Program) -> str:
    """Identifies a program across traces: a hash of its two stages' GLSL."""
    import hashlib

    text = program.vertex_glsl + "\0" + program.fragment_glsl
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- the bounding-box estimator (003 §IV-E) ------------------------------------------------------

def position_registers(program: Program) -> list[int]:
    """The vertex-program IN registers of the attribute that holds the position (by name,
    else the attribute at location 0)."""
    attributes = program.interface.get("attributes", [])
    chosen = next((a for a in attributes if a["name"].lower() in POSITION_NAMES), None)
    if chosen is None:
        chosen = next((a for a in attributes if "pos" in a["name"].lower()), None)
    if chosen is None:
        chosen = min(attributes, key=lambda a: a["location"], default=None)
    return [] if chosen is None else [int(r[3:-1]) for r in chosen["registers"]]


def _cross(a: np.ndarray, b: np.ndarray) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def _clip_polygon(poly: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    """Sutherland-Hodgman clip of a convex polygon (N, 2) to a rectangle."""
    for axis, bound, keep_greater in ((0, x0, True), (0, x1, False), (1, y0, True),
                                      (1, y1, False)):
        if len(poly) == 0:
            break
        out = []
        for i in range(len(poly)):
            p, q = poly[i], poly[(i + 1) % len(poly)]
            pin = p[axis] >= bound if keep_greater else p[axis] <= bound
            qin = q[axis] >= bound if keep_greater else q[axis] <= bound
            if pin:
                out.append(p)
            if pin != qin:
                t = (bound - p[axis]) / (q[axis] - p[axis])
                out.append(p + t * (q - p))
        poly = np.array(out)
    return poly


def projected_area(clip: np.ndarray, viewport: tuple[int, int, int, int]) -> float:
    """Pixels of the viewport covered by the convex hull of clip-space points (N, 4); a point
    behind the eye (w <= 0) makes it the whole viewport (the box straddles the camera)."""
    vx, vy, vw, vh = viewport
    if vw <= 0 or vh <= 0:
        return 0.0
    w = clip[:, 3]
    if (w <= 1e-9).any():
        return float(vw * vh)
    ndc = clip[:, :2] / w[:, None]
    window = np.stack([vx + (ndc[:, 0] + 1) * vw / 2, vy + (ndc[:, 1] + 1) * vh / 2], axis=1)
    pts = np.unique(window, axis=0)
    if len(pts) < 3:
        return 0.0
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]
    # the hull, then clipped to the viewport
    hull_pts = []
    for seq in (pts, pts[::-1]):
        part: list[np.ndarray] = []
        for p in seq:
            while len(part) >= 2 and _cross(part[-1] - part[-2], p - part[-2]) <= 0:
                part.pop()
            part.append(p)
        hull_pts.extend(part[:-1])
    hull = np.array(hull_pts)
    if len(hull) < 3:
        return 0.0
    clipped = _clip_polygon(hull, vx, vy, vx + vw, vy + vh)
    if len(clipped) < 3:
        return 0.0
    x, y = clipped[:, 0], clipped[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def bbox_fragments(state: GLState, command, height: int, coverage: float = COVERAGE) -> float:
    """003 §IV-E: the draw's 3D bounding box (of its position attribute) run through the
    program's vertex program (its 8 corners, the other attributes at their first vertex's
    values), the projected area in pixels clipped to the viewport, times ``coverage``."""
    program = state.current_program()
    elements, _ = vertex_fetch.draw_elements(state, command)
    if elements.size == 0:
        return 0.0
    fetched = vertex_fetch.fetch(state, program, elements)
    inputs = np.asarray(fetched.inputs)                       # (R, 4, V)
    registers = position_registers(program)
    corners = np.repeat(inputs[:, :, :1], 8, axis=2)          # (R, 4, 8)
    for r in registers:
        lo, hi = inputs[r].min(axis=1), inputs[r].max(axis=1)
        for k in range(8):
            corners[r, 0, k] = hi[0] if k & 1 else lo[0]
            corners[r, 1, k] = hi[1] if k & 2 else lo[1]
            corners[r, 2, k] = hi[2] if k & 4 else lo[2]
    constants = uniform_constants(program, "vertex", height=height)
    outputs = np.asarray(program.vertex.run(corners, constants, lanes=8).outputs)
    semantics = program.vertex.program.output_semantics()
    position = next(r for r, s in semantics.items() if s[0] == "POSITION")
    clip = outputs[position].T.astype(np.float64)
    if not np.isfinite(clip).all():
        return float(state.viewport[2] * state.viewport[3])
    return coverage * projected_area(clip, state.viewport)


# --- the predictor --------------------------------------------------------------------------------

@dataclass
class DrawInfo:
    program: str
    vertices: int
    bbox: float          # the bounding-box estimate of N_f


@dataclass
class Prediction:
    """A group's predicted time (seconds) and its parts by command class; ``fragments`` the
    N_f estimate used, ``vertices`` N_v."""

    seconds: float
    parts: dict[str, float]
    vertices: int
    fragments: float
    draws: int


class _ContextMonitor:
    """One context's state copy and its recent history (000 §5.5)."""

    def __init__(self, context: Context):
        self.context = context
        self.state = GLState(context.width, context.height, f"<context {context.index}>")
        self.last_ratio: float | None = None          # fragments / vertex of the last frame
        self.last_sequence: list[float] | None = None  # fragments of its draw groups
        self.frame_vertices = 0
        self.frame_fragments = 0.0
        self.frame_sequence: list[float] = []
        # draw-containing groups predicted so far in the frame being predicted (000 §5.5's
        # sequence number; counted when predicted, so a caller may predict a whole frame's
        # groups before the first one ran, as the scheduler's rendering thread does)
        self.draw_group_position = 0
        self.created: dict[int, dict] = {}             # program id -> createProgram args


class Predictor:
    """Predicts command groups of one trace (see the module doc).

    ``contexts``: the trace's contexts; ``calibration(context)``: the :class:`Calibration` of
    a context's size; ``program_cost(context, program, created, state, command)``: a program's
    :class:`ProgramCost` (calibrated on first use, 003 §IV-E; ``created``: the arguments of
    its createProgram command; ``state`` and ``command``: the context and the draw that first
    uses it, for 000 §5.5's viewport-shrunk run of the application's own draw).
    ``estimator``: one of ``ESTIMATORS``."""

    def __init__(self, contexts: list[Context], calibration: Callable[[Context], Calibration],
                 program_cost: Callable[..., ProgramCost],
                 estimator: str = "bbox", coverage: float = COVERAGE,
                 runtime_frames: int = 0):
        if estimator not in ESTIMATORS:
            raise ValueError(f"unknown estimator {estimator!r} (known: {', '.join(ESTIMATORS)})")
        self.monitors = [_ContextMonitor(c) for c in contexts]
        self.calibration = calibration
        self.program_cost = program_cost
        self.estimator = estimator
        self.coverage = coverage
        self._pending: dict[int, tuple[list[DrawInfo], Prediction]] = {}
        # 000 §5.5's run-time calibration of c_f: in frames 1 .. runtime_frames - 1, the
        # measured time of single-program draw groups less the rest of their prediction, over
        # the fragments the profiler counted (the median); 0 frames: 003's calibration only.
        self.runtime_frames = runtime_frames
        self._runtime: dict[str, list[float]] = {}      # program -> c_f samples

    # -- the target a command renders to
    @staticmethod
    def _target(state: GLState) -> tuple[str, int, int, int]:
        """(kind, width, height, bytes per pixel of color) of the bound framebuffer."""
        if state.framebuffer == 0:
            return "default", state.width, state.height, 4
        fbo = state.framebuffers.get(state.framebuffer)
        attached = None if fbo is None else fbo.attachments.get("COLOR_ATTACHMENT0")
        if attached is not None and attached[0] == "renderbuffer":
            rb = state.renderbuffers.get(attached[1])
            if rb is not None:
                return "fbo", rb.width, rb.height, 4
        if attached is not None and attached[0] == "texture":
            texture = state.textures.get(attached[1])
            size = _texture_size(texture, attached[2], attached[3])
            if size is not None:
                return "fbo", size[0], size[1], 4
        return "fbo", state.width, state.height, 4

    def predict(self, group: CommandGroup, oracle_fragments: float | None = None,
                charged: set | None = None) -> Prediction:
        """The group's predicted time; updates the context's state with its commands.
        ``oracle_fragments``: the fragments it will shade (the ``oracle`` estimator's N_f).
        ``charged``: for a group that is a part of a larger submission rather than flushed on
        its own (the scheduler's command blocks are parts of one frame, 004 §5.3), the
        per-submission terms already paid: ``"flush"`` and the render targets resolved, as
        ``(kind, framebuffer)``. Those are not charged again, and the ones this group pays
        are added to the set (the caller keeps one set per submission). None: the group is
        a submission of its own (003's command group)."""
        monitor = self.monitors[group.context]
        state = monitor.state
        cal = self.calibration(monitor.context)
        issued = sum(c.op not in ("flush", "finish", FRAME_END) for c in group.commands)
        flush = cal.c_flush
        if charged is not None:
            flush = 0.0 if "flush" in charged else flush
            charged.add("flush")
        parts = {"flush": flush, "commands": cal.c_command * issued, "clear": 0.0,
                 "resolve": 0.0, "draw_vertex": 0.0,
                 "draw_fragment": 0.0, "swap": 0.0, "texture_load": 0.0, "upload": 0.0}
        draws: list[DrawInfo] = []
        costs: list[ProgramCost] = []
        rendered: dict[tuple[str, int], int] = {}     # targets rendered to -> pixels
        for command in group.commands:
            op = command.op
            if op == "clear":
                kind, w, h, _ = self._target(state)
                pixels = w * h
                f = state.fragment
                if f.scissor_test and f.scissor is not None:
                    sx, sy, sw, sh = f.scissor
                    pixels = max(0, min(sx + sw, w) - max(sx, 0)) * \
                        max(0, min(sy + sh, h) - max(sy, 0))
                key = mask_key(command.args["mask"])
                if key:
                    parts["clear"] += cal.c_clear.get(f"{kind}:{key}", 0.0) * pixels
                    rendered[(kind, state.framebuffer)] = w * h
            elif op in DRAWS:
                program = state.current_program()
                kind, w, h, _ = self._target(state)
                rendered[(kind, state.framebuffer)] = w * h
                vertices = command.args["count"]
                bbox = bbox_fragments(state, command, h, self.coverage)
                draws.append(DrawInfo(program_key(program), vertices, bbox))
                costs.append(self.program_cost(monitor.context, program,
                                               monitor.created.get(state.program, {}), state,
                                               command))
            elif op == FRAME_END:
                parts["swap"] += cal.c_swap * state.width * state.height
            elif op in ("flush", "finish", "readPixels"):
                pass
            else:
                if op in ("bindFramebuffer", "framebufferTexture2D"):
                    parts["texture_load"] += self._texture_load(state, command, cal)
                elif op in UPLOAD_OPS:
                    parts["upload"] += upload_seconds(cal, state, command)
                if op == "createProgram":
                    monitor.created[command.args["id"]] = command.args
                state.apply(command)
        for target, pixels in rendered.items():
            if charged is not None:
                if target in charged:
                    continue
                charged.add(target)
            parts["resolve"] += cal.c_resolve.get(target[0], 0.0) * pixels
        fragments = self._fragments(monitor, group, draws, oracle_fragments)
        if draws:
            monitor.draw_group_position += 1
        if group.commands and group.commands[-1].op == FRAME_END:
            monitor.draw_group_position = 0
        vertices = sum(d.vertices for d in draws)
        for draw, cost, nf in zip(draws, costs, fragments, strict=True):
            parts["draw_vertex"] += cost.c_v * draw.vertices + cost.c_draw
            parts["draw_fragment"] += self._c_f(draw.program, cost, group.frame) * nf
        prediction = Prediction(float(sum(parts.values())), parts, vertices,
                                float(sum(fragments)), len(draws))
        self._pending[group.index] = (draws, prediction)
        return prediction

    def _c_f(self, program: str, cost: ProgramCost, frame: int) -> float:
        """c_f of a program: run-time calibrated once its frames are over (000 §5.5), else
        the calibration run's (003 §IV-E)."""
        learned = self._runtime.get(program)
        if learned and frame >= self.runtime_frames:
            return max(float(np.median(learned)), 0.0)
        return cost.c_f

    def _texture_load(self, state: GLState, command, cal: Calibration) -> float:
        """000 Eq. 5.3 for a texture attached to (or a framebuffer with a texture bound as)
        the render target."""
        if command.op == "framebufferTexture2D":
            texture = state.textures.get(command.args["texture"])
            size = _texture_size(texture, command.args["textarget"], command.args["level"])
        else:
            fbo = state.framebuffers.get(command.args["id"])
            attached = None if fbo is None else fbo.attachments.get("COLOR_ATTACHMENT0")
            size = None
            if attached is not None and attached[0] == "texture":
                size = _texture_size(state.textures.get(attached[1]), attached[2], attached[3])
        if size is None:
            return 0.0
        return cal.texture_load(4.0 * size[0] * size[1])

    def _fragments(self, monitor: _ContextMonitor, group: CommandGroup, draws: list[DrawInfo],
                   oracle: float | None) -> list[float]:
        """N_f of each draw of the group, by the chosen estimator."""
        bbox = [d.bbox for d in draws]
        if not draws:
            return []
        estimator = self.estimator
        total: float | None = None
        if estimator == "oracle" and oracle is not None:
            total = oracle
        elif estimator == "history-ratio" and monitor.last_ratio is not None:
            return [monitor.last_ratio * d.vertices for d in draws]
        elif estimator == "history-seq" and monitor.last_sequence is not None:
            position = monitor.draw_group_position
            if position < len(monitor.last_sequence):
                total = monitor.last_sequence[position]
        if total is None:
            return bbox
        # A group's fragments shared among its draws in proportion to their bounding boxes
        # (vertex counts when every box is empty).
        weights = np.asarray(bbox if sum(bbox) > 0 else [d.vertices for d in draws], float)
        if weights.sum() <= 0:
            weights = np.ones(len(draws))
        return list(total * weights / weights.sum())

    def observe(self, group: CommandGroup, fragments: float | None,
                seconds: float | None = None) -> None:
        """The group ran in ``seconds`` and shaded ``fragments`` (None: unknown): the recent
        history, and the run-time calibration of c_f."""
        monitor = self.monitors[group.context]
        draws, prediction = self._pending.pop(group.index, ([], None))
        programs = {d.program for d in draws}
        if len(programs) == 1 and seconds is not None and fragments:
            program = programs.pop()
            # frame 0 uploads and compiles (000 §7.4: "the GPU pipeline is not stable in the
            # beginning"); the median of the groups' samples resists the odd slow group
            if 1 <= group.frame < self.runtime_frames:
                rest = prediction.seconds - prediction.parts["draw_fragment"]
                self._runtime.setdefault(program, []).append((seconds - rest) / fragments)
        if draws:
            monitor.frame_vertices += sum(d.vertices for d in draws)
            monitor.frame_fragments += fragments or 0.0
            monitor.frame_sequence.append(float(fragments or 0.0))
        if group.commands and group.commands[-1].op == FRAME_END:
            if fragments is not None or monitor.frame_sequence:
                if monitor.frame_vertices:
                    monitor.last_ratio = monitor.frame_fragments / monitor.frame_vertices
                if monitor.frame_sequence:
                    monitor.last_sequence = monitor.frame_sequence
            monitor.frame_vertices, monitor.frame_fragments = 0, 0.0
            monitor.frame_sequence = []


def upload_bytes(state: GLState, command) -> int:
    """Bytes an upload moves: the client data of texImage2D / texSubImage2D (none for a
    texImage2D without data, which only allocates), level 0 of the bound texture (all its
    faces) for generateMipmap, the client data of bufferData / bufferSubData (none for a
    bufferData of a size only). ``state``: the context before the command."""
    a = command.args
    if command.op in BUFFER_UPLOAD_OPS:
        return 0 if a.get("data") is None else int(np.asarray(a["data"]).nbytes)
    if command.op in ("texImage2D", "texSubImage2D"):
        if a.get("data") is None:
            return 0
        return int(a["width"]) * int(a["height"]) * bytes_per_texel(a["format"], a["type"])
    if command.op == "generateMipmap":
        texture = state.textures.get(state.bound_textures[a["target"]][state.active_unit])
        if texture is None:
            return 0
        return sum(face[0].nbytes for face in texture.faces if face.get(0) is not None)
    return 0


def upload_seconds(cal: Calibration, state: GLState, command) -> float:
    """Seconds of an upload command (``UPLOAD_OPS``): the bytes it moves, and the old
    storage it frees. ``state``: the context before the command."""
    seconds = cal.upload(upload_kind(state, command), upload_bytes(state, command))
    released = released_bytes(state, command)
    if released:
        seconds += cal.c_upload.get(f"{command.op}:release", 0.0) * released
    return seconds


def _old_image(state: GLState, command):
    """The image (``TextureImage``) a texImage2D replaces, or None."""
    a = command.args
    binding = "TEXTURE_2D" if a["target"] == "TEXTURE_2D" else "TEXTURE_CUBE_MAP"
    texture = state.textures.get(state.bound_textures[binding][state.active_unit])
    if texture is None or not getattr(texture, "faces", None):
        return None
    face = CUBE_FACES.index(a["target"]) if a["target"] in CUBE_FACES else 0
    return texture.image(face, a["level"])


def _bound_buffer(state: GLState, target: str) -> np.ndarray | None:
    ident = state.array_buffer if target == "ARRAY_BUFFER" else state.element_buffer
    return state.buffers.get(ident) if ident else None


def released_bytes(state: GLState, command) -> int:
    """Bytes of storage a texImage2D / bufferData frees: the old image or buffer when the
    size changes (0 when it keeps it, or had none). ``state``: the context before it."""
    if command.op == "texImage2D":
        old = _old_image(state, command)
        if old is None or upload_kind(state, command) == "texImage2D:same":
            return 0
        return int(old.nbytes)
    if command.op == "bufferData":
        old = _bound_buffer(state, command.args["target"])
        if old is None or upload_kind(state, command) == "bufferData:same":
            return 0
        return int(old.size)
    return 0


def upload_kind(state: GLState, command) -> str:
    """The upload's kind (``UPLOAD_KINDS``): its call; ``texImage2D:same`` for a texImage2D
    of the size, format and type its level has (the storage is kept), ``bufferData:same``
    for a bufferData of the size its buffer has; ``generateMipmap:new`` for a
    glGenerateMipmap whose texture has no level 1 of the size level 0 calls for.
    ``state``: the context before the command."""
    a = command.args
    if command.op == "texImage2D":
        old = _old_image(state, command)
        if old is not None and (old.width, old.height, old.format, old.type) == (
                a["width"], a["height"], a["format"], a["type"]):
            return "texImage2D:same"
        return command.op
    if command.op == "bufferData":
        old = _bound_buffer(state, a["target"])
        if old is not None and old.size and old.size == a["size"]:
            return "bufferData:same"
        return command.op
    if command.op != "generateMipmap":
        return command.op
    texture = state.textures.get(state.bound_textures[a["target"]][state.active_unit])
    base = None if texture is None or not texture.faces else texture.image(0, 0)
    if base is None or base.width == base.height == 1:
        return command.op
    level1 = texture.image(0, 1)
    wanted = (max(1, base.width >> 1), max(1, base.height >> 1))
    if level1 is None or (level1.width, level1.height) != wanted:
        return "generateMipmap:new"
    return command.op


def _texture_size(texture, target, level) -> tuple[int, int] | None:
    """(width, height) of a texture image (``tilesim.render.gl.textures.Texture``), if set."""
    if texture is None or not getattr(texture, "faces", None):
        return None
    face = CUBE_FACES.index(target) if target in CUBE_FACES else 0
    image = texture.image(face, level)
    return None if image is None else (int(image.width), int(image.height))


class HistoryPredictor:
    """003 §VI-A's history-based predictor: content hash -> last measured time, else the
    maximum measured so far (0 at first)."""

    def __init__(self):
        self.table: dict[bytes, float] = {}
        self.maximum = 0.0
        self.misses = 0

    def predict(self, group: CommandGroup) -> float:
        seconds = self.table.get(group.content_digest())
        if seconds is None:
            self.misses += 1
            return self.maximum
        return seconds

    def observe(self, group: CommandGroup, seconds: float) -> None:
        self.table[group.content_digest()] = seconds
        self.maximum = max(self.maximum, seconds)
