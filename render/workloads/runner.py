"""``runner``: a 3D endless runner (the Temple Run / Sonic Dash category of Frame Coherence Table
3.2).

A camera follows the runner down a straight road. Per frame: a 2D sky (no depth), then with
the depth test on, front to back: the road segments (stone road with curbs, and grass
verges; a draw per segment and material, one static mesh drawn with a model matrix each),
stone arches and trees (one static mesh each, a draw per instance, a texture atlas), crates
and barriers on the lanes, spinning coins, and the runner (six boxes animated by
hierarchical matrices). World geometry is lit per vertex (diffuse + Blinn-Phong specular,
linear fog in the vertex shader); obstacles, coins and the runner per fragment. Last, an
alpha-blended 2D HUD without depth: a bar, coin and pause icons, score and coin digits.

The obstacle rows (which lanes are blocked), coin lines and tree placement come from
``seed``; the runner changes lane to avoid each row and collects the coins it runs through.
"""

from __future__ import annotations

import numpy as np

from tilesim.render.workloads.common import (
    MAX_FRAMES,
    MESH_ATTRIBS,
    PIXEL_LIT_VS,
    DynamicBatch,
    Mesh,
    Sprites,
    box,
    check_request,
    coverage,
    cylinder,
    glyph_atlas,
    gradient,
    grid,
    quad_batch,
    rgba_image,
    rng_for,
    setup_mesh_arrays,
    shape_distance,
    smoothstep,
    sphere,
    text_quads,
    to_u8,
    transformed,
    upload_texture,
    value_noise,
)
from tilesim.render.workloads.transforms import (
    gl_matrix,
    look_at,
    normal_matrix,
    perspective,
    rotate,
    scale,
    translate,
)

NAME = "runner"
CATEGORY = "Endless Runner, 3D (001 Table 3.2: Temple Run, Sonic Dash)"
SPEED = 0.5            # world units per frame
SEGMENT = 10.0         # road segment length
LANE = 2.0
FAR = 90.0
FOG = (25.0, 85.0)
FOG_COLOR = (0.78, 0.84, 0.92)
LIGHT = np.array([0.45, 0.8, 0.35]) / np.linalg.norm([0.45, 0.8, 0.35])

VERTEX_LIT_VS = """\
attribute vec3 a_position;
attribute vec3 a_normal;
attribute vec2 a_uv;
uniform mat4 u_mvp;
uniform mat4 u_model_view;
uniform mat3 u_normal_matrix;
uniform vec3 u_light_dir;
uniform vec3 u_ambient;
uniform vec4 u_specular;
uniform vec2 u_fog;
uniform vec2 u_uv_scale;
varying vec2 v_uv;
varying vec3 v_diffuse;
varying vec3 v_specular;
varying float v_fog;
void main() {
    vec4 p = u_model_view * vec4(a_position, 1.0);
    vec3 n = normalize(u_normal_matrix * a_normal);
    vec3 h = normalize(u_light_dir + normalize(-p.xyz));
    float ndl = max(dot(n, u_light_dir), 0.0);
    float spec = ndl > 0.0 ? pow(max(dot(n, h), 0.0), u_specular.w) : 0.0;
    v_diffuse = u_ambient + vec3(ndl);
    v_specular = u_specular.rgb * spec;
    v_fog = clamp((-p.z - u_fog.x) / (u_fog.y - u_fog.x), 0.0, 1.0);
    v_uv = a_uv * u_uv_scale;
    gl_Position = u_mvp * vec4(a_position, 1.0);
}
"""
VERTEX_LIT_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform vec3 u_fog_color;
varying vec2 v_uv;
varying vec3 v_diffuse;
varying vec3 v_specular;
varying float v_fog;
void main() {
    vec3 c = texture2D(u_tex, v_uv).rgb * v_diffuse + v_specular;
    gl_FragColor = vec4(mix(c, u_fog_color, v_fog), 1.0);
}
"""
PIXEL_LIT_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform vec3 u_light_dir;
uniform vec3 u_ambient;
uniform vec3 u_tint;
uniform vec4 u_specular;
uniform vec2 u_fog;
uniform vec3 u_fog_color;
varying vec3 v_position;
varying vec3 v_normal;
varying vec2 v_uv;
void main() {
    vec3 n = normalize(v_normal);
    vec3 v = normalize(-v_position);
    vec3 h = normalize(u_light_dir + v);
    float ndl = max(dot(n, u_light_dir), 0.0);
    float spec = pow(max(dot(n, h), 0.0), u_specular.w) * step(0.0001, ndl);
    vec3 base = texture2D(u_tex, v_uv).rgb * u_tint;
    vec3 c = base * (u_ambient + ndl) + u_specular.rgb * spec;
    float fog = clamp((-v_position.z - u_fog.x) / (u_fog.y - u_fog.x), 0.0, 1.0);
    gl_FragColor = vec4(mix(c, u_fog_color, fog), 1.0);
}
"""


# --- textures ------------------------------------------------------------------------------


def stone_texture(seed: int) -> np.ndarray:
    """256x256 RGB paving stones (4 x 8 staggered) with mortar, tileable."""
    rng = rng_for(seed, 1, 0)
    y, x = np.mgrid[0:256, 0:256] + 0.5
    row = (y // 32).astype(int)
    xs = (x + 32 * (row % 2)) % 256
    fx, fy = (xs % 64) / 64, (y % 32) / 32
    edge = np.minimum(np.minimum(fx, 1 - fx) * 64, np.minimum(fy, 1 - fy) * 32)
    mortar = 1 - coverage(edge - 2.5)
    stone_id = (row * 4 + (xs // 64).astype(int)) % 7
    tone = 0.55 + 0.08 * stone_id[..., None] / 7 + 0.25 * value_noise(
        rng, 256, 256, cells=16, octaves=4)[..., None]
    rgb = tone * (0.75, 0.7, 0.62)
    rgb = rgb * (1 - 0.6 * mortar[..., None])
    return to_u8(rgb)


def grass_texture(seed: int) -> np.ndarray:
    rng = rng_for(seed, 1, 1)
    n = value_noise(rng, 256, 256, cells=8, octaves=5)
    fine = rng.random((256, 256)) * 0.15
    g = (0.25 + 0.35 * n + fine)[..., None]
    return to_u8(g * np.array([0.55, 1.0, 0.35]))


def prop_atlas(seed: int) -> np.ndarray:
    """256x256 RGB: bark on the left half, leaves on the right half."""
    rng = rng_for(seed, 1, 2)
    out = np.zeros((256, 256, 3))
    stripes = value_noise(rng, 256, 16, cells=4, octaves=3)
    bark = 0.5 + 0.5 * np.repeat(stripes, 8, axis=1)
    out[:, :128] = bark[..., None] * (0.45, 0.3, 0.18)
    leaves = value_noise(rng, 256, 128, cells=16, octaves=4)
    out[:, 128:] = (0.2 + 0.6 * leaves)[..., None] * (0.35, 0.7, 0.25)
    return to_u8(out)


def crate_texture() -> np.ndarray:
    """128x128 RGB: a wooden crate face (planks, frame, diagonal brace)."""
    y, x = np.mgrid[0:128, 0:128] + 0.5
    plank = ((y // 21) % 2)[..., None]
    grain = 0.85 + 0.15 * np.sin(x * 0.35 + np.sin(y * 0.2) * 2)[..., None]
    rgb = (0.62, 0.42, 0.22) * grain * (0.9 + 0.1 * plank)
    frame = (np.minimum(np.minimum(x, 128 - x), np.minimum(y, 128 - y)) < 12)
    brace = np.abs(x - y) < 9
    rgb = np.where((frame | brace)[..., None], np.asarray((0.48, 0.3, 0.15)) * grain, rgb)
    return to_u8(rgb)


def noise_texture(seed: int, stream: int, color, size: int = 64) -> np.ndarray:
    n = value_noise(rng_for(seed, 1, stream), size, size, cells=4, octaves=3)
    return to_u8((0.75 + 0.25 * n)[..., None] * np.asarray(color))


def sky_texture() -> np.ndarray:
    sky = gradient([(0.35, 0.55, 0.9), (0.6, 0.72, 0.92), FOG_COLOR], 256)
    return to_u8(np.repeat(sky[:, None, :], 64, axis=1))


def hud_atlas() -> tuple[np.ndarray, dict]:
    """128x128 RGBA: bar (top half), coin icon and pause icon (64x64 each)."""
    atlas = np.zeros((128, 128, 4))
    y = np.arange(64)[:, None] + 0.5
    atlas[:64, :, :3] = gradient([(0.1, 0.1, 0.2), (0.2, 0.2, 0.35)], 64)[:, None, :]
    atlas[:64, :, 3] = 0.6 * coverage(np.abs(y - 32) - 30)
    coin = shape_distance("circle", 64, 0.85)
    atlas[64:, :64, :3] = (1.0, 0.8, 0.2)
    atlas[64:, :64, 3] = coverage(coin)
    pause = shape_distance("circle", 64, 0.9)
    yy, xx = np.mgrid[0:64, 0:64] + 0.5
    bars = ((np.abs(xx - 24) < 5) | (np.abs(xx - 40) < 5)) & (np.abs(yy - 32) < 14)
    atlas[64:, 64:, :3] = np.where(bars[..., None], 1.0, 0.2)
    atlas[64:, 64:, 3] = coverage(pause) * 0.85
    uv = {"bar": (0, 0, 1, 0.5), "coin": (0, 0.5, 0.5, 0.5), "pause": (0.5, 0.5, 0.5, 0.5)}
    return rgba_image(atlas[..., :3], atlas[..., 3]), uv


# --- meshes --------------------------------------------------------------------------------


def road_meshes() -> tuple[Mesh, list[tuple[int, int]]]:
    """One buffer: [road surface + curbs, grass verges, arch, tree, crate, barrier, coin,
    unit box]; returns the merged mesh and each part's (first index, count)."""
    surface = grid(6.0, SEGMENT, 6, 20, uv_scale=(1.5, SEGMENT / 4))
    curbs = [transformed(box(0.5, 0.35, SEGMENT, (1, SEGMENT / 2)), translate(side * 3.25, 0.17, 0))
             for side in (-1, 1)]
    road, _ = Mesh.merge([surface, *curbs])
    verges = [transformed(grid(14.0, SEGMENT, 4, 10, uv_scale=(3, 2.5)),
                     translate(side * 10.5, -0.02, 0)) for side in (-1, 1)]
    verge, _ = Mesh.merge(verges)
    pillar = cylinder(0.45, 4.0, 12, caps=True)
    arch, _ = Mesh.merge([transformed(pillar, translate(-4.2, 0, 0), (0, 0, 2, 1)),
                          transformed(pillar, translate(4.2, 0, 0), (0, 0, 2, 1)),
                          transformed(box(9.6, 0.8, 1.0, (4, 0.5)), translate(0, 4.3, 0))])
    trunk = transformed(cylinder(0.25, 2.0, 8, caps=False, top_radius=0.18), np.eye(4),
                   (0, 0, 0.5, 1))
    canopy = transformed(sphere(1.3, 8, 12), translate(0, 2.9, 0) @ scale(1, 1.25, 1),
                    (0.5, 0, 0.5, 1))
    tree, _ = Mesh.merge([trunk, canopy])
    crate = transformed(box(1.3, 1.3, 1.3), translate(0, 0.65, 0))
    barrier = transformed(box(1.8, 1.0, 0.4, (2, 1)), translate(0, 0.5, 0))
    coin = transformed(cylinder(0.35, 0.1, 16, caps=True), rotate("x", 90) @ translate(0, -0.05, 0))
    part = box(1, 1, 1)
    return Mesh.merge([road, verge, arch, tree, crate, barrier, coin, part])


# --- the course ----------------------------------------------------------------------------


def course(seed: int, length: float):
    """Obstacle rows (z, {lane: kind}), coins (x, z), trees (x, z, scale), arches (z), and
    the runner's lane at every obstacle row."""
    rng = rng_for(seed, 0)
    rows, coins = [], []
    z = -14.0
    lane = 0
    lanes_taken = []
    while z > -length - FAR:
        blocked = rng.choice(3, size=int(rng.integers(1, 3)), replace=False)
        kinds = {int(b) - 1: ("crate" if rng.random() < 0.6 else "barrier") for b in blocked}
        free = [lane_ for lane_ in (-1, 0, 1) if lane_ not in kinds]
        lane = min(free, key=lambda c: (abs(c - lane), rng.random()))
        rows.append((z, kinds))
        lanes_taken.append(lane)
        if rng.random() < 0.7:  # usually where the runner goes
            cl = lane if rng.random() < 0.75 else int(rng.choice(free))
            for k in range(4):
                coins.append((cl * LANE, z - 2.0 - 1.2 * k))
        z -= float(rng.uniform(8, 12))
    rng = rng_for(seed, 6)
    trees = []
    tz = -3.0
    while tz > -length - FAR:
        side = 1 if len(trees) % 2 else -1
        trees.append((side * float(rng.uniform(5.0, 8.5)), tz, float(rng.uniform(0.8, 1.3))))
        tz -= float(rng.uniform(4.0, 7.0))
    arches = [-25.0 * k - 20.0 for k in range(int((length + FAR) / 25) + 1)]
    return rows, lanes_taken, coins, trees, arches


def runner_x(rows, lanes, z: float) -> float:
    """Lateral position: the lane of the next row, changing over the 5 units before it."""
    x_prev = 0.0
    for (zr, _), lane in zip(rows, lanes, strict=True):
        if z > zr:  # row ahead
            t = smoothstep((z - (zr + 9.0)) / -5.0) if z < zr + 9.0 else 0.0
            return float(x_prev + (lane * LANE - x_prev) * t)
        x_prev = lane * LANE
    return x_prev


# --- recording -----------------------------------------------------------------------------


def build(width: int, height: int, frames: int = 100, seed: int = 0):
    """The frames (lists of commands) of ``frames`` frames of the workload at width x height."""
    from tilesim.render.gl.commands import Recorder

    check_request(NAME, width, height, frames)
    gl = Recorder(width, height, name=NAME)
    length = MAX_FRAMES * SPEED + 20
    rows, lanes, coins, trees, arches = course(seed, length)
    taken: set[int] = set()

    sprites = Sprites(gl, width, height)
    vlit = gl.createProgram(VERTEX_LIT_VS, VERTEX_LIT_FS, attrib_locations=MESH_ATTRIBS)
    plit = gl.createProgram(PIXEL_LIT_VS, PIXEL_LIT_FS, attrib_locations=MESH_ATTRIBS)
    names = ("u_mvp", "u_model_view", "u_normal_matrix", "u_light_dir", "u_ambient",
             "u_specular", "u_fog", "u_fog_color", "u_tex", "u_uv_scale", "u_tint")
    loc = {p: {n: gl.getUniformLocation(p, n) for n in names} for p in (vlit, plit)}
    mesh, parts = road_meshes()
    part = dict(zip(("road", "verge", "arch", "tree", "crate", "barrier", "coin", "box"), parts,
                    strict=True))
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", mesh.vertices, "STATIC_DRAW")
    ibo = gl.createBuffer()
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
    gl.bufferData("ELEMENT_ARRAY_BUFFER", mesh.indices, "STATIC_DRAW")
    trilinear = {"min_filter": "LINEAR_MIPMAP_LINEAR", "mipmap": True}
    tex = {
        "stone": upload_texture(gl, stone_texture(seed), wrap_s="REPEAT", wrap_t="REPEAT",
                                **trilinear),
        "grass": upload_texture(gl, grass_texture(seed), wrap_s="REPEAT", wrap_t="REPEAT",
                                **trilinear),
        "props": upload_texture(gl, prop_atlas(seed), **trilinear),
        "crate": upload_texture(gl, crate_texture(), wrap_s="REPEAT", wrap_t="REPEAT",
                                **trilinear),
        "gold": upload_texture(gl, noise_texture(seed, 3, (1.0, 0.78, 0.25)), **trilinear),
        "cloth": upload_texture(gl, noise_texture(seed, 4, (1.0, 1.0, 1.0)), **trilinear),
        "sky": upload_texture(gl, sky_texture()),
    }
    font_image, font_uv = glyph_atlas()
    tex["font"] = upload_texture(gl, font_image)
    hud_image, hud_uv = hud_atlas()
    tex["hud"] = upload_texture(gl, hud_image)
    hud_text = DynamicBatch(gl, 32)
    proj = perspective(60.0, width / height, 0.5, FAR)
    gl.clearColor(*FOG_COLOR, 1.0)
    gl.cullFace("BACK")
    gl.frontFace("CCW")
    gl.depthFunc("LEQUAL")
    coin_count = 0

    def begin_3d(program: int, view: np.ndarray) -> dict:
        gl.useProgram(program)
        u = loc[program]
        light = view[:3, :3] @ LIGHT
        gl.uniform3f(u["u_light_dir"], *light)
        gl.uniform3f(u["u_ambient"], 0.35, 0.37, 0.42)
        gl.uniform2f(u["u_fog"], *FOG)
        gl.uniform3f(u["u_fog_color"], *FOG_COLOR)
        gl.uniform1i(u["u_tex"], 0)
        gl.bindBuffer("ARRAY_BUFFER", vbo)
        setup_mesh_arrays(gl)
        gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
        for k in range(3):
            gl.enableVertexAttribArray(k)
        return u

    def draw(u: dict, view: np.ndarray, model: np.ndarray, name: str) -> None:
        model_view = view @ model
        gl.uniformMatrix4fv(u["u_mvp"], False, gl_matrix(proj @ model_view))
        gl.uniformMatrix4fv(u["u_model_view"], False, gl_matrix(model_view))
        gl.uniformMatrix3fv(u["u_normal_matrix"], False, gl_matrix(normal_matrix(model_view)))
        first, count = part[name]
        gl.drawElements("TRIANGLES", count, "UNSIGNED_SHORT", 2 * first)

    for f in range(frames):
        z = -f * SPEED
        x = runner_x(rows, lanes, z)
        eye = np.array([0.6 * x, 3.4, z + 6.5])
        view = look_at(eye, (0.3 * x, 1.2, z - 9.0))
        cam_z = eye[2]

        def visible(zz: float, reach: float = 2.0, cam_z: float = cam_z) -> bool:
            return cam_z - FAR - reach < zz < cam_z + reach

        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        # sky: 2D, no depth
        gl.disable("DEPTH_TEST")
        gl.disable("BLEND")
        gl.disable("CULL_FACE")
        sprites.use()
        gl.activeTexture(0)
        gl.bindTexture("TEXTURE_2D", tex["sky"])
        sprites.draw_one((0, 0, width, 0.62 * height))

        # opaque world, per-vertex lighting, front to back
        gl.enable("DEPTH_TEST")
        gl.enable("CULL_FACE")
        u = begin_3d(vlit, view)
        gl.uniform4f(u["u_specular"], 0.25, 0.25, 0.22, 24.0)
        gl.uniform2f(u["u_uv_scale"], 1.0, 1.0)
        first_seg = int(np.floor(-(cam_z + 2.0) / SEGMENT))
        segments = [k for k in range(first_seg, first_seg + int(FAR / SEGMENT) + 2)
                    if visible(-k * SEGMENT - SEGMENT / 2, SEGMENT)]
        for material in ("road", "verge"):
            gl.bindTexture("TEXTURE_2D", tex["stone" if material == "road" else "grass"])
            for k in segments:
                draw(u, view, translate(0, 0, -k * SEGMENT - SEGMENT / 2), material)
        gl.bindTexture("TEXTURE_2D", tex["stone"])
        gl.uniform2f(u["u_uv_scale"], 1.0, 1.0)
        for za in arches:
            if visible(za):
                draw(u, view, translate(0, 0, za), "arch")
        gl.bindTexture("TEXTURE_2D", tex["props"])
        gl.uniform4f(u["u_specular"], 0.1, 0.12, 0.1, 12.0)
        for tx, tz, s in trees:
            if visible(tz, 3.0):
                draw(u, view, translate(tx, 0, tz) @ scale(s), "tree")

        # obstacles, coins and the runner: per-fragment lighting
        u = begin_3d(plit, view)
        gl.uniform3f(u["u_tint"], 1.0, 1.0, 1.0)
        gl.uniform4f(u["u_specular"], 0.2, 0.2, 0.2, 16.0)
        gl.bindTexture("TEXTURE_2D", tex["crate"])
        for zr, kinds in rows:
            if not visible(zr):
                continue
            for lane, kind in sorted(kinds.items()):
                draw(u, view, translate(lane * LANE, 0, zr), kind)
        gl.bindTexture("TEXTURE_2D", tex["gold"])
        gl.uniform4f(u["u_specular"], 1.0, 0.9, 0.6, 40.0)
        for k, (cx, cz) in enumerate(coins):
            if k not in taken and abs(cz - z) < 0.5 and abs(cx - x) < 0.8:
                taken.add(k)
                coin_count += 1
            if k in taken or not visible(cz):
                continue
            draw(u, view, translate(cx, 1.0, cz) @ rotate("y", 9.0 * f + 30 * k), "coin")
        gl.bindTexture("TEXTURE_2D", tex["cloth"])
        gl.uniform4f(u["u_specular"], 0.3, 0.3, 0.3, 20.0)
        swing = 35.0 * np.sin(f * 0.55)
        body = translate(x, 0.05 * abs(np.sin(f * 0.55)), z) @ rotate("y", 180.0)
        for tint, model in (  # legs, torso, arms, head
                ((0.2, 0.25, 0.6), translate(-0.15, 0.9, 0) @ rotate("x", swing)
                 @ translate(0, -0.4, 0) @ scale(0.2, 0.8, 0.22)),
                ((0.2, 0.25, 0.6), translate(0.15, 0.9, 0) @ rotate("x", -swing)
                 @ translate(0, -0.4, 0) @ scale(0.2, 0.8, 0.22)),
                ((0.85, 0.2, 0.15), translate(0, 1.3, 0) @ scale(0.55, 0.75, 0.3)),
                ((0.95, 0.75, 0.6), translate(-0.38, 1.6, 0) @ rotate("x", -swing)
                 @ translate(0, -0.3, 0) @ scale(0.15, 0.6, 0.15)),
                ((0.95, 0.75, 0.6), translate(0.38, 1.6, 0) @ rotate("x", swing)
                 @ translate(0, -0.3, 0) @ scale(0.15, 0.6, 0.15)),
                ((0.95, 0.78, 0.62), translate(0, 1.92, 0) @ scale(0.38))):
            gl.uniform3f(u["u_tint"], *tint)
            draw(u, view, body @ model, "box")

        # HUD: 2D, blended, no depth
        gl.disable("DEPTH_TEST")
        gl.disable("CULL_FACE")
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        sprites.use()
        gl.bindTexture("TEXTURE_2D", tex["hud"])
        bar_h = 0.09 * height
        sprites.draw_one((0, 0, width, bar_h), hud_uv["bar"])
        icon = 0.065 * height
        sprites.draw_one((0.015 * width, 0.012 * height, icon, icon), hud_uv["pause"])
        sprites.draw_one((0.04 * width + icon, 0.012 * height, icon, icon), hud_uv["coin"])
        gl.bindTexture("TEXTURE_2D", tex["font"])
        score = f"{int(-z * 10) + 50 * coin_count:06d}"
        text = [text_quads(f"x{coin_count:02d}", 0.05 * width + 2 * icon, 0.012 * height, icon,
                           font_uv),
                text_quads(score, width - 0.02 * width - 6 * 0.7 * icon, 0.012 * height,
                           icon, font_uv, color=(1.0, 0.95, 0.6, 1.0))]
        hud_text.update(sprites, quad_batch(*[np.concatenate(p) for p in zip(*text,
                                                                              strict=True)]))
        sprites.draw_batch(hud_text.buffer, hud_text.quads)
        gl.endFrame()
    return gl.recorded_frames()
