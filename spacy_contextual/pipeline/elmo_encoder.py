"""ELMo in spaCy: the biLM (``models/bilm.py``) as a thinc layer, and the loaders that give it weights.

Per token k the layer returns h_{k,0} = [x_k; x_k] (char CNN) and h_{k,j} = [fwd_{k,j}; bwd_{k,j}]
for the L LSTM layers: an array (L + 1, len(doc), 2P) per Doc.

At inference (and in training with ``frozen = true``) the char-CNN vectors come from an LRU cache
of word types (``models/token_cache.py``, shared with ``ElmoEmbedder``), emptied whenever the
weights change; while gradients flow into the biLM, ``BiLM.forward`` runs the CNN on every batch.

Weights are loaded at ``nlp.initialize()`` from the loader named in
``[initialize.components.elmo.loader]`` (our model directory, the bundled default, or bilm-tf
options + HDF5 weights), then stored inside the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

import spacy
import torch
from spacy.tokens import Doc
from thinc.api import ArgsKwargs, Model
from thinc.types import Floats3d

from ..embedders.elmo import default_model_path
from ..formats.bilm_dir import load_bilm
from ..formats.bilm_tf import load_bilm_tf
from ..models.bilm import BiLM, BiLMConfig, BiLMOutput
from ..models.chars import MAX_CHARACTERS_PER_TOKEN, token_to_char_ids
from ..models.token_cache import TokenVectorCache
from .contextual_encoder import ContextualEncoder
from .encoder_shim import EncoderShim, optional_str


class BiLMShim(EncoderShim):
    description = "ELMo biLM"

    def __init__(
        self,
        stateful: bool = False,
        mixed_precision: bool = False,
        token_cache_size: int = 50_000,
        segment_cache_mb: int = 0,
    ):
        super().__init__(mixed_precision=mixed_precision, segment_cache_mb=segment_cache_mb)
        self.stateful = stateful
        self.token_cache = TokenVectorCache(token_cache_size)

    def load(self, module: torch.nn.Module) -> None:
        if not isinstance(module, BiLM):
            raise TypeError(f"the ELMo component needs a BiLM, got {type(module).__name__}")
        module.stateful = self.stateful
        module.reset_states()
        self.token_cache.clear()
        super().load(module)

    # -- inference through the token cache; emptied whenever the weights change -------------------

    def predict_words(self, words: Sequence[Sequence[str]]) -> BiLMOutput:
        """``predict`` with the char-CNN vectors from the token cache (off when its size is 0)."""
        if self.token_cache.max_size <= 0:
            return super().predict_words(words)
        module = self.module
        module.eval()
        with torch.no_grad(), torch.autocast("cuda", enabled=self._mixed_precision):
            output = module.encode(*self.token_cache.token_vectors(module.token_encoder, words))
        module.train()  # as PyTorchShim.predict leaves it
        return output

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
        self.token_cache.clear()
        super().to_device(device_type, device_id)

    def module_config(self) -> dict[str, Any]:
        return {"bilm": self.module.config.to_dict()}

    def build_module(self, config: dict[str, Any]) -> BiLM:
        return BiLM(BiLMConfig.from_dict(config["bilm"]))

    def prepare_inputs(self, words: Sequence[Sequence[str]]) -> ArgsKwargs:
        """``batch_to_ids(words)``, built from each distinct word's ids once (one tensor per batch)."""
        vocabulary = list(dict.fromkeys(word for sentence in words for word in sentence))
        row_of = {word: row for row, word in enumerate(vocabulary, 1)}  # row 0: padding
        table = torch.tensor([[0] * MAX_CHARACTERS_PER_TOKEN] + [token_to_char_ids(w) for w in vocabulary])
        steps = max(len(sentence) for sentence in words)
        index = torch.tensor([[row_of[w] for w in sentence] + [0] * (steps - len(sentence)) for sentence in words])
        return ArgsKwargs(args=(table[index].to(self.device),), kwargs={})

    def token_layers(self, output: BiLMOutput) -> torch.Tensor:
        return torch.stack(output.activations, dim=1)[:, :, 1:-1]  # drop <S> and the last </S> column

    @property
    def layer_names(self) -> list[str]:
        return ["token"] + [f"lstm{j}" for j in range(1, self.module.num_layers)]

    @property
    def layer_widths(self) -> list[int]:
        return [self.module.output_dim] * self.module.num_layers


@spacy.registry.architectures("spacy-contextual.ElmoEncoder.v1")
def elmo_encoder_v1(
    window: int = 128,
    max_batch_tokens: int = 4096,
    stateful: bool = False,
    mixed_precision: bool = False,
    token_cache_size: int = 50_000,
    segment_cache_mb: int = 0,
) -> Model[list[Doc], list[Floats3d]]:
    """The biLM layer. ``window``: longest segment fed at once (tokens); ``max_batch_tokens``: padded
    tokens per batch; ``stateful``: carry LSTM state across batches (reference behaviour, not
    deterministic); ``mixed_precision``: autocast on CUDA; ``token_cache_size``: word types whose
    char-CNN vectors are kept for inference (0: no cache); ``segment_cache_mb``: MiB of encoded
    segments kept while the biLM is frozen, so repeated sentences (later training epochs) are not
    encoded again (0: no cache)."""
    shim = BiLMShim(
        stateful=stateful,
        mixed_precision=mixed_precision,
        token_cache_size=token_cache_size,
        segment_cache_mb=segment_cache_mb,
    )
    return ContextualEncoder("elmo_encoder", shim, window=window, max_batch_tokens=max_batch_tokens, stateful=stateful)


@spacy.registry.misc("spacy-contextual.ElmoModelDir.v1")
def elmo_model_dir_loader(path: str | None = None) -> Callable[[], BiLM]:
    """Our model directory (``config.json`` + ``model.safetensors``); null or "default" = the bundled model."""
    path = optional_str(path)

    def load() -> BiLM:
        if path not in (None, "default"):
            return load_bilm(path)
        try:
            return load_bilm(default_model_path())
        except FileNotFoundError as err:
            raise FileNotFoundError(
                f"{err}. For the elmo component name a model in [initialize.components.elmo.loader] "
                '(@misc = "spacy-contextual.ElmoModelDir.v1", path = "...") or pass '
                "loader=elmo_model_dir_loader(path) to nlp.get_pipe('elmo').initialize"
            ) from None

    return load


@spacy.registry.misc("spacy-contextual.ElmoBilmTF.v1")
def elmo_bilm_tf_loader(options_file: str, weight_file: str) -> Callable[[], BiLM]:
    """The published bilm-tf / AllenNLP files: ``options.json`` and the HDF5 weights."""

    def load() -> BiLM:
        return load_bilm_tf(options_file, weight_file)

    return load
