"""The CoVe encoder (McCann et al. 2017): H = MT-LSTM(GloVe(w)).

A stacked bidirectional LSTM over fixed 300-d GloVe vectors:

    CoVe-1 = [LSTM_fwd^1(x) ; LSTM_bwd^1(x)]          (n x 600)
    CoVe-2 = [LSTM_fwd^2(CoVe-1) ; LSTM_bwd^2(CoVe-1)] (n x 600)

It is a ``nn.LSTM(300, 300, num_layers=2, bidirectional=True)`` split into one module per layer so
that both layers' outputs are available; ``load_published_state_dict`` / ``published_state_dict``
translate to and from the 16-key layout of the salesforce ``wmtlstm-*.pth`` file (PyTorch gate
order i|f|g|o). Padded positions of every output are zero.

Under autocast the LSTMs run in the autocast dtype, as cuDNN's do on CUDA. On the CPU, torch hands an
autocast LSTM to oneDNN, which fails on processors without bf16 instructions, so there the layer is
run on weights and inputs cast to that dtype instead (the same arithmetic, torch's own CPU kernel).

``encode_in_windows`` gives a batch of long sentences the same outputs a window of positions at a time
(``windows.py``): each direction of a layer runs on its own (``run_direction``, the layer's forward or
reverse weights), the forward one over each row's windows left to right and the backward one over
them from the row's end leftwards (each reversed), carrying (h, c) from window to window. The second
layer reads the first one's finished output, so the first layer is run over the whole sentences first:
what is held besides the outputs is one window of each row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pack_sequence, pad_packed_sequence

from .windows import batch_windows, replace_rows, select_rows

PUBLISHED_SUFFIXES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


@dataclass
class MTLSTMOutput:
    layers: list[torch.Tensor]  # per layer (B, T, 2 * hidden), zero past each length
    final_hidden: list[torch.Tensor]  # per layer (B, 2 * hidden): [h_fwd_last ; h_bwd_first]
    final_cell: list[torch.Tensor]  # per layer (B, 2 * hidden)


class MTLSTM(nn.Module):
    def __init__(self, input_dim: int = 300, hidden_dim: int = 300, num_layers: int = 2, dropout: float = 0.0):
        super().__init__()
        self.input_dim, self.hidden_dim, self.num_layers = input_dim, hidden_dim, num_layers
        self.layers = nn.ModuleList(
            nn.LSTM(input_dim if k == 0 else 2 * hidden_dim, hidden_dim, batch_first=True, bidirectional=True)
            for k in range(num_layers)
        )
        self.dropout = nn.Dropout(dropout)

    @property
    def output_dim(self) -> int:
        return 2 * self.hidden_dim

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> MTLSTMOutput:
        """inputs (B, T, input_dim), lengths (B,) -> every layer's (B, T, 2H) output and final states.

        Dropout (training only) is applied to each layer's input."""
        total = inputs.shape[1]
        packed_lengths = lengths.cpu()
        layers, hiddens, cells = [], [], []
        x = inputs
        for lstm in self.layers:
            packed = pack_padded_sequence(self.dropout(x), packed_lengths, batch_first=True, enforce_sorted=False)
            out, (h, c) = run_lstm(lstm, packed)
            x, _ = pad_packed_sequence(out, batch_first=True, total_length=total)
            layers.append(x)
            hiddens.append(torch.cat([h[0], h[1]], dim=-1))
            cells.append(torch.cat([c[0], c[1]], dim=-1))
        return MTLSTMOutput(layers, hiddens, cells)

    def encode_in_windows(
        self, inputs: Callable[[int, int, int], torch.Tensor], outputs: Sequence[torch.Tensor], window: int
    ) -> None:
        """Each sentence's layers written into ``outputs[i]`` (num_layers, n_i, 2H), ``window`` positions of a
        row at a time; ``inputs(i, start, stop)`` gives sentence i's input rows (stop - start, input_dim) at
        positions [start, stop), and every sentence has at least one. The values ``forward`` gives the
        batch (in eval mode, where dropout does nothing)."""
        lengths, H = [out.shape[1] for out in outputs], self.hidden_dim
        for k, lstm in enumerate(self.layers):
            device = lstm.weight_ih_l0.device
            for direction in (0, 1):
                reverse, state = direction == 1, None  # state: (h, c), each (1, rows, H)
                for active, spans in batch_windows(lengths, window, right_to_left=reverse):
                    pieces = [
                        (inputs(row, start, stop) if k == 0 else outputs[row][k - 1, start:stop]).to(device)
                        for row, (start, stop) in zip(active, spans, strict=True)
                    ]
                    packed = pack_sequence([p.flip(0) if reverse else p for p in pieces], enforce_sorted=False)
                    carried = None if state is None else tuple(select_rows(state, active, dim=1))
                    y, ended = run_direction(lstm, packed, carried, reverse)
                    state = list(ended) if state is None else replace_rows(state, active, ended, dim=1)
                    y, _ = pad_packed_sequence(y, batch_first=True)
                    for index, (row, (start, stop)) in enumerate(zip(active, spans, strict=True)):
                        values = y[index, : stop - start]
                        target = outputs[row][k, start:stop, direction * H : (direction + 1) * H]
                        target.copy_(values.flip(0) if reverse else values)  # to the outputs' device and dtype

    def load_published_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Load an ``nn.LSTM(num_layers=2, bidirectional=True)`` state dict (``weight_ih_l1_reverse`` ...)."""
        mapped = {}
        for key, value in state.items():
            name, _, rest = key.rpartition("_l")
            layer, _, reverse = rest.partition("_")
            mapped[f"layers.{layer}.{name}_l0{'_' + reverse if reverse else ''}"] = value
        self.load_state_dict(mapped)

    def published_state_dict(self) -> dict[str, torch.Tensor]:
        """This encoder's weights under the ``nn.LSTM(num_layers=2, bidirectional=True)`` key names."""
        out = {}
        for layer, lstm in enumerate(self.layers):
            for key, value in lstm.state_dict().items():
                out[key.replace("_l0", f"_l{layer}")] = value
        return out


def run_direction(
    lstm: nn.LSTM, inputs: PackedSequence, state: tuple[torch.Tensor, torch.Tensor] | None, reverse: bool
) -> tuple[PackedSequence, tuple[torch.Tensor, torch.Tensor]]:
    """One direction of a one-layer bidirectional ``lstm`` over packed ``inputs`` in the order given (the
    backward direction is given each row reversed), from ``state`` ((1, B, H) h and c, rows in the
    batch's order; None: zero): its outputs and final state. It runs as a one-direction LSTM over that
    direction's weights."""
    suffix = "_reverse" if reverse else ""
    weights = {f"{name}_l0": getattr(lstm, f"{name}_l0{suffix}") for name in PUBLISHED_SUFFIXES}
    one_direction = nn.LSTM(lstm.input_size, lstm.hidden_size, batch_first=True, device="meta")  # no memory
    return run_lstm(one_direction, inputs, state, weights)


def run_lstm(
    lstm: nn.LSTM,
    inputs: torch.Tensor | PackedSequence,
    state: tuple[torch.Tensor, torch.Tensor] | None = None,
    weights: dict[str, torch.Tensor] | None = None,
) -> tuple[torch.Tensor | PackedSequence, tuple[torch.Tensor, torch.Tensor]]:
    """``lstm(inputs, state)``, with ``weights`` in place of its own parameters when given; under CPU
    autocast, on weights, inputs and state cast to the autocast dtype."""
    data = inputs.data if isinstance(inputs, PackedSequence) else inputs
    if data.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        dtype = torch.get_autocast_dtype("cpu")
        with torch.autocast("cpu", enabled=False):
            own = dict(lstm.named_parameters()) if weights is None else weights
            cast = {name: weight.to(dtype) for name, weight in own.items()}
            state = None if state is None else (state[0].to(dtype), state[1].to(dtype))
            return functional_call(lstm, cast, (inputs.to(dtype), state))
    if weights is None:
        return lstm(inputs, state)
    return functional_call(lstm, weights, (inputs, state))
