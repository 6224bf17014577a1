"""A batch of long sentences through the biLM (``bilm.py``) a window of positions at a time, with the
result of the whole sentences.

A sentence is <S> t_1..t_N </S>: N + 2 positions, the boundaries only at its two true ends. The forward
stack runs each row's windows [0, W), [W, 2W), ... left to right, and every layer's (h, c) at the end of
a window is its state at the start of the row's next one; the backward stack runs the windows from each
row's own end leftwards (each reversed), carrying its own state the same way (``windows.py``). An LSTM
step depends only on its input and the state before it, and the two directions never mix between
layers, so each sweep runs all layers window by window, and the activations are those of the whole
sentences: the same arithmetic, up to how the matrix kernels round a block of another size. The
char-CNN vectors x_k are made per window (through the token cache), in both sweeps. Stateful, the rows
start from the carried rows ``bilm.state_rows(sentences)`` and leave their final states there, as
``BiLM.encode_sentences`` does.

What is held besides ``outputs`` is one window of each row still running: memory follows the window,
not the sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .bilm import BiLM
from .chars import BOS_TOKEN, EOS_TOKEN
from .lstm import State
from .token_cache import TokenVectorCache
from .windows import batch_windows, replace_rows, select_rows


def encode_in_windows(
    bilm: BiLM,
    sentences: Sequence[Sequence[str]],
    outputs: Sequence[torch.Tensor],
    window: int,
    token_cache: TokenVectorCache | None = None,
) -> None:
    """Write each sentence's activations without its boundaries into ``outputs[i]`` (num_layers,
    len(sentences[i]), 2P): what ``bilm.encode_sentences(sentences)`` gives, run ``window`` positions of a
    row at a time."""
    bos, eos = getattr(bilm.token_encoder, "boundary_tokens", (BOS_TOKEN, EOS_TOKEN))
    words = [[bos, *sentence, eos] for sentence in sentences]
    lengths = [len(row) for row in words]
    rows = bilm.state_rows(sentences)
    cache = TokenVectorCache(0) if token_cache is None else token_cache
    P = bilm.config.projection_dim
    sweeps = ((bilm.forward_layers, slice(0, P)), (bilm.backward_layers, slice(P, 2 * P)))
    initial, finals = None, []
    for direction, (layers, half) in enumerate(sweeps):
        right_to_left, state = direction == 1, None  # state: h_0, c_0, h_1, c_1, ... of every row
        for active, spans in batch_windows(lengths, window, right_to_left):
            pieces = [words[row][start:stop] for row, (start, stop) in zip(active, spans, strict=True)]
            x, mask = cache.token_vectors(
                bilm.token_encoder, [piece[::-1] for piece in pieces] if right_to_left else pieces, boundaries=False
            )
            if initial is None:  # both stacks' carried states (stateful), else zero
                initial = [flat(each or zero_states(bilm, len(words), x)) for each in bilm.carried_states(rows, x)]
            state = initial[direction] if state is None else state
            out, ended = bilm.run_direction(layers, x, mask.sum(-1), pairs(select_rows(state, active)))
            state = replace_rows(state, active, flat(ended))
            for index, (row, (start, stop)) in enumerate(zip(active, spans, strict=True)):
                values = [layer[index, : stop - start] for layer in out]
                tokens = x[index, : stop - start]
                if right_to_left:
                    write(outputs[row][1:], start, stop, [v.flip(0) for v in values], half)
                else:
                    write(outputs[row], start, stop, [tokens, *values], half)
                    write(outputs[row][:1], start, stop, [tokens], slice(P, 2 * P))
        finals.append(pairs(state))
    bilm.carry_states(rows, *finals)


def zero_states(bilm: BiLM, batch: int, like: torch.Tensor) -> list[State]:
    """Each layer's zero (h, c) of ``batch`` rows: h in ``like``'s dtype, c in the cells' (at least float32)."""
    cell_dtype = torch.promote_types(like.dtype, torch.float32)
    P, D = bilm.config.projection_dim, bilm.config.lstm_dim
    return [(like.new_zeros(batch, P), like.new_zeros(batch, D, dtype=cell_dtype)) for _ in bilm.forward_layers]


def flat(states: Sequence[State]) -> list[torch.Tensor]:
    return [tensor for state in states for tensor in state]


def pairs(tensors: list[torch.Tensor]) -> list[State]:
    return list(zip(tensors[::2], tensors[1::2], strict=True))


def write(out: torch.Tensor, start: int, stop: int, layers: list[torch.Tensor], half: slice) -> None:
    """``layers[j]``, values at sentence positions [start, stop) ((stop - start, P), the boundaries
    counted), into ``out[j]``'s rows of the tokens among those positions, columns ``half``."""
    first, last = max(start, 1), min(stop, out.shape[1] + 1)  # the tokens are positions 1..N
    if first >= last:
        return
    for values, target in zip(layers, out, strict=True):
        target[first - 1 : last - 1, half].copy_(values[first - start : last - start])
