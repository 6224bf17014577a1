"""ELMo character ids: the 262-id scheme of bilm-tf and AllenNLP.

A token becomes 50 ids ``[BOW, b_1, ..., b_n, EOW, PAD, PAD, ...]`` where ``b_i`` are its UTF-8 bytes
(truncated to 48 bytes), BOW=258, EOW=259, PAD=260, and every id is shifted by +1 so that 0 means
"no token" (a padding position of the sentence). The sentence boundaries ``<S>``/``</S>`` are the
tokens ``[BOW, 256, EOW]`` and ``[BOW, 257, EOW]``; a literal input token "<S>" maps to the same ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import torch

MAX_CHARACTERS_PER_TOKEN = 50
N_CHARACTERS = 262  # 256 bytes + 5 specials + the padding-token id 0

BOS_CHAR = 256
EOS_CHAR = 257
BEGIN_OF_WORD = 258
END_OF_WORD = 259
PADDING_CHAR = 260

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def _special_token_ids(char: int) -> tuple[int, ...]:
    ids = [PADDING_CHAR] * MAX_CHARACTERS_PER_TOKEN
    ids[0], ids[1], ids[2] = BEGIN_OF_WORD, char, END_OF_WORD
    return tuple(i + 1 for i in ids)


BOS_IDS = _special_token_ids(BOS_CHAR)
EOS_IDS = _special_token_ids(EOS_CHAR)


# the shifted ids as shared int objects: Python makes a new object for every int above 256, and the cache
# below holds up to 200,000 tuples of 50 ids (1.2 KB each with ints of their own, 0.5 KB with these)
_SHIFTED = tuple(range(1, N_CHARACTERS))


@lru_cache(maxsize=200_000)
def token_to_char_ids(token: str) -> tuple[int, ...]:
    """The 50 (+1-shifted) character ids of one token."""
    if token == BOS_TOKEN:
        return BOS_IDS
    if token == EOS_TOKEN:
        return EOS_IDS
    word = token.encode("utf-8", "ignore")[: MAX_CHARACTERS_PER_TOKEN - 2]
    ids = [PADDING_CHAR] * MAX_CHARACTERS_PER_TOKEN
    ids[0] = BEGIN_OF_WORD
    ids[1 : len(word) + 1] = word
    ids[len(word) + 1] = END_OF_WORD
    return tuple(_SHIFTED[i] for i in ids)


def batch_to_ids(sentences: Sequence[Sequence[str]]) -> torch.Tensor:
    """Character ids of a batch of tokenised sentences, right-padded: (batch, max_len, 50) int64.

    No sentence boundaries are added (AllenNLP's ``batch_to_ids``); the biLM adds them.
    """
    max_len = max((len(s) for s in sentences), default=0)
    ids = torch.zeros(len(sentences), max_len, MAX_CHARACTERS_PER_TOKEN, dtype=torch.long)
    for row, sentence in enumerate(sentences):
        if sentence:
            ids[row, : len(sentence)] = torch.tensor([token_to_char_ids(t) for t in sentence])
    return ids


def add_sentence_boundaries(char_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Put ``<S>`` before and ``</S>`` after every sentence of right-padded ``(B, T, 50)`` ids.

    Returns ``(ids (B, T+2, 50), mask (B, T+2))``. An empty sentence becomes ``<S> </S>``.
    """
    batch, steps, width = char_ids.shape
    lengths = (char_ids > 0).any(-1).sum(-1)
    out = char_ids.new_zeros(batch, steps + 2, width)
    out[:, 1 : steps + 1] = char_ids
    rows = torch.arange(batch, device=char_ids.device)
    out[:, 0] = torch.tensor(BOS_IDS, device=char_ids.device)
    out[rows, lengths + 1] = torch.tensor(EOS_IDS, device=char_ids.device)
    mask = torch.arange(steps + 2, device=char_ids.device)[None, :] < (lengths + 2)[:, None]
    return out, mask


def remove_sentence_boundaries(tensor: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop the ``<S>``/``</S>`` positions of ``(B, T+2, ...)`` activations: ``(B, T, ...)`` and mask."""
    lengths = mask.sum(-1) - 2
    steps = tensor.shape[1] - 2
    new_mask = torch.arange(steps, device=mask.device)[None, :] < lengths[:, None]
    out = tensor[:, 1 : steps + 1] * new_mask.unsqueeze(-1).to(tensor.dtype)
    return out, new_mask
