"""Which tokens of a batch of Docs go to the encoder, in which pieces, in which batches.

ELMo and CoVe were trained on sentences, so a Doc is cut into segments:

* with sentence boundaries (a parser, senter or sentencizer ran): one segment per sentence;
* without them: a whitespace token that contains a line break ends a segment (one-sentence-per-line
  and paragraph text);
* any segment longer than ``window`` tokens is cut into consecutive windows of ``window`` tokens.

Whitespace tokens are never fed to the encoder (their rows stay zero). Segments are then sorted by
length and grouped into batches whose padded size, (longest + 2 boundary tokens) × rows, stays under
``max_batch_tokens``; a stateful encoder keeps the input order instead, since its rows carry state.
The vectors of a segment depend only on its own tokens, so a text gets the same vectors alone and
inside any batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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


def plan_batches(segments: Sequence[Segment], max_batch_tokens: int, keep_order: bool = False) -> list[list[Segment]]:
    """Group segments into batches of padded size (longest + 2) × rows <= max_batch_tokens."""
    ordered = list(segments) if keep_order else sorted(segments, key=len)
    batches: list[list[Segment]] = []
    batch: list[Segment] = []
    longest = 0
    for segment in ordered:
        longest_with = max(longest, len(segment)) + 2
        if batch and longest_with * (len(batch) + 1) > max_batch_tokens:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(segment)
        longest = max(longest, len(segment))
    if batch:
        batches.append(batch)
    return batches
