"""Per-token rows kept aligned with a Doc whose tokens were merged or split after the rows were computed.

spaCy calls no hook on extension data when ``Doc.retokenize`` (``merge_entities``,
``merge_noun_chunks``, ...) merges or splits tokens, so the rows record the character span
[start, end) of every token they were computed for, and are re-aligned when they are read
(``doc_data.py``). Token t of the current Doc takes the row of the last old token overlapping it:

    unchanged token                                  -> its own row
    merged token  (exactly covers old tokens a..b)   -> row b   spaCy's rule for ``doc.tensor``: the
                                                                last row stands for the merged region
    split piece   (inside old token a)               -> row a   every piece gets its token's row
                                                                (``doc.tensor`` gets zero rows there)

Retokenizing never changes the text. A text that changed only in the whitespace between the same
tokens (spaCy's ``DocBin`` puts a space after every piece of a split token) keeps the rows as they
are. Rows computed for another text, or a token that covers part of an old token and more, cannot be
aligned: that is an error, never a shifted row.
"""

from __future__ import annotations

import zlib

import numpy
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc

from ..errors import ContextualError


def token_starts(doc: Doc) -> numpy.ndarray:
    """The first character of every token: with the token count, enough to tell that no token was merged
    or split (a merge removes starts, a split adds them)."""
    return doc.to_array(IDX).astype(numpy.int64)


def token_offsets(doc: Doc) -> numpy.ndarray:
    """(len(doc), 2): the character span [start, end) of every token."""
    offsets = doc.to_array([IDX, LENGTH]).astype(numpy.int64).reshape(len(doc), 2)
    offsets[:, 1] += offsets[:, 0]
    return offsets


def text_digest(doc: Doc) -> int:
    return zlib.crc32(doc.text.encode("utf-8"))


def same_tokens(old: numpy.ndarray, new: numpy.ndarray) -> bool:
    """As many tokens, each as long as before: only the whitespace between them differs."""
    return old.shape == new.shape and numpy.array_equal(old[:, 1] - old[:, 0], new[:, 1] - new[:, 0])


def aligned_rows(old: numpy.ndarray, new: numpy.ndarray, what: str) -> numpy.ndarray:
    """For every token span in ``new``, the index of the token in ``old`` whose row it takes."""
    if len(old) == 0 and len(new):
        raise _unaligned(what, new[0])
    old_starts, old_ends = old[:, 0], old[:, 1]
    starts, ends = new[:, 0], new[:, 1]
    first = numpy.searchsorted(old_ends, starts, side="right")  # first old token ending after the start
    last = numpy.searchsorted(old_starts, ends, side="left") - 1  # last old token starting before the end
    overlaps = (first <= last) & (first < len(old)) & (last >= 0)
    first, last = numpy.minimum(first, len(old) - 1), numpy.maximum(last, 0)
    inside_one = (first == last) & (starts >= old_starts[first]) & (ends <= old_ends[last])
    covers_many = (first < last) & (starts == old_starts[first]) & (ends == old_ends[last])
    bad = numpy.flatnonzero(~(overlaps & (inside_one | covers_many)))
    if len(bad):
        raise _unaligned(what, new[bad[0]])
    return last


def _unaligned(what: str, span: numpy.ndarray) -> ContextualError:
    start, end = span
    return ContextualError(
        f"{what} cannot be aligned with the Doc's token at characters {start}-{end}: it neither is, joins nor "
        "lies inside the tokens the vectors were computed for; run the component again on the Doc"
    )
