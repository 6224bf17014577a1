"""CoVe in spaCy: GloVe + the MT-LSTM (``models/mtlstm.py``) as a thinc layer, and its loaders.

Per token w the layer returns three layers, stacked as (3, len(doc), 2H):

    h_0 = [GloVe(w) ; 0]      the fixed 300-d vector, zero-padded to 2H = 600 (``layer_widths`` = 300)
    h_1 = CoVe-1(w)           first biLSTM layer [fwd ; bwd]
    h_2 = CoVe-2(w)           second biLSTM layer, the paper's CoVe

Words are looked up lowercased (as the model was trained); words outside the vocabulary get the
zero vector. Stacking all three at one width keeps one array per Doc like ELMo's; the listener
(``CoveListener.v1``) un-pads h_0 to concatenate [GloVe ; CoVe] as the paper does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import spacy
import torch
from spacy.tokens import Doc
from thinc.api import ArgsKwargs, Model
from thinc.types import Floats3d
from torch import nn

from ..embedders.cove import CoveEmbedder, default_model_path
from ..formats.cove_dir import load_encoder
from ..models.mtlstm import MTLSTM
from ..training.mt_data import Vocab, pad
from .contextual_encoder import ContextualEncoder
from .encoder_shim import EncoderShim, optional_str


class CoveLayers(nn.Module):
    """Word ids -> (B, 3, T, 2H): [GloVe ; 0], CoVe-1, CoVe-2. The GloVe table is a fixed buffer."""

    def __init__(self, encoder: MTLSTM, source_vectors: torch.Tensor, vocab: Sequence[str]):
        super().__init__()
        self.encoder = encoder
        self.register_buffer("source_vectors", source_vectors.float())
        self.vocab = Vocab(vocab)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        glove = nn.functional.embedding(ids, self.source_vectors)
        layers = self.encoder(glove, lengths).layers
        padded = nn.functional.pad(glove, (0, self.encoder.output_dim - glove.shape[-1]))
        return torch.stack([padded, *layers], dim=1)


class CoveShim(EncoderShim):
    description = "CoVe encoder"

    def load(self, module: torch.nn.Module) -> None:
        if not isinstance(module, CoveLayers):
            raise TypeError(f"the CoVe component needs CoveLayers, got {type(module).__name__}")
        super().load(module)

    def module_config(self) -> dict[str, Any]:
        encoder = self.module.encoder
        return {
            "encoder": {
                "input_dim": encoder.input_dim,
                "hidden_dim": encoder.hidden_dim,
                "num_layers": encoder.num_layers,
            },
            "vocab": self.module.vocab.words,
        }

    def build_module(self, config: dict[str, Any]) -> CoveLayers:
        encoder = MTLSTM(**config["encoder"])
        return CoveLayers(encoder, torch.zeros(len(config["vocab"]), encoder.input_dim), config["vocab"])

    def prepare_inputs(self, words: Sequence[Sequence[str]]) -> ArgsKwargs:
        ids, lengths = pad([self.module.vocab.encode([w.lower() for w in sentence]) for sentence in words])
        return ArgsKwargs(args=(ids.to(self.device), lengths), kwargs={})

    def token_layers(self, output: torch.Tensor) -> torch.Tensor:
        return output

    @property
    def layer_names(self) -> list[str]:
        return ["glove"] + [f"cove{j}" for j in range(1, self.module.encoder.num_layers + 1)]

    @property
    def layer_widths(self) -> list[int]:
        encoder = self.module.encoder
        return [encoder.input_dim] + [encoder.output_dim] * encoder.num_layers


@spacy.registry.architectures("spacy-contextual.CoveEncoder.v1")
def cove_encoder_v1(
    window: int = 128, max_batch_tokens: int = 4096, mixed_precision: bool = False, segment_cache_mb: int = 0
) -> Model[list[Doc], list[Floats3d]]:
    """The GloVe + MT-LSTM layer (stateless: the encoder carries no state between sentences).
    ``segment_cache_mb``: MiB of encoded segments kept while the encoder is frozen (0: no cache)."""
    shim = CoveShim(mixed_precision=mixed_precision, segment_cache_mb=segment_cache_mb)
    return ContextualEncoder("cove_encoder", shim, window=window, max_batch_tokens=max_batch_tokens, stateful=False)


@spacy.registry.misc("spacy-contextual.CoveModelDir.v1")
def cove_model_dir_loader(path: str | None = None) -> Callable[[], CoveLayers]:
    """A "cove-encoder" or "cove-mt" directory; null or "default" = the bundled model."""
    path = optional_str(path)

    def load() -> CoveLayers:
        if path not in (None, "default"):
            return CoveLayers(*load_encoder(path))
        try:
            return CoveLayers(*load_encoder(default_model_path()))
        except FileNotFoundError as err:
            raise FileNotFoundError(
                f"{err}. For the cove component name a model in [initialize.components.cove.loader] "
                '(@misc = "spacy-contextual.CoveModelDir.v1", path = "...")'
            ) from None

    return load


@spacy.registry.misc("spacy-contextual.CovePth.v1")
def cove_pth_loader(pth_path: str, glove_path: str) -> Callable[[], CoveLayers]:
    """The published salesforce ``wmtlstm-*.pth`` over the user's GloVe text file (all its rows are
    stored in the pipeline: GloVe 840B makes it ~2.6 GB)."""

    def load() -> CoveLayers:
        embedder = CoveEmbedder.from_pth(pth_path, glove_path)
        return CoveLayers(embedder.encoder.cpu(), embedder.source_vectors.cpu(), embedder.vocab.words)

    return load
