"""ELMo's context-independent token representation x_k: char CNN -> highway -> projection.

For a token with character embeddings e (50, E):

    f_i   = act(max_t (conv1d_i(e) + b_i))              one feature per filter, widths w_i
    y     = [f_1; ...; f_F]                             (n_filters,)
    y     = carry * relu(y W_T + b_T) + (1 - carry) * y, carry = sigmoid(y W_C + b_C)   (highway, n times)
    x_k   = y W_P + b_P                                 (projection to P, only if n_filters != P)

This is bilm-tf's convention: the highway "carry" gate multiplies the transform, and the highway
always uses ReLU whatever ``activation`` the convolutions use. Tokens are ``max_characters`` ids wide
(50 in bilm-tf's scheme, ``chars.py``); ``blank_ids`` are the ids that hold no character (padding).

The convolutions run as one matrix product: every filter is padded with zero taps to the widest
width w, and the windows of w characters (E * w values each) are multiplied by all the filters at
once, so the product has n_filters columns and E * w rows. A narrower filter then misses its last
windows; where a token's last window of w characters lies wholly in its padding (``_spans`` keeps that
many padding positions), those missed windows are padding too, and their value is already in the
max. Tokens too long for that (over 50 - w characters) run the convolutions one by one. (What each
way costs: ``benchmarks/history/elmo_inference.md``.)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .chars import N_CHARACTERS, PADDING_CHAR

PRODUCT_WINDOWS = 2048  # windows per product: its output (2048 x n_filters) stays under glibc's 32 MiB mmap limit


class Highway(nn.Module):
    """One highway layer, bilm-tf form: ``carry * relu(W_T y) + (1 - carry) * y``."""

    def __init__(self, dim: int):
        super().__init__()
        self.carry = nn.Linear(dim, dim)
        self.transform = nn.Linear(dim, dim)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        carry = torch.sigmoid(self.carry(y))
        return carry * torch.relu(self.transform(y)) + (1.0 - carry) * y


class CharCNN(nn.Module):
    """Maps character ids ``(..., 50)`` to token vectors ``(..., output_dim)``."""

    def __init__(
        self,
        char_embedding_dim: int,
        filters: Sequence[Sequence[int]],
        n_highway: int,
        output_dim: int,
        activation: str = "relu",
        n_characters: int = N_CHARACTERS,
        blank_ids: Sequence[int] = (0, PADDING_CHAR + 1),
    ):
        super().__init__()
        if activation not in ("relu", "tanh"):
            raise ValueError(f"char_cnn.activation must be 'relu' or 'tanh', got {activation!r}")
        self.activation = torch.relu if activation == "relu" else torch.tanh
        # The first blank id (0, the padding token, in bilm-tf's scheme) is zero and never trained.
        self.char_embedding = nn.Embedding(n_characters, char_embedding_dim, padding_idx=blank_ids[0])
        self.blank_ids = tuple(blank_ids)
        self.convolutions = nn.ModuleList(nn.Conv1d(char_embedding_dim, num, width) for width, num in filters)
        n_filters = sum(num for _, num in filters)
        self.highways = nn.ModuleList(Highway(n_filters) for _ in range(n_highway))
        self.projection = nn.Linear(n_filters, output_dim) if n_filters != output_dim else None
        self.output_dim = output_dim
        self.n_filters = n_filters
        self.widest_filter = max(width for width, _ in filters)

    def _spans(self, ids: torch.Tensor) -> list[tuple[torch.Tensor, int, bool]]:
        """Group tokens by how many of their character positions the convolutions must see, and say
        whether each group's last window of ``widest_filter`` positions is padding in every token.

        Every convolution window that lies wholly in the padding after a token gives the same value,
        so a token whose last character (or begin/end-of-word mark) is at position n - 1 needs only
        its first n + widest_filter positions: the max over them equals the max over all of them.
        Exact, and about 3x less convolution work on ordinary words.
        """
        width = ids.shape[-1]
        filled = torch.ones_like(ids, dtype=torch.bool)
        for blank in self.blank_ids:
            filled &= ids != blank
        positions = torch.arange(1, width + 1, device=ids.device)
        n_chars = (filled * positions).amax(-1)
        span = (n_chars + self.widest_filter).clamp(max=width)
        span = ((span + 7) // 8 * 8).clamp(max=width)  # a few buckets, not one per length
        groups = []
        for value in span.unique().tolist():
            rows = (span == value).nonzero().squeeze(1)
            groups.append((rows, int(value), int(n_chars[rows].max()) + self.widest_filter <= value))
        return groups

    def _max_pooled_features(self, ids: torch.Tensor, padding_at_the_end: bool) -> torch.Tensor:
        """max over positions of every convolution, then the activation: (tokens, n_filters)."""
        chars = self.char_embedding(ids)  # (tokens, positions, E)
        if not padding_at_the_end:
            chars = chars.transpose(1, 2)
            return torch.cat([self.activation(conv(chars).amax(dim=-1)) for conv in self.convolutions], dim=-1)
        widest = self.widest_filter
        weight = torch.cat([nn.functional.pad(c.weight, (0, widest - c.kernel_size[0])) for c in self.convolutions])
        weight = weight.flatten(1).t()  # (E * widest, n_filters), rows in the windows' (E, widest) order
        bias = torch.cat([conv.bias for conv in self.convolutions])
        windows = chars.unfold(1, widest, 1)  # (tokens, positions - widest + 1, E, widest)
        per_part = max(1, PRODUCT_WINDOWS // windows.shape[1])
        pooled = [
            torch.addmm(bias, part.reshape(-1, weight.shape[0]), weight).view(len(part), -1, self.n_filters).amax(1)
            for part in windows.split(per_part)
        ]
        return self.activation(torch.cat(pooled))

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        leading = char_ids.shape[:-1]
        ids = char_ids.reshape(-1, char_ids.shape[-1])
        y = ids.new_empty(ids.shape[0], self.n_filters, dtype=self.char_embedding.weight.dtype)
        for rows, span, padding_at_the_end in self._spans(ids):
            features = self._max_pooled_features(ids[rows, :span], padding_at_the_end)
            y[rows] = features.to(y.dtype)  # autocast may lower it
        for highway in self.highways:
            y = highway(y)
        if self.projection is not None:
            y = self.projection(y)
        return y.reshape(*leading, self.output_dim)
