"""Conformance suite: scenes rendered by tilesim and by Mesa llvmpipe, compared.

Every scene (:mod:`tilesim.render.workloads.conformance_scenes`) is recorded into frames of
commands. The same frames are rendered by tilesim (:mod:`tilesim.render.replay`) and
replayed on Mesa llvmpipe (:mod:`tilesim.render.reference.replay_gl`) at the same size; each
frame is compared.

Metrics, per scene (the worst frame of a multi-frame scene):

- ``mssim``: mean structural similarity of the RGB images (Wang et al. 2004: Gaussian
  weights, sigma 1.5, population covariance, data range 255), via scikit-image;
- ``within``: share of pixels whose four channels (RGBA) all differ by at most 2/255;
- fragment counts, summed over the frames: tilesim's ``fragments_rasterized -
  fragments_discarded`` (covered pixels inside viewport and scissor, before any depth test,
  less those the fragment shader discarded) against Mesa's GL_SAMPLES_PASSED occlusion query
  over the whole scene replayed with the depth test forced off. Samples passed counts the
  fragments that reach the framebuffer: scissored and discarded fragments are not counted,
  color and depth masks and blending do not matter, so with the depth test off the two
  counts measure the same thing. (``fragments_discarded`` counts the shaded fragments a
  shader killed; a program that can discard is always depth-tested late, so every covered
  fragment of it is shaded and the subtraction is exact.)

Thresholds (all must hold for PASS): ``mssim >= 0.995``, ``within >= 0.999`` and the
fragment counts within 0.1 % of each other.

``tilesim conformance --help`` runs them.
"""

from __future__ import annotations

import ctypes
import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from tilesim.atomic import write_bytes
from tilesim.errors import InputError, ToolMissing, resolve_name
from tilesim.images import image_metrics, png_bytes, within_tolerance
from tilesim.mesa import EXIT_NO_MESA, GL, NoMesa, child_environment
from tilesim.render.gl.commands import Command, make_command
from tilesim.render.gl.compressed import COMPRESSED_COMPONENTS, decode_compressed
from tilesim.render.reference import replay_gl
from tilesim.render.reference.replay_gl import GL_RENDERER, GLReplayer, MesaUnavailable
from tilesim.render.replay import render_frames
from tilesim.render.traces.trace_file import open_trace, write_trace
from tilesim.render.workloads.conformance_scenes import SCENES, record_scene
from tilesim.thresholds import (
    CONFORMANCE_COUNT_RTOL,
    CONFORMANCE_MIN_MSSIM,
    CONFORMANCE_MIN_WITHIN,
    CONFORMANCE_TOLERANCE,
)

# --- running and comparing ------------------------------------------------------------------

@dataclass
class SceneFrame:
    """How one frame of a scene agrees with Mesa's."""

    frame: int
    mssim: float | None    # None: the frame is smaller than the SSIM window (tilesim.images)
    within: float          # share of pixels within CONFORMANCE_TOLERANCE on every channel
    max_difference: int    # largest channel difference, in 1/255


@dataclass
class SceneResult:
    scene: str
    width: int
    height: int
    frames: list[SceneFrame] = field(default_factory=list)
    fragments_tilesim: int = 0
    fragments_mesa: int | None = None
    seconds_tilesim: float = 0.0
    seconds_mesa: float = 0.0
    error: str | None = None

    @property
    def mssim(self) -> float:
        """The lowest MSSIM of the frames; NaN when no frame has one (none, or every frame
        below the SSIM window: those are judged by ``within`` alone)."""
        return min((f.mssim for f in self.frames if f.mssim is not None), default=float("nan"))

    @property
    def within(self) -> float:
        return min((f.within for f in self.frames), default=float("nan"))

    @property
    def count_error(self) -> float | None:
        """Relative difference of the fragment counts (None without Mesa's count)."""
        if self.fragments_mesa is None:
            return None
        if self.fragments_mesa == 0:
            return 0.0 if self.fragments_tilesim == 0 else math.inf
        return abs(self.fragments_tilesim - self.fragments_mesa) / self.fragments_mesa

    def failures(self) -> list[str]:
        if self.error:
            return [self.error]
        out = []
        scored = any(f.mssim is not None for f in self.frames) or not self.frames
        if scored and not self.mssim >= CONFORMANCE_MIN_MSSIM:
            out.append(f"MSSIM {self.mssim:.5f} < {CONFORMANCE_MIN_MSSIM}")
        if not self.within >= CONFORMANCE_MIN_WITHIN:
            out.append(f"{100 * self.within:.3f}% of pixels within "
                       f"{CONFORMANCE_TOLERANCE}/255 < {100 * CONFORMANCE_MIN_WITHIN:.1f}%")
        err = self.count_error
        if err is None or not err <= CONFORMANCE_COUNT_RTOL:
            out.append(f"fragments {self.fragments_tilesim} (tilesim) vs "
                       f"{self.fragments_mesa} (Mesa)")
        return out

    @property
    def passed(self) -> bool:
        return not self.failures()

    def as_dict(self) -> dict:
        """Plain JSON values (NaN and infinity, which JSON lacks, become None)."""
        def finite(value):
            return value if value is None or math.isfinite(value) else None

        d = asdict(self)
        d.update(mssim=finite(self.mssim), within=finite(self.within),
                 count_error=finite(self.count_error), passed=self.passed,
                 failures=self.failures())
        return d


def compare_frame(frame: int, tilesim: np.ndarray, mesa: np.ndarray) -> SceneFrame:
    """How frame ``frame`` of a scene agrees: MSSIM of RGB (:mod:`tilesim.images`), share of
    pixels within ``CONFORMANCE_TOLERANCE`` on all of RGBA, largest difference; (H, W, 4)
    uint8 images."""
    if tilesim.shape != mesa.shape:
        raise InputError(f"image sizes differ: tilesim {tilesim.shape}, Mesa {mesa.shape}")
    mssim = image_metrics(tilesim, mesa, frame, where="conformance").mssim
    within, max_difference = within_tolerance(tilesim, mesa, CONFORMANCE_TOLERANCE)
    return SceneFrame(frame, None if mssim is None else float(mssim), within, max_difference)


def render_tilesim(frames: list[list[Command]], width: int, height: int, *,
                   source: str = "<scene>", **renderer_options
                   ) -> tuple[list[np.ndarray], list[dict]]:
    """tilesim's images ((H, W, 4) uint8, row 0 at the top) and counter summaries, per frame.
    ``renderer_options`` as :func:`tilesim.render.replay.render_frames` takes them
    (default: the baseline pipeline)."""
    images, counters = [], []
    for result in render_frames(frames, width, height, source=source, **renderer_options):
        images.append(result.image)
        counters.append(result.counters.summary())
    return images, counters


def tilesim_fragment_count(counters: list[dict]) -> int:
    """Fragments that reach the per-fragment tests after the shader, depth test aside."""
    return sum(int(c["fragments_rasterized"]) - int(c["fragments_discarded"]) for c in counters)


# --- Mesa's fragment count -------------------------------------------------------------------
# OpenGL ES 2.0 has no counting occlusion query (ES 3.0 and EXT_occlusion_query_boolean only
# answer "any samples passed?"), so the count is taken on a desktop OpenGL compatibility
# context of the same Mesa driver: tilesim.render.reference.replay_gl's GLReplayer runs the scene
# there (its GLES2 entry points are all part of desktop GL 4.1+, client arrays and LUMINANCE / ALPHA
# formats included in the compatibility profile), inside one GL_SAMPLES_PASSED query. Two changes to
# the frames make that replay count what tilesim's counter counts: the depth test is never enabled,
# and the GLSL gets a "#version 100" line (a desktop context reads a source without one as GLSL
# 1.10; with it, as GLSL ES 1.00 through ARB_ES2_compatibility). A desktop context also takes a
# point's size from gl_PointSize only with GL_PROGRAM_POINT_SIZE enabled (OpenGL 4.1
# compatibility profile section 3.4; GLES2 always does, section 3.3), which the count enables.

GL_SAMPLES_PASSED = 0x8914
GL_PROGRAM_POINT_SIZE = 0x8642
GL_QUERY_RESULT = 0x8866


def counting_frames(frames: list[list[Command]]) -> list[list[Command]]:
    """The frames as the sample count replays them: depth test off, ``#version 100`` GLSL,
    GL_BGRA_EXT textures (EXT_texture_format_BGRA8888) with the internal format RGBA, ETC1
    textures (OES_compressed_ETC1_RGB8_texture, GLES only) as their decoded RGB, and S3TC
    textures alike (as tilesim decodes them: the count is of fragments, not colors)."""
    out = []
    for frame in frames:
        changed = []
        for command in frame:
            if command.op == "enable" and command.args["cap"] == "DEPTH_TEST":
                command = make_command("disable", {"cap": "DEPTH_TEST"})
            elif command.op == "texImage2D" and command.args["internalformat"] == "BGRA_EXT":
                # desktop GL takes GL_BGRA as a format only, its internal format is RGBA
                command = Command("texImage2D", {**command.args, "internalformat": "RGBA"})
            elif command.op == "compressedTexImage2D":
                # ETC1 is a GLES format only: desktop GL gets the decoded texels (as RGBA
                # rows, which every UNPACK_ALIGNMENT reads unpadded) in an RGB texture
                a = command.args
                rgba = _decoded_rgba(a["internalformat"], a["data"], a["width"], a["height"])
                rgb = COMPRESSED_COMPONENTS[a["internalformat"]] == 3
                command = Command("texImage2D", {
                    "target": a["target"], "level": a["level"],
                    "internalformat": "RGB" if rgb else "RGBA",
                    "width": a["width"], "height": a["height"], "format": "RGBA",
                    "type": "UNSIGNED_BYTE", "data": rgba})
            elif command.op == "compressedTexSubImage2D":
                a = command.args
                rgba = _decoded_rgba(a["format"], a["data"], a["width"], a["height"])
                command = Command("texSubImage2D", {
                    "target": a["target"], "level": a["level"], "xoffset": a["xoffset"],
                    "yoffset": a["yoffset"], "width": a["width"], "height": a["height"],
                    "format": "RGBA", "type": "UNSIGNED_BYTE", "data": rgba})
            elif command.op == "createProgram":
                args = dict(command.args)
                for key in ("vertex_glsl", "fragment_glsl"):
                    if not args[key].lstrip().startswith("#version"):
                        args[key] = "#version 100\n" + args[key]
                command = Command("createProgram", args)
            changed.append(command)
        out.append(changed)
    return out


def _decoded_rgba(fmt: str, data, width: int, height: int) -> np.ndarray:
    """The (height, width, 4) uint8 texels of a compressed image, alpha 255 where the format
    has none."""
    texels = decode_compressed(fmt, data, width, height)
    if texels.shape[-1] == 4:
        return texels
    return np.concatenate([texels, np.full(texels.shape[:2] + (1,), 255, np.uint8)], -1)


class SampleCount:
    """GL_SAMPLES_PASSED over every draw of ``frames`` on Mesa ``driver`` with the depth test
    off, counted by a child process (as tilesim.render.reference.replay_gl replays) that starts on
    entering the ``with`` block, so other work can run meanwhile; :meth:`result` waits for it."""

    def __init__(self, frames: list[list[Command]], width: int, height: int, *,
                 driver: str = "llvmpipe", timeout: float = 1800):
        self.frames, self.width, self.height = frames, width, height
        self.driver, self.timeout = driver, timeout

    def __enter__(self) -> SampleCount:
        self._tmp = tempfile.TemporaryDirectory(prefix="tilesim-count-")
        path = write_trace(Path(self._tmp.name, "count.tsim"), counting_frames(self.frames),
                           width=self.width, height=self.height, depth_bits=24,
                           name="<conformance count>")
        self._out = Path(self._tmp.name, "count.json")
        self._stderr = open(Path(self._tmp.name, "stderr.txt"), "wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tilesim.studies.conformance", "--count-child", str(path),
             str(self._out)],
            env=child_environment(self.driver), stdout=subprocess.DEVNULL,
            stderr=self._stderr)
        return self

    def result(self) -> int:
        try:
            code = self._proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the sample count took more than {self.timeout} s") from None
        self._stderr.flush()
        stderr = Path(self._stderr.name).read_text(encoding="utf-8", errors="replace")
        if code == 3:
            raise MesaUnavailable(f"no desktop OpenGL context on Mesa {self.driver}: "
                                  f"{stderr.strip().splitlines()[-1:]}")
        if code != 0 or not self._out.exists():
            raise RuntimeError(f"sample-count replay failed (exit {code}):\n{stderr[-4000:]}")
        result = json.loads(self._out.read_text(encoding="utf-8"))
        if self.driver not in result["renderer"]:
            raise MesaUnavailable(f"the count ran on {result['renderer']!r}, not {self.driver}")
        return int(result["samples"])

    def __exit__(self, *exc_info) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._stderr.close()
        self._tmp.cleanup()


def _count_child(trace_path: str, out_path: str) -> int:
    try:
        gl = GL.create("gl")
    except NoMesa as exc:
        print(f"no desktop OpenGL context: {exc}", file=sys.stderr)
        return EXIT_NO_MESA
    with open_trace(trace_path) as trace:
        replayer = GLReplayer(gl, trace.width, trace.height, depth_bits=trace.depth_bits,
                              name=str(trace_path))
        gl.glEnable(GL_PROGRAM_POINT_SIZE)
        query = gl.gen(gl.glGenQueries)
        gl.glBeginQuery(GL_SAMPLES_PASSED, query)
        for _ in replayer.run(trace.frames(), None, wanted=set()):
            pass
        gl.glEndQuery(GL_SAMPLES_PASSED)
        samples = ctypes.c_uint64()
        gl.glGetQueryObjectui64v(query, GL_QUERY_RESULT, ctypes.byref(samples))
    Path(out_path).write_text(json.dumps({"samples": samples.value,
                                          "renderer": gl.string(GL_RENDERER)}),
                              encoding="utf-8")
    return 0


def run_scene(name: str, size: tuple[int, int] | None = None, *,
              out: Path | None = None, renderer_options: dict | None = None) -> SceneResult:
    """Record, render on both sides and compare one scene; PNGs into ``out``/name if given.
    ``renderer_options``: keyword arguments of ``replay.render_frames`` (e.g. ``fill_rule``)."""
    frames, width, height = record_scene(name, size)
    result = SceneResult(name, width, height)
    if SCENES[name].mediump is not None:
        renderer_options = {"mediump": SCENES[name].mediump, **(renderer_options or {})}
    try:
        # Mesa's count runs in a child process while tilesim renders here.
        with SampleCount(frames, width, height) as count:
            start = time.perf_counter()
            ours, counters = render_tilesim(frames, width, height, source=f"scene {name}",
                                            **(renderer_options or {}))
            result.seconds_tilesim = time.perf_counter() - start
            result.fragments_tilesim = tilesim_fragment_count(counters)
            start = time.perf_counter()
            theirs = replay_gl.reference_frames(frames, width=width, height=height)
            result.fragments_mesa = count.result()
            result.seconds_mesa = time.perf_counter() - start
    except ToolMissing:
        raise  # Mesa (or a package) missing: every scene would fail the same way
    except Exception as exc:  # a scene that cannot render is a failed scene, with the cause
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    if len(ours) != len(theirs):
        result.error = f"frame counts differ: tilesim {len(ours)}, Mesa {len(theirs)}"
        return result
    for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        result.frames.append(compare_frame(index, a, b))
        if out is not None:
            write_comparison_pngs(Path(out) / name, index, a, b)
    return result


def difference_image(tilesim: np.ndarray, mesa: np.ndarray) -> np.ndarray:
    """(H, W, 4) uint8: pixels beyond the tolerance in red, the rest the absolute RGB
    difference amplified 32x in grey."""
    diff = np.abs(tilesim.astype(np.int16) - mesa.astype(np.int16))
    grey = np.clip(diff[..., :3].max(axis=2) * 32, 0, 160).astype(np.uint8)
    out = np.stack([grey, grey, grey, np.full_like(grey, 255)], axis=2)
    out[(diff > CONFORMANCE_TOLERANCE).any(axis=2)] = (255, 0, 0, 255)
    return out


def write_comparison_pngs(folder: Path, frame: int, tilesim: np.ndarray,
                          mesa: np.ndarray) -> None:
    for label, image in (("tilesim", tilesim), ("mesa", mesa),
                         ("diff", difference_image(tilesim, mesa))):
        write_bytes(folder / f"frame{frame:03d}_{label}.png", png_bytes(image))


def run_conformance(names: list[str] | None = None, size: tuple[int, int] | None = None, *,
                    out: Path | None = None, progress=None,
                    renderer_options: dict | None = None) -> list[SceneResult]:
    """Run scenes ``names`` (default all) in order; ``progress(result)`` after each."""
    results = []
    # names without case, a misspelling answered with the closest scene
    names = [resolve_name("conformance scene", n, SCENES, source="--scene")
             for n in names or list(SCENES)]
    for name in names:
        result = run_scene(name, size, out=out, renderer_options=renderer_options)
        results.append(result)
        if progress is not None:
            progress(result)
    return results


# --- command line --------------------------------------------------------------------------


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--count-child":
        sys.exit(_count_child(sys.argv[2], sys.argv[3]))
    print("usage: python -m tilesim.studies.conformance --count-child TRACE OUT.json "
          "(internal; use `tilesim conformance`)", file=sys.stderr)
    sys.exit(2)
