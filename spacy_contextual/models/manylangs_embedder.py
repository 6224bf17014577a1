"""ELMoForManyLangs' token embedder (``ConvTokenEmbedder``): x_k = W [w_k; y_k] + b.

    w_k = E_word[word id]                                  (word_dim; absent when word_dim = 0)
    y_k = Highway^n(act(max_t conv1d_i(E_char[char ids])))  (n_filters; absent when char_dim = 0)

The char CNN is ``char_cnn.CharCNN`` without its projection: the convolutions run over all
``max_characters`` positions (the ``<pad>`` row is an ordinary trained vector) and the highway
layers always use ReLU. The original's highway gate g multiplies the carried input,
``sigmoid(g) * y + (1 - sigmoid(g)) * relu(h)``; CharCNN's carry gate multiplies the transform, so
the loader stores ``-g`` as its carry weights. The projection always exists, with a bias.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .char_cnn import CharCNN
from .manylangs_ids import BOS, EOS, PAD, Lexicons


class ManyLangsTokenEmbedder(nn.Module):
    boundary_tokens = (BOS, EOS)

    def __init__(
        self,
        lexicons: Lexicons,
        word_dim: int,
        char_dim: int,
        filters: Sequence[Sequence[int]],
        n_highway: int,
        activation: str,
        output_dim: int,
    ):
        super().__init__()
        self.lexicons = lexicons
        words, chars = lexicons.words, lexicons.chars
        self.word_embedding = nn.Embedding(len(words), word_dim, padding_idx=words[PAD]) if words is not None else None
        n_filters = sum(num for _, num in filters) if chars is not None else 0
        self.char_cnn = (
            CharCNN(char_dim, filters, n_highway, n_filters, activation, len(chars), blank_ids=(chars[PAD],))
            if chars is not None
            else None
        )
        self.projection = nn.Linear((word_dim if words is not None else 0) + n_filters, output_dim)
        self.output_dim = output_dim

    @property
    def label(self) -> str:
        """What layer 0 is, for display."""
        parts = (("word", self.word_embedding), ("char-CNN", self.char_cnn))
        return " + ".join(name for name, part in parts if part is not None)

    def token_ids(self, words: Sequence[str]) -> torch.Tensor:
        return self.lexicons.token_ids(words)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids`` (..., width) from ``token_ids`` -> token vectors (..., output_dim)."""
        parts = []
        if self.word_embedding is not None:
            parts.append(self.word_embedding(ids[..., 0]))
        if self.char_cnn is not None:
            parts.append(self.char_cnn(ids[..., int(self.word_embedding is not None) :]))
        return self.projection(torch.cat(parts, dim=-1))
