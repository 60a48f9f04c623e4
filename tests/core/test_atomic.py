"""tilesim.atomic: temporaries have one exact name pattern, and clean-up removes only those,
only in the folder given, only for the final names given."""

from __future__ import annotations

import re

import pytest

from tilesim.atomic import TEMPORARY, is_temporary, remove_temporaries, temporary_name, write_bytes


def test_a_write_leaves_the_file_and_no_temporary(tmp_path):
    write_bytes(tmp_path / "a" / "x.png", b"data")
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["x.png"]
    assert (tmp_path / "a" / "x.png").read_bytes() == b"data"


def test_an_interrupted_write_removes_its_temporary(tmp_path, monkeypatch):
    def fail(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("tilesim.atomic.os.replace", fail)
    with pytest.raises(KeyboardInterrupt):
        write_bytes(tmp_path / "x.png", b"data")
    assert list(tmp_path.iterdir()) == []


def test_temporary_names_match_the_pattern_and_name_their_file():
    names = {temporary_name("000001.png") for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert TEMPORARY.fullmatch(name)["name"] == "000001.png"
        assert is_temporary(name, re.compile(r"\d{6}\.png"))
        assert is_temporary(name, "000001.png")
        assert not is_temporary(name, "000002.png")
    for other in (".000001.png.tmp", ".000001.png.ABCDEF12.tmp", "000001.png.0123abcd.tmp",
                  ".000001.png.0123abcd.tmp.bak", ".x.png.0123abc.tmp"):
        assert not is_temporary(other, re.compile(r".*"))


def test_remove_temporaries_is_exact_and_not_recursive(tmp_path):
    ours = tmp_path / temporary_name("frames.json")
    kept = [tmp_path / temporary_name("notes.txt"), tmp_path / ".frames.json.tmp",
            tmp_path / "sub" / temporary_name("frames.json")]
    for path in [ours, *kept]:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x")
    (tmp_path / temporary_name("frames.json")).mkdir()   # a folder of that name stays too
    assert remove_temporaries(tmp_path, re.compile(r"frames\.json|render\.json")) == 1
    assert not ours.exists() and all(p.exists() for p in kept)
    assert remove_temporaries(tmp_path / "missing", "frames.json") == 0


def test_check_output_refuses_the_wrong_kind_and_files_on_the_way(tmp_path):
    from tilesim.atomic import check_output
    from tilesim.errors import InputError

    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert check_output(tmp_path / "new" / "deeper", folder=True) == tmp_path / "new" / "deeper"
    assert check_output(tmp_path / "out.tsim", folder=False) == tmp_path / "out.tsim"
    with pytest.raises(InputError, match="a-file: exists and is not a folder"):
        check_output(a_file, folder=True)
    with pytest.raises(InputError, match="exists and is not a file"):
        check_output(tmp_path, folder=False)
    with pytest.raises(InputError, match="a-file is a file, so .* cannot be created"):
        check_output(a_file / "sub" / "x.tsim", folder=False)
