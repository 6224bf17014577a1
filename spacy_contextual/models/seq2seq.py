"""The CoVe translation model: fixed GloVe -> MT-LSTM encoder -> attentional LSTM decoder.

Decoder step t (2-layer LSTM with input feeding, Luong et al. 2015):

    h_t     = LSTM([z_{t-1} ; h~_{t-1}], h_{t-1})
    alpha_t = softmax(H (W1 h_t + b1))            over the unpadded source positions
    c_t     = H^T alpha_t
    h~_t    = [tanh(W2 c_t + b2) ; h_t]            attention_form = "seed"  (context and state side by side)
    h~_t    = tanh(W2 [c_t ; h_t] + b2)            attention_form = "paper" (McCann et al., OpenNMT)
    p(y_t)  = softmax(W_out h~_t + b_out)

Training uses teacher forcing; dropout on every layer's input and output. Decoding is greedy or beam
search scored by log p(y) / lp(y) with the GNMT length penalty lp = ((5 + |y|) / 6)^alpha, where |y|
counts the generated tokens including </s>; alpha = 0 is plain log-probability. Both return the
attention matrix (target steps x source tokens). The decoder state starts from the encoder's final
states through a linear bridge per layer (the paper's decoder is 600 wide and copies them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .mtlstm import MTLSTM

ATTENTION_FORMS = ("paper", "seed")


@dataclass
class Seq2SeqConfig:
    source_vocab_size: int
    target_vocab_size: int
    embedding_dim: int = 300  # GloVe width
    encoder_hidden: int = 300
    encoder_layers: int = 2
    target_embedding_dim: int = 256
    decoder_hidden: int = 256
    decoder_layers: int = 2
    attention_form: str = "paper"
    tie_embeddings: bool = (
        False  # W_out shares the target embedding matrix (needs attentional_dim == target_embedding_dim)
    )
    dropout: float = 0.2
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self):
        if self.attention_form not in ATTENTION_FORMS:
            raise ValueError(f"attention_form must be one of {ATTENTION_FORMS}, got {self.attention_form!r}")
        if self.tie_embeddings and self.attentional_dim != self.target_embedding_dim:
            raise ValueError(
                f"tie_embeddings needs the attentional state ({self.attentional_dim}-d with attention_form="
                f"{self.attention_form!r}) to be as wide as target_embedding_dim ({self.target_embedding_dim})"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Seq2SeqConfig:
        """The inverse of ``to_dict``: every key required (no defaults), no other key."""
        known = {f.name for f in fields(cls)}
        unknown, missing = set(data) - known, known - set(data)
        if unknown or missing:
            raise ValueError(
                f"translation model config: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}"
            )
        return cls(**data)

    @property
    def attentional_dim(self) -> int:
        return self.decoder_hidden * (2 if self.attention_form == "seed" else 1)


@dataclass
class DecoderState:
    hidden: list[torch.Tensor]  # per layer (B, D)
    cell: list[torch.Tensor]
    attentional: torch.Tensor  # h~_{t-1} (B, attentional_dim)


@dataclass
class Translation:
    ids: list[int]  # target ids without <s> and </s>
    attention: torch.Tensor  # (len(ids) + 1, n_source) float32: one row per generated token, </s> included
    score: float  # log p(y), </s> included


class AttentionDecoder(nn.Module):
    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = config
        c = config
        memory_dim = 2 * c.encoder_hidden
        self.embedding = nn.Embedding(c.target_vocab_size, c.target_embedding_dim, padding_idx=c.pad_id)
        self.cells = nn.ModuleList(
            nn.LSTMCell((c.target_embedding_dim + c.attentional_dim) if k == 0 else c.decoder_hidden, c.decoder_hidden)
            for k in range(c.decoder_layers)
        )
        self.bridge_hidden = nn.ModuleList(nn.Linear(memory_dim, c.decoder_hidden) for _ in range(c.decoder_layers))
        self.bridge_cell = nn.ModuleList(nn.Linear(memory_dim, c.decoder_hidden) for _ in range(c.decoder_layers))
        self.query = nn.Linear(c.decoder_hidden, memory_dim)  # W1, b1
        if c.attention_form == "paper":
            self.combine = nn.Linear(memory_dim + c.decoder_hidden, c.decoder_hidden)  # W2 on [c_t ; h_t]
        else:
            self.combine = nn.Linear(memory_dim, c.decoder_hidden)  # W2 on c_t
        self.output = nn.Linear(c.attentional_dim, c.target_vocab_size)  # W_out, b_out
        if c.tie_embeddings:
            self.output.weight = self.embedding.weight
        self.dropout = nn.Dropout(c.dropout)

    def initial_state(self, final_hidden: list[torch.Tensor], final_cell: list[torch.Tensor]) -> DecoderState:
        """Decoder layer k starts from encoder layer k's final [fwd ; bwd] states (last layer reused if deeper)."""
        pick = lambda states, k: states[min(k, len(states) - 1)]  # noqa: E731
        hidden = [torch.tanh(b(pick(final_hidden, k))) for k, b in enumerate(self.bridge_hidden)]
        cell = [b(pick(final_cell, k)) for k, b in enumerate(self.bridge_cell)]
        batch = hidden[0].shape[0]
        attentional = hidden[0].new_zeros(batch, self.config.attentional_dim)
        return DecoderState(hidden, cell, attentional)

    def step(
        self, previous: torch.Tensor, state: DecoderState, memory: torch.Tensor, source_mask: torch.Tensor
    ) -> tuple[torch.Tensor, DecoderState, torch.Tensor]:
        """One target step: previous ids (B,) -> logits (B, V), new state, alpha_t (B, n)."""
        x = torch.cat([self.dropout(self.embedding(previous)), state.attentional], dim=-1)
        hidden, cell = [], []
        for k, lstm in enumerate(self.cells):
            h, c = lstm(x, (state.hidden[k], state.cell[k]))
            hidden.append(h)
            cell.append(c)
            x = self.dropout(h)
        h_top = hidden[-1]
        scores = torch.bmm(memory, self.query(h_top).unsqueeze(-1)).squeeze(-1)  # H (W1 h_t + b1)
        alpha = torch.softmax(scores.masked_fill(~source_mask, float("-inf")), dim=-1)
        context = torch.bmm(alpha.unsqueeze(1), memory).squeeze(1)  # H^T alpha_t
        if self.config.attention_form == "paper":
            attentional = torch.tanh(self.combine(torch.cat([context, h_top], dim=-1)))
        else:
            attentional = torch.cat([torch.tanh(self.combine(context)), h_top], dim=-1)
        logits = self.output(self.dropout(attentional))
        return logits, DecoderState(hidden, cell, attentional), alpha


class Translator(nn.Module):
    """Fixed source embedding table (GloVe rows; a buffer, never trained) + MT-LSTM + decoder."""

    def __init__(self, config: Seq2SeqConfig, source_vectors: torch.Tensor | None = None):
        super().__init__()
        self.config = config
        if source_vectors is None:
            source_vectors = torch.zeros(config.source_vocab_size, config.embedding_dim)
        if tuple(source_vectors.shape) != (config.source_vocab_size, config.embedding_dim):
            raise ValueError(
                f"source vectors have shape {tuple(source_vectors.shape)}, the config says "
                f"({config.source_vocab_size}, {config.embedding_dim})"
            )
        self.register_buffer("source_vectors", source_vectors.float().clone())
        self.encoder = MTLSTM(config.embedding_dim, config.encoder_hidden, config.encoder_layers, config.dropout)
        self.decoder = AttentionDecoder(config)
        self.dropout = nn.Dropout(config.dropout)

    def encode(self, source: torch.Tensor, lengths: torch.Tensor):
        """source ids (B, n) -> (MTLSTMOutput, memory H (B, n, 600) after dropout, mask (B, n))."""
        encoded = self.encoder(F.embedding(source, self.source_vectors), lengths)
        mask = torch.arange(source.shape[1], device=source.device)[None, :] < lengths.to(source.device)[:, None]
        return encoded, self.dropout(encoded.layers[-1]), mask

    def forward(
        self, source: torch.Tensor, lengths: torch.Tensor, target_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher forcing: target_in (B, m) starts with <s>; returns logits (B, m, V) and alpha (B, m, n)."""
        encoded, memory, mask = self.encode(source, lengths)
        state = self.decoder.initial_state(encoded.final_hidden, encoded.final_cell)
        logits, alphas = [], []
        for t in range(target_in.shape[1]):
            step_logits, state, alpha = self.decoder.step(target_in[:, t], state, memory, mask)
            logits.append(step_logits)
            alphas.append(alpha)
        return torch.stack(logits, 1), torch.stack(alphas, 1)

    def loss(self, source: torch.Tensor, lengths: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Summed cross-entropy of target[:, 1:] given target[:, :-1] (padding ignored), and the token count."""
        logits, _ = self(source, lengths, target[:, :-1])
        gold = target[:, 1:]
        total = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), gold.reshape(-1), ignore_index=self.config.pad_id, reduction="sum"
        )
        return total, int((gold != self.config.pad_id).sum())

    @torch.no_grad()
    def greedy(self, source: torch.Tensor, lengths: torch.Tensor, max_length: int = 100) -> list[Translation]:
        """Batched argmax decoding until every row has produced </s> or max_length tokens."""
        encoded, memory, mask = self.encode(source, lengths)
        state = self.decoder.initial_state(encoded.final_hidden, encoded.final_cell)
        batch = source.shape[0]
        previous = torch.full((batch,), self.config.bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        tokens, alphas, scores = [], [], torch.zeros(batch, device=source.device)
        for _ in range(max_length):
            logits, state, alpha = self.decoder.step(previous, state, memory, mask)
            log_probs = torch.log_softmax(logits, dim=-1)
            best = log_probs.argmax(-1)
            scores += torch.where(done, torch.zeros_like(scores), log_probs.gather(1, best[:, None]).squeeze(1))
            tokens.append(best)
            alphas.append(alpha)
            done |= best == self.config.eos_id
            previous = best
            if bool(done.all()):
                break
        token_matrix, alpha_tensor = torch.stack(tokens, 1), torch.stack(alphas, 1)
        out = []
        for row in range(batch):
            ids = token_matrix[row].tolist()
            steps = ids.index(self.config.eos_id) + 1 if self.config.eos_id in ids else len(ids)
            out.append(
                Translation(
                    ids[: steps - 1] if ids[steps - 1] == self.config.eos_id else ids[:steps],
                    alpha_tensor[row, :steps, : int(lengths[row])].float().cpu(),
                    float(scores[row]),
                )
            )
        return out

    @torch.no_grad()
    def beam_search(
        self, source: torch.Tensor, length: int, beam: int = 5, alpha: float = 0.6, max_length: int = 100
    ) -> Translation:
        """Beam search for one sentence (source (1, n)); finished hypotheses ranked by log p / lp.

        Search stops once ``beam`` hypotheses have finished or after ``max_length`` steps (then the
        live hypotheses count as finished)."""
        lengths = torch.tensor([length])
        encoded, memory, mask = self.encode(source, lengths)
        state = self.decoder.initial_state(encoded.final_hidden, encoded.final_cell)
        live_tokens: list[list[int]] = [[]]
        live_alphas: list[list[torch.Tensor]] = [[]]
        live_scores = torch.zeros(1, device=source.device)
        previous = torch.tensor([self.config.bos_id], device=source.device)
        finished: list[tuple[float, Translation]] = []
        for step in range(max_length):
            width = len(live_tokens)
            logits, state, attention = self.decoder.step(
                previous, state, memory.expand(width, -1, -1), mask.expand(width, -1)
            )
            candidates = (live_scores[:, None] + torch.log_softmax(logits, dim=-1)).reshape(-1)
            top_scores, top_index = candidates.topk(min(beam, candidates.numel()))
            vocab = logits.shape[-1]
            keep, next_tokens, next_alphas, next_scores, next_ids = [], [], [], [], []
            for score, index in zip(top_scores.tolist(), top_index.tolist(), strict=True):
                origin, token = divmod(index, vocab)
                tokens = live_tokens[origin] + [token]
                alphas = live_alphas[origin] + [attention[origin]]
                if token == self.config.eos_id or step == max_length - 1:
                    translation = Translation(
                        tokens[:-1] if token == self.config.eos_id else tokens, torch.stack(alphas).float().cpu(), score
                    )
                    finished.append((score / length_penalty(len(tokens), alpha), translation))
                else:
                    keep.append(origin)
                    next_tokens.append(tokens)
                    next_alphas.append(alphas)
                    next_scores.append(score)
                    next_ids.append(token)
            if len(finished) >= beam or not keep:
                break
            index = torch.tensor(keep, device=source.device)
            state = DecoderState(
                [h[index] for h in state.hidden], [c[index] for c in state.cell], state.attentional[index]
            )
            live_tokens, live_alphas = next_tokens, next_alphas
            live_scores = torch.tensor(next_scores, device=source.device)
            previous = torch.tensor(next_ids, device=source.device)
        return max(finished, key=lambda pair: pair[0])[1]


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + |y|) / 6) ** alpha."""
    return ((5.0 + length) / 6.0) ** alpha
