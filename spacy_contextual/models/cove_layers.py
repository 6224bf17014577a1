"""CoVe's per-layer outputs for word ids, the way ELMo gives them: (B, 3, T, 2H) per batch.

    h_0 = [GloVe(w) ; 0]      the fixed vector (a buffer, never trained), zero-padded to 2H
    h_1 = CoVe-1(w)           first MT-LSTM layer [fwd ; bwd]
    h_2 = CoVe-2(w)           second MT-LSTM layer, the paper's CoVe

Stacking the three at one width keeps one array per sentence, like ELMo's; ``layer_widths`` gives
each layer's true width (GloVe's 300 next to the LSTMs' 600). Words are looked up lowercased (as the
model was trained); words outside ``vocab`` get the ``<unk>`` row, the zero vector. ``encode_in_windows``
gives a batch of long sentences the same layers a window of positions at a time
(``MTLSTM.encode_in_windows``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ..mt_text import MTVocab, pad
from .mtlstm import MTLSTM


class CoveLayers(nn.Module):
    def __init__(self, encoder: MTLSTM, source_vectors: torch.Tensor, vocab: Sequence[str]):
        super().__init__()
        if len(vocab) != source_vectors.shape[0]:
            raise ValueError(f"{len(vocab)} vocabulary words but {source_vectors.shape[0]} vector rows")
        if source_vectors.shape[1] != encoder.input_dim:
            raise ValueError(
                f"the word vectors are {source_vectors.shape[1]}-d but the MT-LSTM reads {encoder.input_dim}-d input"
            )
        self.encoder = encoder
        self.register_buffer("source_vectors", source_vectors.float())
        self.vocab = MTVocab(vocab)

    @property
    def layer_widths(self) -> list[int]:
        return [self.encoder.input_dim] + [self.encoder.output_dim] * self.encoder.num_layers

    def word_ids(self, sentences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T) ids of the lowercased words, padded, on this module's device; and the (B,) lengths."""
        ids, lengths = pad([self.vocab.encode([w.lower() for w in sentence]) for sentence in sentences])
        return ids.to(self.source_vectors.device), lengths

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        glove = nn.functional.embedding(ids, self.source_vectors)
        layers = self.encoder(glove, lengths).layers
        padded = nn.functional.pad(glove, (0, self.encoder.output_dim - glove.shape[-1]))
        return torch.stack([padded, *layers], dim=1)

    def encode_in_windows(
        self, sentences: Sequence[Sequence[str]], outputs: Sequence[torch.Tensor], window: int
    ) -> None:
        """Write the layers ``forward`` gives ``sentences`` (none empty) into ``outputs[i]`` (3, len(sentences[i]),
        2H), ``window`` positions of a row at a time: what is held besides ``outputs`` is one window of each row."""
        ids = [self.word_ids([sentence])[0][0] for sentence in sentences]
        width = self.encoder.input_dim

        def glove(row: int, start: int, stop: int) -> torch.Tensor:
            return nn.functional.embedding(ids[row][start:stop], self.source_vectors)

        for row, out in enumerate(outputs):
            out[0, :, width:] = 0
            for start in range(0, out.shape[1], window):
                stop = min(start + window, out.shape[1])
                out[0, start:stop, :width].copy_(glove(row, start, stop))
        self.encoder.encode_in_windows(glove, [out[1:] for out in outputs], window)
