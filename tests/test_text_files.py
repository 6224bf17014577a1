"""Input files on the command line: missing, a directory, not UTF-8 or a truncated gzip, named in one line."""

from __future__ import annotations

import gzip

from util import (
    GOOD_SENSE,
    assert_one_line_error,
    cli,
)


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
