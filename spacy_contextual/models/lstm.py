"""One direction of one ELMo LSTM layer: an LSTM cell with a projection and clipping (the hot loop).

With x_t the layer input and (h_{t-1}, c_{t-1}) the carried state, in bilm-tf's gate order i, j, f, o:

    [i; j; f; o] = W_x x_t + W_h h_{t-1} + b
    c_t = clip(sigmoid(f + forget_bias) * c_{t-1} + sigmoid(i) * tanh(j), +-cell_clip)
    h_t = clip(W_P (sigmoid(o) * tanh(c_t)), +-proj_clip)

``W_x x_t`` is computed for all steps in one matrix product; the loop runs only over the rows that
are still inside their sentence (rows are sorted by length, so the active batch shrinks).
"""

from __future__ import annotations

import torch
from torch import nn

State = tuple[torch.Tensor, torch.Tensor]  # (h (B, P), c (B, D))


class ProjectedLSTM(nn.Module):
    def __init__(
        self,
        input_dim: int,
        cell_dim: int,
        projection_dim: int,
        cell_clip: float | None = None,
        proj_clip: float | None = None,
        forget_bias: float = 1.0,
    ):
        super().__init__()
        if projection_dim > cell_dim:
            raise ValueError(f"projection_dim ({projection_dim}) must not exceed the LSTM dim ({cell_dim})")
        self.input_dim, self.cell_dim, self.projection_dim = input_dim, cell_dim, projection_dim
        self.cell_clip = cell_clip or None
        self.proj_clip = proj_clip or None
        self.forget_bias = forget_bias
        self.input_linearity = nn.Linear(input_dim, 4 * cell_dim, bias=False)
        self.state_linearity = nn.Linear(projection_dim, 4 * cell_dim, bias=True)
        self.state_projection = nn.Linear(cell_dim, projection_dim, bias=False) if projection_dim < cell_dim else None

    def zero_state(self, batch: int, like: torch.Tensor) -> State:
        return like.new_zeros(batch, self.projection_dim), like.new_zeros(batch, self.cell_dim)

    def _gate_bias(self) -> torch.Tensor:
        bias = self.state_linearity.bias
        if not self.forget_bias:
            return bias
        offset = torch.zeros_like(bias)
        offset[2 * self.cell_dim : 3 * self.cell_dim] = self.forget_bias
        return bias + offset

    def forward(
        self, inputs: torch.Tensor, lengths: torch.Tensor, state: State | None = None
    ) -> tuple[torch.Tensor, State]:
        """inputs (B, T, input_dim) right-padded, lengths (B,) -> outputs (B, T, P) zero past each
        length, and the final state of each row (the state after its last valid step)."""
        batch, steps, _ = inputs.shape
        if state is None:
            state = self.zero_state(batch, inputs)
        sorted_lengths, order = lengths.sort(descending=True)
        restore = torch.empty_like(order)
        restore[order] = torch.arange(batch, device=order.device)
        # W_x x_t + b for every step at once: (B, T, 4D)
        inputs_w = nn.functional.linear(inputs.index_select(0, order), self.input_linearity.weight, self._gate_bias())
        h, c = state[0].index_select(0, order), state[1].index_select(0, order)
        w_h = self.state_linearity.weight.t()
        w_p = self.state_projection.weight.t() if self.state_projection is not None else None
        D = self.cell_dim
        active_rows = (sorted_lengths[None, :] > torch.arange(steps, device=lengths.device)[:, None]).sum(1).tolist()
        max_len = int(sorted_lengths[0]) if batch else 0

        finished_h: list[torch.Tensor] = []
        finished_c: list[torch.Tensor] = []
        outputs: list[torch.Tensor] = []
        for t in range(max_len):
            rows = active_rows[t]
            if rows < h.shape[0]:
                finished_h.append(h[rows:])
                finished_c.append(c[rows:])
                h, c = h[:rows], c[:rows]
            z = torch.addmm(inputs_w[:rows, t], h, w_h)
            i = torch.sigmoid(z[:, :D])
            j = torch.tanh(z[:, D : 2 * D])
            f = torch.sigmoid(z[:, 2 * D : 3 * D])
            o = torch.sigmoid(z[:, 3 * D :])
            c = f * c + i * j
            if self.cell_clip is not None:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            h = o * torch.tanh(c)
            if w_p is not None:
                h = h.mm(w_p)
            if self.proj_clip is not None:
                h = h.clamp(-self.proj_clip, self.proj_clip)
            outputs.append(nn.functional.pad(h, (0, 0, 0, batch - rows)) if rows < batch else h)
        finished_h.append(h)
        finished_c.append(c)

        if outputs:
            out = torch.stack(outputs, dim=1)
            if max_len < steps:
                out = nn.functional.pad(out, (0, 0, 0, steps - max_len))
        else:
            out = inputs.new_zeros(batch, steps, self.projection_dim)
        final_h = torch.cat(finished_h[::-1], 0)
        final_c = torch.cat(finished_c[::-1], 0)
        return out.index_select(0, restore), (final_h.index_select(0, restore), final_c.index_select(0, restore))
