"""What every encoder API does: tokenised sentences in, one float32 array (n_layers, n_tokens, width)
per sentence out, in input order.

Row i of layer j is h_{i,j}, the j-th representation of token i. A layer narrower than ``width``
(CoVe's GloVe next to its LSTM layers) is zero-padded on the right; ``layer_widths`` gives each
layer's own width. Sentences are read ``batch_size * chunk_batches`` at a time (so any iterable can be
streamed), batched by ``batching.plan_batches`` under ``max_batch_tokens``, and returned in input
order. A batch holding a sentence of more than ``max_window_tokens`` tokens runs in windows of that
many positions of each row, with the vectors of the whole sentences (``batching.py``). A subclass says
how to run one batch (``embed_batch``) and names its layers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice

import numpy as np

from ..batching import MAX_BATCH_TOKENS, MAX_WINDOW_TOKENS, default_rows, plan_batches
from ..errors import ContextualError

# sentences are read, sorted by length and batched batch_size * CHUNK_BATCHES at a time, and their arrays
# held together: 2,048 sentences at the default 256 rows
CHUNK_BATCHES = 8


class Embedder:
    #: machine names of the layers (also the names on ``doc._.<kind>_data``)
    layer_names: list[str]
    #: display names, e.g. "char-CNN", "LSTM-1"
    layer_labels: list[str]
    #: each layer's own width; arrays are ``max(layer_widths)`` wide
    layer_widths: list[int]

    def __init__(self, max_batch_tokens: int = MAX_BATCH_TOKENS, max_window_tokens: int = MAX_WINDOW_TOKENS):
        if isinstance(max_window_tokens, bool) or not isinstance(max_window_tokens, int) or max_window_tokens < 1:
            raise ContextualError(
                f"max_window_tokens must be a whole number of at least 1, got {max_window_tokens!r} (default "
                f"{MAX_WINDOW_TOKENS:,})"
            )
        self.max_batch_tokens = max_batch_tokens
        self.max_window_tokens = max_window_tokens

    @property
    def num_layers(self) -> int:
        return len(self.layer_widths)

    @property
    def output_dim(self) -> int:
        """The width of the returned arrays."""
        return max(self.layer_widths)

    @property
    def keep_order(self) -> bool:
        """True when batches must follow the input order (a stateful encoder)."""
        return False

    def embed_batch(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Run one batch as given (no reordering): per-sentence arrays (n_layers, n, width)."""
        raise NotImplementedError

    def embed_sentences(self, sentences: Iterable[Sequence[str]], batch_size: int | None = None) -> list[np.ndarray]:
        """One float32 array (n_layers, len(sentence), width) per sentence, in input order; ``batch_size``:
        sentences per batch (default ``batching.default_rows``: 256, or 64 for a stateful encoder)."""
        return list(self.iter_embed(sentences, batch_size))

    def embed_sentence(self, sentence: Sequence[str]) -> np.ndarray:
        return self.embed_batch([sentence])[0]

    def iter_embed(
        self,
        sentences: Iterable[Sequence[str]],
        batch_size: int | None = None,
        chunk_batches: int = CHUNK_BATCHES,
        on_batch: Callable[[int, int], None] | None = None,
    ) -> Iterator[np.ndarray]:
        """Stream over any iterable: reads ``batch_size * chunk_batches`` sentences at a time (one
        batch at a time when ``keep_order``), batches that chunk, and yields the results in input order.
        ``on_batch(sentences, tokens)`` is called after each batch (for progress bars)."""
        iterator = iter(sentences)
        batch_size = batch_size or default_rows(self.keep_order)
        chunk_size = batch_size if self.keep_order else batch_size * chunk_batches
        while True:
            chunk = [list(s) for s in islice(iterator, chunk_size)]
            if not chunk:
                return
            results: list[np.ndarray | None] = [None] * len(chunk)
            lengths = [len(sentence) for sentence in chunk]
            budget = None if self.keep_order else self.max_batch_tokens
            for indices in plan_batches(lengths, budget, batch_size, keep_order=self.keep_order):
                arrays = self.embed_batch([chunk[i] for i in indices])
                if on_batch is not None:
                    on_batch(len(indices), sum(lengths[i] for i in indices))
                for index, array in zip(indices, arrays, strict=True):
                    results[index] = array
            yield from results  # type: ignore[misc]
