"""ELMo in spaCy: the biLM (``models/bilm.py``) as a thinc layer, and the loaders that give it weights.

Per token k the layer returns h_{k,0} = [x_k; x_k] (char CNN) and h_{k,j} = [fwd_{k,j}; bwd_{k,j}]
for the L LSTM layers: an array (L + 1, len(doc), 2P) per Doc.

The char-CNN vectors go through the token cache (``models/token_cache.py``, the same one
``ElmoEmbedder`` uses): kept across batches at inference and with a frozen biLM, shared within a
batch while gradients flow into the biLM; emptied whenever the weights change.

Weights are loaded at ``nlp.initialize()`` from what ``model.name`` names (``ElmoEncoder.v3``: a
model name from the catalog, a model directory in any ELMo format: ours, an ELMoForManyLangs model,
bilm-tf options + HDF5 weights; or "default", the bundled model), as spacy-transformers'
``TransformerModel.v3`` takes ``name``; a loader in ``[initialize.components.elmo.loader]`` (e.g.
bilm-tf files named one by one) takes precedence. The sizes come from the loaded model's own
config, and the weights are then stored inside the pipeline: ``spacy.load`` reads no model directory.
An ELMoForManyLangs biLM is stored with its dictionaries (in the stored config).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import spacy
import torch

from ..formats.bilm_tf import load_bilm_tf
from ..formats.detect import load_elmo
from ..formats.manylangs import check_architecture
from ..formats.model_config import BILM, MANYLANGS, validate_section
from ..hub.resolver import resolve_model_dir
from ..models.bilm import BiLM, BiLMConfig
from ..models.manylangs_bilm import ManyLangsBiLM, ManyLangsConfig
from ..models.token_cache import TokenVectorCache
from ..precision import MIXED, check_precision
from .encoder import ContextualEncoder
from .setting_checks import check_count, check_encoder_settings, check_flag, check_model_name
from .shim import EncoderShim
from .signatures import DocsToLayers


class BiLMShim(EncoderShim):
    description = "ELMo biLM"
    casts_weights = True  # models/lstm.py keeps the cell state float32 under cast weights

    def __init__(
        self,
        stateful: bool = False,
        precision: str = "fp32",
        token_cache_size: int = 50_000,
        segment_cache_mb: int = 0,
    ):
        super().__init__(precision=precision, segment_cache_mb=segment_cache_mb)
        self.stateful = stateful
        self.token_cache = TokenVectorCache(token_cache_size)

    def load(self, module: torch.nn.Module) -> None:
        if not isinstance(module, BiLM):
            raise TypeError(f"the ELMo component needs a BiLM, got {type(module).__name__}")
        module.stateful = self.stateful
        module.reset_states()
        self.token_cache.clear()
        super().load(module)

    def layers_of(self, module: BiLM, words: Sequence[Sequence[str]]) -> torch.Tensor:
        activations, _ = module.encode_sentences(words, self.token_cache)
        return torch.stack(activations, dim=1)[:, :, 1:-1]  # drop <S> and the last </S> column

    # -- the token cache is emptied whenever the weights change -----------------------------------

    def finish_update(self, optimizer) -> None:
        if self._model is not None and any(p.grad is not None for p in self._model.token_encoder.parameters()):
            self.token_cache.clear()
        super().finish_update(optimizer)

    @contextmanager
    def use_params(self, params):
        self.token_cache.clear()  # e.g. the optimizer's parameter averages while evaluating
        try:
            with super().use_params(params):
                yield
        finally:
            self.token_cache.clear()

    def to_device(self, device_type: str, device_id: int) -> None:
        self.token_cache.clear()  # frees its vectors on the old device; the carried LSTM state moves along
        super().to_device(device_type, device_id)

    # -- architecture ---------------------------------------------------------------------------

    def module_config(self) -> dict[str, Any]:
        if isinstance(self.module, ManyLangsBiLM):
            return {"manylangs": self.module.config.to_dict()}
        return {"bilm": self.module.config.to_dict()}

    def build_module(self, config: dict[str, Any]) -> BiLM:
        source = "the stored ELMo config"
        if "manylangs" in config:
            stored = dict(config["manylangs"])
            lexicons = {key: stored.pop(key, None) for key in ("words", "chars")}
            check_architecture(validate_section(stored, MANYLANGS, source, "manylangs."), source)
            return ManyLangsBiLM(ManyLangsConfig(**stored, **lexicons))
        return BiLM(BiLMConfig.from_dict(validate_section(config["bilm"], BILM, source, "bilm.")))

    @property
    def layer_names(self) -> list[str]:
        return ["token"] + [f"lstm{j}" for j in range(1, self.module.num_layers)]

    @property
    def layer_widths(self) -> list[int]:
        return [self.module.output_dim] * self.module.num_layers


@spacy.registry.architectures("spacy-contextual.ElmoEncoder.v3")
def elmo_encoder_v3(
    name: str | None = "default",
    window: int = 128,
    max_batch_tokens: int = 4096,
    stateful: bool = False,
    precision: str = "fp32",
    token_cache_size: int = 50_000,
    segment_cache_mb: int = 0,
) -> DocsToLayers:
    """``ElmoEncoder.v2`` with its weights named: ``name`` is a model name (``spacy-contextual models``),
    a model directory, or "default" (the bundled model), loaded by ``nlp.initialize()``."""
    check_model_name("name", name)
    precision = check_precision(precision)
    return elmo_encoder(name, window, max_batch_tokens, stateful, precision, token_cache_size, segment_cache_mb)


@spacy.registry.architectures("spacy-contextual.ElmoEncoder.v2")
def elmo_encoder_v2(
    window: int = 128,
    max_batch_tokens: int = 4096,
    stateful: bool = False,
    precision: str = "fp32",
    token_cache_size: int = 50_000,
    segment_cache_mb: int = 0,
) -> DocsToLayers:
    """The biLM layer. ``window``: longest segment fed at once (tokens); ``max_batch_tokens``: padded
    tokens per batch; ``stateful``: carry LSTM state across batches (reference behaviour, not
    deterministic); ``precision``: fp32, bf16 or fp16 (CUDA): weights cast once for inference, autocast
    while the biLM trains (``shim.py``);
    ``token_cache_size``: word types whose char-CNN vectors are kept for inference (0: no cache);
    ``segment_cache_mb``: MiB of encoded segments kept while the biLM runs without gradients, so
    repeated sentences (later training epochs) are not encoded again (0: no cache)."""
    precision = check_precision(precision)
    return elmo_encoder(None, window, max_batch_tokens, stateful, precision, token_cache_size, segment_cache_mb)


@spacy.registry.architectures("spacy-contextual.ElmoEncoder.v1")
def elmo_encoder_v1(
    window: int = 128,
    max_batch_tokens: int = 4096,
    stateful: bool = False,
    mixed_precision: bool = False,
    token_cache_size: int = 50_000,
    segment_cache_mb: int = 0,
) -> DocsToLayers:
    """``ElmoEncoder.v2`` as configs before ``precision`` wrote it: ``mixed_precision = true`` is
    fp16 on CUDA and bf16 on the CPU."""
    check_flag("mixed_precision", mixed_precision)
    precision = MIXED if mixed_precision else "fp32"
    return elmo_encoder(None, window, max_batch_tokens, stateful, precision, token_cache_size, segment_cache_mb)


def elmo_encoder(
    name: str | None,
    window: int,
    max_batch_tokens: int,
    stateful: bool,
    precision: str,
    token_cache_size: int,
    segment_cache_mb: int,
) -> DocsToLayers:
    check_encoder_settings(window=window, max_batch_tokens=max_batch_tokens, segment_cache_mb=segment_cache_mb)
    check_flag("stateful", stateful)
    check_count("token_cache_size", token_cache_size, 0, "word types whose char-CNN vectors are kept; 0 = no cache")
    shim = BiLMShim(
        stateful=stateful, precision=precision, token_cache_size=token_cache_size, segment_cache_mb=segment_cache_mb
    )
    return ContextualEncoder(
        "elmo_encoder", shim, window=window, max_batch_tokens=max_batch_tokens, stateful=stateful,
        weights=name, load=load_elmo_model_dir,
    )  # fmt: skip


@spacy.registry.misc("spacy-contextual.ElmoModelDir.v1")
def elmo_model_dir_loader(path: str | None = None) -> Callable[[], BiLM]:
    """A model directory in any ELMo format (ours, ELMoForManyLangs, bilm-tf options + weights);
    null or "default" = the bundled model."""
    return partial(load_elmo_model_dir, path)


def load_elmo_model_dir(path: str | None) -> BiLM:
    return load_elmo(resolve_model_dir("elmo", path))


@spacy.registry.misc("spacy-contextual.ElmoBilmTF.v1")
def elmo_bilm_tf_loader(options_file: str, weight_file: str) -> Callable[[], BiLM]:
    """The published bilm-tf / AllenNLP files: ``options.json`` and the HDF5 weights."""
    return partial(load_bilm_tf, options_file, weight_file)
