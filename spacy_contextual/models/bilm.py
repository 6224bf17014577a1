"""The ELMo bidirectional language model (Peters et al. 2018), bilm-tf/AllenNLP compatible.

For a sentence t_1..t_N with boundaries <S> t_1..t_N </S>:

    x_k           = CharCNN(t_k)                                   layer 0 (context independent)
    fwd_{k,1..L}  = L stacked forward  ProjectedLSTMs over x_1..x_N (left to right)
    bwd_{k,1..L}  = L stacked backward ProjectedLSTMs over x_N..x_1 (right to left)
    residual      : for layers j >= 1 (0-based), out_j = lstm_j(out_{j-1}) + out_{j-1}

The returned activations are ``h_{k,0} = [x_k; x_k]`` and ``h_{k,j} = [fwd_{k,j}; bwd_{k,j}]``
(2P wide), all with the boundary positions kept. The two directions never mix between layers.

Stateless (default): every call starts from zero state. ``stateful=True`` carries (h, c) of every
layer and direction from call to call per batch row, exactly as bilm-tf and AllenNLP do; the carried
state moves with the module (``.to(device)``). Sentence i of a batch continues carried row
``state_rows(sentences)[i]`` (row i here; a subclass may order them otherwise); ``carried_states`` and
``carry_states`` read and keep them for a caller that runs the stacks itself (``bilm_windows.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import torch
from torch import nn

from .char_cnn import CharCNN
from .chars import MAX_CHARACTERS_PER_TOKEN, N_CHARACTERS, add_sentence_boundaries
from .lstm import ProjectedLSTM, State
from .token_cache import TokenVectorCache


@dataclass
class BiLMConfig:
    """The architecture; mirrors bilm-tf's ``options.json`` (see ``from_options``)."""

    char_embedding_dim: int = 16
    filters: list = field(default_factory=lambda: [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]])
    n_highway: int = 1
    activation: str = "relu"
    n_characters: int = N_CHARACTERS
    lstm_dim: int = 1024
    projection_dim: int = 128
    n_layers: int = 2
    cell_clip: float | None = 3.0
    proj_clip: float | None = 3.0
    use_skip_connections: bool = True

    @property
    def n_filters(self) -> int:
        return sum(num for _, num in self.filters)

    @property
    def output_dim(self) -> int:
        return 2 * self.projection_dim

    @property
    def num_layers(self) -> int:
        """Number of returned activation layers (token layer + LSTM layers)."""
        return self.n_layers + 1

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> BiLMConfig:
        """Read a bilm-tf ``options.json`` dict; raises ``ValueError`` naming a missing key."""
        try:
            cnn, lstm = options["char_cnn"], options["lstm"]
            config = cls(
                char_embedding_dim=int(cnn["embedding"]["dim"]),
                filters=[[int(w), int(n)] for w, n in cnn["filters"]],
                n_highway=int(cnn.get("n_highway") or 0),
                activation=cnn.get("activation", "relu"),
                n_characters=N_CHARACTERS,
                lstm_dim=int(lstm["dim"]),
                projection_dim=int(lstm.get("projection_dim") or lstm["dim"]),
                n_layers=int(lstm["n_layers"]),
                cell_clip=lstm.get("cell_clip") or None,
                proj_clip=lstm.get("proj_clip") or None,
                use_skip_connections=bool(lstm.get("use_skip_connections", False)),
            )
        except KeyError as err:
            raise ValueError(
                f"options.json is missing the key {err.args[0]!r}; a bilm-tf options.json has char_cnn "
                "(embedding.dim, filters, n_highway, activation) and lstm (dim, projection_dim, n_layers, "
                "cell_clip, proj_clip, use_skip_connections)"
            ) from None
        max_chars = cnn.get("max_characters_per_token", MAX_CHARACTERS_PER_TOKEN)
        if max_chars != MAX_CHARACTERS_PER_TOKEN:
            raise ValueError(f"char_cnn.max_characters_per_token must be 50 (the ELMo char ids), got {max_chars}")
        return config

    def to_options(self) -> dict[str, Any]:
        """bilm-tf ``options.json`` for this architecture."""
        return {
            "bidirectional": True,
            "char_cnn": {
                "activation": self.activation,
                "embedding": {"dim": self.char_embedding_dim},
                "filters": [list(f) for f in self.filters],
                "max_characters_per_token": MAX_CHARACTERS_PER_TOKEN,
                "n_characters": N_CHARACTERS,
                "n_highway": self.n_highway,
            },
            "lstm": {
                "cell_clip": self.cell_clip or 0,
                "dim": self.lstm_dim,
                "n_layers": self.n_layers,
                "proj_clip": self.proj_clip or 0,
                "projection_dim": self.projection_dim,
                "use_skip_connections": self.use_skip_connections,
            },
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BiLMConfig:
        """The inverse of ``to_dict``: every key required (no defaults), no other key."""
        known = set(cls.__dataclass_fields__)
        unknown, missing = set(data) - known, known - set(data)
        if unknown or missing:
            raise ValueError(f"biLM config: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
        return cls(**data)


class BiLMOutput(NamedTuple):
    activations: list[torch.Tensor]  # num_layers x (B, T+2, 2P), boundaries kept, zero at padding
    mask: torch.Tensor  # (B, T+2) bool, True at <S>, tokens and </S>


class BiLM(nn.Module):
    def __init__(self, config: BiLMConfig, stateful: bool = False, dropout: float = 0.0):
        super().__init__()
        self.config = config
        self.stateful = stateful
        self.dropout = nn.Dropout(dropout)
        self.token_encoder = self.build_token_encoder()
        self.forward_layers = nn.ModuleList(self.build_lstm() for _ in range(config.n_layers))
        self.backward_layers = nn.ModuleList(self.build_lstm() for _ in range(config.n_layers))
        # the carried state (stateful): buffers, so that .to() takes them along; never saved with the weights
        self.register_buffer("carried_h", None, persistent=False)  # (L, rows, 2P)
        self.register_buffer("carried_c", None, persistent=False)  # (L, rows, 2D)

    def build_token_encoder(self) -> nn.Module:
        """x_k of a token: bilm-tf's char CNN."""
        c = self.config
        return CharCNN(c.char_embedding_dim, c.filters, c.n_highway, c.projection_dim, c.activation, c.n_characters)

    def build_lstm(self) -> ProjectedLSTM:
        """One direction of one layer: bilm-tf's projected LSTM (+1 forget bias, W_P only when P < dim)."""
        c = self.config
        return ProjectedLSTM(c.projection_dim, c.lstm_dim, c.projection_dim, c.cell_clip, c.proj_clip)

    @property
    def num_layers(self) -> int:
        return self.config.num_layers

    @property
    def output_dim(self) -> int:
        return self.config.output_dim

    # -- forward --------------------------------------------------------------------------------

    def forward(self, char_ids: torch.Tensor) -> BiLMOutput:
        """``char_ids`` (B, T, 50) without boundaries (``batch_to_ids``; AllenNLP's ``_ElmoBiLm`` input):
        the char CNN runs on every position."""
        ids, mask = add_sentence_boundaries(char_ids)
        return self.encode(self.token_encoder(ids), mask)

    def encode_sentences(
        self, sentences: Sequence[Sequence[str]], token_cache: TokenVectorCache | None = None
    ) -> BiLMOutput:
        """The biLM over tokenised sentences (boundaries added); the char CNN runs once per distinct
        word, through ``token_cache`` when given (kept across calls while no gradient flows). Stateful,
        sentence i continues carried row ``state_rows(sentences)[i]``."""
        cache = TokenVectorCache(0) if token_cache is None else token_cache
        return self.encode(*cache.token_vectors(self.token_encoder, sentences), rows=self.state_rows(sentences))

    def encode(self, tokens: torch.Tensor, mask: torch.Tensor, rows: Sequence[int] | None = None) -> BiLMOutput:
        """Run the LSTM stacks over token vectors ``(B, T+2, P)`` (boundaries included); batch row b
        continues carried row ``rows[b]`` (stateful; default b)."""
        tokens = tokens * mask.unsqueeze(-1).to(tokens.dtype)
        lengths = mask.sum(-1)
        rows = range(tokens.shape[0]) if rows is None else rows
        fwd_states, bwd_states = self.carried_states(rows, tokens)
        fwd_outs, fwd_finals = self.run_direction(self.forward_layers, tokens, lengths, fwd_states)
        bwd_outs, bwd_finals = self.run_direction(
            self.backward_layers, reverse_padded(tokens, lengths), lengths, bwd_states
        )
        activations = [torch.cat([tokens, tokens], dim=-1)]
        activations += [
            torch.cat([f, reverse_padded(b, lengths)], dim=-1) for f, b in zip(fwd_outs, bwd_outs, strict=True)
        ]
        self.carry_states(rows, fwd_finals, bwd_finals)
        return BiLMOutput(activations, mask)

    def run_direction(
        self,
        layers: nn.ModuleList,
        inputs: torch.Tensor,
        lengths: torch.Tensor,
        states: Sequence[State] | None = None,
    ) -> tuple[list[torch.Tensor], list[State]]:
        """One direction's stacked LSTMs over ``inputs`` (B, T, P) in the order given (the backward
        stack is given the tokens reversed): out_j = lstm_j(out_{j-1}) (+ out_{j-1} for j >= 1 with
        skip connections). Returns every layer's outputs and final (h, c)."""
        outputs, finals = [], []
        for index, layer in enumerate(layers):
            out, final = layer(self.dropout(inputs), lengths, None if states is None else states[index])
            if index > 0 and self.config.use_skip_connections:
                out = out + inputs
            outputs.append(out)
            finals.append(final)
            inputs = out
        return outputs, finals

    # -- statefulness (AllenNLP ``_EncoderBase`` row semantics) ---------------------------------

    def reset_states(self) -> None:
        self.carried_h = self.carried_c = None

    @property
    def states(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Carried (h (L, rows, 2P), c (L, rows, 2D)), last axis [forward | backward]; None if reset."""
        return None if self.carried_h is None else (self.carried_h, self.carried_c)

    def state_rows(self, sentences: Sequence[Sequence[str]]) -> list[int]:
        """The carried row each sentence of a batch continues: row i for sentence i."""
        return list(range(len(sentences)))

    def carried_states(
        self, rows: Sequence[int], like: torch.Tensor
    ) -> tuple[list[State], list[State]] | tuple[None, None]:
        """Each layer's initial (h, c) of the forward and of the backward stack for batch rows continuing
        carried ``rows`` (h in ``like``'s dtype, c in the cells'); (None, None), zero state, when not
        stateful or nothing is carried yet."""
        if not self.stateful or self.carried_h is None:
            return None, None
        self._grow_states(max(rows) + 1)
        index = torch.tensor(list(rows), device=self.carried_h.device)
        h, c = self.carried_h.index_select(1, index).to(like.dtype), self.carried_c.index_select(1, index)
        P, D = self.config.projection_dim, self.config.lstm_dim
        layers = range(self.config.n_layers)
        return [(h[j, :, :P], c[j, :, :D]) for j in layers], [(h[j, :, P:], c[j, :, D:]) for j in layers]

    def carry_states(self, rows: Sequence[int], forward: Sequence[State], backward: Sequence[State]) -> None:
        """Stateful: keep each layer's final (h, c) of both stacks as carried ``rows``. h stays in the
        weights' dtype (autocast may have lowered it) and c in the cells' (float32 under bf16/fp16 weights).
        AllenNLP keeps the old state of a row whose new state is all zero (a row that never ran)."""
        if not self.stateful:
            return
        dtype = self.forward_layers[0].state_linearity.weight.dtype
        new_h = torch.stack([torch.cat([f[0], b[0]], -1) for f, b in zip(forward, backward, strict=True)])
        new_c = torch.stack([torch.cat([f[1], b[1]], -1) for f, b in zip(forward, backward, strict=True)])
        new_h, new_c = new_h.detach().to(dtype), new_c.detach().to(torch.promote_types(dtype, torch.float32))
        index = torch.tensor(list(rows), device=new_h.device)
        if self.carried_h is None:
            size = max(rows) + 1
            self.carried_h = new_h.new_zeros(new_h.shape[0], size, new_h.shape[2])
            self.carried_c = new_c.new_zeros(new_c.shape[0], size, new_c.shape[2])
            self.carried_h[:, index], self.carried_c[:, index] = new_h, new_c
            return
        self._grow_states(max(rows) + 1)
        h, c = self.carried_h.clone(), self.carried_c.clone()
        used = (new_h[0].sum(-1) != 0).view(1, len(index), 1)
        h[:, index] = torch.where(used, new_h, h[:, index])
        c[:, index] = torch.where(used, new_c, c[:, index])
        self.carried_h, self.carried_c = h, c

    def _grow_states(self, size: int) -> None:
        """Carried rows up to ``size``, the new ones zero (AllenNLP grows its state to the largest batch)."""
        h, c = self.carried_h, self.carried_c
        if h.shape[1] < size:
            grow = size - h.shape[1]
            self.carried_h = torch.cat([h, h.new_zeros(h.shape[0], grow, h.shape[2])], 1)
            self.carried_c = torch.cat([c, c.new_zeros(c.shape[0], grow, c.shape[2])], 1)


def reverse_padded(tensor: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each row of ``(B, T, ...)`` within its own length; padding stays in place. Whole positions
    are moved (``index_select`` of the B*T positions, not an element-wise ``gather``)."""
    batch, steps = tensor.shape[:2]
    positions = torch.arange(steps, device=tensor.device)[None, :]
    index = torch.where(positions < lengths[:, None], lengths[:, None] - 1 - positions, positions)
    index = index + steps * torch.arange(batch, device=tensor.device)[:, None]
    positions_first = tensor.reshape(batch * steps, math.prod(tensor.shape[2:]))
    return positions_first.index_select(0, index.view(-1)).view(tensor.shape)
