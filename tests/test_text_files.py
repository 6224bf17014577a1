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


# -- bounded before they allocate ----------------------------------------------------------------


def fed_bytes(monkeypatch) -> list[int]:
    """Counts every compressed byte the gzip reader hands to zlib (copies of what a member leaves unread
    included): the work of reading a gzip file."""
    from spacy_contextual import text_files

    fed: list[int] = []
    real = text_files.zlib.decompressobj

    class Counting:
        def __init__(self, *args):
            self.inner = real(*args)

        def decompress(self, data, max_length=0):
            fed.append(len(data))
            return self.inner.decompress(data, max_length)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(text_files.zlib, "decompressobj", Counting)
    return fed


@pytest.mark.parametrize("members", [1_000, 20_000])
def test_empty_gzip_members_cost_time_linear_in_the_input(tmp_path, monkeypatch, members):
    """Each member once took a copy of everything after it (1 MB: 1 s, 8 MB: 288 s)."""
    from spacy_contextual.text_files import FIRST_FEED, raw_lines

    data = gzip.compress(b"first line\n") + gzip.compress(b"") * members + gzip.compress(b"last line\n")
    path = tmp_path / "members.txt.gz"
    path.write_bytes(data)
    fed = fed_bytes(monkeypatch)
    assert list(raw_lines(path)) == [b"first line\n", b"last line\n"]
    assert sum(fed) <= 2 * len(data) + FIRST_FEED * (members + 2), (sum(fed), len(data))


def test_the_gzip_reader_reads_what_gzip_writes_and_refuses_what_is_damaged(tmp_path):
    from spacy_contextual.text_files import raw_lines

    text = b"".join(b"line %d with some words\n" % i for i in range(50_000))
    path = tmp_path / "text.gz"
    path.write_bytes(gzip.compress(text[:100_000]) + gzip.compress(text[100_000:], compresslevel=1))
    assert b"".join(raw_lines(path)) == text
    packed = gzip.compress(text)
    for name, damaged, words in [
        ("cut.gz", packed[:-5], "truncated"),
        ("crc.gz", packed[:-8] + bytes(8), "cannot be read"),
        ("garbage.gz", packed + b"not gzip", "cannot be read"),
        ("bomb.gz", packed[: len(packed) // 2], "truncated"),
    ]:
        (tmp_path / name).write_bytes(damaged)
        with pytest.raises(InputFileError, match=rf"{name}: the gzip data .*{words}"):
            list(raw_lines(tmp_path / name))


def peak_bytes(function) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        function()
    except InputFileError:
        pass
    except ValueError:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


@pytest.mark.timeout(60)
def test_an_upload_of_blank_lines_or_empty_members_is_refused_before_memory_grows():
    """300 KB of gzip blank lines once grew the server by 383 MiB, and 8 MB of empty members took 288 s."""
    from spacy_contextual.analysis.occurrences import InputError, read_sense_jsonl

    blank = gzip.compress(b"\n" * 200_000_000, compresslevel=9)
    assert len(blank) < 300_000
    with pytest.raises(InputError, match="more than 50,000 lines"):
        read_sense_jsonl(blank)
    assert peak_bytes(lambda: read_sense_jsonl(blank)) < 2_000_000
    members = gzip.compress(b"") * (8_000_000 // 20)
    with pytest.raises(InputError, match="more than 10,000 gzip members"):
        read_sense_jsonl(members)
    assert peak_bytes(lambda: read_sense_jsonl(members)) < 2_000_000
    one_line = gzip.compress(b"[" + b"1," * 50_000_000 + b"1]\n", compresslevel=9)
    with pytest.raises(InputError, match="line 1 is longer than 2,000,000 bytes"):
        read_sense_jsonl(one_line)
    assert peak_bytes(lambda: read_sense_jsonl(one_line)) < 3 * 2_000_000


def test_bounded_lines_stop_reading_at_the_first_line_past_a_limit(tmp_path):
    from spacy_contextual.text_files import bounded_lines

    path = tmp_path / "lines.txt"
    path.write_bytes(b"a\n" * 10 + b"x" * 100 + b"\n")
    assert len(list(bounded_lines(path, "lines.txt", 11, 1000, 200))) == 11
    for limits, message in [
        ((10, 1000, 200), "lines.txt has more than 10 lines"),
        ((11, 100, 200), "lines.txt expands to more than 100 bytes"),
        ((11, 1000, 50), "lines.txt: line 11 is longer than 50 bytes"),
    ]:
        with pytest.raises(InputFileError, match=message):
            list(bounded_lines(path, "lines.txt", *limits))


LONG = "1" * 5000


def test_a_5000_digit_number_in_any_json_we_read_is_one_line_naming_where(tmp_path):
    """Python's int() refuses more than 4,300 digits with a ValueError traceback; the length is checked first."""
    from spacy_contextual.hub.cache import CacheError, read_record
    from spacy_contextual.text_files import read_jsonl

    config = tmp_path / "config.json"
    config.write_text('{\n  "kind": "elmo-bilm",\n  "format_version": ' + LONG + "\n}\n", encoding="utf-8")
    with pytest.raises(InputFileError) as caught:
        read_json(config, "fix it")
    assert str(caught.value) == (
        f"{config} is not valid JSON (an integer of 5,000 digits (at most 40) at line 3 column 21); fix it"
    )
    lines = tmp_path / "records.jsonl"
    lines.write_text('{"a": 1}\n{"target": -' + LONG + "}\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=r"records.jsonl:2: an integer of 5,000 digits \(at most 40\), at"):
        list(read_jsonl(lines))
    cached = tmp_path / "cache" / "m"
    cached.mkdir(parents=True)
    (cached / "download.json").write_text('{"downloads": {}, "files": {"w": {"bytes": ' + LONG + "}}}")
    with pytest.raises(CacheError, match="an integer of 5,000 digits"):
        read_record(cached)


def test_5000_digits_on_the_command_line_and_in_a_catalog_are_one_line(tmp_path, tiny_model_dir):
    catalog = tmp_path / "catalog.json"
    entry = '{"encoder": "elmo", "format": "bilm_tf", "files": {"w": {"url": "file:///w", "bytes": ' + LONG + "}}}"
    catalog.write_text('{"models": {"m": ' + entry + "}}", encoding="utf-8")
    assert_one_line_error(cli("--catalog", catalog, "models"), "catalog.json is not valid JSON (an integer of 5,000")
    (tiny_model_dir / "config.json").write_text('{"kind": "elmo-bilm", "format_version": ' + LONG + "}")
    (text := tmp_path / "x.txt").write_text("a b\n", encoding="utf-8")
    assert_one_line_error(
        cli("evaluate-lm", tiny_model_dir, text), "config.json is not valid JSON (an integer of 5,000"
    )
    config = tmp_path / "pretrain.json"
    config.write_text("{}", encoding="utf-8")
    assert_one_line_error(cli("pretrain-elmo", config, "--training.seed", LONG), "an integer of 5,000 digits")


def test_json_is_parsed_by_the_one_bounded_reader_everywhere():
    """``models/`` is pure PyTorch and reads no user JSON; its build record (``cpp_build.py``) is a small
    file of this user's whose every ``ValueError`` means "no record"."""
    package = REPO / "spacy_contextual"
    parsers = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "text_files.py" and path.parent.name != "models"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "json.loads(" in line and "json.dumps(" not in line or "json.load(" in line
    ]
    assert parsers == []
