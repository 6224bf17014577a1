"""The inference engine of ``ProjectedLSTM`` (no autograd, no autocast): the equations of ``lstm.py`` on
the plan of ``lstm_steps.py``, computed in place.

* No step allocates: each product goes into a buffer that every step reuses, and the gates are consumed
  where the product left them.
* The cell step (the non-linearities, the cell update, the clipping and o * tanh(c)) is one pass of the
  fused cell on the CPU (``fused_cell.py``); elsewhere, or switched off, it is torch's element-wise
  operations in place (``torch_cell_step``), in the order the reference runs them: the same bits.
* float32 weights (``float32_gates``): W_x x + b comes from the plan's blocks of steps, and each step adds
  W_h h^T to its columns.
* bf16/fp16 weights (``low_precision_gates``): each step is one product z^T = [W_x | W_h] [x_t; h_{t-1}]^T,
  its two halves summed in float32 inside the kernel and rounded to the weights' dtype once; b is added
  while it is widened to float32 (by the fused cell, or by ``low_precision_product``). The joined weight
  is made once (``joined_weights``). A batch of fewer than ``ROW_MULTIPLE`` rows runs as a block of that
  many (rows of length 0 added): a low-precision product of one column is slower than of sixteen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from .fused_cell import fused_cell_operator
from .lstm_steps import ROW_MULTIPLE, FinalStates, StepPlan

if TYPE_CHECKING:
    from .lstm import ProjectedLSTM, State

Gates = Callable[[int, torch.Tensor], torch.Tensor]  # (step, h_{t-1}^T) -> z_t^T (4D, columns)
CellStep = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (z_t^T, c^T updated in place) -> (o tanh c)^T


def forward(lstm: ProjectedLSTM, inputs: torch.Tensor, lengths: torch.Tensor, state: State | None):
    """``ProjectedLSTM.forward`` without autograd: the same outputs and final states."""
    batch = len(lengths)
    if 0 < batch < ROW_MULTIPLE and lstm.low_precision and inputs.device.type == "cpu":
        return padded_to_a_block(lstm, inputs, lengths, state)
    w_h, proj_clip = lstm.state_linearity.weight, lstm.proj_clip
    w_p = lstm.state_projection.weight if lstm.state_projection is not None else None
    plan = StepPlan(lengths, full_precision=not lstm.low_precision)
    h, c = plan.transposed_state(state or lstm.zero_state(batch, inputs), w_h.dtype, lstm.cell_dtype)
    x = plan.arrange(inputs).to(w_h.dtype)
    fused = fused_cell_operator(x.device, lstm.cell_dtype, w_h.dtype)
    gates = (low_precision_gates if lstm.low_precision else float32_gates)(lstm, plan, x, fused is not None)
    cell_step = fused_cell_step(lstm, fused, batch) if fused is not None else torch_cell_step(lstm, batch)
    outputs, finals = None, FinalStates(batch)
    for t, (rows, columns) in enumerate(zip(plan.rows, plan.columns, strict=True)):
        if rows < finals.live:
            finals.keep_ended(rows, h, c)
        if columns < h.shape[1]:
            h, c = h[:, :columns].contiguous(), c[:, :columns].contiguous()  # c: updated in place from here
        h = cell_step(gates(t, h), c)
        if w_p is not None:
            h = w_p.mm(h)
        if proj_clip is not None:
            h = h.clamp(-proj_clip, proj_clip)
        outputs = plan.outputs(inputs.shape[1], h) if outputs is None else outputs
        outputs[t, :, :rows] = h[:, :rows]
    outputs = plan.outputs(inputs.shape[1], h) if outputs is None else outputs
    return plan.batch_major(outputs), tuple(map(plan.restore, finals.close(h, c)))


def float32_gates(lstm: ProjectedLSTM, plan: StepPlan, x: torch.Tensor, fused: bool) -> Gates:
    """z_t^T = (W_x x_t + b)^T + W_h h_{t-1}^T: the fused cell reads it in the block's product, where W_h h^T
    is added in place; torch's step gets a contiguous copy in a buffer (the reference's bits)."""
    w_h, D = lstm.state_linearity.weight, lstm.cell_dim
    inputs_w = plan.input_products(x, lstm.input_linearity.weight, lstm.gate_bias())
    room = None if fused else w_h.new_empty(4 * D * plan.batch)

    def gates(t: int, h: torch.Tensor) -> torch.Tensor:
        x_w = next(inputs_w)
        if room is None:
            return x_w.addmm_(w_h, h)
        return torch.addmm(x_w, w_h, h, out=room[: x_w.numel()].view(x_w.shape))

    return gates


def low_precision_gates(lstm: ProjectedLSTM, plan: StepPlan, x: torch.Tensor, fused: bool) -> Gates:
    """z_t^T = [W_x | W_h] [x_t; h_{t-1}]^T: in the weights' dtype for the fused cell (which adds b while
    widening), else widened into a float32 buffer with b added."""
    w_xh, bias, D = joined_weights(lstm), lstm.gate_bias(), lstm.cell_dim
    x_steps = x.permute(1, 2, 0).contiguous()  # x_t^T for every step: (T, input_dim, B)
    product_room = w_xh.new_empty(4 * D * plan.batch)
    room = None if fused else bias.new_empty(4 * D * plan.batch)

    def gates(t: int, h: torch.Tensor) -> torch.Tensor:
        columns = h.shape[1]
        xh = torch.cat([x_steps[t, :, :columns], h])
        if room is None:
            return torch.mm(w_xh, xh, out=product_room[: 4 * D * columns].view(4 * D, columns))
        return low_precision_product(bias, w_xh, xh, room[: 4 * D * columns].view(4 * D, columns), product_room)

    return gates


def fused_cell_step(lstm: ProjectedLSTM, fused: Callable, batch: int) -> CellStep:
    """One call of the fused cell: c updated in place, (o * tanh(c))^T written in the weights' dtype into a
    buffer that W_P reads at once (or a tensor of its own where it is the step's output h)."""
    w_h, D = lstm.state_linearity.weight, lstm.cell_dim
    bias = lstm.gate_bias().view(-1) if lstm.low_precision else None  # the float32 product already holds b
    room = w_h.new_empty(D * batch) if lstm.state_projection is not None else None

    def step(z: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        columns = c.shape[1]
        out = w_h.new_empty(D, columns) if room is None else room[: D * columns].view(D, columns)
        fused(z, bias, c, lstm.cell_clip, out)
        return out

    return step


def torch_cell_step(lstm: ProjectedLSTM, batch: int) -> CellStep:
    """The reference's element-wise operations, in place in z and c (``c * f + i * j`` in that order, never
    a fused multiply-add, which rounds differently)."""
    D, dtype, clip = lstm.cell_dim, lstm.state_linearity.weight.dtype, lstm.cell_clip

    def step(z: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        i, j, f, o = z[:D].sigmoid_(), z[D : 2 * D].tanh_(), *z[2 * D :].sigmoid_().chunk(2)
        c.mul_(f).add_(i.mul_(j))
        if clip is not None:
            c.clamp_(-clip, clip)
        return torch.tanh(c).mul_(o).to(dtype)

    return step


def padded_to_a_block(lstm: ProjectedLSTM, inputs: torch.Tensor, lengths: torch.Tensor, state: State | None):
    """``forward`` on the batch with rows of length 0 added up to ``ROW_MULTIPLE`` (never computed on, only
    carried as columns of the block), and only the real rows returned."""
    batch, extra = inputs.shape[0], ROW_MULTIPLE - inputs.shape[0]
    state = state or lstm.zero_state(batch, inputs)
    grown = [torch.cat([t, t.new_zeros(extra, *t.shape[1:])]) for t in (inputs, lengths, *state)]
    out, (h, c) = forward(lstm, grown[0], grown[1], (grown[2], grown[3]))
    return out[:batch], (h[:batch], c[:batch])


def low_precision_product(
    bias: torch.Tensor, weight: torch.Tensor, inputs: torch.Tensor, room: torch.Tensor, product_room: torch.Tensor
) -> torch.Tensor:
    """``bias + weight @ inputs`` in ``room`` (float32), for bf16/fp16 ``weight`` and ``inputs``: the product in
    their dtype (float32 accumulation inside the kernel) into ``product_room``, then widened in one
    vectorised pass and the bias added in place (a mixed-dtype add would convert element by element)."""
    product = torch.mm(weight, inputs, out=product_room[: room.numel()].view(room.shape))
    return room.copy_(product).add_(bias)


def joined_weights(lstm: ProjectedLSTM) -> torch.Tensor:
    """[W_x | W_h] (4D, input_dim + P), kept on the module and joined again only when either weight has
    changed: the cache holds views of the weights it was made from (so their memory cannot be reused by
    another tensor) and their version counters."""
    weights = (lstm.input_linearity.weight, lstm.state_linearity.weight)
    if lstm._joined is not None:
        views, versions, joined = lstm._joined
        if all(map(_same_tensor, weights, views, versions)):
            return joined
    views = tuple(weight.detach() for weight in weights)
    lstm._joined = views, tuple(weight._version for weight in weights), torch.cat(views, 1)
    return lstm._joined[2]


def _same_tensor(tensor: torch.Tensor, held: torch.Tensor, version: int) -> bool:
    """``tensor`` is (a view like) ``held`` and unchanged since ``version``: ``held`` keeps its memory alive,
    so an equal address is the same memory."""
    return (
        tensor.data_ptr() == held.data_ptr()
        and tensor.shape == held.shape
        and tensor.stride() == held.stride()
        and tensor.dtype == held.dtype
        and tensor.device == held.device
        and tensor._version == version
    )
