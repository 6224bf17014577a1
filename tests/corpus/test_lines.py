"""Reading a corpus for embedding: lines, gzip, UTF-8 errors named FILE:LINE, a rank's share."""

import gzip

import pytest

from spacy_contextual.corpus.lines import Corpus
from spacy_contextual.text_files import InputFileError

TEXT = "The bank .\n\n\ufeffnaïve café 東京 🙂\r\nlast line without a break"


@pytest.fixture(params=["plain", "gzip"])
def corpus_path(request, tmp_path):
    data = ("\ufeff" + TEXT).encode("utf-8")
    if request.param == "plain":
        path = tmp_path / "corpus.txt"
        path.write_bytes(data)
    else:
        path = tmp_path / "corpus.anything"  # gzip is recognised by its magic number, not the name
        path.write_bytes(gzip.compress(data))
    return path


def test_lines_plain_and_gzip(corpus_path):
    corpus = Corpus(corpus_path)
    lines = list(corpus.lines())
    assert lines == ["The bank .", "", "\ufeffnaïve café 東京 🙂", "last line without a break"]
    assert corpus.count() == 4
    tokens = [tokens for _, _, tokens in corpus.shard()]
    assert tokens[0] == ["The", "bank", "."] and tokens[1] == [] and tokens[2][-1] == "🙂"  # "\r" is whitespace


def test_shards_interleave_and_skip(corpus_path):
    corpus = Corpus(corpus_path)
    assert [index for index, *_ in corpus.shard(0, 2)] == [0, 2]
    assert [index for index, *_ in corpus.shard(1, 2)] == [1, 3]
    assert [index for index, *_ in corpus.shard(1, 2, skip=1)] == [3]
    assert [index for index, *_ in corpus.shard(0, 3, skip=1)] == [3]
    everything = sorted(line for rank in range(3) for line in corpus.shard(rank, 3))
    assert everything == list(corpus.shard())


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\nbad \xff byte\n")
    with pytest.raises(
        InputFileError, match=r"bad\.txt:3: not UTF-8 text \(byte 0xff at column 5\);.*--errors replace"
    ):
        Corpus(path).count()
    assert list(Corpus(path, errors="replace").lines())[2] == "bad \ufffd byte"
    with pytest.raises(InputFileError, match="errors must be one of"):
        Corpus(path, errors="ignore")


def test_truncated_gzip_is_refused(tmp_path):
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(gzip.compress(b"a line\n" * 1000)[:-20])
    with pytest.raises(InputFileError, match=r"cut\.txt\.gz: the gzip data cannot be read .*truncated"):
        Corpus(path).count()


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"a b\rc d\r\re f\n", ["a b", "c d", "", "e f"]),  # a lone CR ends a line, as in universal newlines
        (b"a\r\nb\rc", ["a", "b", "c"]),
        (b"\r", [""]),
        (b"a\x0bb\x1cc\n", ["a\x0bb\x1cc"]),  # not line ends in AllenNLP's text-mode reader
    ],
)
def test_line_ends_are_those_of_allennlp_reader(tmp_path, data, expected):
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    with open(path, encoding="utf-8") as handle:  # what AllenNLP's elmo command iterates over
        assert [line.rstrip("\r\n") for line in handle] == expected
    assert list(Corpus(path).lines()) == expected
    assert [raw for _, raw, _ in Corpus(path).shard()] == list(Corpus(path).raw_lines())
