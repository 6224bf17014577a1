"""The CoVe translation model's text conventions: tokens, vocabularies and id tensors.

Tokenisation is a regular expression in the spirit of Moses without its aggressive hyphen split:
words (letters/digits with internal ``-`` ``'`` ``.`` joints such as "t-shirt", "don't", "3.5") stay
whole, every other non-space character is a token. The English source is lowercased, as the CoVe
paper did (GloVe lookup); the German target keeps its case. ``detokenize`` undoes the spacing.

A vocabulary is a word list that starts with ``SPECIALS`` (``<pad>``, ``<unk>``, ``<s>``, ``</s>``);
unknown words map to ``<unk>``. The target side may be subword pieces: a piece that continues a word
starts with ``##`` ("Bü ##sch ##e"), and ``join_subwords`` glues the pieces back into words (word
tokens never start with ``##``: ``#`` is punctuation, one token per character).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import torch

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = [PAD, UNK, BOS, EOS]
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(4)
SUBWORD_PREFIX = "##"

_TOKEN = re.compile(r"\w+(?:[-'’.]\w+)*|[^\w\s]")
_NO_SPACE_BEFORE = re.compile(r" ([.,!?;:%)\]}»“])")
_NO_SPACE_AFTER = re.compile(r"([(\[{«„]) ")


def tokenize(text: str, lower: bool = True) -> list[str]:
    """Tokens of one raw sentence, lowercased unless ``lower=False``."""
    return _TOKEN.findall(text.lower() if lower else text)


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens (or subword pieces) joined back into text: no space before closing punctuation or after
    opening brackets."""
    return _NO_SPACE_AFTER.sub(r"\1", _NO_SPACE_BEFORE.sub(r"\1", " ".join(join_subwords(tokens))))


def join_subwords(tokens: Sequence[str]) -> list[str]:
    """Words from subword pieces: each ``##piece`` is appended to the word before it."""
    words: list[str] = []
    for token in tokens:
        if token.startswith(SUBWORD_PREFIX) and len(token) > len(SUBWORD_PREFIX) and words:
            words[-1] += token[len(SUBWORD_PREFIX) :]
        else:
            words.append(token)
    return words


class MTVocab:
    """The translation model's token <-> id table: a word list that starts with ``SPECIALS``
    (``<pad>``, ``<unk>``, ``<s>``, ``</s>``). The biLM's softmax vocabulary is ``training.vocab.LMVocabulary``."""

    def __init__(self, words: Sequence[str]):
        if list(words[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}, got {list(words[:4])}")
        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.index.get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """One word per id, up to the first </s>."""
        out = []
        for i in ids:
            if i == EOS_ID:
                break
            out.append(self.words[i])
        return out


def replace_unknown(tokens: Sequence[str], attention, source: Sequence[str]) -> list[str]:
    """Each generated <unk> becomes the source token it attended to most (Luong et al. 2015)."""
    return [source[int(attention[step].argmax())] if token == UNK else token for step, token in enumerate(tokens)]


def pad(sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) LongTensor padded with PAD_ID, and the (B,) lengths."""
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    out = torch.full((len(sequences), int(lengths.max())), PAD_ID, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        out[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    return out, lengths
