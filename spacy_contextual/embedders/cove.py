"""The CoVe API: tokenised English sentences in, [GloVe ; CoVe-1 ; CoVe-2] per token out; translation.

``CoveEmbedder.embed_sentences`` returns one float32 array (n, 1500) per sentence, columns
``[0:300]`` GloVe (zero for words outside the vocabulary), ``[300:900]`` CoVe-1 (first biLSTM layer,
[fwd | bwd]) and ``[900:1500]`` CoVe-2 (second layer), the order of the reference ``MTLSTM`` with
``residual_embeddings=True, layer0=True, layer1=True``; ``LAYER_SLICES`` names the blocks.
Tokens are lowercased before lookup, as the model was trained. ``translate`` needs the whole MT
model (a "cove-mt" directory such as the bundled default) and returns the attention matrix too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ..formats.cove_dir import MT_KIND, load_encoder, load_translator, model_kind
from ..formats.cove_pth import load_cove_pth
from ..formats.vectors import load_vectors
from ..models.mtlstm import MTLSTM
from ..models.seq2seq import Translator, translate_all
from ..training.mt_data import SPECIALS, Vocab, detokenize, pad, replace_unknown, tokenize
from ..types import PathLike

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "cove"
LAYER_SLICES = {"glove": slice(0, 300), "cove1": slice(300, 900), "cove2": slice(900, 1500)}


class Translated(NamedTuple):
    tokens: list[str]  # German tokens, without </s>
    attention: np.ndarray  # (len(tokens), len(source)) alpha_t rows; each sums to 1
    source: list[str]  # the English tokens the columns refer to (lowercased)
    text: str  # detokenised German


def default_model_path() -> Path:
    if not (DEFAULT_MODEL_DIR / "config.json").is_file():
        raise FileNotFoundError(
            f"the bundled CoVe model is not installed at {DEFAULT_MODEL_DIR}; pass a CoVe model directory "
            "(spacy-contextual train-cove / export-cove) or use CoveEmbedder.from_pth(pth, glove)"
        )
    return DEFAULT_MODEL_DIR


class CoveEmbedder:
    def __init__(
        self,
        encoder: MTLSTM,
        source_vectors: torch.Tensor,
        vocab: Sequence[str],
        translator: Translator | None = None,
        target_vocab: Sequence[str] | None = None,
        device: str | torch.device = "cpu",
    ):
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("device 'cuda' was asked for but torch sees no CUDA device; use device='cpu'")
        self.encoder = encoder.to(self.device).eval()
        self.source_vectors = source_vectors.float().to(self.device)
        self.vocab = Vocab(vocab)
        self.translator = None if translator is None else translator.to(self.device).eval()
        self.target_vocab = None if target_vocab is None else Vocab(target_vocab)

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def load(cls, model: PathLike | None = None, **kwargs) -> CoveEmbedder:
        """A "cove-mt" or "cove-encoder" directory; None or "default" = the bundled model."""
        path = default_model_path() if model is None or str(model) == "default" else Path(model)
        if model_kind(path) == MT_KIND:
            translator, source_vocab, target_vocab = load_translator(path)
            return cls(translator.encoder, translator.source_vectors, source_vocab, translator, target_vocab, **kwargs)
        return cls(*load_encoder(path), **kwargs)

    @classmethod
    def from_pth(
        cls, pth_path: PathLike, glove_path: PathLike, vocab: Sequence[str] | None = None, **kwargs
    ) -> CoveEmbedder:
        """The published ``wmtlstm-*.pth`` encoder over the user's GloVe file (e.g. glove.840B.300d.txt).

        Words are looked up lowercased (the first, most frequent, row of each lowercased form wins);
        ``vocab`` restricts the table to the words you need, otherwise the whole file is loaded."""
        encoder = load_cove_pth(pth_path)
        static = load_vectors(
            glove_path, vocab=None if vocab is None else [w.lower() for w in vocab], lowercase_lookup=True
        )
        if static.dim != encoder.input_dim:
            raise ValueError(
                f"{glove_path} has {static.dim}-d vectors; the CoVe encoder needs {encoder.input_dim}-d GloVe"
            )
        words = [w for w in static.words if w not in SPECIALS]
        rows = torch.from_numpy(static.vectors[[static.index()[w] for w in words]])
        table = torch.cat([torch.zeros(len(SPECIALS), static.dim), rows])
        return cls(encoder, table, SPECIALS + words, **kwargs)

    # -- embedding ------------------------------------------------------------------------------

    @property
    def output_dim(self) -> int:
        return self.source_vectors.shape[1] + 2 * self.encoder.output_dim

    def _ids(self, tokens: Sequence[str]) -> list[int]:
        return self.vocab.encode([t.lower() for t in tokens])

    @torch.no_grad()
    def embed_sentences(self, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[np.ndarray]:
        """One float32 array (n, 1500) per sentence: [GloVe | CoVe-1 | CoVe-2]; empty sentences give (0, 1500)."""
        out: list[np.ndarray | None] = [None] * len(sentences)
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        for index in order:
            if len(sentences[index]) == 0:
                out[index] = np.zeros((0, self.output_dim), dtype=np.float32)
        order = [i for i in order if len(sentences[i]) > 0]
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            ids, lengths = pad([self._ids(sentences[i]) for i in chunk])
            ids = ids.to(self.device)
            glove = torch.nn.functional.embedding(ids, self.source_vectors)
            layers = self.encoder(glove, lengths).layers
            stacked = torch.cat([glove, *layers], dim=-1).float().cpu().numpy()
            for row, index in enumerate(chunk):
                out[index] = np.ascontiguousarray(stacked[row, : int(lengths[row])])
        return out  # type: ignore[return-value]

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
            raise RuntimeError(
                "this CoVe model is an encoder only; translation needs a 'cove-mt' model directory (the default has "
                "one)"
            )
        sources = [tokenize(s) if isinstance(s, str) else [t.lower() for t in s] for s in sentences]
        results = translate_all(
            self.translator, [self.vocab.encode(s) for s in sources], beam, alpha, max_length, batch_size
        )
        out = []
        for source, result in zip(sources, results, strict=True):
            if result is None:
                out.append(Translated([], np.zeros((0, 0), dtype=np.float32), [], ""))
                continue
            tokens = self.target_vocab.decode(result.ids)
            attention = result.attention[: len(tokens)].float().numpy()
            if replace_unk:
                tokens = replace_unknown(tokens, attention, source)
            out.append(Translated(tokens, attention, source, detokenize(tokens)))
        return out
