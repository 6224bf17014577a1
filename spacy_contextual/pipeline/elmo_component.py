"""The ``elmo`` pipeline component: ELMo layers on every Doc (``doc._.elmo_data``) for listeners,
``doc.tensor`` and the contextual vector hooks.

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")                     # the bundled English model, loaded by initialize()
    nlp.initialize()
    doc = nlp("I deposited cash at the bank.")
    doc._.elmo_data.layers.shape             # (3, 7, 2P): token layer + 2 biLSTM layers

Other weights: ``nlp.initialize()`` reads ``[initialize.components.elmo.loader]``, e.g.
``{"@misc": "spacy-contextual.ElmoModelDir.v1", "path": "my_elmo/"}`` or
``{"@misc": "spacy-contextual.ElmoBilmTF.v1", "options_file": ..., "weight_file": ...}``; in Python,
``nlp.get_pipe("elmo").initialize(loader=...)``.
"""

from __future__ import annotations

from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Config, Model
from thinc.types import Floats3d

from .contextual_pipe import ContextualPipe
from .elmo_encoder import elmo_model_dir_loader

DEFAULT_CONFIG_STR = """
[elmo]
frozen = true
learn_rate_scale = 1.0
store = "all"
set_doc_tensor = false
vector_hooks = true
vector_layer = null

[elmo.model]
@architectures = "spacy-contextual.ElmoEncoder.v1"
window = 128
max_batch_tokens = 4096
stateful = false
mixed_precision = false
token_cache_size = 50000
segment_cache_mb = 0
"""
DEFAULT_CONFIG = Config().from_str(DEFAULT_CONFIG_STR)


class Elmo(ContextualPipe):
    kind = "elmo"

    def default_loader(self):
        return elmo_model_dir_loader(None)


@Language.factory("elmo", assigns=["doc._.elmo_data"], default_config=DEFAULT_CONFIG["elmo"])
def make_elmo(
    nlp: Language,
    name: str,
    model: Model[list[Doc], list[Floats3d]],
    frozen: bool,
    learn_rate_scale: float,
    store: str,
    set_doc_tensor: bool,
    vector_hooks: bool,
    vector_layer: int | None,
) -> Elmo:
    """``frozen``: the biLM never changes (listeners still learn their mixes); ``learn_rate_scale``:
    with ``frozen = false``, the biLM's learning rate relative to the optimizer's; ``store``: "all" layers,
    the "mixed" vector, or "none" on ``doc._.elmo_data``; ``set_doc_tensor``: the mixed vector in
    ``doc.tensor``; ``vector_hooks``: contextual token/span/doc vectors and similarity;
    ``vector_layer``: the layer those use (null = mean of all layers)."""
    return Elmo(
        nlp.vocab,
        model,
        name,
        frozen=frozen,
        learn_rate_scale=learn_rate_scale,
        store=store,
        set_doc_tensor=set_doc_tensor,
        vector_hooks=vector_hooks,
        vector_layer=vector_layer,
    )
