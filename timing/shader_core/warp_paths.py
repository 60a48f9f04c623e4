"""What the core runs: the path of every warp and the texel lines of every texture
instruction, recorded by the TGSI interpreter on real inputs.

``record`` runs the program once over all lanes (``Interpreter.run(record_trace=True)`` gives
the instruction issued at each step and the active lanes of every warp; a recording sampler
around the sampler gives each sampling call's texel lines), then cuts the trace per warp:
warp ``w``'s path is the steps where it had an active lane (the branch it took, loops as
often as its lanes ran them), followed by the end of the program. The dynamic instruction
count is therefore the interpreter's (``Execution.stats.warp_instructions``).

Texel lines: with tilesim's texture sampler (``record_accesses=True``, a trace's draw) they
are the cache lines the sampler's texture-cache model looked up for each lane. With the
procedural sampler of generated inputs (a corpus program on its own) they are those of a
nominal texture per unit, 256x256 texels of 4 bytes in 4x4-texel blocks of one 64-byte line
(the layout of render.pipeline.texture_sampler), at the level of detail of each quad,
bilinear: the 2x2 texels around each lane's coordinate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.backend import to_host
from tilesim.errors import InputError
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.ir import Program
from tilesim.shaders.opcodes import OPCODES, TEX
from tilesim.shaders.parser import parse_file
from tilesim.shaders.sampling import ProceduralSampler, TextureRequest
from tilesim.shaders.synthetic_inputs import generate, load_interface
from tilesim.timing.shader_core.program import StaticProgram, static_program

WARP = 4
NOMINAL_SIZE, NOMINAL_LEVELS, LINE, BLOCK, TEXEL_BYTES = 256, 9, 64, 4, 4
UNIT_SPAN = 1 << 24          # bytes between two units' nominal textures


@dataclass
class WarpPaths:
    """The streams the core runs: flat arrays over every warp's path (EOP included)."""

    program: StaticProgram
    w_start: np.ndarray        # (W+1,) warp w's path is s_pc[w_start[w]:w_start[w+1]]
    s_pc: np.ndarray           # (n,) static index of each dynamic instruction
    s_lanes: np.ndarray        # (n,) active lanes (4 for EOP)
    s_tex_start: np.ndarray    # (n,) first texel line in tex_lines
    s_tex_count: np.ndarray    # (n,) texel lines of the instruction (0 if not TEX)
    tex_lines: np.ndarray      # (L,) texel line numbers (address / 64)
    registers_per_warp: int
    interpreter_instructions: int       # what the interpreter counted (warp instructions)
    name: str = "<program>"
    notes: list[str] = field(default_factory=list)

    @property
    def warps(self) -> int:
        return len(self.w_start) - 1

    @property
    def dynamic_instructions(self) -> int:
        """Warp instructions without the EOP rows (the interpreter's count)."""
        return len(self.s_pc) - self.warps


class RecordingSampler:
    """A Sampler that passes every call on and keeps, per sampling call, (lanes (M,), texel
    line (M,)): from the wrapped sampler's ``accesses`` when it records them, else the
    nominal footprint (module docstring)."""

    def __init__(self, inner=None):
        self.inner = inner or ProceduralSampler()
        self.calls: list[tuple[np.ndarray, np.ndarray]] = []

    def _record(self, before: int | None, nominal) -> None:
        accesses = getattr(self.inner, "accesses", None)
        if before is not None and accesses is not None:
            new = accesses[before:]
            if new:
                lanes = np.concatenate([to_host(a[1]) for a in new]).astype(np.int64)
                lines = np.concatenate([to_host(a[2]) for a in new]).astype(np.int64) // LINE
            else:
                lanes = lines = np.zeros(0, dtype=np.int64)
            self.calls.append((lanes, lines))
            return
        self.calls.append(nominal())

    def _before(self):
        accesses = getattr(self.inner, "accesses", None)
        if accesses is not None and getattr(self.inner, "record_accesses", False):
            return len(accesses)
        return None

    def sample(self, request: TextureRequest):
        before = self._before()
        result = self.inner.sample(request)
        self._record(before, lambda: nominal_lines(request.unit, to_host(request.coords),
                                                   _active(request.active, request.coords)))
        return result

    def fetch(self, unit, target, texel, active):
        before = self._before()
        result = self.inner.fetch(unit, target, texel, active)
        t = to_host(texel).astype(np.int64)
        self._record(before, lambda: _texel_lines(unit, t[0], t[1], np.clip(t[3], 0, 8),
                                                  _active(active, texel)))
        return result

    def size(self, unit, target, level):
        return self.inner.size(unit, target, level)


def _active(active, like) -> np.ndarray:
    n = like.shape[-1]
    return np.ones(n, dtype=bool) if active is None else np.broadcast_to(to_host(active), (n,))


def _texel_lines(unit, x, y, level, active):
    size = np.maximum(NOMINAL_SIZE >> level, 1)
    x = np.mod(x, size)
    y = np.mod(y, size)
    blocks = np.maximum(size // BLOCK, 1)
    # levels one after another, each from a line boundary
    level_base = np.zeros(NOMINAL_LEVELS + 1, dtype=np.int64)
    for lv in range(NOMINAL_LEVELS):
        s = max(NOMINAL_SIZE >> lv, 1)
        level_base[lv + 1] = level_base[lv] + max(s * s * TEXEL_BYTES // LINE, 1)
    line = (unit * UNIT_SPAN // LINE + level_base[level]
            + (y // BLOCK) * blocks + x // BLOCK)
    lanes = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    keep = np.broadcast_to(active, x.shape)
    return lanes[keep].astype(np.int64), line[keep].astype(np.int64)


def nominal_lines(unit: int, coords: np.ndarray, active: np.ndarray):
    """(lanes, lines) of a bilinear sample of the nominal texture at each quad's LOD."""
    n = coords.shape[1]
    s = np.nan_to_num(coords[0].astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    t = np.nan_to_num(coords[1].astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    s = np.clip(s, -1e6, 1e6) * NOMINAL_SIZE
    t = np.clip(t, -1e6, 1e6) * NOMINAL_SIZE
    level = np.zeros(n, dtype=np.int64)
    if n % WARP == 0:
        q = s.reshape(-1, WARP), t.reshape(-1, WARP)
        dx = np.hypot(q[0][:, 1] - q[0][:, 0], q[1][:, 1] - q[1][:, 0])
        dy = np.hypot(q[0][:, 2] - q[0][:, 0], q[1][:, 2] - q[1][:, 0])
        rho = np.maximum(np.maximum(dx, dy), 1e-9)
        level = np.repeat(np.clip(np.floor(np.log2(rho) + 0.5), 0, NOMINAL_LEVELS - 1)
                          .astype(np.int64), WARP)
    scale = (1 << level).astype(np.float64)
    u = s / scale - 0.5
    v = t / scale - 0.5
    x0 = np.floor(u).astype(np.int64)
    y0 = np.floor(v).astype(np.int64)
    xs = np.stack([x0, x0 + 1, x0, x0 + 1])
    ys = np.stack([y0, y0, y0 + 1, y0 + 1])
    lanes, lines = _texel_lines(unit, xs, ys, np.broadcast_to(level, xs.shape),
                                np.broadcast_to(active, xs.shape))
    return lanes, lines


def from_trace(program: Program, pcs: np.ndarray, masks: np.ndarray,
               calls: list[tuple[np.ndarray, np.ndarray]], *, registers_per_warp=None,
               name="<program>") -> WarpPaths:
    """Cut an interpreter trace (pc (T,), active lanes (T, W)) into per-warp paths."""
    static = static_program(program)
    pcs = np.asarray(pcs, dtype=np.int64)
    masks = np.asarray(masks)
    steps, warps = masks.shape
    is_tex = np.array([OPCODES[op].category == TEX and op != "TXQ"
                       for op in static.opcodes[:-1]] + [False])
    tex_steps = np.flatnonzero(is_tex[pcs]) if steps else np.zeros(0, dtype=np.int64)
    if len(tex_steps) != len(calls):
        raise InputError(f"{name}: {len(calls)} sampling calls for {len(tex_steps)} texture "
                         "steps in the interpreter's trace")
    warp_of, step_of = np.nonzero(masks.T > 0)           # sorted by warp, then step
    counts = np.bincount(warp_of, minlength=warps)
    interpreter_count = int(len(step_of))
    # the flat path with one EOP row after each warp's instructions
    n = interpreter_count + warps
    w_start = np.zeros(warps + 1, dtype=np.int64)
    w_start[1:] = np.cumsum(counts + 1)
    position = np.arange(interpreter_count) + warp_of     # skip one EOP row per earlier warp
    s_pc = np.full(n, static.eop, dtype=np.int64)
    s_pc[position] = pcs[step_of]
    s_lanes = np.full(n, WARP, dtype=np.int64)
    s_lanes[position] = masks[step_of, warp_of]
    # texel lines of each (call, warp): distinct lines in the order the lanes asked
    call_of_step = np.full(max(steps, 1), -1, dtype=np.int64)
    call_of_step[tex_steps] = np.arange(len(tex_steps))
    keys, lines_all = [], []
    for k, (lanes, lines) in enumerate(calls):
        if len(lanes) == 0:
            continue
        key = k * warps + lanes // WARP
        order = np.argsort(key, kind="stable")
        key, line = key[order], lines[order]
        pair = np.stack([key, line], axis=1)
        _, first = np.unique(pair, axis=0, return_index=True)
        first.sort()
        keys.append(key[first])
        lines_all.append(line[first])
    keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    tex_lines = np.concatenate(lines_all) if lines_all else np.zeros(0, dtype=np.int64)
    s_tex_start = np.zeros(n, dtype=np.int64)
    s_tex_count = np.zeros(n, dtype=np.int64)
    dyn_call = call_of_step[step_of]
    tex_rows = np.flatnonzero(dyn_call >= 0)
    if len(tex_rows):
        want = dyn_call[tex_rows] * warps + warp_of[tex_rows]
        lo = np.searchsorted(keys, want, side="left")
        hi = np.searchsorted(keys, want, side="right")
        s_tex_start[position[tex_rows]] = lo
        s_tex_count[position[tex_rows]] = hi - lo
    if registers_per_warp is None:
        registers_per_warp = static.registers
    return WarpPaths(static, w_start, s_pc, s_lanes, s_tex_start, s_tex_count, tex_lines,
                    int(registers_per_warp), interpreter_count, name)


def concatenate(all_paths: list[WarpPaths], name: str | None = None) -> WarpPaths:
    """One paths running the warps of ``all_paths`` (of one program) one after another: a
    draw whose fragments were shaded in several batches."""
    if not all_paths:
        raise ValueError("no all_paths to concatenate")
    first = all_paths[0]
    steps = np.cumsum([0] + [len(w.s_pc) for w in all_paths[:-1]])
    lines = np.cumsum([0] + [len(w.tex_lines) for w in all_paths[:-1]])
    w_start = np.concatenate([[0]] + [w.w_start[1:] + off for w, off in
                                      zip(all_paths, steps, strict=True)])
    return WarpPaths(
        first.program, w_start.astype(np.int64),
        np.concatenate([w.s_pc for w in all_paths]),
        np.concatenate([w.s_lanes for w in all_paths]),
        np.concatenate([w.s_tex_start + off for w, off in zip(all_paths, lines, strict=True)]),
        np.concatenate([w.s_tex_count for w in all_paths]),
        np.concatenate([w.tex_lines for w in all_paths]),
        max(w.registers_per_warp for w in all_paths),
        sum(w.interpreter_instructions for w in all_paths), name or first.name,
        [n for w in all_paths for n in w.notes])


def record(program: Program, inputs, constants, *, lanes=None, sampler=None,
           system_values=None, registers_per_warp=None, name="<program>") -> WarpPaths:
    """Run ``program`` with the interpreter and cut its trace into the core's paths."""
    if lanes is not None and lanes % WARP:
        raise InputError(f"lanes must come in warps of {WARP}, got {lanes}")
    recorder = RecordingSampler(sampler)
    execution = Interpreter(program).run(inputs, constants, lanes=lanes, sampler=recorder,
                                         system_values=system_values, record_trace=True)
    pcs, masks = execution.trace
    paths = from_trace(program, to_host(pcs), to_host(masks), recorder.calls,
                          registers_per_warp=registers_per_warp, name=name)
    counted = int(to_host(execution.stats.warp_instructions).sum())
    if counted != paths.interpreter_instructions:   # the trace and the counters disagree
        raise AssertionError(f"{name}: trace has {paths.interpreter_instructions} warp "
                             f"instructions, the interpreter counted {counted}")
    return paths


def warp_grid(warps: int) -> tuple[int, int]:
    """A width x height block of pixels holding ``warps`` quads (a few more, cut later)."""
    quads_w = max(1, int(np.ceil(np.sqrt(warps))))
    quads_h = -(-warps // quads_w)
    return 2 * quads_w, 2 * quads_h


def record_file(path: str | Path, warps: int, *, seed: int = 0,
                registers_per_warp=None) -> WarpPaths:
    """A program file (or a corpus folder's fragment.tgsi) over ``warps`` warps of generated
    inputs (quads in a block of pixels, smoothly varying inputs; see synthetic_inputs)."""
    path = Path(path)
    if path.is_dir():
        path = path / "fragment.tgsi"
    return record_program(parse_file(path), warps, seed=seed, interface=load_interface(path),
                          registers_per_warp=registers_per_warp, name=str(path))


def record_program(program: Program, warps: int, *, seed: int = 0, interface=None,
                   registers_per_warp=None, name: str = "<program>") -> WarpPaths:
    """``program`` over ``warps`` warps of generated inputs (``interface``: the uniform
    storage types of a corpus program's interface.json, when known)."""
    if warps < 1:
        raise InputError(f"--warps: expected a positive number of warps, got {warps}")
    width, height = warp_grid(warps)
    gen = generate(program, width=width, height=height, seed=seed, interface=interface, xp=np)
    n = warps * WARP
    inputs = gen.inputs[..., :n]
    system_values = {k: v[..., :n] for k, v in gen.system_values.items()}
    return record(program, inputs, gen.constants, lanes=n, system_values=system_values,
                  registers_per_warp=registers_per_warp, name=name)
