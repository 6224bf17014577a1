"""The ELMo encoder API: tokenised sentences in, per-layer float32 arrays (n_layers, n, 2P) out.

Sentences are sorted by length and batched under a token budget (padding costs the LSTM time), and
the char-CNN token vector of each distinct word is computed once and kept in an LRU cache across
batches (``models/token_cache.py``: the CNN is most of a small ELMo's FLOPs and text repeats its
words). Results come back in input order. Stateless by default; ``stateful=True`` runs consecutive
batches in input order and carries LSTM state per batch row, as AllenNLP's ``ElmoEmbedder`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from itertools import islice
from pathlib import Path

import numpy as np
import torch

from ..formats.bilm_dir import load_bilm
from ..formats.bilm_tf import load_bilm_tf
from ..models.bilm import BiLM
from ..models.token_cache import TokenVectorCache
from ..types import PathLike

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "elmo"


def default_model_path() -> Path:
    if not (DEFAULT_MODEL_DIR / "config.json").is_file():
        raise FileNotFoundError(
            f"the bundled English ELMo is not installed at {DEFAULT_MODEL_DIR}; pass a model directory "
            "or bilm-tf --options-file/--weight-file"
        )
    return DEFAULT_MODEL_DIR


class ElmoEmbedder:
    def __init__(
        self,
        bilm: BiLM,
        device: str | torch.device = "cpu",
        max_batch_tokens: int = 4096,
        token_cache_size: int = 50_000,
        autocast_dtype: torch.dtype | None = None,
    ):
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("device 'cuda' was asked for but torch sees no CUDA device; use device='cpu'")
        self.bilm = bilm.to(self.device).eval()
        self.max_batch_tokens = max_batch_tokens
        self.autocast_dtype = autocast_dtype
        self.token_cache = TokenVectorCache(token_cache_size)

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_bilm_tf(
        cls, options_file: PathLike, weight_file: PathLike, stateful: bool = False, **kwargs
    ) -> ElmoEmbedder:
        return cls(load_bilm_tf(options_file, weight_file, stateful=stateful), **kwargs)

    @classmethod
    def from_dir(cls, path: PathLike, stateful: bool = False, **kwargs) -> ElmoEmbedder:
        return cls(load_bilm(path, stateful=stateful), **kwargs)

    @classmethod
    def load(cls, model: PathLike | None = None, stateful: bool = False, **kwargs) -> ElmoEmbedder:
        """Our model dir, or the bundled default when ``model`` is None or "default"."""
        path = default_model_path() if model in (None, "default") else Path(model)
        return cls.from_dir(path, stateful=stateful, **kwargs)

    @property
    def num_layers(self) -> int:
        return self.bilm.num_layers

    @property
    def output_dim(self) -> int:
        return self.bilm.output_dim

    @property
    def token_cache_size(self) -> int:
        return self.token_cache.max_size

    @token_cache_size.setter
    def token_cache_size(self, size: int) -> None:
        self.token_cache.max_size = size

    @property
    def stateful(self) -> bool:
        return self.bilm.stateful

    def reset_states(self) -> None:
        self.bilm.reset_states()

    # -- embedding ------------------------------------------------------------------------------

    def embed_sentences(self, sentences: Iterable[Sequence[str]], batch_size: int = 64) -> list[np.ndarray]:
        """One float32 array (n_layers, len(sentence), 2P) per sentence, in input order."""
        return list(self.iter_embed(sentences, batch_size))

    def embed_sentence(self, sentence: Sequence[str]) -> np.ndarray:
        return self.embed_batch([sentence])[0]

    def iter_embed(
        self, sentences: Iterable[Sequence[str]], batch_size: int = 64, chunk_batches: int = 32
    ) -> Iterator[np.ndarray]:
        """Stream over any iterable: reads ``batch_size * chunk_batches`` sentences at a time, sorts that
        chunk by length into batches (stateless), and yields the results in input order."""
        iterator = iter(sentences)
        chunk_size = batch_size if self.stateful else batch_size * chunk_batches
        while True:
            chunk = [list(s) for s in islice(iterator, chunk_size)]
            if not chunk:
                return
            results: list[np.ndarray | None] = [None] * len(chunk)
            for indices in self._plan_batches(chunk, batch_size):
                for index, array in zip(indices, self.embed_batch([chunk[i] for i in indices]), strict=True):
                    results[index] = array
            yield from results  # type: ignore[misc]

    def _plan_batches(self, chunk: list[list[str]], batch_size: int) -> Iterator[list[int]]:
        if self.stateful:  # rows carry state: keep input order and batch positions
            yield list(range(len(chunk)))
            return
        order = sorted(range(len(chunk)), key=lambda i: len(chunk[i]))
        batch: list[int] = []
        for index in order:
            longest = max(len(chunk[index]), 1) + 2
            if batch and (len(batch) + 1 > batch_size or (len(batch) + 1) * longest > self.max_batch_tokens):
                yield batch
                batch = []
            batch.append(index)
        if batch:
            yield batch

    @torch.no_grad()
    def embed_batch(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Run one batch as given (no reordering): per-sentence arrays (n_layers, n, 2P)."""
        if not sentences:
            return []
        autocast = (
            torch.autocast(self.device.type, dtype=self.autocast_dtype)
            if self.autocast_dtype is not None
            else nullcontext()
        )
        with autocast:
            tokens, mask = self._token_vectors(sentences)
            activations, _ = self.bilm.encode(tokens, mask)
        stacked = torch.stack(activations, dim=1).float().cpu().numpy()  # (B, L, T+2, 2P)
        return [stacked[row, :, 1 : len(s) + 1].copy() for row, s in enumerate(sentences)]

    def _token_vectors(self, sentences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Char-CNN vectors with boundaries, (B, T+2, P), through the LRU word cache; and the mask."""
        return self.token_cache.token_vectors(self.bilm.token_encoder, sentences)
