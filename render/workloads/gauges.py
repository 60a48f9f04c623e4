"""The 3D instrument gauges of an automotive cluster (seed 004, *Fine-Grained Semantics Driven
Scheduling*, §6.2: "a speedometer and a tachometer", 3D gauges at 30 FPS): a speedometer and a
tachometer, recorded as GLES2 programs in the style of the bundled workloads.

004 does not publish its applications' content; these have the parts such an instrument is
made of, as 3D geometry seen in perspective with the depth test on:

- a dial face (a disc, textured with the scale's colour band and a brushed finish) inside a
  chrome bezel (a surface of revolution), lit per fragment (Blinn-Phong);
- tick marks: a raised box per tick (major and minor, one static mesh, one draw; the
  tachometer's red zone a second draw with its own tint);
- the needle, a tapered four-sided rod over the face, turned every frame by a model matrix
  to the value of a simulated drive signal (:func:`drive_signal`), and a hub cap over its
  pivot;
- text from the glyph atlas, in the dial's plane through the same perspective: the scale's
  numbers (static) and a readout re-uploaded every frame (the speed; the tachometer's gear),
  alpha-blended with the depth test on and depth writes off, so the needle (drawn before
  it, nearer the viewer) hides the text it passes over.

The two gauges differ in scale (0-260 km/h in steps of 20 over 270 degrees; 0-8 x1000 RPM over
240 degrees with a red zone from 6500), colours, needle, readout and layout (the camera looks
at each from the driver's side: the speedometer from the left, the tachometer from the
right). Both read one car's drive signal, so they move together.

Every frame sets all the state its draws use and re-uploads its readout, so any prefix of a
frame renders the same whatever frame came before it (the scheduling study times a frame's
command blocks by rendering prefixes, ``tilesim.scheduling.scenarios``).
Building needs Mesa (the programs are compiled to TGSI), as every recorded workload.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.render.workloads.common import (
    MESH_ATTRIBS,
    PIXEL_LIT_VS,
    SPRITE_STRIDE,
    Mesh,
    Sprites,
    box,
    cylinder,
    glyph_atlas,
    grid_coords,
    lathe,
    quad_batch,
    rgba_image,
    rng_for,
    setup_mesh_arrays,
    text_quads,
    transformed,
    upload_texture,
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

FPS = 30.0                 # 004 Tables 6-2 / 6-3: both gauges run at 30 FPS
FACE_RADIUS = 0.86         # dial units: the bezel's outer edge is at 1.02
TEXT_Z = 0.003             # the text's plane, just above the face (no z-fighting)
NEEDLE_Z = 0.045           # the needle's axis height above the face
FACE_TEXTURE = 256         # texels

# The car behind both gauges: a wheel of 0.32 m radius and a six-speed gearbox (overall
# ratios, gear x final drive) changing up at the speeds below; ordinary values for a
# compact car, chosen so the engine stays in 1500-4000 RPM as a calm driver keeps it.
WHEEL_RADIUS_M = 0.32
GEAR_RATIOS = (13.0, 8.0, 5.6, 4.3, 3.5, 2.9)
UPSHIFT_KMH = (0.0, 25.0, 45.0, 70.0, 95.0, 125.0)
IDLE_RPM = 800.0

# Per-fragment Blinn-Phong (the runner's pixel-lit program without its fog): the bezel's
# highlight moves across it as the view changes, which per-vertex lighting would smear.
GAUGE_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform vec3 u_light_dir;
uniform vec3 u_ambient;
uniform vec3 u_tint;
uniform vec4 u_specular;
varying vec3 v_position;
varying vec3 v_normal;
varying vec2 v_uv;
void main() {
    vec3 n = normalize(v_normal);
    vec3 h = normalize(u_light_dir + normalize(-v_position));
    float ndl = max(dot(n, u_light_dir), 0.0);
    float spec = pow(max(dot(n, h), 0.0), u_specular.w) * step(0.0001, ndl);
    vec3 base = texture2D(u_tex, v_uv).rgb * u_tint;
    gl_FragColor = vec4(base * (u_ambient + ndl) + u_specular.rgb * spec, 1.0);
}
"""
UNIFORMS = ("u_mvp", "u_model_view", "u_normal_matrix", "u_light_dir", "u_ambient", "u_tint",
            "u_specular", "u_tex")
LIGHT = np.array([-0.35, 0.55, 0.75]) / np.linalg.norm([-0.35, 0.55, 0.75])  # view space


@dataclass(frozen=True)
class GaugeStyle:
    """What makes a speedometer a speedometer: its scale, look and layout."""

    top: float                   # the scale's full value (km/h, RPM)
    label_step: float            # a number every label_step
    label_divisor: float         # the numbers print value / label_divisor
    minor_per_major: int         # minor ticks between two numbers, + 1
    sweep_deg: float             # the scale's arc, centred on 12 o'clock
    redline: float | None        # the red zone's start (scale units) or None
    unit: str                    # printed under the hub
    face: tuple                  # face colour (linear RGB)
    band: tuple                  # the scale's colour band on the face
    needle: tuple                # needle tint
    glyph: float                 # scale number height (dial units)
    eye_x: float                 # the camera's side (the driver sits between the gauges)


STYLES = {
    "speedometer": GaugeStyle(top=260.0, label_step=20.0, label_divisor=1.0,
                              minor_per_major=4, sweep_deg=270.0, redline=None, unit="SPEED",
                              face=(0.05, 0.08, 0.16), band=(0.2, 0.45, 0.95),
                              needle=(0.95, 0.35, 0.1), glyph=0.085, eye_x=-0.9),
    "tachometer": GaugeStyle(top=8000.0, label_step=1000.0, label_divisor=1000.0,
                             minor_per_major=5, sweep_deg=240.0, redline=6500.0,
                             unit="x1000 RPM", face=(0.12, 0.07, 0.05), band=(0.95, 0.6, 0.15),
                             needle=(0.9, 0.9, 0.85), glyph=0.12, eye_x=0.9),
}


def drive_signal(frames, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The car's speed (km/h), engine speed (RPM) and gear (1-6) at each frame number of
    ``frames`` ((n,) ints, 30 frames a second): a drive of slow swells (a 24 s period) with
    quicker changes (5.3 s) over them, starting at a point set by ``seed``; the gear is the
    highest whose upshift speed is reached, the RPM the wheel's turned by its ratio."""
    t = np.asarray(frames, dtype=np.float64) / FPS + rng_for(seed, 40).random() * 60.0
    speed = np.maximum(0.0, 70.0 + 55.0 * np.sin(2 * np.pi * t / 24.0)
                       + 12.0 * np.sin(2 * np.pi * t / 5.3))
    gear = np.searchsorted(np.asarray(UPSHIFT_KMH), speed, side="right")
    wheel_rpm = speed / 3.6 / (2 * np.pi * WHEEL_RADIUS_M) * 60.0
    rpm = np.clip(wheel_rpm * np.asarray(GEAR_RATIOS)[gear - 1], IDLE_RPM, 8000.0)
    return speed, rpm, gear


def needle_degrees(style: GaugeStyle, value) -> np.ndarray:
    """Clockwise degrees from 12 o'clock of the needle at ``value`` (scale units)."""
    fraction = np.clip(np.asarray(value, dtype=np.float64) / style.top, 0.0, 1.0)
    return style.sweep_deg * (fraction - 0.5)


def _ticks(style: GaugeStyle, values: np.ndarray, major: bool) -> Mesh:
    """A raised box per tick at ``values``, on the face's rim (dial frame: face at z = 0,
    +z towards the viewer, 12 o'clock +y)."""
    width, length, height = (0.022, 0.11, 0.02) if major else (0.01, 0.06, 0.012)
    r_mid = FACE_RADIUS - 0.04 - length / 2
    tick = box(width, length, height)
    parts = [transformed(tick, rotate("z", -float(a)) @ translate(0, r_mid, height / 2))
             for a in needle_degrees(style, values)]
    return Mesh.merge(parts)[0]


def gauge_meshes(style: GaugeStyle) -> tuple[Mesh, dict[str, tuple[int, int]]]:
    """One buffer of the gauge's parts in its dial frame (face at z = 0, facing +z): face,
    bezel, ticks (the red zone's apart), needle (pointing to 12 o'clock, turned per frame)
    and hub; returns the merged mesh and each part's (first index, index count)."""
    to_dial = rotate("x", 90)  # lathe and cylinder build about +y; the dial faces +z
    rings = np.linspace(0.0, FACE_RADIUS, 7)
    face = transformed(lathe(rings, np.zeros_like(rings), 64), to_dial)
    bezel = transformed(lathe([FACE_RADIUS, 0.88, 0.93, 0.98, 1.01, 1.02],
                              [0.0, 0.09, 0.12, 0.1, 0.04, -0.06], 64), to_dial)
    steps = round(style.top / style.label_step) * style.minor_per_major
    values = np.linspace(0.0, style.top, steps + 1)
    major = np.arange(steps + 1) % style.minor_per_major == 0
    red = values >= style.redline if style.redline is not None else np.zeros_like(major)
    ticks = Mesh.merge([_ticks(style, values[major & ~red], True),
                        _ticks(style, values[~major & ~red], False)])[0]
    red_ticks = Mesh.merge([_ticks(style, values[major & red], True),
                            _ticks(style, values[~major & red], False)])[0] if red.any() \
        else Mesh(np.zeros((0, 8)), np.zeros(0))
    # A four-sided rod tapering to the tip, an edge on top (cylinder's vertices at +x, +z,
    # -x, -z), flattened; a tail of 0.16 behind the pivot.
    needle = transformed(cylinder(0.032, 0.88, 4, caps=True, top_radius=0.006),
                         translate(0, 0, NEEDLE_Z) @ scale(1, 1, 0.5) @ translate(0, -0.16, 0))
    hub = transformed(cylinder(0.085, 0.09, 24, caps=True, top_radius=0.065), to_dial)
    merged, ranges = Mesh.merge([face, bezel, ticks, red_ticks, needle, hub])
    return merged, dict(zip(("face", "bezel", "ticks", "red_ticks", "needle", "hub"), ranges,
                            strict=True))


def face_texture(style: GaugeStyle, size: int = FACE_TEXTURE) -> np.ndarray:
    """(size, size, 3) uint8: the face's colour, lighter at the centre, a brushed ring
    pattern, the scale's colour band along the arc and the red zone (planar uv of the face,
    row 0 at 12 o'clock)."""
    y, x = grid_coords(size)           # -1..1 over the face's radius, y down
    r = np.hypot(x, y)
    angle = np.degrees(np.arctan2(x, -y))  # clockwise from 12 o'clock
    base = np.asarray(style.face)[None, None] * (1.2 - 0.5 * r)[..., None]
    brushed = 1.0 + 0.06 * np.sin(r * 180.0)[..., None]
    rgb = base * brushed
    on_arc = np.abs(angle) <= style.sweep_deg / 2
    band = on_arc & (r > 0.93) & (r < 0.985)
    rgb = np.where(band[..., None], np.asarray(style.band), rgb)
    if style.redline is not None:
        red = on_arc & (angle >= needle_degrees(style, style.redline)) & (r > 0.88) & (r < 0.985)
        rgb = np.where(red[..., None], np.array([0.85, 0.05, 0.03]), rgb)
    return rgba_image(np.clip(rgb, 0.0, 1.0))[..., :3].copy()


def scale_text(style: GaugeStyle, uv: dict) -> np.ndarray:
    """The scale's numbers on a circle inside the ticks, and the unit under the hub, as
    sprite quads in dial units with y down (:func:`text_plane` puts them on the face)."""
    labels = np.arange(0.0, style.top + 0.5 * style.label_step, style.label_step)
    g = style.glyph
    parts = []
    for value, a in zip(labels, np.radians(needle_degrees(style, labels)), strict=True):
        label = f"{value / style.label_divisor:.0f}"
        width = g * 0.7 * (len(label) - 1) + g
        cx, cy = 0.6 * np.sin(a), -0.6 * np.cos(a)
        parts.append(text_quads(label, cx - width / 2, cy - g / 2, g, uv))
    unit_g = 0.075
    width = unit_g * 0.7 * (len(style.unit) - 1) + unit_g
    parts.append(text_quads(style.unit, -width / 2, 0.18, unit_g, uv,
                            color=(0.8, 0.8, 0.85, 1.0)))
    return quad_batch(*(np.concatenate(p) for p in zip(*parts, strict=True)))


def readout_text(kind: str, speed: float, gear: int, uv: dict) -> np.ndarray:
    """The digital readout below the hub: the speed (speedometer) or the gear (tachometer)."""
    text, g = (f"{speed:3.0f}", 0.17) if kind == "speedometer" else (f"GEAR {gear:d}", 0.11)
    width = g * 0.7 * (len(text) - 1) + g
    return quad_batch(*text_quads(text, -width / 2, 0.34, g, uv, color=(1.0, 0.95, 0.8, 1.0)))


def text_plane() -> np.ndarray:
    """(4, 4): sprite coordinates (dial units, y down, z = 0) to the dial frame, on the
    text's plane just above the face."""
    return translate(0.0, 0.0, TEXT_Z) @ scale(1.0, -1.0, 1.0)


def camera(style: GaugeStyle, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """(projection, view): a 30-degree perspective from the driver's side of the gauge,
    slightly below it, the whole bezel in view."""
    aspect = width / height
    fovy = 30.0 if aspect >= 1 else float(np.degrees(2 * np.arctan(np.tan(np.radians(15))
                                                                    / aspect)))
    view = look_at((style.eye_x, -0.6, 4.2), (0.0, 0.0, 0.0))
    return perspective(fovy, aspect, 2.0, 7.0), view


def record(gl, width: int, height: int, frames: int, seed: int, kind: str) -> None:
    """Record ``frames`` frames of gauge ``kind`` (``speedometer`` or ``tachometer``) into
    ``gl`` (a :class:`~tilesim.render.gl.commands.Recorder` of width x height)."""
    style = STYLES[kind]
    program = gl.createProgram(PIXEL_LIT_VS, GAUGE_FS, attrib_locations=MESH_ATTRIBS)
    loc = {name: gl.getUniformLocation(program, name) for name in UNIFORMS}
    mesh, part = gauge_meshes(style)
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", mesh.vertices, "STATIC_DRAW")
    ibo = gl.createBuffer()
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
    gl.bufferData("ELEMENT_ARRAY_BUFFER", mesh.indices, "STATIC_DRAW")
    tex_face = upload_texture(gl, face_texture(style), min_filter="LINEAR_MIPMAP_LINEAR",
                              mipmap=True)
    tex_white = upload_texture(gl, rgba_image(np.ones((4, 4, 3))))
    sprites = Sprites(gl, width, height)
    font, uv = glyph_atlas()
    tex_font = upload_texture(gl, font)
    scale_data = scale_text(style, uv)
    scale_buffer = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", scale_buffer)
    gl.bufferData("ARRAY_BUFFER", scale_data, "STATIC_DRAW")
    scale_quads = scale_data.size // (4 * SPRITE_STRIDE)
    readout_capacity = 8
    readout_buffer = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", readout_buffer)
    gl.bufferData("ARRAY_BUFFER", readout_capacity * 4 * SPRITE_STRIDE, "DYNAMIC_DRAW")

    proj, view = camera(style, width, height)
    text_mvp = gl_matrix(proj @ view @ text_plane())
    speed, rpm, gear = drive_signal(np.arange(frames), seed)
    value = speed if kind == "speedometer" else rpm
    angles = needle_degrees(style, value)
    gl.clearColor(0.01, 0.01, 0.02, 1.0)

    def draw(model: np.ndarray, name: str, tint, specular) -> None:
        model_view = view @ model
        gl.uniformMatrix4fv(loc["u_mvp"], False, gl_matrix(proj @ model_view))
        gl.uniformMatrix4fv(loc["u_model_view"], False, gl_matrix(model_view))
        gl.uniformMatrix3fv(loc["u_normal_matrix"], False,
                            gl_matrix(normal_matrix(model_view)))
        gl.uniform3f(loc["u_tint"], *tint)
        gl.uniform4f(loc["u_specular"], *specular)
        first, count = part[name]
        gl.drawElements("TRIANGLES", count, "UNSIGNED_SHORT", 2 * first)

    for f in range(frames):
        gl.depthMask(True)                     # glClear obeys the depth mask
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        # the instrument: opaque, lit, depth-tested, back faces culled
        gl.enable("DEPTH_TEST")
        gl.depthFunc("LESS")
        gl.disable("BLEND")
        gl.enable("CULL_FACE")
        gl.cullFace("BACK")
        gl.frontFace("CCW")
        gl.useProgram(program)
        gl.uniform3f(loc["u_light_dir"], *(view[:3, :3] @ LIGHT))
        gl.uniform3f(loc["u_ambient"], 0.25, 0.25, 0.28)
        gl.uniform1i(loc["u_tex"], 0)
        gl.bindBuffer("ARRAY_BUFFER", vbo)
        setup_mesh_arrays(gl)
        gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
        for k in range(3):
            gl.enableVertexAttribArray(k)
        # front to back, as engines sort opaque geometry: the face last, so the early depth
        # test rejects its fragments under the hub, the needle and the ticks
        gl.activeTexture(0)
        gl.bindTexture("TEXTURE_2D", tex_white)
        identity = np.eye(4)
        draw(identity, "hub", (0.15, 0.15, 0.17), (0.8, 0.8, 0.8, 40.0))
        draw(rotate("z", -float(angles[f])), "needle", style.needle, (0.6, 0.6, 0.6, 32.0))
        draw(identity, "ticks", (0.92, 0.92, 0.9), (0.3, 0.3, 0.3, 16.0))
        if part["red_ticks"][1]:
            draw(identity, "red_ticks", (0.9, 0.08, 0.05), (0.3, 0.3, 0.3, 16.0))
        draw(identity, "bezel", (0.7, 0.72, 0.75), (0.9, 0.9, 0.9, 48.0))
        gl.bindTexture("TEXTURE_2D", tex_face)
        draw(identity, "face", (1.0, 1.0, 1.0), (0.15, 0.15, 0.15, 12.0))
        # the text: on the face's plane, blended, depth-tested against the needle and the
        # hub but not writing depth (the glyph quads' transparent corners must not hide)
        gl.disable("CULL_FACE")
        gl.depthFunc("LEQUAL")
        gl.depthMask(False)
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        sprites.use()
        gl.uniformMatrix4fv(sprites.loc["u_proj"], False, text_mvp)
        gl.bindTexture("TEXTURE_2D", tex_font)
        sprites.draw_batch(scale_buffer, scale_quads)
        readout = readout_text(kind, float(speed[f]), int(gear[f]), uv)
        sprites.bind(readout_buffer)
        gl.bufferSubData("ARRAY_BUFFER", 0, readout)
        sprites.draw_batch(readout_buffer, readout.size // (4 * SPRITE_STRIDE))
        gl.endFrame()
