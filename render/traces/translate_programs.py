"""Programs and uniforms: glLinkProgram becomes ``createProgram`` with the compiled program,
glUseProgram / glDeleteProgram (deferred while in use, as GL defers it), and glUniform* by name.

Uniform locations become names through what glGetUniformLocation returned in the capture,
else through the program's interface. Shader objects are not commands (their calls are
folded). Separate because programs carry the first pass's compiled shaders.
"""

from __future__ import annotations

from tilesim.shaders.trace_capture import GLINT, show

UNIFORM_SHAPES = {f"glUniform{n}{t}": f"{n}{t}" for n in "1234" for t in "fi"}
UNIFORM_VECTOR_SHAPES = {f"glUniform{n}{t}v": f"{n}{t}" for n in "1234" for t in "fi"}
UNIFORM_MATRIX_SHAPES = {f"glUniformMatrix{n}fv": f"Matrix{n}f" for n in "234"}
UNIFORM_COMPONENTS = {"1f": 1, "2f": 2, "3f": 3, "4f": 4, "1i": 1, "2i": 2, "3i": 3, "4i": 4,
                      "Matrix2f": 4, "Matrix3f": 9, "Matrix4f": 16}


class ProgramCalls:
    """Handlers of the program and uniform calls.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _glCreateProgram(self, call):
        app = self._args.ret_handle()
        if app:
            old = self._group.names["program"].get(app)
            if old is not None and app in self._group.linked:
                self._emit("deleteProgram", id=old)  # a name GL reused after deleting it
            self._group.linked.pop(app, None)
            self._new_object("program", app)

    def _glLinkProgram(self, call):
        app = self._name("program")
        compiled = self.programs.get(call.number)
        if compiled is None:
            raise self._error(f"program {app} was not compiled in the first pass")
        group = self._group
        ident = group.names["program"].get(app)
        if ident is None:
            ident = self._new_object("program", app)
        if app in group.linked:
            self._emit("deleteProgram", id=ident)
        self._emit("createProgram", id=ident, vertex_glsl=compiled.vertex_glsl,
                   fragment_glsl=compiled.fragment_glsl, vertex_tgsi=compiled.vertex_tgsi,
                   fragment_tgsi=compiled.fragment_tgsi, interface=compiled.interface)
        group.linked[app] = call.number
        group.uniform_names[app] = {}
        if self._program == app:
            self._emit("useProgram", id=ident)

    def _glUseProgram(self, call):
        app = self._name("program")
        group = self._group
        if app and app not in group.linked:
            raise self._error(f"program {app} was never linked")
        previous = self._program
        self._emit("useProgram", id=group.names["program"][app] if app else 0)
        self._program = app
        if previous != app and previous in self._pending_delete:
            self._pending_delete.discard(previous)
            self._drop_program(previous)

    def _drop_program(self, app: int) -> None:
        group = self._group
        ident = group.names["program"].pop(app, None)
        if ident is not None and app in group.linked:
            self._emit("deleteProgram", id=ident)
        group.linked.pop(app, None)
        group.uniform_names.pop(app, None)

    def _glDeleteProgram(self, call):
        app = self._name("program")
        if not app:
            return
        if app == self._program:
            self._pending_delete.add(app)  # GL deletes it once no longer in use
        else:
            self._drop_program(app)

    def _glGetUniformLocation(self, call):
        location = call.ret
        if location is None:
            return
        location = self._args.check_int(location, "the return value (a location)", GLINT)
        if location >= 0:
            self._group.uniform_names.setdefault(self._name("program"), {})[location] = \
                self._args.text("name")

    def _uniform_name(self, location: int) -> str:
        group, app = self._group, self._program
        if not app:
            raise self._error("no program is in use")
        name = group.uniform_names.get(app, {}).get(location)
        if name is not None:
            return name
        interface = self.programs[group.linked[app]].interface
        for entry in interface.get("uniforms", []) + interface.get("samplers", []):
            first, size = entry.get("location"), entry.get("array_size")
            if not isinstance(first, int) or first < 0:
                continue
            if size and first <= location < first + size:
                return f"{entry['name']}[{location - first}]"
            if not size and location == first:
                return entry["name"]
        raise self._error(f"uniform location {location} of program {app} is not one "
                          "glGetUniformLocation returned, nor in the program's interface")

    def _uniform(self, function: str, values: list) -> None:
        location = self._int("location")
        if location == -1:
            return  # GL ignores location -1
        if function.endswith("i"):  # GLint values: integers (a sampler's unit, a flag)
            values = [self._args.check_int(v, f"uniform value {k}", GLINT)
                      for k, v in enumerate(values)]
        elif not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            bad = next(v for v in values if isinstance(v, bool) or
                       not isinstance(v, (int, float)))
            raise self._error(f"uniform values must be numbers, got {show(bad)}")
        else:
            values = [float(v) for v in values]
        self._emit("uniform", name=self._uniform_name(location), function=function,
                   values=values)

    def _uniform_scalar(self, call):
        function = UNIFORM_SHAPES[call.name]
        self._uniform(function, [self._arg(f"v{i}") for i in range(int(function[0]))])

    def _uniform_vector(self, call):
        function = UNIFORM_VECTOR_SHAPES.get(call.name) or UNIFORM_MATRIX_SHAPES[call.name]
        if function.startswith("Matrix") and self._bool("transpose"):
            raise self._error("transpose must be GL_FALSE in OpenGL ES 2.0")
        values = self._arg("value")
        count = self._size("count")
        if isinstance(values, (int, float)) and not isinstance(values, bool):
            values = [values]
        if not isinstance(values, list):
            raise self._error(f"value must be a list of numbers, got {show(values)}")
        self._uniform(function, values[:count * UNIFORM_COMPONENTS[function]])


for _name in UNIFORM_SHAPES:
    setattr(ProgramCalls, "_" + _name, ProgramCalls._uniform_scalar)
for _name in list(UNIFORM_VECTOR_SHAPES) + list(UNIFORM_MATRIX_SHAPES):
    setattr(ProgramCalls, "_" + _name, ProgramCalls._uniform_vector)
