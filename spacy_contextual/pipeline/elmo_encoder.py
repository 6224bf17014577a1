"""ELMo in spaCy: the biLM (``models/bilm.py``) as a thinc layer, and the loaders that give it weights.

Per token k the layer returns h_{k,0} = [x_k; x_k] (char CNN) and h_{k,j} = [fwd_{k,j}; bwd_{k,j}]
for the L LSTM layers: an array (L + 1, len(doc), 2P) per Doc.

Weights are loaded at ``nlp.initialize()`` from the loader named in
``[initialize.components.elmo.loader]`` (our model directory, the bundled default, or bilm-tf
options + HDF5 weights), then stored inside the pipeline.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

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
from .contextual_encoder import ContextualEncoder
from .encoder_shim import EncoderShim, optional_str


class BiLMShim(EncoderShim):
    description = "ELMo biLM"

    def __init__(self, stateful: bool = False, mixed_precision: bool = False):
        super().__init__(mixed_precision=mixed_precision)
        self.stateful = stateful

    def load(self, module: torch.nn.Module) -> None:
        if not isinstance(module, BiLM):
            raise TypeError(f"the ELMo component needs a BiLM, got {type(module).__name__}")
        module.stateful = self.stateful
        module.reset_states()
        super().load(module)

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
    window: int = 128, max_batch_tokens: int = 4096, stateful: bool = False, mixed_precision: bool = False
) -> Model[List[Doc], List[Floats3d]]:
    """The biLM layer. ``window``: longest segment fed at once (tokens); ``max_batch_tokens``: padded
    tokens per batch; ``stateful``: carry LSTM state across batches (reference behaviour, not
    deterministic); ``mixed_precision``: autocast on CUDA."""
    shim = BiLMShim(stateful=stateful, mixed_precision=mixed_precision)
    return ContextualEncoder("elmo_encoder", shim, window=window, max_batch_tokens=max_batch_tokens, stateful=stateful)


@spacy.registry.misc("spacy-contextual.ElmoModelDir.v1")
def elmo_model_dir_loader(path: Optional[str] = None) -> Callable[[], BiLM]:
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
