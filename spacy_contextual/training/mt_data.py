"""Multi30k text for the CoVe MT model: tokenising, vocabularies, id tensors and length-sorted batches.

Tokenisation is a regular expression in the spirit of Moses without its aggressive hyphen split:
words (letters/digits with internal ``-`` ``'`` ``.`` joints such as "t-shirt", "don't", "3.5") stay
whole, every other non-space character is a token. The English source is lowercased, as the CoVe
paper did (GloVe lookup); the German target keeps its case so translations read as German (nouns
capitalised) and default, cased sacreBLEU is meaningful; the paper's metric lowercases both sides.
``detokenize`` undoes the spacing for display and for default sacreBLEU.

The target side is words, or subwords: byte-pair encoding (Sennrich et al. 2016) learned on the
German training words; a piece that continues a word starts with ``##`` ("Bü ##sch ##e"), and
``join_subwords`` glues the pieces of a decoded sentence back into words. Word tokens never start
with ``##`` (``#`` is punctuation, one token per character), so joining is safe on word output too.
"""

from __future__ import annotations

import gzip
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import torch

from ..types import PathLike

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


def learn_subwords(sentences: Iterable[Sequence[str]], vocab_size: int) -> Callable[[Sequence[str]], list[str]]:
    """A BPE segmenter (word tokens -> pieces) with ``vocab_size`` symbols, learned on ``sentences``.

    Learning and segmenting use the ``tokenizers`` library; the model directory stores only the
    resulting piece vocabulary, since decoding needs nothing but ``join_subwords``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=UNK, continuing_subword_prefix=SUBWORD_PREFIX))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS, continuing_subword_prefix=SUBWORD_PREFIX, show_progress=False
    )
    tokenizer.train_from_iterator((" ".join(sentence) for sentence in sentences), trainer)
    return lambda tokens: tokenizer.encode(list(tokens), is_pretokenized=True).tokens if tokens else []


def read_lines(path: PathLike) -> list[str]:
    """Lines of a text file, ``.gz`` or plain, without their newlines."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def read_parallel(source: PathLike, target: PathLike) -> list[tuple[list[str], list[str]]]:
    """Tokenised (source, target) pairs; the two files must have the same number of lines."""
    src, tgt = read_lines(source), read_lines(target)
    if len(src) != len(tgt):
        raise ValueError(f"{source} has {len(src)} lines but {target} has {len(tgt)}; they must be line-aligned")
    return [(tokenize(s), tokenize(t, lower=False)) for s, t in zip(src, tgt, strict=True)]


def build_vocab(sentences: Iterable[Sequence[str]], min_count: int = 1, max_size: int | None = None) -> list[str]:
    """Special symbols, then words by falling frequency (ties alphabetically) with count >= min_count."""
    counts = Counter(token for sentence in sentences for token in sentence)
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return SPECIALS + words[: None if max_size is None else max_size - len(SPECIALS)]


class Vocab:
    """String <-> id mapping over a word list that starts with ``SPECIALS``."""

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


def batches(
    pairs: Sequence[tuple[list[int], list[int]]], batch_size: int, shuffle: bool, seed: int = 0
) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(src, src_lengths, tgt) batches of similar source length; tgt is ``<s> y </s>``.

    Pairs are sorted by source length inside pools of 50 batches so padding stays small while the
    batch order still changes every epoch."""
    order = list(range(len(pairs)))
    rng = random.Random(seed)
    if shuffle:
        rng.shuffle(order)
    pool = batch_size * 50
    chunks = []
    for start in range(0, len(order), pool):
        block = sorted(order[start : start + pool], key=lambda i: len(pairs[i][0]))
        chunks.extend(block[i : i + batch_size] for i in range(0, len(block), batch_size))
    if shuffle:
        rng.shuffle(chunks)
    for chunk in chunks:
        src, src_lengths = pad([pairs[i][0] for i in chunk])
        tgt, _ = pad([[BOS_ID, *pairs[i][1], EOS_ID] for i in chunk])
        yield src, src_lengths, tgt
