"""ELMo representations: one biLM run, then one ScalarMix per requested output (AllenNLP ``Elmo``).

    rep_r = dropout( remove_boundaries( gamma_r * sum_j softmax(s_r)_j * h_j ) )

The mix (and its optional layer norm) sees the sentence boundaries, as in AllenNLP; they are removed
afterwards unless ``keep_sentence_boundaries``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .bilm import BiLM
from .chars import remove_sentence_boundaries
from .scalar_mix import ScalarMix


class Elmo(nn.Module):
    def __init__(
        self,
        bilm: BiLM,
        num_output_representations: int = 1,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        keep_sentence_boundaries: bool = False,
        scalar_mix_parameters: Sequence[float] | None = None,
        requires_grad: bool = False,
    ):
        super().__init__()
        self.bilm = bilm
        for param in self.bilm.parameters():
            param.requires_grad_(requires_grad)
        self.scalar_mixes = nn.ModuleList(
            ScalarMix(
                bilm.num_layers,
                do_layer_norm=do_layer_norm,
                initial_weights=scalar_mix_parameters,
                trainable=scalar_mix_parameters is None,
            )
            for _ in range(num_output_representations)
        )
        self.dropout = nn.Dropout(dropout)
        self.keep_sentence_boundaries = keep_sentence_boundaries

    def forward(self, char_ids: torch.Tensor) -> dict:
        activations, mask = self.bilm(char_ids)
        representations = []
        for mix in self.scalar_mixes:
            mixed = mix(activations, mask)
            if not self.keep_sentence_boundaries:
                mixed, out_mask = remove_sentence_boundaries(mixed, mask)
            else:
                out_mask = mask
            representations.append(self.dropout(mixed))
        if not self.scalar_mixes:
            out_mask = mask if self.keep_sentence_boundaries else remove_sentence_boundaries(activations[0], mask)[1]
        return {"elmo_representations": representations, "mask": out_mask}
