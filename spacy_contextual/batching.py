"""The one batching plan, shared by the embedders and the spaCy encoder layer.

Items (sentences, or segments of Docs) are sorted by length and grouped so that a batch's padded
size, (longest + 2 boundary positions) × rows, stays within ``max_batch_tokens`` and it holds at most
``max_rows`` rows: padding costs the LSTMs time, and sorting keeps it small. Within a batch the longest
comes first, the order in which the LSTMs run rows (``models/lstm.py``), so they need not permute them.
``keep_order`` keeps the input order instead (a stateful encoder's rows carry state from batch to
batch). Either limit may be None. An item longer than the budget gets a batch of its own.

The embedders' defaults (``MAX_BATCH_TOKENS``, ``default_rows``) favour many rows per batch: each LSTM
step multiplies every active row by the same weights, so a step with 256 rows costs little more than
one with 16 while the weights stream through the cache once either way, and fewer batches mean fewer
steps (``benchmarks/history/elmo_inference.md``). A stateful encoder's rows carry their state from batch
to batch, so there the batch is AllenNLP's 64 rows.

A batch holding a sentence of more than ``MAX_WINDOW_TOKENS`` tokens (a document with no line breaks)
is not run whole: the embedders run it in windows of that many positions of each row, each row's LSTM
state carried from one of its windows to the next in both directions (``models/windows.py``), which
gives the vectors of the whole sentences while memory follows the window, not the line. The rows stay
in their batch, so a batch of long sentences runs as fast as whole. At 1,024 positions a window costs
less memory than a full batch even at the original size in bf16, where a step runs at least 16 rows
(``benchmarks/history/elmo_inference.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import ContextualError

BOUNDARY_POSITIONS = 2  # <S> and </S>, which ELMo adds; the budget counts them for CoVe too
MAX_BATCH_TOKENS = 8192  # the embedders' padded positions per batch
BATCH_ROWS = 256  # the embedders' sentences per batch
STATEFUL_BATCH_ROWS = 64  # AllenNLP's batch size: the state of row i goes on in row i of the next batch
MAX_WINDOW_TOKENS = 1024  # the most positions of one sentence the embedders' LSTMs run at once


def default_rows(keep_order: bool) -> int:
    """Sentences per batch when the caller names none: ``STATEFUL_BATCH_ROWS`` for a stateful encoder."""
    return STATEFUL_BATCH_ROWS if keep_order else BATCH_ROWS


def plan_batches(
    lengths: Sequence[int],
    max_batch_tokens: int | None = None,
    max_rows: int | None = None,
    keep_order: bool = False,
) -> list[list[int]]:
    """Indices into ``lengths``, grouped into batches."""
    if max_batch_tokens is not None and max_batch_tokens < 1:
        raise ContextualError(f"max_batch_tokens must be at least 1, got {max_batch_tokens}")
    if max_rows is not None and max_rows < 1:
        raise ContextualError(f"the batch size must be at least 1, got {max_rows}")
    order = list(range(len(lengths))) if keep_order else sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    batch: list[int] = []
    longest = 0
    for index in order:
        padded = (max(longest, lengths[index]) + BOUNDARY_POSITIONS) * (len(batch) + 1)
        too_many_tokens = max_batch_tokens is not None and padded > max_batch_tokens
        too_many_rows = max_rows is not None and len(batch) == max_rows
        if batch and (too_many_tokens or too_many_rows):
            batches.append(batch)
            batch, longest = [], 0
        batch.append(index)
        longest = max(longest, lengths[index])
    if batch:
        batches.append(batch)
    return batches if keep_order else [batch[::-1] for batch in batches]
