"""A block-cost file (``tilesim schedule --blocks``) of the wrong shape is an InputError naming
the file and the block, exit 2: it was an AttributeError or a ValueError traceback (exit 1)."""

from __future__ import annotations

import json

import pytest

from tilesim.cli.main import main
from tilesim.errors import InputError
from tilesim.scheduling.scenarios import BLOCKS_JSON, load_blocks


def _shipped():
    return json.loads(BLOCKS_JSON.read_text())


def _first_frames(data):
    return next(iter(data["apps"].values()))["frames"]


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(apps=[]), r"apps must be a JSON object"),
    (lambda d: next(iter(d["apps"].values())).update(frames=[]), r"frames must be a non-empty"),
    (lambda d: _first_frames(d).__setitem__(0, []), r"frames must be a non-empty"),
    (lambda d: _first_frames(d)[0].__setitem__(0, [[1], 3, 0.001]),
     r"frames\[0\]\[0\]: kind must be one of"),
    (lambda d: _first_frames(d)[0].__setitem__(0, ["draw", 10 ** 15, 0.001]),
     r"frames\[0\]\[0\]: commands must be an integer"),
    (lambda d: _first_frames(d)[0].__setitem__(0, ["draw", 3, "0.1"]),
     r"frames\[0\]\[0\]: seconds and fragments must be numbers"),
])
def test_a_malformed_block_file_names_the_block(tmp_path, change, message):
    data = _shipped()
    change(data)
    path = tmp_path / "blocks.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=message) as info:
        load_blocks(path)
    assert info.value.source == str(path)


def test_schedule_with_a_block_file_of_no_frames_exits_2(tmp_path, capsys):
    data = _shipped()
    for body in data["apps"].values():
        body["frames"] = [[]]
    path = tmp_path / "blocks.json"
    path.write_text(json.dumps(data))
    assert main(["schedule", "MTS-1", "--duration", "0.1", "--blocks", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tilesim: error: {path}: not a block-cost")
