"""The windows a long sentence is run in, one LSTM direction at a time, its state carried from each
window to the next (``bilm_windows.py`` for ELMo, ``MTLSTM.encode_in_windows`` for CoVe): consecutive
ranges of at most ``window`` positions that cover the sentence, taken from its left end for the forward
direction and from its right end leftwards for the backward one."""

from __future__ import annotations

from collections.abc import Iterator


def windows(positions: int, window: int, right_to_left: bool = False) -> Iterator[tuple[int, int]]:
    """(start, stop) of each window of ``positions`` in the order a direction runs them."""
    if window < 1:
        raise ValueError(f"a window must hold at least 1 position, got {window}")
    if not right_to_left:
        for start in range(0, positions, window):
            yield start, min(start + window, positions)
        return
    for stop in range(positions, 0, -window):
        yield max(0, stop - window), stop
