"""Static vector files: GloVe, word2vec text and fastText .vec, plain and gzipped, into spaCy Vectors."""

import gzip

import numpy as np
import pytest
from spacy.strings import get_string_id

from spacy_contextual.formats.word_vectors import VectorFileError, load_vectors, to_spacy_vectors, write_glove

WORDS = ["the", "The", "cat", "sat"]
ROWS = np.array([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0], [-0.5, 0.25, 4.0], [7.0, 8.0, 9.0]], dtype=np.float32)


def _write(path, text):
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _body():
    return "".join(f"{w} {' '.join(str(v) for v in row)}\n" for w, row in zip(WORDS, ROWS, strict=True))


@pytest.mark.parametrize("header", [False, True], ids=["glove", "word2vec-fasttext"])
@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_formats_load_every_row(tmp_path, header, suffix):
    text = (f"{len(WORDS)} 3\n" if header else "") + _body()
    loaded = load_vectors(_write(tmp_path / f"vectors{suffix}", text))
    assert loaded.words == WORDS
    assert loaded.vectors.dtype == np.float32
    np.testing.assert_array_equal(loaded.vectors, ROWS)


def test_fasttext_vec_with_trailing_space(tmp_path):
    text = f"{len(WORDS)} 3\n" + "".join(
        f"{w} {' '.join(str(v) for v in row)} \n" for w, row in zip(WORDS, ROWS, strict=True)
    )
    np.testing.assert_array_equal(load_vectors(_write(tmp_path / "wiki.vec", text)).vectors, ROWS)


def test_restricted_vocabulary_and_lowercase_lookup(tmp_path):
    path = _write(tmp_path / "glove.txt", _body())
    assert load_vectors(path, vocab=["sat", "cat", "dog"]).words == ["cat", "sat"]
    lowered = load_vectors(path, vocab=["the"], lowercase_lookup=True)
    assert lowered.words == ["the"]
    np.testing.assert_array_equal(lowered.vectors, ROWS[:1])  # first row of the lowercased form wins


def test_wrong_number_of_values_names_the_line(tmp_path):
    path = _write(tmp_path / "bad.txt", _body() + "dog 1.0 2.0\n")
    with pytest.raises(VectorFileError, match=r"line 5: 2 values for 'dog', expected 3"):
        load_vectors(path)


def test_header_count_too_small(tmp_path):
    path = _write(tmp_path / "bad.vec", "2 3\n" + _body())
    with pytest.raises(VectorFileError, match="more rows than its header's count 2"):
        load_vectors(path)


def test_not_text(tmp_path):
    path = tmp_path / "binary.bin"
    path.write_bytes(b"\xff\xfe\x00\x81" * 10)
    with pytest.raises(VectorFileError, match="not UTF-8"):
        load_vectors(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_vectors(tmp_path / "missing.txt")


def test_write_glove_round_trip_and_spacy_vectors(tmp_path):
    path = write_glove(tmp_path / "out.txt.gz", WORDS, ROWS)
    loaded = load_vectors(path)
    np.testing.assert_allclose(loaded.vectors, ROWS, rtol=1e-6)
    vectors = to_spacy_vectors(loaded)
    assert vectors.shape == (4, 3)
    np.testing.assert_allclose(vectors[get_string_id("cat")], ROWS[2], rtol=1e-6)
    with pytest.raises(ValueError, match="without spaces"):
        write_glove(tmp_path / "x.txt", ["a b"], ROWS[:1])
