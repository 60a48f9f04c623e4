"""A corpus folder's interface.json (``tilesim core FOLDER``, ``tilesim shader check``) is
read through the same checks as a trace's program interface."""

from __future__ import annotations

import json

import pytest

from tilesim.errors import InputError
from tilesim.shaders.program_interface import check_interface, read_interface
from tilesim.shaders.synthetic_inputs import load_interface


def test_malformed_interface_json_names_the_file_and_line(tmp_path):
    """json.loads' JSONDecodeError was a traceback."""
    (tmp_path / "interface.json").write_text('{"uniforms": [\n  {,}]}')
    with pytest.raises(InputError, match=r"interface\.json:2:4: malformed JSON"):
        load_interface(tmp_path / "fragment.tgsi")


def test_a_huge_uniform_slot_count_is_refused(tmp_path):
    """_typed_slots looped over range(first_slot, first_slot + slots): 2**60 never ended."""
    uniform = {"name": "n", "type": "int", "array_size": None, "storage": "int32",
               "fragment": {"first_slot": 0, "slots": 1 << 60, "layout": ["x"]}}
    path = tmp_path / "interface.json"
    path.write_text(json.dumps({"uniforms": [uniform]}))
    with pytest.raises(InputError, match=r"uniforms\[0\]\.fragment\.slots must be an integer"):
        read_interface(path)


@pytest.mark.parametrize("interface, field", [
    ([], "the interface"),
    ({"samplers": [{"name": "s", "type": "sampler2D", "array_size": None,
                    "fragment": {"samplers": ["SAMP[0]", "SAMP[1]"]}}]}, "samplers"),
    ({"state": [{"stage": "fragment", "name": "x", "slot": -1}]}, r"state\[0\]\.slot"),
    ({"precision": {"vertex": {"instructions": []}}}, "precision.fragment"),
])
def test_check_interface_names_the_field(interface, field):
    with pytest.raises(InputError, match=rf"^where: program interface: {field}"):
        check_interface(interface, "where")


def test_an_interface_that_is_a_fifo_or_a_folder_is_refused_at_once(tmp_path):
    """interface.json was read with Path.read_text: a fifo there waited for a writer
    forever. It is opened as every input is (tilesim.inputs.read_json)."""
    import os

    os.mkfifo(tmp_path / "interface.json")
    with pytest.raises(InputError, match=r"interface\.json"):
        load_interface(tmp_path / "fragment.tgsi")
    (tmp_path / "interface.json").unlink()
    (tmp_path / "interface.json").mkdir()
    with pytest.raises(InputError, match=r"interface\.json"):
        read_interface(tmp_path / "interface.json")
