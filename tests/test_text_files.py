"""Input files on the command line: missing, a directory, not UTF-8 or a truncated gzip, named in one line;
JSON files read through one reader that names the file and the position."""

from __future__ import annotations

import gzip
import json

import pytest
from util import GOOD_SENSE, REPO, assert_one_line_error, cli

from spacy_contextual.errors import ModelDirError
from spacy_contextual.text_files import MAX_JSON_DEPTH, InputFileError, read_json


def test_missing_unreadable_and_undecodable_input(tmp_path):
    assert_one_line_error(cli("translate", tmp_path / "missing.txt"), "missing.txt does not exist")
    assert_one_line_error(cli("sense-probe", tmp_path / "missing.jsonl"), "missing.jsonl", "does not exist")
    assert_one_line_error(cli("translate", tmp_path), str(tmp_path), "directory")
    undecodable = tmp_path / "latin1.txt"
    undecodable.write_bytes("A man rides a horse .\nCaf\xe9 au lait .\n".encode("latin-1"))
    assert_one_line_error(cli("translate", undecodable), "latin1.txt:2: not UTF-8 text (byte 0xe9 at column 4)")
    gz = tmp_path / "cut.jsonl.gz"
    gz.write_bytes(gzip.compress((GOOD_SENSE + "\n").encode() * 200)[:100])
    assert_one_line_error(cli("sense-probe", gz), "cut.jsonl.gz", "truncated")


def test_read_json_names_the_file_and_the_position(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{\n  "a": 1,\n  "b": \n}\n', encoding="utf-8")
    with pytest.raises(
        InputFileError, match=r"config.json is not valid JSON \(Expecting value at line 4 column 1\); fix"
    ):
        read_json(bad, "fix it")
    bad.write_bytes(b'{"a": "caf\xe9"}')
    with pytest.raises(ModelDirError, match=r"byte 0xe9 at offset 10 is not UTF-8\); copy"):
        read_json(bad, "copy it again", ModelDirError)
    bad.write_bytes(b'\xef\xbb\xbf{"a": 1}')  # a byte-order mark, as some editors write
    assert read_json(bad, "unused") == {"a": 1}


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 150, 100_000])
def test_deeply_nested_json_is_one_line_not_a_recursion_error(tmp_path, depth):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' * (depth - 1) + "[1]" + "}" * (depth - 1), encoding="utf-8")
    with pytest.raises(InputFileError) as caught:
        read_json(deep, "fix it")
    assert str(caught.value) == f"{deep} is not valid JSON (nested more than {MAX_JSON_DEPTH} levels deep); fix it"
    deep.write_text(text := "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, encoding="utf-8")
    assert read_json(deep, "unused") == json.loads(text)  # as deep as allowed: read


def test_every_json_file_the_package_reads_goes_through_read_json(tmp_path):
    bad = tmp_path / "pretrain.json"
    bad.write_text("{oops", encoding="utf-8")
    result = cli("pretrain-elmo", bad)
    assert_one_line_error(result, "pretrain.json is not valid JSON (Expecting property name", "line 1 column 2")
    package = REPO / "spacy_contextual"
    readers = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "json.loads(" in line and ".read_text(" in line
    ]
    assert readers == []
