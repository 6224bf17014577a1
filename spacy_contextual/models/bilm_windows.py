"""One long sentence through the biLM (``bilm.py``) a window of positions at a time, with the result of
the whole sentence.

The sentence is <S> t_1..t_N </S>: N + 2 positions, the boundaries only at its two true ends. The forward
stack runs the windows [0, W), [W, 2W), ... left to right, and every layer's (h, c) at the end of a window
is its state at the start of the next; the backward stack runs the windows from the right end leftwards
(each reversed), carrying its own state the same way. An LSTM step depends only on its input and the
state before it, and the two directions never mix between layers, so each sweep runs all layers
window by window and the activations are those of the whole sentence: the same arithmetic, up to how
the matrix kernels round a block of a different size. The char-CNN vectors x_k are made per window
(through the token cache), in both sweeps. A stateful biLM starts both stacks from carried row ``row``
and leaves their final states there, as ``BiLM.encode`` does.

What is held besides ``out`` is one window's token vectors and activations: memory follows the window,
not the sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .bilm import BiLM
from .chars import BOS_TOKEN, EOS_TOKEN
from .token_cache import TokenVectorCache
from .windows import windows


def encode_in_windows(
    bilm: BiLM,
    sentence: Sequence[str],
    out: torch.Tensor,
    window: int,
    token_cache: TokenVectorCache | None = None,
    row: int = 0,
) -> None:
    """Write ``sentence``'s activations into ``out`` (num_layers, len(sentence), 2P), without the
    boundaries: what ``bilm.encode_sentences([sentence])`` gives, run ``window`` positions at a time."""
    bos, eos = getattr(bilm.token_encoder, "boundary_tokens", (BOS_TOKEN, EOS_TOKEN))
    words = [bos, *sentence, eos]
    cache = TokenVectorCache(0) if token_cache is None else token_cache
    P = bilm.config.projection_dim

    def tokens(start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        vectors, _ = cache.token_vectors(bilm.token_encoder, [words[start:stop]], boundaries=False)
        return vectors, torch.tensor([stop - start], device=vectors.device)

    forward = backward = None
    for start, stop in windows(len(words), window):
        x, lengths = tokens(start, stop)
        if start == 0:
            forward, backward = bilm.carried_states([row], x)
        outputs, forward = bilm.run_direction(bilm.forward_layers, x, lengths, forward)
        write(out, start, stop, [x, *outputs], slice(0, P))
        write(out[:1], start, stop, [x], slice(P, 2 * P))
    for start, stop in windows(len(words), window, right_to_left=True):
        x, lengths = tokens(start, stop)
        outputs, backward = bilm.run_direction(bilm.backward_layers, x.flip(1), lengths, backward)
        write(out[1:], start, stop, [output.flip(1) for output in outputs], slice(P, 2 * P))
    bilm.carry_states([row], forward, backward)


def write(out: torch.Tensor, start: int, stop: int, layers: list[torch.Tensor], half: slice) -> None:
    """``layers[j]``, values at sentence positions [start, stop) ((1, stop - start, P), the boundaries
    counted), into ``out[j]``'s rows of the tokens among those positions, columns ``half``."""
    first, last = max(start, 1), min(stop, out.shape[1] + 1)  # the tokens are positions 1..N
    if first >= last:
        return
    for values, target in zip(layers, out, strict=True):
        target[first - 1 : last - 1, half] = values[0, first - start : last - start].to(target.device)
