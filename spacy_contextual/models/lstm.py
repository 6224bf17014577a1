"""One direction of one ELMo LSTM layer: an LSTM cell with a projection and clipping (the hot loop).

With x_t the layer input and (h_{t-1}, c_{t-1}) the carried state, in bilm-tf's gate order i, j, f, o:

    [i; j; f; o] = W_x x_t + W_h h_{t-1} + b
    c_t = clip(sigmoid(f + forget_bias) * c_{t-1} + sigmoid(i) * tanh(j), +-cell_clip)
    h_t = clip(W_P (sigmoid(o) * tanh(c_t)), +-proj_clip)

How it runs (the three matrix products are nearly all of the time on a CPU):

* Rows are sorted by length, so the rows still inside their sentence are the first ``rows`` and the
  active batch only shrinks; padding is never computed.
* The gate pre-activations are computed transposed, z^T = W_h h^T + (W_x x_t + b)^T of shape (4D, rows),
  and c is kept transposed, (D, rows): with the weight as the left operand MKL runs these products
  10-40 % faster than ``h @ W_h.T`` on a 2-core Zen 3 (``benchmarks/sgemm_peak.py``), and each gate
  is a contiguous block of rows.
* W_x x + b is one product per block of steps whose gate inputs fill at most ``BLOCK_BYTES``, not one
  over the whole (B, T) batch: at the original size that would be a (B, T, 4D) buffer of hundreds of
  MB, and the C allocator (glibc) maps memory that large afresh, page faults and all, on every call,
  while it reuses blocks under 32 MiB. Blocks of a few hundred positions or more keep the product
  as fast as one over the whole batch.
* Low precision (weights cast to bf16 or fp16 once, ``precision.py``): the three products
  take bf16 operands; their results are added to float32 (W_x x + b and the gates), so the gates, the
  cell state c and the cell clipping stay float32, and h is rounded to the weights' dtype once per
  step, where it enters W_P and W_h (clipping the rounded W_P h at +-proj_clip equals rounding the
  clipped one). float32 weights run exactly the float32 code. A low-precision product is widened to
  float32 in one vectorised pass and the float32 part added to it in place: a mixed-dtype add converts
  element by element and costs more than the product.
* Without autograd and autocast (inference in a set precision), each step's gates are written into
  one buffer reused by every step (``addmm(..., out=)``), and the non-linearities, the cell update and
  the clipping run in place there and in c: about half the passes over memory of the out-of-place
  step that autograd needs, and no fresh allocation per step. Both give the same bits
  (``c * f + (i * j)`` in that order, never a fused multiply-add).
"""

from __future__ import annotations

import torch
from torch import nn

State = tuple[torch.Tensor, torch.Tensor]  # (h (B, P), c (B, D))

BLOCK_BYTES = 30 * 2**20  # under glibc's 32 MiB mmap limit: 480 (step, row) positions at D = 4096, 1920 at D = 1024


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
        self.input_linearity = nn.Linear(input_dim, 4 * cell_dim, bias=False)
        self.state_linearity = nn.Linear(projection_dim, 4 * cell_dim, bias=True)
        project = always_project or projection_dim < cell_dim  # bilm-tf stores W_P only when P < dim
        self.state_projection = nn.Linear(cell_dim, projection_dim, bias=False) if project else None

    @property
    def cell_dtype(self) -> torch.dtype:
        """The dtype of the gates and the cell state: float32 (or float64), also under bf16/fp16 weights."""
        return torch.promote_types(self.state_linearity.weight.dtype, torch.float32)

    def zero_state(self, batch: int, like: torch.Tensor) -> State:
        h = like.new_zeros(batch, self.projection_dim, dtype=self.state_linearity.weight.dtype)
        return h, like.new_zeros(batch, self.cell_dim, dtype=self.cell_dtype)

    def _gate_bias(self) -> torch.Tensor:
        bias = self.state_linearity.bias.to(self.cell_dtype)
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
        w_x, w_h = self.input_linearity.weight, self.state_linearity.weight  # (4D, input_dim), (4D, P)
        x = inputs.index_select(0, order).to(w_x.dtype)
        h = state[0].index_select(0, order).to(w_h.dtype)  # (rows, P)
        c_t = state[1].index_select(0, order).t().to(self.cell_dtype).contiguous()  # c transposed: (D, rows), own
        bias = self._gate_bias()[:, None]
        add_product = torch.addmm if w_h.dtype == self.cell_dtype else add_low_precision_product
        w_p = self.state_projection.weight.t() if self.state_projection is not None else None  # (D, P)
        D = self.cell_dim
        active_rows = (sorted_lengths[None, :] > torch.arange(steps, device=lengths.device)[:, None]).sum(1).tolist()
        max_len = int(sorted_lengths[0]) if batch else 0
        block_steps = max(1, BLOCK_BYTES // (4 * D * bias.element_size() * max(batch, 1)))

        finished_h: list[torch.Tensor] = []
        finished_c: list[torch.Tensor] = []
        outputs: list[torch.Tensor] = []
        buffers = None
        if not torch.is_grad_enabled() and not torch.is_autocast_enabled(inputs.device.type):  # see _cell
            gates = bias.new_empty(4 * D * batch)
            buffers = gates, (w_h.new_empty(gates.shape) if add_product is not torch.addmm else None)
        for t in range(max_len):
            rows = active_rows[t]
            if rows < h.shape[0]:
                finished_h.append(h[rows:])
                finished_c.append(c_t[:, rows:].t())
                h, c_t = h[:rows], c_t[:, :rows].contiguous()  # contiguous: c_t is updated in place
            if t % block_steps == 0:  # (W_x x + b)^T of the next block_steps steps, step-major columns
                block = x[:rows, t : t + block_steps].transpose(0, 1).reshape(-1, x.shape[2])
                inputs_w_t = add_product(bias, w_x, block.t())  # (4D, steps * block_rows)
                block_rows = rows
            first = (t % block_steps) * block_rows
            h, c_t = self._cell(inputs_w_t[:, first : first + rows], h, c_t, add_product, buffers)
            if w_p is not None:
                h = h.mm(w_p)
            if self.proj_clip is not None:
                h = h.clamp(-self.proj_clip, self.proj_clip)
            outputs.append(nn.functional.pad(h, (0, 0, 0, batch - rows)) if rows < batch else h)
        finished_h.append(h)
        finished_c.append(c_t.t())

        if outputs:
            out = torch.stack(outputs, dim=1)
            if max_len < steps:
                out = nn.functional.pad(out, (0, 0, 0, steps - max_len))
        else:
            out = w_h.new_zeros(batch, steps, self.projection_dim)
        final_h = torch.cat(finished_h[::-1], 0)
        final_c = torch.cat(finished_c[::-1], 0)
        return out.index_select(0, restore), (final_h.index_select(0, restore), final_c.index_select(0, restore))

    def _cell(
        self,
        inputs_w: torch.Tensor,
        h: torch.Tensor,
        c_t: torch.Tensor,
        add_product,
        buffers: tuple[torch.Tensor, torch.Tensor | None] | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step before the projection: (W_x x_t + b)^T (4D, rows), h_{t-1} (rows, P) and c_{t-1}^T
        (D, rows) -> (o * tanh(c_t))^T (rows, D) in the weights' dtype, and c_t^T. Without ``buffers``
        (autograd): out of place. With them (``gates``: float32 room for z_t, ``product``: room for the
        low-precision W_h h, or None for float32 weights): the same operations in place, in the reused
        buffer and in ``c_t``, which the caller owns; float32 results are bitwise the same."""
        D, rows = self.cell_dim, h.shape[0]
        w_h = self.state_linearity.weight
        if buffers is None:
            z_t = add_product(inputs_w, w_h, h.t())
            i, j, f, o = torch.sigmoid(z_t[:D]), torch.tanh(z_t[D : 2 * D]), *torch.sigmoid(z_t[2 * D :]).chunk(2)
            c_t = f * c_t + i * j
            if self.cell_clip is not None:
                c_t = c_t.clamp(-self.cell_clip, self.cell_clip)
            return (o * torch.tanh(c_t)).t().to(w_h.dtype), c_t
        gates, product = buffers
        z_t = gates[: 4 * D * rows].view(4 * D, rows)
        if product is None:
            torch.addmm(inputs_w, w_h, h.t(), out=z_t)
        else:  # the low-precision product widened into z_t (one vectorised pass), then the input part added
            z_t.copy_(torch.mm(w_h, h.t(), out=product[: 4 * D * rows].view(4 * D, rows)))
            z_t.add_(inputs_w)
        i, j, f, o = z_t[:D].sigmoid_(), z_t[D : 2 * D].tanh_(), *z_t[2 * D :].sigmoid_().chunk(2)
        c_t.mul_(f).add_(i.mul_(j))  # not addcmul_, which fuses a multiply-add and rounds differently
        if self.cell_clip is not None:
            c_t.clamp_(-self.cell_clip, self.cell_clip)
        return torch.tanh(c_t).mul_(o).t().to(w_h.dtype), c_t


def add_low_precision_product(accumulated: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``accumulated + a @ b`` in ``accumulated``'s (float32) dtype, for bf16/fp16 ``a`` and ``b``: the
    product is computed in their dtype (float32 accumulation inside the kernel), widened in one vectorised
    pass and ``accumulated`` added to it in place (a mixed-dtype add would convert element by element)."""
    return torch.mm(a, b).to(accumulated.dtype).add_(accumulated)
