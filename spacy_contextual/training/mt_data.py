"""Multi30k text for training the CoVe MT model: reading parallel files, building vocabularies (the
English source with its fixed GloVe rows), learning subwords (byte-pair encoding, Sennrich et al.
2016, on the German training words) and length-sorted batches. The token and vocabulary conventions
themselves are in ``mt_text.py``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

import torch

from ..errors import ContextualError
from ..formats.word_vectors import load_vectors
from ..mt_text import BOS_ID, EOS_ID, SPECIALS, SUBWORD_PREFIX, UNK, pad, tokenize
from ..text_files import numbered_lines
from ..types import PathLike


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
    return [line for _, line in numbered_lines(path)]


def read_parallel(source: PathLike, target: PathLike) -> list[tuple[list[str], list[str]]]:
    """Tokenised (source, target) pairs; the two files must have the same number of lines."""
    src, tgt = read_lines(source), read_lines(target)
    if len(src) != len(tgt):
        raise ContextualError(f"{source} has {len(src)} lines but {target} has {len(tgt)}; they must be line-aligned")
    return [(tokenize(s), tokenize(t, lower=False)) for s, t in zip(src, tgt, strict=True)]


def build_vocab(sentences: Iterable[Sequence[str]], min_count: int = 1, max_size: int | None = None) -> list[str]:
    """Special symbols, then words by falling frequency (ties alphabetically) with count >= min_count."""
    counts = Counter(token for sentence in sentences for token in sentence)
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return SPECIALS + words[: None if max_size is None else max_size - len(SPECIALS)]


def source_vocabulary(
    train_sources: Sequence[Sequence[str]],
    glove_path: PathLike,
    oov: str,
    min_count: int,
    seed: int,
    input_std: float = 0.0,
) -> tuple[list[str], torch.Tensor]:
    """English vocabulary and its fixed 300-d rows (specials: zero).

    ``oov = "zero"`` keeps the training words that have a GloVe vector (the rest read as ``<unk>``, the
    zero vector); ``"random"`` keeps them all, those without GloVe getting fixed uniform(+-0.1) rows.
    ``input_std > 0`` multiplies the GloVe rows by one scalar so that their per-dimension standard
    deviation is ``input_std`` (GloVe 840B has about 0.4): directions and neighbours are unchanged,
    but vectors trained briefly on a small corpus are an order of magnitude smaller than that, which
    starves the encoder's input gates at the usual uniform(+-0.1) initialisation."""
    candidates = build_vocab(train_sources, min_count)[len(SPECIALS) :]
    static = load_vectors(glove_path, vocab=candidates)
    index = static.index()
    words = [w for w in candidates if w in index] if oov == "zero" else candidates
    found = [index[w] for w in words if w in index]
    scale = input_std / float(static.vectors[found].std()) if input_std > 0 and found else 1.0
    table = torch.zeros(len(SPECIALS) + len(words), static.dim)
    generator = torch.Generator().manual_seed(seed)
    for row, word in enumerate(words, start=len(SPECIALS)):
        if word in index:
            table[row] = torch.from_numpy(static.vectors[index[word]]) * scale
        else:
            table[row] = torch.rand(static.dim, generator=generator) * 0.2 - 0.1
    return SPECIALS + words, table


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
