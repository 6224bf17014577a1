"""One direction of one ELMo LSTM layer: an LSTM cell with a projection and clipping (the hot loop).

With x_t the layer input and (h_{t-1}, c_{t-1}) the carried state, in bilm-tf's gate order i, j, f, o:

    [i; j; f; o] = W_x x_t + W_h h_{t-1} + b
    c_t = clip(sigmoid(f + forget_bias) * c_{t-1} + sigmoid(i) * tanh(j), +-cell_clip)
    h_t = clip(W_P (sigmoid(o) * tanh(c_t)), +-proj_clip)

How it runs (the three matrix products are nearly all of the time on a CPU):

* Rows are sorted by length (unless they come sorted, as the embedders' batches do), so the rows still
  inside their sentence are the first ``rows`` and the active batch only shrinks; padding is never
  computed, except that a step computes ``padded_rows(rows)`` columns, a multiple of 16: the matrix
  kernels handle whole blocks of columns far faster than a remainder, and the extra columns (rows past
  their end) are dropped. Low-precision inference on fewer rows than that adds rows of length 0 up to
  16 (``_padded_to_a_block``): a bf16 step on one column is 1.5x slower than on 16.
* Everything is kept transposed, one column per row: z^T (4D, rows), c^T (D, rows), h^T (P, rows).
  With the weight as the left operand the products run 10-40 % faster than ``h @ W.T``
  (``benchmarks/sgemm_peak.py``), each gate is a contiguous block of rows, and W_P (o * tanh(c))^T
  gives the next step's h^T as W_h needs it.
* float32 (exact): W_x x + b is one product per block of consecutive steps, each step's columns side by
  side (``input_blocks``): a step of 256 rows is a product of its own, and the narrower steps near the
  end of a batch, or of a small batch, share one, which reads W_x once for all of them. A block has at
  most ``BLOCK_COLUMNS`` columns, so its output (16 MB at the original size) is still in cache when
  the steps read it (1,920 columns at the small size was 10 % slower) and under the 32 MiB that the C
  allocator (glibc) would map afresh, page faults and all, on every call. Each step adds W_h h^T to
  its columns where they lie (``addmm_``).
* Low precision (weights cast to bf16 or fp16 once, ``precision.py``): each step is one product,
  z^T = [W_x | W_h] [x_t; h_{t-1}]^T + b, its two halves summed in float32 inside the kernel, rounded
  to the weights' dtype once, then widened in one vectorised pass with b added in place (a mixed-dtype
  add would convert element by element). The joined weight is made once (``_joined_weights``). The
  gates, the cell state c and the cell clipping stay float32, and h is rounded to the weights' dtype
  once per step, where it enters W_P and W_h (clipping the rounded W_P h at +-proj_clip equals
  rounding the clipped one).
* Without autograd and autocast (inference in a set precision), no step allocates: products go into
  buffers reused by every step. On the CPU the non-linearities, the cell update, the clipping and
  o * tanh(c) are then one pass of the fused cell (``fused_cell.py``), which reads the gates where the
  product left them, widens a low-precision product and adds b: at the original size 1.25x faster
  than the torch operations in float32 and 2.4x with bf16 weights (``benchmarks/README.md``), within a
  few 1e-7 of them in float32. Without it (switched off, no compiler, another device) the same
  operations run in place on a contiguous copy of the gates and in c: the same bits as the
  out-of-place step autograd needs (``c * f + (i * j)`` in that order, never a fused multiply-add).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .fused_cell import fused_cell_operator

State = tuple[torch.Tensor, torch.Tensor]  # (h (B, P), c (B, D))

ROW_MULTIPLE = 16
BLOCK_COLUMNS = 256  # the most (step, row) positions of one W_x x product: its output is read while in cache
BLOCK_BYTES = 30 * 2**20  # and at most this many bytes, under glibc's 32 MiB mmap limit


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
        self._joined: tuple | None = None  # the low-precision step's [W_x | W_h] (_joined_weights)

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
        if 0 < batch < ROW_MULTIPLE and self._pads_small_batches(inputs):
            return self._padded_to_a_block(inputs, lengths, state)
        arrange, restore = _longest_first(lengths)
        sorted_lengths = arrange(lengths)
        w_x, w_h = self.input_linearity.weight, self.state_linearity.weight  # (4D, input_dim), (4D, P)
        low_precision = w_h.dtype != self.cell_dtype
        x = arrange(inputs).to(w_x.dtype)
        h_t = arrange(state[0]).t().to(w_h.dtype).contiguous()  # h transposed: (P, rows)
        c_t = arrange(state[1]).t().to(self.cell_dtype).clone(memory_format=torch.contiguous_format)  # (D, rows), own
        bias = self._gate_bias()[:, None]
        w_p = self.state_projection.weight if self.state_projection is not None else None  # (P, D)
        D = self.cell_dim
        active_rows = (sorted_lengths[None, :] > torch.arange(steps, device=lengths.device)[:, None]).sum(1).tolist()
        max_len = int(sorted_lengths[0]) if batch else 0
        in_place = not torch.is_grad_enabled() and not torch.is_autocast_enabled(inputs.device.type)
        step_columns = [padded_rows(rows, batch, not low_precision) for rows in active_rows[:max_len]]
        fused = fused_cell_operator(x.device, self.cell_dtype, w_h.dtype) if in_place else None
        gates = bias.new_empty(4 * D * batch) if in_place and fused is None else None  # room for z_t (torch's cell)
        if fused is not None:
            fused_bias = bias.view(-1) if low_precision else None  # the float32 product already holds b
            cell_out = w_h.new_empty(D * batch) if w_p is not None else None  # for (o * tanh(c))^T, read by W_P at once
        if low_precision:
            w_xh = self._joined_weights()  # [W_x | W_h]
            x_steps = x.permute(1, 2, 0).contiguous()  # x_t^T for every step: (T, input_dim, B)
            product = w_h.new_empty(4 * D * batch) if in_place else None  # room for the low-precision product
        else:
            x_steps = x.transpose(0, 1).contiguous()  # x_t for every step: (T, B, input_dim)
            block_columns = min(BLOCK_COLUMNS, BLOCK_BYTES // (4 * D * bias.element_size()))
            blocks = iter(input_blocks(step_columns, max(1, block_columns)))
            block_end = 0

        finished_h: list[torch.Tensor] = []
        finished_c: list[torch.Tensor] = []
        P = self.projection_dim
        by_step: torch.Tensor | None = None  # h_t^T per step, zero past each row's end: (T, P, B)
        live = batch  # rows whose final state is not yet taken; the state tensors hold `columns` >= live
        for t in range(max_len):
            rows = active_rows[t]
            if rows < live:  # rows rows.. live-1 ended at the last step: keep their state (c_t changes in place)
                finished_h.append(h_t[:, rows:live].t())
                finished_c.append(c_t[:, rows:live].t().clone())
                live = rows
            columns = step_columns[t]
            if columns < h_t.shape[1]:
                h_t, c_t = h_t[:, :columns].contiguous(), c_t[:, :columns].contiguous()  # c_t is updated in place
            if low_precision:  # z_t^T = [W_x | W_h] [x_t; h_{t-1}]^T + b: one product, summed in the kernel
                xh = torch.cat([x_steps[t, :, :columns], h_t])
                if fused is not None:  # the fused cell widens the product and adds b
                    z_t = torch.mm(w_xh, xh, out=product[: 4 * D * columns].view(4 * D, columns))
                else:
                    room = None if gates is None else gates[: 4 * D * columns].view(4 * D, columns)
                    z_t = low_precision_product(bias, w_xh, xh, room, product)
            else:  # (W_x x + b)^T of a block of steps at once (their columns side by side), then + W_h h^T
                if t == block_end:
                    block_end = next(blocks)
                    block = torch.cat([x_steps[step, : step_columns[step]] for step in range(t, block_end)])
                    inputs_w_t = torch.addmm(bias, w_x, block.t())  # (4D, the block's columns)
                    first = 0
                inputs_w = inputs_w_t[:, first : first + columns]
                first += columns
                if not in_place:
                    z_t = torch.addmm(inputs_w, w_h, h_t)
                elif fused is not None:  # W_h h^T is added where W_x x + b lies; the fused cell reads it there
                    z_t = inputs_w.addmm_(w_h, h_t)
                else:  # torch's element-wise operations in place, on a contiguous copy (the autograd path's bits)
                    z_t = torch.addmm(inputs_w, w_h, h_t, out=gates[: 4 * D * columns].view(4 * D, columns))
            if fused is not None:
                h_t = w_h.new_empty(D, columns) if cell_out is None else cell_out[: D * columns].view(D, columns)
                fused(z_t, fused_bias, c_t, self.cell_clip, h_t)
            else:
                h_t, c_t = self._cell(z_t, c_t, in_place)
            if w_p is not None:
                h_t = w_p.mm(h_t)  # (P, columns)
            if self.proj_clip is not None:
                h_t = h_t.clamp(-self.proj_clip, self.proj_clip)
            if by_step is None:
                by_step = h_t.new_zeros(steps, P, batch)  # in h's dtype, which autocast may lower
            by_step[t, :, :rows] = h_t[:, :rows]
        finished_h.append(h_t[:, :live].t())
        finished_c.append(c_t[:, :live].t())

        if by_step is None:
            by_step = w_h.new_zeros(steps, P, batch)
        final_h = torch.cat(finished_h[::-1], 0)
        final_c = torch.cat(finished_c[::-1], 0)
        return restore(batch_major(by_step)), (restore(final_h), restore(final_c))

    def _pads_small_batches(self, inputs: torch.Tensor) -> bool:
        """Low-precision inference on the CPU, where a product of fewer than ``ROW_MULTIPLE`` columns is
        slow: a bf16 step of the original size takes 1.8 ms for one row and 1.15 ms for 16."""
        return (
            inputs.device.type == "cpu"
            and self.state_linearity.weight.dtype != self.cell_dtype
            and not torch.is_grad_enabled()
            and not torch.is_autocast_enabled("cpu")
        )

    def _padded_to_a_block(self, inputs: torch.Tensor, lengths: torch.Tensor, state: State):
        """``forward`` on the batch with rows of length 0 added up to ``ROW_MULTIPLE`` (they are never
        computed on, only carried as columns of the block), and only the real rows returned."""
        batch, extra = inputs.shape[0], ROW_MULTIPLE - inputs.shape[0]
        grown = [torch.cat([t, t.new_zeros(extra, *t.shape[1:])]) for t in (inputs, lengths, *state)]
        out, (h, c) = self.forward(grown[0], grown[1], (grown[2], grown[3]))
        return out[:batch], (h[:batch], c[:batch])

    def _cell(self, z_t: torch.Tensor, c_t: torch.Tensor, in_place: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """One step after the gate pre-activations: z_t^T (4D, rows) and c_{t-1}^T (D, rows) -> (o *
        tanh(c_t))^T (D, rows) in the weights' dtype, and c_t^T. ``in_place`` (no autograd): the same
        operations in z_t and c_t, which the caller owns; the results are bitwise the same."""
        D, dtype = self.cell_dim, self.state_linearity.weight.dtype
        if not in_place:
            i, j, f, o = torch.sigmoid(z_t[:D]), torch.tanh(z_t[D : 2 * D]), *torch.sigmoid(z_t[2 * D :]).chunk(2)
            c_t = f * c_t + i * j
            if self.cell_clip is not None:
                c_t = c_t.clamp(-self.cell_clip, self.cell_clip)
            return (o * torch.tanh(c_t)).to(dtype), c_t
        i, j, f, o = z_t[:D].sigmoid_(), z_t[D : 2 * D].tanh_(), *z_t[2 * D :].sigmoid_().chunk(2)
        c_t.mul_(f).add_(i.mul_(j))  # not addcmul_, which fuses a multiply-add and rounds differently
        if self.cell_clip is not None:
            c_t.clamp_(-self.cell_clip, self.cell_clip)
        return torch.tanh(c_t).mul_(o).to(dtype), c_t

    def _joined_weights(self) -> torch.Tensor:
        """[W_x | W_h] (4D, input_dim + P), the low-precision step's one weight. While autograd needs the
        weights' gradients it is joined afresh (differentiably) at every call; otherwise it is kept and
        joined again only when either weight has changed: the cache holds views of the weights it was
        made from (so their memory cannot be reused by another tensor) and their version counters."""
        weights = (self.input_linearity.weight, self.state_linearity.weight)
        if torch.is_grad_enabled() and any(weight.requires_grad for weight in weights):
            return torch.cat(weights, 1)
        if self._joined is not None:
            views, versions, joined = self._joined
            if all(map(_same_tensor, weights, views, versions)):
                return joined
        views = tuple(weight.detach() for weight in weights)
        self._joined = views, tuple(weight._version for weight in weights), torch.cat(views, 1)
        return self._joined[2]


def _longest_first(lengths: torch.Tensor) -> tuple[Callable, Callable]:
    """Functions that put the rows of a (B, ...) tensor in order of decreasing length, and back. Rows
    that already come longest first (``batching.plan_batches`` orders them so) are left where they are."""
    if bool((lengths[:-1] >= lengths[1:]).all()):
        return _as_is, _as_is
    order = lengths.sort(descending=True).indices
    restore = torch.empty_like(order)
    restore[order] = torch.arange(len(order), device=order.device)
    return (lambda tensor: tensor.index_select(0, order)), (lambda tensor: tensor.index_select(0, restore))


def _as_is(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def batch_major(step_first: torch.Tensor) -> torch.Tensor:
    """(T, n, B) -> (B, T, n), contiguous, as later element-wise work and the callers read it best: one 2-D
    transpose of the (T*n, B) matrix, up to 3x faster than the copy of a 3-D permute (at 256 rows; the
    other way, (B, T, n) -> (T, n, B), the permute's copy is the faster one)."""
    steps, features, batch = step_first.shape
    return step_first.reshape(steps * features, batch).t().contiguous().view(batch, steps, features)


def input_blocks(step_columns: list[int], most_columns: int) -> list[int]:
    """Where each block of steps ends: consecutive steps whose columns add up to at most ``most_columns``
    (a step wider than that is a block of its own). Their W_x x products are one product."""
    ends: list[int] = []
    width = 0  # the columns of the block so far (every step has at least one)
    for step, columns in enumerate(step_columns):
        if width and width + columns > most_columns:
            ends.append(step)
            width = 0
        width += columns
    return [*ends, len(step_columns)] if step_columns else []


def padded_rows(rows: int, batch: int, full_precision: bool) -> int:
    """How many rows (columns of the transposed state) a step computes: ``rows`` rounded up to a
    multiple of ``ROW_MULTIPLE``, at most ``batch``. The matrix kernels handle whole blocks of 16
    columns far faster than a remainder (float32 at 2x4096_512: 63 rows 7.5 ms, 64 rows 4.5 ms;
    ``benchmarks/lstm_rows.py``). A single float32 row stays one: its matrix-vector product is faster
    still. The extra columns belong to rows past their end; each column of a product depends on its
    own column only, so they are computed and dropped."""
    if rows == 1 and full_precision:
        return 1
    return min(batch, -(-rows // ROW_MULTIPLE) * ROW_MULTIPLE)


def low_precision_product(
    bias: torch.Tensor,
    weight: torch.Tensor,
    inputs: torch.Tensor,
    room: torch.Tensor | None = None,
    product_room: torch.Tensor | None = None,
) -> torch.Tensor:
    """``bias + weight @ inputs`` in ``bias``'s (float32) dtype, for bf16/fp16 ``weight`` and ``inputs``: the
    product is computed in their dtype (float32 accumulation inside the kernel), widened in one vectorised
    pass and the bias added in place (a mixed-dtype add would convert element by element). With ``room``
    (float32) and ``product_room`` (flat, the weight's dtype, at least as large): written there."""
    if room is None:
        return torch.mm(weight, inputs).to(bias.dtype).add_(bias)
    product = torch.mm(weight, inputs, out=product_room[: room.numel()].view(room.shape))
    return room.copy_(product).add_(bias)


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
