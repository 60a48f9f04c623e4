"""The GL ground truth's timers on Mesa (issue 17): what llvmpipe's GL_TIME_ELAPSED query
measures of a command group, with the begin flushed on its own and without (see
prediction/ground_truth.py's module doc)."""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.prediction.command_groups import Context, split_groups
from tilesim.prediction.ground_truth import GLBackend
from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.prediction_programs import corpus_program

QUADS = (1, 16)
REPEATS = 3


def textured_quads(width: int, height: int) -> tuple[list, list[str]]:
    """Frames of labelled groups: QUADS[k] full-screen textured quads in one group (one scene:
    no flush between the draws), REPEATS times each; the labels of the groups."""
    gl = Recorder(width, height, name="quads")
    program = corpus_program("glmark2-texture-texture-filter-nearest-")
    prog = gl.createProgram(program.vertex_glsl, program.fragment_glsl, compiled=program)
    gl.useProgram(prog)
    quad = np.array([[-1, -1, 0, 0, 0, 1, 0, 0], [1, -1, 0, 0, 0, 1, 1, 0],
                     [-1, 1, 0, 0, 0, 1, 0, 1], [1, 1, 0, 0, 0, 1, 1, 1]], np.float32)
    gl.bindBuffer("ARRAY_BUFFER", gl.createBuffer())
    gl.bufferData("ARRAY_BUFFER", quad)
    for name, size, offset in (("position", 3, 0), ("normal", 3, 12), ("texcoord", 2, 24)):
        location = gl.getAttribLocation(prog, name)
        gl.vertexAttribPointer(location, size, "FLOAT", False, 32, offset)
        gl.enableVertexAttribArray(location)
    gl.uniform1i(gl.getUniformLocation(prog, "MaterialTexture0"), 0)
    gl.uniformMatrix4fv(gl.getUniformLocation(prog, "ModelViewProjectionMatrix"), False,
                        np.eye(4, dtype=np.float32).ravel())
    gl.bindTexture("TEXTURE_2D", gl.createTexture())
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR")
    image = np.random.default_rng(0).integers(0, 256, (256, 256, 4), dtype=np.uint8)
    gl.texImage2D("TEXTURE_2D", 0, "RGBA", 256, 256, 0, "RGBA", "UNSIGNED_BYTE", image)
    gl.flush()
    gl.drawArrays("TRIANGLE_STRIP", 0, 4)       # the draw's code compiles here
    gl.flush()
    labels = ["setup", "warm"]
    for count in QUADS:
        for _ in range(REPEATS):
            for _ in range(count):
                gl.drawArrays("TRIANGLE_STRIP", 0, 4)
            gl.flush()
            labels.append(f"{count}")
    # a copy on the calling thread only: 4 MB into a vertex buffer
    blob = np.random.default_rng(1).integers(0, 256, 1 << 22, dtype=np.uint8)
    gl.bindBuffer("ARRAY_BUFFER", gl.createBuffer())
    for _ in range(REPEATS):
        gl.bufferData("ARRAY_BUFFER", blob, "DYNAMIC_DRAW")
        gl.flush()
        labels.append("upload")
    gl.endFrame()
    labels.append("swap")
    return gl.recorded_frames(), labels


@pytest.mark.slow
def test_llvmpipe_query_times_the_whole_group(mesa):
    """llvmpipe re-starts a TIME_ELAPSED query's clock at every tile that carries its begin
    (lp_rast_begin_query), so a begin binned with the draws times a tail of the group (16
    quads: about a tenth of the wall clock on the loaded 2-core machine), and a begin the
    rasterizer runs after the calling thread's copy misses the copy. Executed on its own
    (a glFinish after it), the query grows with the work as the wall clock does and is
    most of it, for draws and for an upload alike."""
    width, height = 640, 432          # 70 of llvmpipe's 64x64 tiles
    frames, labels = textured_quads(width, height)
    groups = list(split_groups(frames, None, limit=1 << 40))
    assert len(groups) == len(labels)
    backend = GLBackend("llvmpipe", timer="query")
    assert backend.anchor and backend.name == "gl-llvmpipe-query"
    seconds = backend.measure(frames, [Context(0, width, height)], [0], groups)
    assert backend.timer == "query"

    def median(values, label):
        return float(np.median([v for v, mine in zip(values, labels, strict=True)
                                if mine == str(label)]))

    few, many = (median(seconds, c) for c in QUADS)
    wall_many = median(backend.wall, QUADS[1])
    assert many >= 0.7 * wall_many, (many, wall_many)
    upload, wall_upload = median(seconds, "upload"), median(backend.wall, "upload")
    assert upload >= 0.7 * wall_upload, (upload, wall_upload)
    # 16 quads cost about 16 times one: at least 4 times, whatever the machine's load
    assert many >= 4 * few, (few, many)
    unanchored = GLBackend("llvmpipe", timer="query", anchor_query=False)
    assert unanchored.name == "gl-llvmpipe-query-unanchored"
    assert unanchored.method != backend.method
