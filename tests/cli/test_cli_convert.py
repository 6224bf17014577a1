"""``convert-sentiment``: bad JSONL named by file and line."""

from __future__ import annotations

import json

from util import assert_one_line_error, cli, sense_file


def test_convert_sentiment_names_file_and_line_of_bad_jsonl(tmp_path):
    good = json.dumps({"id": 1, "text": "good", "label": "pos", "split": "train"})
    result = cli("convert-sentiment", sense_file(tmp_path / "bad.jsonl", [good, "{oops"]), tmp_path / "out")
    assert_one_line_error(result, "bad.jsonl:2: not JSON")
    result = cli("convert-sentiment", sense_file(tmp_path / "bad.jsonl", [good, '{"text": "x"}']), tmp_path / "out")
    assert_one_line_error(result, "bad.jsonl:2: the record lacks ['label', 'split']")
