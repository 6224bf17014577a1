"""Records read from files go through one validator with types (``schema.py``): a wrong type is one line
naming the record (the file, or ``file:line``) and the field, never a ``TypeError`` traceback. The sense
JSONL (``sense-probe`` and the dashboard), the training config (``pretrain-elmo``, ``--resume`` too, and
the config a checkpoint records), the model catalog, the sentiment JSONL, a run's ``run.json``; and a
``.spacy`` file that is not a DocBin (``convert-text``)."""

from __future__ import annotations

import json

import pytest
from util import GOOD_SENSE, assert_one_line_error, cli, sense_file, writer_leftovers

from spacy_contextual.analysis.occurrences import InputError, read_sense_jsonl
from spacy_contextual.errors import ContextualError

RECORD = {"word": "bank", "tokens": ["the", "bank"], "target": 1, "sense": "money"}
WRONG_SENSE_RECORDS = [
    ({"sense": ["money", "river"]}, "sense is ['money', 'river']; expected a string"),
    ({"sense": {"a": 1}}, "sense is {'a': 1}; expected a string"),
    ({"word": None}, "word is None; expected a string"),
    ({"word": 5}, "word is 5; expected a string"),
    ({"tokens": ["the", 5]}, "tokens is ['the', 5]; expected a list of at least 1 strings"),
    ({"tokens": "the bank"}, "tokens is 'the bank'; expected a list"),
    ({"tokens": []}, "tokens is []; expected a list of at least 1"),
    ({"target": True}, "target is True; expected an integer >= 0"),
    ({"target": "1"}, "target is '1'; expected an integer >= 0"),
    ({"target": 1.0}, "target is 1.0; expected an integer >= 0"),
    ({"target": -1}, "target is -1; expected an integer >= 0"),
    ({"target": 2}, "target 2 is not an index into its 2 tokens"),
]


@pytest.mark.parametrize("change, message", WRONG_SENSE_RECORDS)
def test_sense_probe_names_the_line_and_the_field_of_a_wrong_type(tmp_path, change, message):
    path = sense_file(tmp_path / "senses.jsonl", [GOOD_SENSE, json.dumps({**RECORD, **change})])
    assert_one_line_error(cli("sense-probe", path), f"senses.jsonl:2: {message}")


@pytest.mark.parametrize(  # an unlabelled record may leave word, target and sense null: tested below
    "change, message", [case for case in WRONG_SENSE_RECORDS if None not in case[0].values()]
)
def test_the_dashboard_reads_sense_records_with_the_same_types(change, message):
    data = (GOOD_SENSE + "\n" + json.dumps({**RECORD, **change}) + "\n").encode()
    with pytest.raises(InputError) as refused:
        read_sense_jsonl(data)
    assert str(refused.value).startswith(f"Line 2 is not a sense-labelled record (line 2: {message}")


def test_the_dashboard_takes_unlabelled_records_and_drops_nothing_else():
    lines = [
        {"tokens": ["a", "bank"]},
        {"tokens": ["the", "bank"], "target": None, "sense": None, "word": None, "id": 7},
        RECORD,
    ]
    records = read_sense_jsonl("".join(json.dumps(line) + "\n" for line in lines).encode())
    assert [record["target"] for record in records] == [None, None, 1]
    assert records[2] == {"tokens": ["the", "bank"], "target": 1, "sense": "money", "word": "bank"}


@pytest.mark.parametrize(
    "config, message",
    [
        ({"model": 5}, "pretrain.json: model is 5; expected a JSON object"),
        ({"training": []}, "pretrain.json: training is []; expected a JSON object"),
        ({"data": None}, "pretrain.json: data is None; expected a JSON object"),
        ([1], "pretrain.json is [1]; expected a JSON object with the sections"),
        ("text", "pretrain.json is 'text'; expected a JSON object"),
        ({"training": {"max_steps": "ten"}}, "training.max_steps is 'ten'; expected an integer"),
    ],
)
@pytest.mark.parametrize("resume", [[], ["--resume"]], ids=["start", "resume"])
def test_a_training_config_section_of_the_wrong_type_is_one_line(tmp_path, config, message, resume):
    path = tmp_path / "pretrain.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    assert_one_line_error(cli("pretrain-elmo", path, *resume, "--training.lr", "0.1"), message)


def test_a_checkpoint_whose_recorded_config_has_the_wrong_types_is_named_damaged(tmp_path):
    from spacy_contextual.training.checkpoint import CheckpointError, check_same_run

    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text(json.dumps({"step": 3, "config": {"model": 5}}))
    with pytest.raises(
        CheckpointError, match=r"trainer_state.json is damaged \(its config: model is 5; expected a JSON"
    ):
        check_same_run(checkpoint, {"model": {}}, ["a"])


def test_a_catalog_name_ending_in_a_newline_is_refused(tmp_path):
    catalog = tmp_path / "catalog.json"
    entry = {"encoder": "elmo", "format": "bilm_tf", "files": {"w": {"url": "file:///w"}}}
    catalog.write_text(json.dumps({"models": {"evil\n": entry}}), encoding="utf-8")
    assert_one_line_error(cli("--catalog", catalog, "models"), r"model name 'evil\n' must be lowercase letters")
    from spacy_contextual.hub.catalog import NAME

    assert not NAME.fullmatch("evil\n") and NAME.fullmatch("evil")


def test_a_parts_folder_whose_run_record_is_not_an_object_is_named(tmp_path):
    from spacy_contextual.corpus.folder import MARKER, PartsError
    from spacy_contextual.corpus.parts import RUN_FILE, PartsFolder

    parts = PartsFolder(tmp_path / "out.hdf5", 1, 10)
    parts.folder.mkdir()
    (parts.folder / MARKER).write_text("")
    (parts.folder / RUN_FILE).write_text("[1, 2]")
    with pytest.raises(PartsError, match=r"run.json is damaged \(not a JSON object\); delete"):
        parts.check_run({"lines": 1})


def docbin_bytes() -> bytes:
    import spacy
    from spacy.tokens import DocBin

    return DocBin(docs=[spacy.blank("en")("One two three .")] * 50).to_bytes()


@pytest.mark.parametrize("content", [b"just some text\n", b"", "cut"], ids=["text", "zero bytes", "a truncated .spacy"])
def test_convert_text_given_a_file_that_is_not_a_docbin_is_one_line_and_writes_nothing(tmp_path, content):
    corpus = tmp_path / "corpus.spacy"
    corpus.write_bytes(docbin_bytes()[:200] if content == "cut" else content)
    output = tmp_path / "text.txt"
    output.write_text("my earlier text\n", encoding="utf-8")
    result = cli("convert-text", corpus, output)
    assert_one_line_error(result, f"{corpus} is not a DocBin corpus, or it is cut short or damaged", "give a .spacy")
    assert "E1014" not in result.output and output.read_text(encoding="utf-8") == "my earlier text\n"
    assert writer_leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "change, message",
    [({"text": 5}, "text is 5; expected a string"), ({"label": ["pos"]}, "label is ['pos']; expected a string")],
)
def test_convert_sentiment_names_the_line_and_the_field_of_a_wrong_type(tmp_path, change, message):
    good = {"id": 1, "text": "a film", "label": "pos", "split": "train"}
    path = tmp_path / "reviews.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **change}) + "\n", encoding="utf-8")
    assert_one_line_error(cli("convert-sentiment", path, tmp_path / "out"), f"reviews.jsonl:2: {message}")


def test_the_validator_shows_a_huge_value_cut_short():
    from spacy_contextual.schema import TEXT, validate_section

    with pytest.raises(ContextualError) as refused:
        validate_section({"a": list(range(100_000))}, {"a": TEXT}, "record.json", error=ContextualError)
    assert len(str(refused.value)) < 200 and "..." in str(refused.value)
