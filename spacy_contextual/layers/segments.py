"""Which tokens of a batch of Docs go to the encoder, in which pieces, in which batches.

ELMo and CoVe were trained on sentences, so a Doc is cut into segments:

* with sentence boundaries (a parser, senter or sentencizer ran): one segment per sentence;
* without them: a whitespace token that contains a line break ends a segment (one-sentence-per-line
  and paragraph text);
* any segment longer than ``window`` tokens is cut into consecutive windows of ``window`` tokens.

Whitespace tokens are never fed to the encoder (their rows stay zero). The segments are then
batched by ``batching.py``, the plan the embedders use too. The vectors of a segment
depend only on its own tokens, so a text gets the same vectors alone and inside any batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from spacy.tokens import Doc


@dataclass(frozen=True)
class Segment:
    doc_index: int
    token_indices: tuple[int, ...]  # positions in the Doc, no whitespace tokens

    def __len__(self) -> int:
        return len(self.token_indices)


def doc_segments(doc: Doc, doc_index: int, window: int) -> Iterator[Segment]:
    if window < 1:
        raise ValueError(f"window must be at least 1 token, got {window}")
    for piece in _pieces(doc):
        for start in range(0, len(piece), window):
            yield Segment(doc_index, tuple(piece[start : start + window]))


def _pieces(doc: Doc) -> Iterator[list[int]]:
    if doc.has_annotation("SENT_START"):
        for sent in doc.sents:
            piece = [token.i for token in sent if not token.is_space]
            if piece:
                yield piece
        return
    piece: list[int] = []
    for token in doc:
        if token.is_space:
            if "\n" in token.text and piece:
                yield piece
                piece = []
        else:
            piece.append(token.i)
    if piece:
        yield piece
