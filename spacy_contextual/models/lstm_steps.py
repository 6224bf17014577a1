"""How a batch of ragged rows runs through an LSTM step by step: the plan that ``lstm.py`` (the reference)
and ``lstm_inference.py`` (the engine) share, so that both compute the same products on the same shapes.

* Rows go longest first (``longest_first``; the embedders' batches already come so), so the rows still
  inside their sentence at step t are the first ``rows[t]``, and the active batch only shrinks.
* Everything is kept transposed, one column per row: z^T (4D, columns), c^T (D, columns), h^T (P, columns).
  With the weight as the left operand, W h^T gives the next step's h^T as W_h needs it.
* Step t computes ``columns[t] = padded_rows(rows[t])`` columns, a multiple of ``ROW_MULTIPLE``: the
  matrix kernels handle whole blocks of columns far faster than a remainder. The extra columns belong
  to rows past their end: each column of a product depends on its own column only, so they are computed
  and dropped.
* W_x x_t + b is computed for blocks of consecutive steps at once (``input_blocks``), their columns side
  by side, at most ``BLOCK_COLUMNS`` columns and ``BLOCK_BYTES`` bytes: the block's product is still in
  cache when its steps read it, and under the 32 MiB that glibc's allocator would map afresh per call.
* A row's final state is its state after its last step (``FinalStates``); outputs are zero past each
  row's length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch

ROW_MULTIPLE = 16
BLOCK_COLUMNS = 256  # the most (step, row) positions of one W_x x product
BLOCK_BYTES = 30 * 2**20  # and at most this many bytes of it


class StepPlan:
    """The rows and columns of each step of a batch with ``lengths`` (B,)."""

    def __init__(self, lengths: torch.Tensor, full_precision: bool):
        self.batch = len(lengths)
        self.arrange, self.restore = longest_first(lengths)
        ordered = self.arrange(lengths)
        steps = int(ordered[0]) if self.batch else 0
        self.rows: list[int] = (ordered[None, :] > torch.arange(steps, device=lengths.device)[:, None]).sum(1).tolist()
        self.columns = [padded_rows(rows, self.batch, full_precision) for rows in self.rows]

    def transposed_state(self, state: tuple[torch.Tensor, torch.Tensor], h_dtype, c_dtype):
        """(h (B, P), c (B, D)) -> h^T (P, B) contiguous and c^T (D, B), the plan's own copy (updated in place
        by the engine; the caller's state is never changed)."""
        h, c = self.arrange(state[0]), self.arrange(state[1])
        return h.t().to(h_dtype).contiguous(), c.t().to(c_dtype).clone(memory_format=torch.contiguous_format)

    def input_products(self, x: torch.Tensor, w_x: torch.Tensor, bias: torch.Tensor) -> Iterator[torch.Tensor]:
        """(W_x x_t + b)^T (4D, columns[t]) for each step t of ``x`` (B, T, input_dim), rows arranged, in
        order: each a view of its block's product, which is computed when its first step is reached."""
        x_steps = x.transpose(0, 1).contiguous()  # x_t for every step: (T, B, input_dim)
        most = min(BLOCK_COLUMNS, BLOCK_BYTES // (w_x.shape[0] * bias.element_size()))
        start = 0
        for end in input_blocks(self.columns, max(1, most)):
            block = torch.cat([x_steps[step, : self.columns[step]] for step in range(start, end)])
            block_product = torch.addmm(bias, w_x, block.t())  # (4D, the block's columns)
            first = 0
            for step in range(start, end):
                yield block_product[:, first : first + self.columns[step]]
                first += self.columns[step]
            start = end

    def outputs(self, steps: int, like: torch.Tensor) -> torch.Tensor:
        """Zeros (T, P, B) in ``like``'s dtype (which autocast may lower), where step t writes its rows."""
        return like.new_zeros(steps, like.shape[0], self.batch)

    def batch_major(self, by_step: torch.Tensor) -> torch.Tensor:
        """(T, n, B) -> (B, T, n), rows in the caller's order."""
        return self.restore(batch_major(by_step))


class FinalStates:
    """Each row's (h, c) after its last step, taken as rows end (the shortest rows are the last ones)."""

    def __init__(self, batch: int):
        self.live = batch  # rows whose final state is not yet taken
        self.h: list[torch.Tensor] = []
        self.c: list[torch.Tensor] = []

    def keep_ended(self, rows: int, h: torch.Tensor, c: torch.Tensor) -> None:
        """Before a step of ``rows`` rows: rows ``rows..live-1`` ended at the last step (c is copied: the
        engine updates it in place)."""
        if rows < self.live:
            self.h.append(h[:, rows : self.live].t())
            self.c.append(c[:, rows : self.live].t().clone())
            self.live = rows

    def close(self, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """After the last step: every row's final (h (B, P), c (B, D)), rows arranged."""
        self.keep_ended(0, h, c)
        return torch.cat(self.h[::-1], 0), torch.cat(self.c[::-1], 0)


def longest_first(lengths: torch.Tensor) -> tuple[Callable, Callable]:
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
    """(T, n, B) -> (B, T, n), contiguous: one 2-D transpose of the (T*n, B) matrix, faster than the copy
    of a 3-D permute."""
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
    """How many rows (columns of the transposed state) a step computes: ``rows`` rounded up to a multiple
    of ``ROW_MULTIPLE``, at most ``batch`` (``benchmarks/lstm_rows.py``). A single float32 row stays one:
    its matrix-vector product is faster still."""
    if rows == 1 and full_precision:
        return 1
    return min(batch, -(-rows // ROW_MULTIPLE) * ROW_MULTIPLE)
