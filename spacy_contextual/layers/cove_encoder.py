"""CoVe in spaCy: GloVe + the MT-LSTM (``models/cove_layers.py``) as a thinc layer, and its loaders.

Per token w the layer returns three layers, stacked as (3, len(doc), 2H):

    h_0 = [GloVe(w) ; 0]      the fixed 300-d vector, zero-padded to 2H = 600 (``layer_widths`` = 300)
    h_1 = CoVe-1(w)           first biLSTM layer [fwd ; bwd]
    h_2 = CoVe-2(w)           second biLSTM layer, the paper's CoVe

Words are looked up lowercased (as the model was trained); words outside the vocabulary get the
zero vector. The listener (``CoveListener.v1``) un-pads h_0 to concatenate [GloVe ; CoVe] as the
paper does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import spacy
import torch

from ..formats.cove_pth import load_published_cove
from ..formats.detect import load_cove
from ..formats.model_config import SCHEMAS, validate_section
from ..hub.resolver import resolve_model_dir
from ..models.cove_layers import CoveLayers
from ..models.mtlstm import MTLSTM
from ..precision import MIXED, check_precision
from .encoder import ContextualEncoder
from .setting_checks import check_encoder_settings, check_flag, check_model_name
from .shim import EncoderShim
from .signatures import DocsToLayers


class CoveShim(EncoderShim):
    description = "CoVe encoder"

    def load(self, module: torch.nn.Module) -> None:
        if not isinstance(module, CoveLayers):
            raise TypeError(f"the CoVe component needs CoveLayers, got {type(module).__name__}")
        super().load(module)

    def layers_of(self, module: CoveLayers, words: Sequence[Sequence[str]]) -> torch.Tensor:
        return module(*module.word_ids(words))

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
        encoder_schema = {key: SCHEMAS["cove-encoder"][key] for key in ("input_dim", "hidden_dim", "num_layers")}
        encoder = MTLSTM(**validate_section(config["encoder"], encoder_schema, "the stored CoVe config", "encoder."))
        return CoveLayers(encoder, torch.zeros(len(config["vocab"]), encoder.input_dim), config["vocab"])

    @property
    def layer_names(self) -> list[str]:
        return ["glove"] + [f"cove{j}" for j in range(1, self.module.encoder.num_layers + 1)]

    @property
    def layer_widths(self) -> list[int]:
        return self.module.layer_widths


@spacy.registry.architectures("spacy-contextual.CoveEncoder.v3")
def cove_encoder_v3(
    name: str | None = "default",
    window: int = 128,
    max_batch_tokens: int = 4096,
    precision: str = "fp32",
    segment_cache_mb: int = 0,
) -> DocsToLayers:
    """``CoveEncoder.v2`` with its weights named: ``name`` is a model name (``spacy-contextual models``),
    a model directory, or "default" (the bundled model), loaded by ``nlp.initialize()``; a loader in
    ``[initialize.components.cove.loader]`` takes precedence."""
    check_model_name("name", name)
    return cove_encoder(name, window, max_batch_tokens, check_precision(precision), segment_cache_mb)


@spacy.registry.architectures("spacy-contextual.CoveEncoder.v2")
def cove_encoder_v2(
    window: int = 128, max_batch_tokens: int = 4096, precision: str = "fp32", segment_cache_mb: int = 0
) -> DocsToLayers:
    """The GloVe + MT-LSTM layer (stateless: the encoder carries no state between sentences).
    ``precision``: fp32, bf16 or fp16 (CUDA), as autocast on the encoder's device; ``segment_cache_mb``:
    MiB of encoded segments kept while the encoder runs without gradients (0: no cache)."""
    return cove_encoder(None, window, max_batch_tokens, check_precision(precision), segment_cache_mb)


@spacy.registry.architectures("spacy-contextual.CoveEncoder.v1")
def cove_encoder_v1(
    window: int = 128, max_batch_tokens: int = 4096, mixed_precision: bool = False, segment_cache_mb: int = 0
) -> DocsToLayers:
    """``CoveEncoder.v2`` as configs before ``precision`` wrote it: ``mixed_precision = true`` is
    fp16 on CUDA and bf16 on the CPU."""
    check_flag("mixed_precision", mixed_precision)
    return cove_encoder(None, window, max_batch_tokens, MIXED if mixed_precision else "fp32", segment_cache_mb)


def cove_encoder(
    name: str | None, window: int, max_batch_tokens: int, precision: str, segment_cache_mb: int
) -> DocsToLayers:
    check_encoder_settings(window=window, max_batch_tokens=max_batch_tokens, segment_cache_mb=segment_cache_mb)
    shim = CoveShim(precision=precision, segment_cache_mb=segment_cache_mb)
    return ContextualEncoder(
        "cove_encoder", shim, window=window, max_batch_tokens=max_batch_tokens, stateful=False,
        weights=name, load=load_cove_model_dir,
    )  # fmt: skip


@spacy.registry.misc("spacy-contextual.CoveModelDir.v1")
def cove_model_dir_loader(path: str | None = None) -> Callable[[], CoveLayers]:
    """A "cove-encoder" or "cove-mt" directory, or one holding the published ``wmtlstm-*.pth`` and a GloVe
    text file; null or "default" = the bundled model."""
    return partial(load_cove_model_dir, path)


def load_cove_model_dir(path: str | None) -> CoveLayers:
    return load_cove(resolve_model_dir("cove", path))


@spacy.registry.misc("spacy-contextual.CovePth.v1")
def cove_pth_loader(pth_path: str, glove_path: str) -> Callable[[], CoveLayers]:
    """The published salesforce ``wmtlstm-*.pth`` over the user's GloVe text file (all its rows are
    stored in the pipeline: GloVe 840B makes it ~2.6 GB)."""
    return partial(load_published_cove, pth_path, glove_path)
