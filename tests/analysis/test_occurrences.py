"""Corpora and word occurrences for the sense explorer."""

import gzip
import json

import pytest
from util import DATA

from spacy_contextual.analysis.demo_corpus import DEMO_SENTENCES, demo_words
from spacy_contextual.analysis.occurrences import (
    MAX_TEXT_CHARS,
    InputError,
    corpus_words,
    demo_corpus,
    find_occurrences,
    read_sense_jsonl,
    text_corpus,
)


def test_demo_corpus_has_several_senses_per_word_and_labels_the_word():
    records = demo_corpus()
    assert len(records) == len(DEMO_SENTENCES)
    assert demo_words() == ["bank", "bat", "play", "spring"]
    for word in demo_words():
        occurrences = find_occurrences(records, word)
        assert occurrences["sense"].nunique() >= 2
        assert (occurrences["token"].str.lower() == word).all()
    first = records[0]
    assert first["tokens"][first["target"]] == "play" and first["sense"] == "play-sport"


def test_text_corpus_splits_sentences_and_finds_every_occurrence_case_insensitively():
    records = text_corpus("Play it again. They play well.\n\nThe play was long, and the play ended late.")
    assert len(records) == 3
    occurrences = find_occurrences(records, "PLAY")
    assert list(occurrences["record"]) == [0, 1, 2, 2]
    assert list(occurrences["token"]) == ["Play", "play", "play", "play"]
    assert occurrences["sense"].isna().all()
    assert occurrences["sentence"][2] == "The play was long , and the play ended late ."


@pytest.mark.parametrize(
    "text, message",
    [("", "empty"), ("   \n ", "empty"), ("x" * (MAX_TEXT_CHARS + 1), "limit is 200,000")],
)
def test_bad_text_is_refused_with_a_message(text, message):
    with pytest.raises(InputError, match=message):
        text_corpus(text)


def test_one_megabyte_paste_is_refused_before_tokenising():
    with pytest.raises(InputError, match="1,000,000 characters"):
        text_corpus("a" * 1_000_000)


def test_missing_word_single_occurrence_and_phrases_get_clear_messages():
    records = text_corpus("The bank opened. A bat flew by. Bats sleep.")
    with pytest.raises(InputError, match="does not occur"):
        find_occurrences(records, "spring")
    with pytest.raises(InputError, match="only 1 time"):
        find_occurrences(records, "bank")
    with pytest.raises(InputError, match="Enter a word"):
        find_occurrences(records, "  ")
    with pytest.raises(InputError, match="space"):
        find_occurrences(records, "river bank")


def test_sense_jsonl_plain_and_gzip_and_labelled_word_forms(tmp_path):
    lines = [
        {"id": "a", "word": "hard", "tokens": ["it", "is", "hard", "."], "target": 2, "sense": "HARD1"},
        {
            "id": "b",
            "word": "hard",
            "tokens": ["a", "harder", "rock", "than", "hard", "wood"],
            "target": 1,
            "sense": "HARD2",
        },
        {"id": "c", "word": "hard", "tokens": ["hard", "work"], "target": 0, "sense": "HARD1"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    plain = tmp_path / "hard.jsonl"
    plain.write_text(text)
    packed = tmp_path / "hard.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    for source in (plain, packed, packed.read_bytes()):
        records = read_sense_jsonl(source)
        occurrences = find_occurrences(records, "hard")
        # a labelled record contributes its target only, so the labelled "harder" counts and the
        # unlabelled "hard" does not
        assert list(occurrences["token"]) == ["hard", "harder", "hard"]
        assert list(occurrences["sense"]) == ["HARD1", "HARD2", "HARD1"]
    assert corpus_words(records) == ["hard"]


def test_sense_jsonl_errors_name_the_line_and_the_fix(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tokens": ["a"], "target": 0}\n{"tokens": ["a", "b"], "target": 5}\n')
    with pytest.raises(InputError, match="Line 2 .*target 5 is not an index into its 2 tokens"):
        read_sense_jsonl(bad)
    with pytest.raises(InputError, match="not a file"):
        read_sense_jsonl(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no records"):
        read_sense_jsonl(tmp_path / "empty.jsonl")


def test_shipped_senseval_file_reads():
    path = DATA / "senses" / "hard.jsonl.gz"
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    records = read_sense_jsonl(path)
    occurrences = find_occurrences(records, "hard")
    assert len(records) == 4333 and len(occurrences) == 4333
    assert occurrences["sense"].value_counts().to_dict() == {"HARD1": 3455, "HARD2": 502, "HARD3": 376}


def test_several_forms_and_lemmas_find_every_inflection(monkeypatch):
    from spacy_contextual.analysis import lemmas
    from spacy_contextual.analysis.occurrences import suggest_words, text_corpus

    records = text_corpus("She runs fast. He ran home. They run a shop. We run daily. Runs are good.")
    forms = sorted(find_occurrences(records, "run, runs, ran", lemmas=False)["token"].str.lower())
    assert forms == ["ran", "run", "run", "runs", "runs"]
    if lemmas.english_lemmatizer() is not None:  # spacy-lookups-data installed
        assert sorted(find_occurrences(records, "run")["token"].str.lower()) == forms
    monkeypatch.setattr(lemmas, "english_lemmatizer", lambda: None)
    assert "No English lemmatizer" in lemmas.lemmatizer_note()
    with pytest.raises(InputError, match="'run' occurs only 2 times"):  # the exact form alone
        find_occurrences(records, "run")
    assert suggest_words(text_corpus("The bank. A bank. Our bank. The river. A river.")) == ["bank"]


@pytest.mark.timeout(30)
def test_a_small_upload_of_blank_lines_is_bounded_by_what_it_expands_to(monkeypatch):
    """306 KB of gzip blank lines once became 1.8 GB in memory: lines count blank ones too, and the
    expanded size is capped while it is decompressed."""
    from spacy_contextual.analysis import occurrences

    monkeypatch.setattr(occurrences, "MAX_EXPANDED_BYTES", 10_000_000)
    blank = gzip.compress(b"\n" * 30_000_000, compresslevel=9)
    assert len(blank) < 50_000
    with pytest.raises(InputError, match="more than 50,000 lines"):  # counted as they stream in
        read_sense_jsonl(blank)
    spaces = gzip.compress((b" " * 1_000_000 + b"\n") * 30, compresslevel=9)
    with pytest.raises(InputError, match="expands to more than 10,000,000 bytes"):
        read_sense_jsonl(spaces)
