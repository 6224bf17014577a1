"""The CoVe API: tokenised English sentences in, per-layer float32 arrays (3, n, 2H) out; translation.

Layers, as for ELMo (``models/cove_layers.py``): 0 = GloVe (zero-padded from 300 to 600, for words
outside the vocabulary the zero vector), 1 = CoVe-1, 2 = CoVe-2 (the paper's CoVe); ``layer_widths``
is [300, 600, 600], so ``array[0, :, :300]`` is the GloVe vector. The paper's downstream input
[GloVe ; CoVe] is ``np.concatenate([a[0, :, :300], a[2]], axis=1)``. Tokens are lowercased before
lookup, as the model was trained. ``translate`` needs the whole MT model (a "cove-mt" directory such
as the bundled default) and returns the attention matrix too. ``precision`` (fp32, bf16, or fp16 on
CUDA; ``precision.py``) runs the encoder and the translator under autocast; the arrays stay float32. A
batch holding a sentence of more than ``max_window_tokens`` tokens runs in windows of that many
positions, each row's LSTM state carried across them in both directions
(``CoveLayers.encode_in_windows``), and is written straight into its arrays.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from ..batching import MAX_BATCH_TOKENS, MAX_WINDOW_TOKENS, plan_batches
from ..devices import resolve_device
from ..errors import ContextualError
from ..formats.cove_dir import MT_KIND, load_translator, longest_training_sentence, model_kind
from ..formats.cove_pth import load_published_cove
from ..formats.detect import OURS, format_of, load_cove
from ..hub.resolver import resolve_model_dir
from ..models.cove_layers import CoveLayers
from ..models.seq2seq import Translation, Translator
from ..mt_text import MTVocab, detokenize, pad, replace_unknown, tokenize
from ..precision import autocast, resolve_precision
from ..types import PathLike
from .embedder import Embedder


class Translated(NamedTuple):
    tokens: list[str]  # German tokens, without </s>
    attention: np.ndarray  # (len(tokens), len(source)) alpha_t rows; each sums to 1
    source: list[str]  # the English tokens the columns refer to (lowercased)
    text: str  # detokenised German


class CoveEmbedder(Embedder):
    def __init__(
        self,
        layers: CoveLayers,
        translator: Translator | None = None,
        target_vocab: Sequence[str] | None = None,
        device: str | torch.device = "cpu",
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        precision: str = "fp32",
        longest_training_sentence: int | None = None,
        max_window_tokens: int = MAX_WINDOW_TOKENS,
    ):
        super().__init__(max_batch_tokens, max_window_tokens)
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        self.longest_training_sentence = longest_training_sentence  # in tokens; None: not recorded
        self.layers = layers.to(self.device).eval()
        self.translator = None if translator is None else translator.to(self.device).eval()
        self.target_vocab = None if target_vocab is None else MTVocab(target_vocab)
        n_lstm = layers.encoder.num_layers
        self.layer_names = ["glove"] + [f"cove{j}" for j in range(1, n_lstm + 1)]
        self.layer_labels = ["GloVe"] + [f"CoVe-{j}" for j in range(1, n_lstm + 1)]
        self.layer_widths = layers.layer_widths

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def load(cls, model: PathLike | None = None, **kwargs) -> CoveEmbedder:
        """A "cove-mt" or "cove-encoder" directory, or one holding the published ``wmtlstm-*.pth`` and a GloVe
        text file (``formats/detect.py``); None or "default" = the bundled model (cove-mt)."""
        path = resolve_model_dir("cove", model)
        if format_of(path) == OURS and model_kind(path) == MT_KIND:  # the whole translator: it can translate
            translator, source_vocab, target_vocab = load_translator(path)
            layers = CoveLayers(translator.encoder, translator.source_vectors, source_vocab)
            kwargs.setdefault("longest_training_sentence", longest_training_sentence(path))
            return cls(layers, translator, target_vocab, **kwargs)
        return cls(load_cove(path), **kwargs)

    @classmethod
    def from_pth(
        cls, pth_path: PathLike, glove_path: PathLike, vocab: Sequence[str] | None = None, **kwargs
    ) -> CoveEmbedder:
        """The published ``wmtlstm-*.pth`` encoder over the user's GloVe file (e.g. glove.840B.300d.txt);
        ``vocab`` restricts the table to the words you need, otherwise the whole file is loaded."""
        return cls(load_published_cove(pth_path, glove_path, vocab), **kwargs)

    @property
    def vocab(self) -> MTVocab:
        return self.layers.vocab

    # -- embedding ------------------------------------------------------------------------------

    @torch.no_grad()
    def embed_batch(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        out = [np.zeros((self.num_layers, 0, self.output_dim), dtype=np.float32) for _ in sentences]
        rows = [i for i, sentence in enumerate(sentences) if len(sentence) > 0]
        if rows and max(len(sentences[i]) for i in rows) > self.max_window_tokens:  # straight into the arrays
            arrays = [torch.empty(self.num_layers, len(sentences[i]), self.output_dim) for i in rows]
            with autocast(self.precision, self.device):
                self.layers.encode_in_windows([sentences[i] for i in rows], arrays, self.max_window_tokens)
            for index, array in zip(rows, arrays, strict=True):
                out[index] = array.numpy()
        elif rows:
            ids, lengths = self.layers.word_ids([sentences[i] for i in rows])
            with autocast(self.precision, self.device):
                stacked = self.layers(ids, lengths).float().cpu().numpy()  # (B, 3, T, 2H)
            for row, index in enumerate(rows):
                out[index] = np.ascontiguousarray(stacked[row, :, : int(lengths[row])])
        return out

    # -- translation ----------------------------------------------------------------------------

    @torch.no_grad()
    def translate(
        self,
        sentences: Sequence[str | Sequence[str]],
        beam: int = 5,
        alpha: float = 0.6,
        max_length: int = 100,
        batch_size: int = 64,
        replace_unk: bool = True,
    ) -> list[Translated]:
        """English sentences (raw strings, or token lists) -> German with the attention matrix.

        beam = 1 is greedy (batched); beam > 1 runs beam search sentence by sentence. ``replace_unk``
        writes the most-attended source token in place of each generated <unk>."""
        if self.translator is None or self.target_vocab is None:
            raise ContextualError(
                "this CoVe model is an encoder only; translation needs a 'cove-mt' model directory "
                "(the bundled default is one)"
            )
        sources = [tokenize(s) if isinstance(s, str) else [t.lower() for t in s] for s in sentences]
        self._warn_if_longer_than_trained(sources)
        with autocast(self.precision, self.device):
            results = translate_ids(
                self.translator, [self.vocab.encode(s) for s in sources], beam, alpha, max_length, batch_size
            )
        out = []
        for source, result in zip(sources, results, strict=True):
            if result is None:
                out.append(Translated([], np.zeros((0, 0), dtype=np.float32), [], ""))
                continue
            tokens = self.target_vocab.decode(result.ids)
            attention = result.attention[: len(tokens)].numpy()
            if replace_unk:
                tokens = replace_unknown(tokens, attention, source)
            out.append(Translated(tokens, attention, source, detokenize(tokens)))
        return out

    def _warn_if_longer_than_trained(self, sources: Sequence[Sequence[str]]) -> None:
        longest = self.longest_training_sentence
        too_long = [i for i, source in enumerate(sources) if longest is not None and len(source) > longest]
        if too_long:
            first = too_long[0]
            more = f" (and {len(too_long) - 1:,} more)" if len(too_long) > 1 else ""
            warnings.warn(
                f"sentence {first + 1}{more} has {len(sources[first]):,} tokens, more than the longest sentence "
                f"the model was trained on ({longest} tokens): its translation is likely cut short or wrong; "
                "split long lines into sentences",
                stacklevel=3,
            )


def translate_ids(
    model: Translator,
    sources: Sequence[Sequence[int]],
    beam: int = 1,
    alpha: float = 0.6,
    max_length: int = 100,
    batch_size: int = 64,
) -> list[Translation | None]:
    """Source id lists -> translations in input order (None for an empty source).

    Batched by length (``batching.plan_batches``); beam = 1 decodes greedily in batches, beam > 1
    one sentence at a time."""
    if beam < 1:
        raise ContextualError(f"beam must be >= 1, got {beam}")
    model.eval()
    device = model.source_vectors.device
    out: list[Translation | None] = [None] * len(sources)
    nonempty = [i for i in range(len(sources)) if len(sources[i]) > 0]
    rows = batch_size if beam == 1 else 1
    for batch in plan_batches([len(sources[i]) for i in nonempty], max_rows=rows):
        chunk = [nonempty[b] for b in batch]
        ids, lengths = pad([sources[i] for i in chunk])
        ids = ids.to(device)
        if beam == 1:
            results = model.greedy(ids, lengths, max_length)
        else:
            results = [model.beam_search(ids, int(lengths[0]), beam, alpha, max_length)]
        for index, result in zip(chunk, results, strict=True):
            out[index] = result
    return out
