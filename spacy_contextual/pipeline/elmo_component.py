"""The ``elmo`` pipeline component: ELMo layers on every Doc (``doc._.elmo_data``) for listeners,
``doc.tensor`` and the contextual vector hooks.

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")                     # the bundled English model, loaded by initialize()
    nlp.initialize()
    doc = nlp("I deposited cash at the bank.")
    doc._.elmo_data.layers.shape             # (3, 7, 2P): token layer + 2 biLSTM layers

Other weights, by name (as spacy-transformers' ``config={"model": {"name": "roberta-base"}}``): a
model name from ``spacy-contextual models``, a model directory, or "default"; it is recorded in
``nlp.config`` (``[components.elmo.model] name``) and loaded by ``nlp.initialize()``:

    nlp.add_pipe("elmo", config={"model": {"name": "elmo-original"}})

A loader in ``[initialize.components.elmo.loader]`` still takes precedence, e.g.
``{"@misc": "spacy-contextual.ElmoBilmTF.v1", "options_file": ..., "weight_file": ...}``; in Python,
``nlp.get_pipe("elmo").initialize(loader=...)``.
"""

from __future__ import annotations

from spacy.language import Language
from thinc.api import Config

from .contextual_pipe import ContextualPipe, make_factory

DEFAULT_CONFIG_STR = """
[elmo]
frozen = true
learn_rate_scale = 1.0
store = "all"
set_doc_tensor = false
vector_hooks = true
vector_layer = null

[elmo.model]
@architectures = "spacy-contextual.ElmoEncoder.v3"
name = "default"
window = 128
max_batch_tokens = 4096
stateful = false
precision = "fp32"
token_cache_size = 50000
segment_cache_mb = 0
"""
DEFAULT_CONFIG = Config().from_str(DEFAULT_CONFIG_STR)


class Elmo(ContextualPipe):
    kind = "elmo"


make_elmo = Language.factory("elmo", assigns=["doc._.elmo_data"], default_config=DEFAULT_CONFIG["elmo"])(
    make_factory(Elmo)
)
