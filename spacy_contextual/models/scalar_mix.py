"""Task-specific layer mix: ELMo_k = gamma * sum_j softmax(s)_j * h_{k,j}  (Peters et al. 2018, eq. 1).

Optionally each layer is first normalised over all unmasked elements of the batch (a scalar mean and
variance per layer, AllenNLP's ``do_layer_norm``), and during training whole layers can be dropped
(their weight set to -inf before the softmax; at least one layer is always kept).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class ScalarMix(nn.Module):
    def __init__(
        self,
        num_layers: int,
        do_layer_norm: bool = False,
        initial_weights: Sequence[float] | None = None,
        initial_gamma: float = 1.0,
        trainable: bool = True,
        layer_dropout: float = 0.0,
    ):
        super().__init__()
        weights = (
            torch.zeros(num_layers)
            if initial_weights is None
            else torch.tensor(list(initial_weights), dtype=torch.float32)
        )
        if weights.numel() != num_layers:
            raise ValueError(f"ScalarMix got {weights.numel()} initial weights for {num_layers} layers")
        self.weights = nn.Parameter(weights, requires_grad=trainable)
        self.gamma = nn.Parameter(torch.tensor([float(initial_gamma)]), requires_grad=trainable)
        self.do_layer_norm = do_layer_norm
        self.layer_dropout = layer_dropout

    def normalized_weights(self) -> torch.Tensor:
        """softmax(s): the share of each layer."""
        return torch.softmax(self.weights, dim=0)

    def forward(self, layers: Sequence[torch.Tensor] | torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``layers``: num_layers tensors (..., dim) or one (num_layers, ..., dim) tensor."""
        if len(layers) != self.weights.numel():
            raise ValueError(f"ScalarMix was built for {self.weights.numel()} layers but got {len(layers)}")
        weights = self.weights
        if self.training and self.layer_dropout > 0:
            drop = torch.rand_like(weights) < self.layer_dropout
            if bool(drop.all()):
                drop[torch.randint(len(drop), (1,), device=drop.device)] = False
            weights = weights.masked_fill(drop, float("-inf"))
        shares = torch.softmax(weights, dim=0)
        if self.do_layer_norm:
            if mask is None:
                raise ValueError("ScalarMix(do_layer_norm=True) needs the mask of valid positions")
            mask_f = mask.unsqueeze(-1).to(layers[0].dtype)
            layers = [_masked_layer_norm(layer, mask_f) for layer in layers]
        mixed = sum(share * layer for share, layer in zip(shares, layers, strict=True))
        return self.gamma * mixed


def _masked_layer_norm(tensor: torch.Tensor, mask: torch.Tensor, eps: float = 1e-13) -> torch.Tensor:
    count = mask.sum() * tensor.shape[-1]
    masked = tensor * mask
    mean = masked.sum() / count
    variance = (((masked - mean) * mask) ** 2).sum() / count
    return (tensor - mean) / torch.sqrt(variance + eps)
