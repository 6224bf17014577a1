"""Encoder APIs: tokenised sentences in, one float32 array (n_layers, n_tokens, width) per sentence
out, ELMo and CoVe alike (``embedder.Embedder``).

    from spacy_contextual.embedders import load_encoder
    elmo = load_encoder("elmo")                  # the bundled model; or a model directory (any ELMo format)
    layers = elmo.embed_sentences([["The", "bank", "."]])[0]   # (3, 3, 256)
    fast = load_encoder("elmo", precision="bf16")  # fp32 (default, exact), bf16, fp16 (CUDA): precision.py
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from ..errors import ContextualError
from ..hub.resolver import KINDS
from ..types import PathLike

if TYPE_CHECKING:
    from .cove_embedder import CoveEmbedder
    from .elmo_embedder import ElmoEmbedder
    from .embedder import Embedder

#: where each class lives: imported when first asked for, so that ELMo alone never loads the CoVe modules
CLASSES = {"CoveEmbedder": ".cove_embedder", "ElmoEmbedder": ".elmo_embedder", "Embedder": ".embedder"}
EMBEDDERS = {"elmo": "ElmoEmbedder", "cove": "CoveEmbedder"}


def __getattr__(name: str):
    if name in CLASSES:
        return getattr(import_module(CLASSES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_encoder(kind: str, name_or_path: PathLike | None = None, **kwargs) -> Embedder:
    """The ELMo or CoVe embedder for a model directory in any format this package reads (ours, an
    ELMoForManyLangs archive, bilm-tf options + weights, the published CoVe .pth + GloVe: told by its
    files); None or "default" = the bundled model."""
    if kind not in EMBEDDERS:
        raise ContextualError(f"unknown encoder {kind!r}: choose one of {', '.join(KINDS)}")
    return __getattr__(EMBEDDERS[kind]).load(name_or_path, **kwargs)


__all__ = ["CoveEmbedder", "ElmoEmbedder", "Embedder", "load_encoder"]
