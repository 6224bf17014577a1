"""One direction of one ELMo LSTM layer: an LSTM cell with a projection and clipping.

With x_t the layer input and (h_{t-1}, c_{t-1}) the carried state, in bilm-tf's gate order i, j, f, o:

    [i; j; f; o] = W_x x_t + W_h h_{t-1} + b              (+ forget_bias on f)
    c_t = clip(sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(j), +-cell_clip)
    h_t = clip(W_P (sigmoid(o) * tanh(c_t)), +-proj_clip)

``ProjectedLSTM.forward`` is these equations, step by step, differentiable: the reference. Rows run
longest first, transposed, in the shapes of ``lstm_steps.StepPlan``; sigmoid(f) and sigmoid(o) are one
call, as in the engine (an element-wise kernel rounds its last partial vector in scalar code, so the
grouping decides which elements those are). Without autograd and autocast
(inference) the same computation runs in ``lstm_inference.py``, the engine: in place, in reused
buffers, with the fused cell step on the CPU; in float32 its outputs equal the reference's bit for bit
when the fused cell is off, and are within float32 rounding of them when it is on. The weights may be
cast to bf16/fp16 (``precision.py``); the gates and the cell state then stay float32, h is rounded to
the weights' dtype where it enters W_P and W_h.
"""

from __future__ import annotations

import torch
from torch import nn

from . import lstm_inference
from .lstm_steps import FinalStates, StepPlan

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
        always_project: bool = False,
    ):
        super().__init__()
        if projection_dim > cell_dim and not always_project:
            raise ValueError(f"projection_dim ({projection_dim}) must not exceed the LSTM dim ({cell_dim})")
        self.input_dim, self.cell_dim, self.projection_dim = input_dim, cell_dim, projection_dim
        self.cell_clip = cell_clip or None
        self.proj_clip = proj_clip or None
        self.forget_bias = forget_bias
        self.input_linearity = nn.Linear(input_dim, 4 * cell_dim, bias=False)  # W_x
        self.state_linearity = nn.Linear(projection_dim, 4 * cell_dim, bias=True)  # W_h, b
        project = always_project or projection_dim < cell_dim  # bilm-tf stores W_P only when P < dim
        self.state_projection = nn.Linear(cell_dim, projection_dim, bias=False) if project else None  # W_P
        self._joined: tuple | None = None  # the engine's [W_x | W_h] for low-precision weights

    @property
    def cell_dtype(self) -> torch.dtype:
        """The dtype of the gates and the cell state: float32 (or float64), also under bf16/fp16 weights."""
        return torch.promote_types(self.state_linearity.weight.dtype, torch.float32)

    @property
    def low_precision(self) -> bool:
        return self.state_linearity.weight.dtype != self.cell_dtype

    def zero_state(self, batch: int, like: torch.Tensor) -> State:
        h = like.new_zeros(batch, self.projection_dim, dtype=self.state_linearity.weight.dtype)
        return h, like.new_zeros(batch, self.cell_dim, dtype=self.cell_dtype)

    def gate_bias(self) -> torch.Tensor:
        """b with the forget bias added to f: (4D, 1) in the cell's dtype."""
        bias = self.state_linearity.bias.to(self.cell_dtype)
        if self.forget_bias:
            offset = torch.zeros_like(bias)
            offset[2 * self.cell_dim : 3 * self.cell_dim] = self.forget_bias
            bias = bias + offset
        return bias[:, None]

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor, state: State | None = None):
        """inputs (B, T, input_dim) right-padded, lengths (B,) -> outputs (B, T, P) zero past each length,
        and the final state of each row (the state after its last valid step)."""
        if not torch.is_grad_enabled() and not torch.is_autocast_enabled(inputs.device.type):
            return lstm_inference.forward(self, inputs, lengths, state)
        w_h, w_p, D = self.state_linearity.weight, self.state_projection, self.cell_dim
        plan = StepPlan(lengths, full_precision=not self.low_precision)
        h, c = plan.transposed_state(state or self.zero_state(len(lengths), inputs), w_h.dtype, self.cell_dtype)
        x = plan.arrange(inputs).to(w_h.dtype)
        inputs_w = plan.input_products(x, self.input_linearity.weight, self.gate_bias().to(w_h.dtype))
        outputs, finals = None, FinalStates(plan.batch)
        for t, (rows, columns, x_w) in enumerate(zip(plan.rows, plan.columns, inputs_w, strict=True)):
            finals.keep_ended(rows, h, c)
            h, c = h[:, :columns].contiguous(), c[:, :columns].contiguous()
            z = torch.addmm(x_w, w_h, h).to(self.cell_dtype)  # [i; j; f; o]^T (4D, columns), b included
            i, j, (f, o) = z[:D].sigmoid(), z[D : 2 * D].tanh(), z[2 * D :].sigmoid().chunk(2)  # as the engine
            c = f * c + i * j
            if self.cell_clip is not None:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            h = (o * torch.tanh(c)).to(w_h.dtype)
            if w_p is not None:
                h = w_p.weight.mm(h)
            if self.proj_clip is not None:
                h = h.clamp(-self.proj_clip, self.proj_clip)
            outputs = plan.outputs(inputs.shape[1], h) if outputs is None else outputs
            outputs[t, :, :rows] = h[:, :rows]
        outputs = plan.outputs(inputs.shape[1], h) if outputs is None else outputs
        return plan.batch_major(outputs), tuple(map(plan.restore, finals.close(h, c)))
