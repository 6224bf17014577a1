"""BLEU of a translation model, in both forms the CoVe paper's tables mix: multi-bleu style (lowercased,
on our tokens) and default sacreBLEU (cased, on detokenised text, with its signature)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..embedders.cove_embedder import CoveEmbedder
from ..formats.cove_dir import load_translator
from ..models.cove_layers import CoveLayers
from ..models.seq2seq import Translator
from ..mt_text import detokenize, join_subwords, tokenize
from ..types import PathLike
from .mt_data import read_lines


@dataclass
class BleuResult:
    tokenized_lowercase: float  # BLEU(lowercase=True, tokenize='none') on tokenised text (multi-bleu style)
    default: float  # default sacreBLEU on detokenised text
    signature: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "bleu_tok_lc": round(self.tokenized_lowercase, 2),
            "bleu_sacre": round(self.default, 2),
            "signature": self.signature,
        }


def bleu(hypotheses: Sequence[Sequence[str]], references: Sequence[str]) -> BleuResult:
    """Both BLEU forms; hypotheses are token (or subword piece) lists, references raw German lines."""
    from sacrebleu.metrics import BLEU

    tokenized = BLEU(lowercase=True, tokenize="none", force=True).corpus_score(
        [" ".join(join_subwords(h)) for h in hypotheses], [[" ".join(tokenize(r, lower=False)) for r in references]]
    )
    default_metric = BLEU()
    default = default_metric.corpus_score([detokenize(h) for h in hypotheses], [list(references)])
    return BleuResult(tokenized.score, default.score, str(default_metric.get_signature()))


def translate_tokens(
    model: Translator,
    source_words: Sequence[str],
    target_words: Sequence[str],
    sources: Sequence[Sequence[str]],
    beam: int = 1,
    alpha: float = 0.6,
    max_length: int = 100,
    replace_unk: bool = True,
) -> list[list[str]]:
    """Token lists in, German token lists out, in input order (``CoveEmbedder.translate``)."""
    layers = CoveLayers(model.encoder, model.source_vectors, source_words)
    embedder = CoveEmbedder(layers, model, target_words, device=model.source_vectors.device)
    return [t.tokens for t in embedder.translate(sources, beam, alpha, max_length, replace_unk=replace_unk)]


def evaluate_bleu(
    model_dir: PathLike,
    source_file: PathLike,
    reference_file: PathLike,
    beam: int = 1,
    alpha: float = 0.6,
    replace_unk: bool = True,
) -> BleuResult:
    """Translate ``source_file`` with the model at ``model_dir`` and score it against ``reference_file``."""
    model, source_words, target_words = load_translator(model_dir)
    sources = [tokenize(line) for line in read_lines(source_file)]
    hypotheses = translate_tokens(model, source_words, target_words, sources, beam, alpha, replace_unk=replace_unk)
    return bleu(hypotheses, read_lines(reference_file))
