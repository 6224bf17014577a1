"""The ELMo encoder API: tokenised sentences in, per-layer float32 arrays (n_layers, n, 2P) out.

Layer 0 is [x_k; x_k], the char-CNN token vector (context independent); layers 1..L are
[forward_k; backward_k] of the biLSTM layers. Sentences are batched by length under a token budget
(``embedder.py``); the char-CNN vector of each distinct word is computed once and kept in an LRU
cache across batches (``models/token_cache.py``). A batch holding a sentence of more than
``max_window_tokens`` tokens runs in windows of that many positions, each row's LSTM state carried
across them in both directions (``models/bilm_windows.py``), and is written straight into its arrays.
Stateless by default; ``stateful=True`` runs consecutive batches in input order and carries LSTM state
per batch row, as AllenNLP's ``ElmoEmbedder`` does. ``device``: cpu, cuda, cuda:N or auto;
``precision``: fp32, bf16 or fp16 (CUDA) casts the biLM's weights once (``precision.py``); the arrays
stay float32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from ..batching import MAX_BATCH_TOKENS, MAX_WINDOW_TOKENS
from ..devices import resolve_device
from ..formats.bilm_tf import load_bilm_tf
from ..formats.detect import load_elmo
from ..hub.resolver import resolve_model_dir
from ..models.bilm import BiLM
from ..models.bilm_windows import encode_in_windows
from ..models.token_cache import TokenVectorCache
from ..precision import DTYPES, cast_weights, resolve_precision
from ..types import PathLike
from .embedder import Embedder


class ElmoEmbedder(Embedder):
    def __init__(
        self,
        bilm: BiLM | Callable[[torch.dtype], BiLM],
        device: str | torch.device = "cpu",
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        token_cache_size: int = 50_000,
        precision: str = "fp32",
        max_window_tokens: int = MAX_WINDOW_TOKENS,
    ):
        """``bilm``: the biLM, or a function that loads it in a dtype, so that a model file is read straight
        into its precision's dtype with no float32 copy first (``load``, ``from_bilm_tf``). The device and
        the precision are resolved here, once."""
        super().__init__(max_batch_tokens, max_window_tokens)
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        if not isinstance(bilm, nn.Module):
            bilm = bilm(DTYPES[self.precision])
        self.bilm = cast_weights(bilm.to(self.device), self.precision).eval()
        self.token_cache = TokenVectorCache(token_cache_size)
        self.layer_names = ["token"] + [f"lstm{j}" for j in range(1, bilm.num_layers)]
        token_label = getattr(bilm.token_encoder, "label", "char-CNN")  # ELMoForManyLangs: word and/or char-CNN
        self.layer_labels = [token_label] + [f"LSTM-{j}" for j in range(1, bilm.num_layers)]
        self.layer_widths = [bilm.output_dim] * bilm.num_layers

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_bilm_tf(cls, options_file: PathLike, weight_file: PathLike, stateful: bool = False, **kwargs):
        return cls(lambda dtype: load_bilm_tf(options_file, weight_file, stateful=stateful, dtype=dtype), **kwargs)

    @classmethod
    def load(cls, model: PathLike | None = None, stateful: bool = False, **kwargs) -> ElmoEmbedder:
        """A model name, or a model directory in any ELMo format (ours, ELMoForManyLangs, bilm-tf:
        ``formats/detect.py``), or the bundled default when ``model`` is None or "default"."""
        path = resolve_model_dir("elmo", model)
        return cls(lambda dtype: load_elmo(path, stateful=stateful, dtype=dtype), **kwargs)

    @property
    def token_cache_size(self) -> int:
        return self.token_cache.max_size

    @token_cache_size.setter
    def token_cache_size(self, size: int) -> None:
        self.token_cache.max_size = size

    @property
    def stateful(self) -> bool:
        return self.bilm.stateful

    @property
    def keep_order(self) -> bool:
        return self.stateful  # rows carry state: keep input order and batch positions

    def reset_states(self) -> None:
        self.bilm.reset_states()

    # -- embedding ------------------------------------------------------------------------------

    @torch.no_grad()
    def embed_batch(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        if not sentences:
            return []
        arrays = [torch.empty(self.num_layers, len(sentence), self.output_dim) for sentence in sentences]
        if max(map(len, sentences)) > self.max_window_tokens:  # written window by window, straight into the arrays
            encode_in_windows(self.bilm, sentences, arrays, self.max_window_tokens, self.token_cache)
            return [array.numpy() for array in arrays]
        activations, _ = self.bilm.encode_sentences(sentences, self.token_cache)
        layers = [layer.cpu() for layer in activations]  # L x (B, T+2, 2P), in the weights' dtype
        for row, (sentence, array) in enumerate(zip(sentences, arrays, strict=True)):
            for layer, values in zip(layers, array, strict=True):  # each sentence's values copied once, widened
                values.copy_(layer[row, 1 : len(sentence) + 1])
        return [array.numpy() for array in arrays]
