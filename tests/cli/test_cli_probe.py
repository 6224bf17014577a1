"""``sense-probe``: bad JSONL named by file and line; the bundled CoVe as the encoder."""

from __future__ import annotations

import gzip
import json

import pytest
from util import DATA, GOOD_SENSE, assert_one_line_error, cli, sense_file

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "bad.jsonl:2: not JSON"),
        ('{"word": "bank"}', "bad.jsonl:2 lacks ['tokens', 'target', 'sense']"),
        ('{"word": "bank", "tokens": ["a"], "target": 5, "sense": "x"}', "bad.jsonl:2: target 5"),
        ("[1, 2]", "bad.jsonl:2: a JSON list, not an object"),
    ],
)
def test_sense_probe_names_file_and_line_of_bad_jsonl(tmp_path, line, message):
    result = cli("sense-probe", sense_file(tmp_path / "bad.jsonl", [GOOD_SENSE, line]))
    assert_one_line_error(result, message)


def test_sense_probe_with_the_bundled_cove(tmp_path):
    with gzip.open(DATA / "senses" / "serve.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    by_sense: dict[str, list] = {}
    for record in records:
        by_sense.setdefault(record["sense"], []).append(record)
    chosen = [r for sense in sorted(by_sense)[:2] for r in by_sense[sense][:10]]
    probe = sense_file(tmp_path / "serve.jsonl", [json.dumps(r) for r in chosen])
    result = cli("sense-probe", probe, "--encoder", "cove", "--json", tmp_path / "out.json")
    assert result.exit_code == 0, result.output[-2000:]
    scores = json.loads((tmp_path / "out.json").read_text())[0]
    assert scores["instances"] == 20 and scores["senses"] == 2 and len(scores["layer_accuracy"]) == 3
