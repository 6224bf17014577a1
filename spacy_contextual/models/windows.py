"""The windows a batch of long sentences is run in, one LSTM direction at a time, each row's state carried
from each of its windows to the next (``bilm_windows.py`` for ELMo, ``MTLSTM.encode_in_windows`` for
CoVe).

Window k of a row of n positions covers [kW, min(n, (k+1)W)) for the forward direction, and
[max(0, n - (k+1)W), n - kW) for the backward one, which runs from the row's own end leftwards: the
same k-th window of every row still running is one LSTM call, the rows in their batch order. A row
takes part in the windows k with kW < n, so a short row finishes in the first one. At most W positions
of a row are run at once, and at most as many rows as the batch has. ``select_rows`` / ``replace_rows``
take the states of the rows of a window out of the whole batch's and put them back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import torch


class Window(NamedTuple):
    rows: list[int]  # the batch rows still running, in batch order
    spans: list[tuple[int, int]]  # each one's positions [start, stop)


def batch_windows(lengths: Sequence[int], window: int, right_to_left: bool = False) -> Iterator[Window]:
    """Each window of rows of ``lengths`` positions, in the order a direction runs them."""
    if window < 1:
        raise ValueError(f"a window must hold at least 1 position, got {window}")
    start = 0
    while rows := [row for row, length in enumerate(lengths) if length > start]:
        if right_to_left:
            spans = [(max(0, lengths[row] - start - window), lengths[row] - start) for row in rows]
        else:
            spans = [(start, min(lengths[row], start + window)) for row in rows]
        yield Window(rows, spans)
        start += window


def select_rows(states: Sequence[torch.Tensor], rows: list[int], dim: int = 0) -> list[torch.Tensor]:
    """Each state tensor's ``rows`` along ``dim`` (all of its rows: the tensor as it is)."""
    if len(rows) == states[0].shape[dim]:
        return list(states)
    index = torch.tensor(rows, device=states[0].device)
    return [state.index_select(dim, index) for state in states]


def replace_rows(
    states: Sequence[torch.Tensor], rows: list[int], new: Sequence[torch.Tensor], dim: int = 0
) -> list[torch.Tensor]:
    """``states`` with their ``rows`` along ``dim`` replaced by ``new``, in the states' dtypes."""
    if len(rows) == states[0].shape[dim]:
        return [fresh.to(state.dtype) for state, fresh in zip(states, new, strict=True)]
    index = torch.tensor(rows, device=states[0].device)
    return [state.index_copy(dim, index, fresh.to(state.dtype)) for state, fresh in zip(states, new, strict=True)]
