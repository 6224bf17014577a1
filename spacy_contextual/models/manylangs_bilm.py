"""The ELMoForManyLangs (HIT-SCIR) biLM: ``bilm.BiLM`` with that project's token embedder and cells.

The same equations as bilm-tf's biLM (``bilm.py``: L stacked projected LSTMs per direction, residual
from layer 1 on, the backward direction over each sentence's own length, activations
``[x_k; x_k]`` and ``[fwd_{k,j}; bwd_{k,j}]``), with these differences:

* x_k comes from ``manylangs_embedder.ManyLangsTokenEmbedder`` (word embedding and/or char CNN over
  the ids of ``manylangs_ids.py``), and the boundaries are the tokens ``<bos>`` / ``<eos>``;
* the cells have no +1 forget bias and always a projection (AllenNLP's ``LstmCellWithProjection``);
  the loader reorders the original's gates i, f, g, o into ``lstm.py``'s i, j, f, o.

Stateful (``stateful=True``), the original's behaviour: each batch's sentences are run longest first
(a stable sort, as its batches are) and LSTM row r starts from the state that row r of the previous
batch ended with (``state_rows``: the sentence of rank r continues carried row r).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .bilm import BiLM, BiLMOutput
from .lstm import ProjectedLSTM
from .manylangs_embedder import ManyLangsTokenEmbedder
from .manylangs_ids import Lexicons


@dataclass
class ManyLangsConfig:
    """The architecture JSON's ``encoder`` and ``token_embedder`` sections, and the dictionaries."""

    projection_dim: int
    lstm_dim: int
    n_layers: int
    cell_clip: float | None
    proj_clip: float | None
    word_dim: int
    char_dim: int
    filters: list
    n_highway: int
    activation: str
    max_characters_per_token: int
    words: dict[str, int] | None
    chars: dict[str, int] | None

    use_skip_connections = True

    @property
    def output_dim(self) -> int:
        return 2 * self.projection_dim

    @property
    def num_layers(self) -> int:
        return self.n_layers + 1

    @property
    def lexicons(self) -> Lexicons:
        return Lexicons(self.words, self.chars, self.max_characters_per_token)

    def architecture(self) -> dict[str, Any]:
        """Everything but the dictionaries."""
        return {k: v for k, v in asdict(self).items() if k not in ("words", "chars")}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ManyLangsBiLM(BiLM):
    config: ManyLangsConfig

    def build_token_encoder(self) -> ManyLangsTokenEmbedder:
        c = self.config
        return ManyLangsTokenEmbedder(
            c.lexicons, c.word_dim, c.char_dim, c.filters, c.n_highway, c.activation, c.projection_dim
        )

    def build_lstm(self) -> ProjectedLSTM:
        c = self.config
        return ProjectedLSTM(
            c.projection_dim,
            c.lstm_dim,
            c.projection_dim,
            c.cell_clip,
            c.proj_clip,
            forget_bias=0.0,
            always_project=True,
        )

    def forward(self, sentences: Sequence[Sequence[str]]) -> BiLMOutput:
        """Token strings in (the ids need the dictionaries): the same as ``encode_sentences``."""
        return self.encode_sentences(sentences)

    def state_rows(self, sentences: Sequence[Sequence[str]]) -> list[int]:
        """Stateful, the original's batches run longest first: sentence i continues the row of its rank
        in a stable sort by decreasing length."""
        order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
        rows = [0] * len(sentences)
        for row, index in enumerate(order):
            rows[index] = row
        return rows
