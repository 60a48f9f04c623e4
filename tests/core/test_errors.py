"""Errors for users keep their place when they cross a process boundary (Dask workers)."""

from __future__ import annotations

import pickle

from tilesim.errors import InputError
from tilesim.options import frame_range
from tilesim.shaders.interpreter import UnsupportedOpcode


def test_input_errors_survive_pickling_unchanged():
    for error in (InputError("bad thing", source="f.tsim", line=3, column=7),
                  InputError("no place"), UnsupportedOpcode("XYZ", source="p.tgsi", line=2)):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert str(copy) == str(error)
        assert (copy.source, copy.line, copy.column, copy.bare_message) == (
            error.source, error.line, error.column, error.bare_message)


def test_frame_range_errors_name_the_trace():
    try:
        frame_range("0:9", 3, source="traces/bunny.tsim")
    except InputError as exc:
        assert str(exc) == "traces/bunny.tsim: --frames '0:9': the trace has frames 0..2"
    else:
        raise AssertionError("no error")


def test_names_resolve_without_case_and_suggest_the_closest():
    import pytest

    from tilesim.errors import InputError, resolve_name

    assert resolve_name("scenario", "mts-2", ["MTS-1", "MTS-2"]) == "MTS-2"
    assert resolve_name("policy", "HPF", ["none", "hpf"]) == "hpf"
    with pytest.raises(InputError, match=r"unknown policy 'hfp'; did you mean 'hpf'\? "
                                         r"\(known: none, hpf\)"):
        resolve_name("policy", "hfp", ["none", "hpf"], source="--policy")
    with pytest.raises(InputError, match=r"unknown policy 'zzz' \(known"):
        resolve_name("policy", "zzz", ["none", "hpf"])
