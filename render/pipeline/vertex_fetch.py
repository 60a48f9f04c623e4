"""Vertex fetch: the indices of a draw and the attribute values of the vertices it uses.

Reads index buffers (u8/u16/u32, from a buffer object or client memory) and decodes vertex
attribute arrays (BYTE..FLOAT, FIXED and OES_vertex_half_float's HALF_FLOAT_OES, normalized
or not, any stride) into the vertex shader's IN registers, for the distinct vertices a draw
references (a post-transform cache that holds a whole draw: each vertex is fetched and
shaded once per draw).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.backend import to_device
from tilesim.memory_budget import check_memory
from tilesim.render.gl.state import GLState, Program
from tilesim.render.pipeline.gpu_config import GPU_CONFIG, counted_entry

# Memory a draw holds per vertex it processes (element ids, fetched attributes, clip
# coordinates, varyings): a vertex count from the trace is checked against the memory budget
# with it before anything is allocated (drawArrays with a count of 2**40).
DRAW_BYTES_PER_VERTEX = 256

INDEX_DTYPES = {"UNSIGNED_BYTE": np.uint8, "UNSIGNED_SHORT": np.uint16,
                "UNSIGNED_INT": np.uint32}
ATTRIB_DTYPES = {"BYTE": np.int8, "UNSIGNED_BYTE": np.uint8, "SHORT": np.int16,
                 "UNSIGNED_SHORT": np.uint16, "FIXED": np.int32, "FLOAT": np.float32,
                 "HALF_FLOAT_OES": np.dtype("<f2")}   # OES_vertex_half_float


@dataclass
class FetchedVertices:
    """The distinct vertices of a draw.

    ids: (V,) vertex indices in increasing order; elements: (E,) position of each element of
    the draw in ``ids``; inputs: (R, 4, V) float32 IN registers; bytes_read: attribute and
    index bytes read from memory.
    """

    ids: np.ndarray
    elements: np.ndarray
    inputs: np.ndarray
    attribute_bytes: int
    cache_accesses: int = 0
    cache_misses: int = 0


def draw_elements(state: GLState, command) -> tuple[np.ndarray, int]:
    """The element list of a draw as int64 vertex indices, and index bytes read."""
    args = command.args
    if command.op == "drawArrays":
        if args["first"] < 0 or args["count"] < 0:
            raise state.error(f"drawArrays: negative first ({args['first']}) or count "
                              f"({args['count']})")
        check_memory(f"drawArrays: {args['count']} vertices", args["count"]
                     * DRAW_BYTES_PER_VERTEX, state.where)
        return np.arange(args["first"], args["first"] + args["count"], dtype=np.int64), 0
    count = args["count"]
    if count < 0:
        raise state.error(f"drawElements: negative count {count}")
    check_memory(f"drawElements: {count} vertices", count * DRAW_BYTES_PER_VERTEX, state.where)
    dtype = np.dtype(INDEX_DTYPES[args["type"]])
    if args["indices"] is not None:
        raw = np.ascontiguousarray(args["indices"]).view(np.uint8).ravel()
        offset = 0
    else:
        raw = state.buffer_for("ELEMENT_ARRAY_BUFFER")
        offset = args["offset"]
    if offset < 0:      # else named as "need bytes up to" fewer than the data holds
        raise state.error(f"drawElements: negative offset ({offset})")
    if offset % dtype.itemsize:
        raise state.error(f"drawElements: offset {offset} is not a multiple of the "
                          f"{dtype.itemsize}-byte index size")
    end = offset + count * dtype.itemsize
    if offset < 0 or end > raw.size:
        raise state.error(f"drawElements: {count} indices of {args['type']} at offset "
                          f"{offset} need bytes up to {end}, the index data has {raw.size}")
    indices = raw[offset:end].view(dtype).astype(np.int64)
    return indices, count * dtype.itemsize


def _dense_presence(values: np.ndarray) -> tuple[int, np.ndarray] | None:
    """(lowest value, (range,) bool: which values of the range occur) of (N,) int64
    ``values`` when their range is not much larger than N (no sort), else None."""
    if values.size == 0:
        return None
    low, high = int(values.min()), int(values.max())
    if high - low > 4 * values.size + 1024:
        return None
    present = np.zeros(high - low + 1, dtype=bool)
    present[values - low] = True
    return low, present


def unique_inverse(elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(elements, return_inverse=True)`` of (N,) int64 vertex indices, through a
    dense table of the index range when it is not much larger than N (no sort)."""
    dense = _dense_presence(elements)
    if dense is None:
        return np.unique(elements, return_inverse=True)
    low, present = dense
    ids = np.flatnonzero(present) + low
    rank = np.cumsum(present) - 1
    return ids, rank[elements - low]


def count_distinct(values: np.ndarray) -> int:
    """``np.unique(values).size`` of (N,) int64 values, by the dense table where it may."""
    dense = _dense_presence(values)
    return int(np.unique(values).size) if dense is None else int(np.count_nonzero(dense[1]))


def fetch(state: GLState, program: Program, elements: np.ndarray) -> FetchedVertices:
    ids, inverse = unique_inverse(elements)
    vs = program.vertex.program
    num_in = max(vs.register_count("IN"), 1)
    inputs = np.zeros((num_in, 4, ids.size), dtype=np.float32)
    inputs[:, 3] = 1.0
    attribute_bytes = accesses = 0
    lines: dict[int, list[np.ndarray]] = {}    # address range (buffer) -> its lines
    for attribute in program.interface.get("attributes", []):
        for column, register in enumerate(attribute["registers"]):
            index = int(register[3:-1])  # "IN[k]"
            location = int(attribute["location"]) + column
            values, nbytes = _attribute_values(state, location, ids, attribute["name"])
            inputs[index] = values
            attribute_bytes += nbytes
            if nbytes:
                accesses += ids.size
                base, touched = _cache_lines(state.attribs[location], location, ids,
                                             vertex_cache_line())
                lines.setdefault(base, []).append(touched)
    # Vertex cache (Table 3.1: 4 KB, 64-byte lines): a draw's fetches miss once per distinct
    # line they touch (compulsory misses; a draw's working set is assumed to stream through).
    # Address ranges never share a line: each range's distinct lines are counted on its own
    # (by the dense table, where the lines of all ranges at once span too much for it).
    misses = sum(count_distinct(np.concatenate(parts)) for parts in lines.values())
    # Vertex fetch reads memory on the host; from here on a draw's arrays are on the device.
    return FetchedVertices(ids, to_device(inverse.astype(np.int64)), to_device(inputs),
                           attribute_bytes, accesses, misses)


def vertex_cache_line(path: str = str(GPU_CONFIG)) -> int:
    """Bytes of a vertex cache line: ``[caches.vertex] line_size`` of the GPU configuration
    (Frame Coherence Table 3.1: 64), the entry the timing model prices the misses by."""
    return counted_entry(path, "caches.vertex.line_size", power_of_two=True)


def _cache_lines(a, location: int, ids: np.ndarray, line: int) -> tuple[int, np.ndarray]:
    """(address range, cache line numbers) of the attribute bytes of ``ids`` (the lines of
    each vertex's first and last byte, repeats kept); every buffer (or client array, by its
    attribute location) gets its own address range so lines of different arrays never
    alias."""
    element = a.size * np.dtype(ATTRIB_DTYPES[a.type]).itemsize
    stride = a.stride or element
    first = a.offset + ids * stride
    last = first + element - 1
    base = (a.buffer if a.client_data is None else (1 << 24) + location) << 32
    starts, ends = (base + first) // line, (base + last) // line
    return base, np.concatenate([starts, ends])


def _attribute_values(state: GLState, location: int, ids: np.ndarray,
                      name: str) -> tuple[np.ndarray, int]:
    """(4, V) float32 values of one generic attribute for vertex ids, and bytes read."""
    if not 0 <= location < len(state.attribs):
        raise state.error(f"attribute {name!r}: location {location} out of range")
    a = state.attribs[location]
    if not a.enabled:
        return np.repeat(np.asarray(a.current, dtype=np.float32)[:, None], ids.size, 1), 0
    dtype = np.dtype(ATTRIB_DTYPES[a.type])
    element = a.size * dtype.itemsize
    stride = a.stride or element
    if a.client_data is not None:
        raw = a.client_data
        where = "its client array"
    else:
        raw = state.buffers.get(a.buffer)
        if raw is None:
            raise state.error(f"attribute {name!r} (location {location}): its buffer "
                              f"{a.buffer} was deleted")
        where = f"buffer {a.buffer}"
    if ids.size == 0:
        return np.zeros((4, 0), dtype=np.float32), 0
    if int(ids[0]) < 0:
        raise state.error(f"attribute {name!r}: negative vertex index {int(ids[0])}")
    last = a.offset + int(ids[-1]) * stride + element
    if last > raw.size:
        raise state.error(
            f"attribute {name!r} (location {location}): vertex {int(ids[-1])} needs bytes up "
            f"to {last} of {where}, which has {raw.size} (index out of range?)")
    starts = a.offset + ids * stride
    gathered = raw[starts[:, None] + np.arange(element)[None, :]]
    values = np.ascontiguousarray(gathered).view(dtype).reshape(ids.size, a.size)
    out = np.zeros((4, ids.size), dtype=np.float32)
    out[3] = 1.0
    if a.type == "FIXED":
        converted = values.astype(np.float64) / 65536.0
    elif a.normalized and dtype.kind == "u":
        converted = values.astype(np.float64) / np.iinfo(dtype).max
    elif a.normalized and dtype.kind == "i":
        converted = np.maximum(values.astype(np.float64) / np.iinfo(dtype).max, -1.0)
    else:
        converted = values
    out[: a.size] = converted.T.astype(np.float32)
    return out, ids.size * element
