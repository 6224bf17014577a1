"""Static word vectors in text formats: GloVe, word2vec text and fastText ``.vec`` (``.gz`` too).

GloVe lines are ``word v1 .. vd``; word2vec text and fastText ``.vec`` start with a header line
``count dim``. Files are streamed twice at most: once to count lines (only when there is no header),
once to fill a preallocated float32 array, so a 2.2M x 300 table is never held twice. Restricting to a
vocabulary keeps only the rows asked for. ``to_spacy_vectors`` wraps the result in spaCy ``Vectors``.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from ..errors import ContextualError
from ..types import PathLike
from ..writer import atomic_file


class VectorFileError(ContextualError):
    """A vectors file that cannot be read as GloVe / word2vec text / fastText .vec."""


@dataclass
class StaticVectors:
    words: list[str]
    vectors: np.ndarray  # (len(words), dim) float32

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}


def _open(path: Path, mode: str = "rt") -> IO:
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8", errors="strict")
    return open(path, mode, encoding="utf-8")


def _header(line: str) -> tuple[int, int] | None:
    parts = line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def load_vectors(path: PathLike, vocab: Iterable[str] | None = None, lowercase_lookup: bool = False) -> StaticVectors:
    """Read a GloVe / word2vec text / fastText .vec file (format detected from the first line).

    ``vocab``: keep only these words (in file order). ``lowercase_lookup``: match ``vocab`` against
    lowercased file words, keeping the first (most frequent) row of each lowercased form, as CoVe
    looked lowercased tokens up in the cased GloVe 840B table."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"vectors file {path} does not exist")
    wanted = None if vocab is None else set(vocab)
    try:
        with _open(path) as handle:
            first = handle.readline()
            header = _header(first)
            if header is None:
                dim = len(first.rstrip().split(" ")) - 1
                rows = 1 + sum(1 for _ in handle)
            else:
                rows, dim = header
    except UnicodeDecodeError as error:
        raise VectorFileError(
            f"{path} is not UTF-8 text ({error}); pass a GloVe/word2vec/fastText text file"
        ) from error
    if dim < 1:
        raise VectorFileError(
            f"{path}: the first line has no vector values; expected 'word v1 .. vd' or a 'count dim' header"
        )
    capacity = rows if wanted is None else min(rows, len(wanted))
    vectors = np.empty((capacity, dim), dtype=np.float32)
    words: list[str] = []
    seen: set[str] = set()
    with _open(path) as handle:
        if header is not None:
            handle.readline()
        for line_number, line in enumerate(handle, start=2 if header else 1):
            word, _, rest = line.rstrip("\n").rstrip(" ").partition(" ")
            key = word.lower() if lowercase_lookup else word
            if (wanted is not None and key not in wanted) or key in seen:
                continue
            values = np.array(rest.split(" "), dtype=np.float32) if rest else np.empty(0, np.float32)
            if values.shape[0] != dim:
                raise VectorFileError(
                    f"{path}, line {line_number}: {values.shape[0]} values for {word!r}, expected {dim}; "
                    "is the file truncated or does a word contain a space?"
                )
            if len(words) == capacity:
                raise VectorFileError(f"{path}: more rows than its header's count {rows}")
            vectors[len(words)] = values
            words.append(key)
            seen.add(key)
    finite = np.isfinite(vectors[: len(words)]).all(axis=1)
    if not finite.all():
        raise VectorFileError(
            f"{path}: the vector of {words[int(np.argmin(finite))]!r} (and {int((~finite).sum()) - 1:,} more) holds "
            "NaN or infinite values; the file is damaged"
        )
    return StaticVectors(words, vectors[: len(words)])


def write_glove(path: PathLike, words: Sequence[str], vectors: np.ndarray, precision: int = 6) -> Path:
    """Write GloVe text format (``word v1 .. vd`` per line), gzip-compressed when the name ends in .gz, through
    the one writer (atomic; never over a file the running command reads)."""
    path = Path(path)
    if len(words) != len(vectors):
        raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
    opener = gzip.open if path.suffix == ".gz" else open
    with atomic_file(path) as temporary, opener(temporary, "wt", encoding="utf-8") as out:
        for word, row in zip(words, vectors, strict=True):
            if " " in word or not word:
                raise ValueError(f"cannot write word {word!r}: GloVe text format needs non-empty words without spaces")
            out.write(word + " " + " ".join(f"{v:.{precision}g}" for v in row) + "\n")
    return path


def to_spacy_vectors(static: StaticVectors):
    """spaCy ``Vectors`` holding the same rows (one key per word)."""
    from spacy.vectors import Vectors

    return Vectors(data=static.vectors, keys=static.words)
