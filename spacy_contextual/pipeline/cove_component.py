"""The ``cove`` pipeline component: GloVe and CoVe layers on every Doc (``doc._.cove_data``).

    nlp = spacy.blank("en")
    nlp.add_pipe("cove")                     # the bundled CoVe encoder, loaded by initialize()
    nlp.initialize()
    doc = nlp("A man rides a horse.")
    data = doc._.cove_data                   # layers (3, 6, 600): GloVe (zero-padded), CoVe-1, CoVe-2
    data.layer(0).shape                      # (6, 300): GloVe at its own width

Other weights: ``config={"model": {"name": NAME}}`` (a model name, a model directory, or "default",
recorded in ``nlp.config``), or ``[initialize.components.cove.loader]`` with
``spacy-contextual.CoveModelDir.v1`` (path) or ``spacy-contextual.CovePth.v1`` (pth_path, glove_path).
Same settings and guarantees as ``elmo`` (frozen, store, set_doc_tensor, vector_hooks, vector_layer;
see ``contextual_pipe.py``).
"""

from __future__ import annotations

from spacy.language import Language
from thinc.api import Config

from .contextual_pipe import ContextualPipe, make_factory

DEFAULT_CONFIG_STR = """
[cove]
frozen = true
learn_rate_scale = 1.0
store = "all"
set_doc_tensor = false
vector_hooks = true
vector_layer = null

[cove.model]
@architectures = "spacy-contextual.CoveEncoder.v3"
name = "default"
window = 128
max_batch_tokens = 4096
precision = "fp32"
segment_cache_mb = 0
"""
DEFAULT_CONFIG = Config().from_str(DEFAULT_CONFIG_STR)


class Cove(ContextualPipe):
    kind = "cove"


make_cove = Language.factory("cove", assigns=["doc._.cove_data"], default_config=DEFAULT_CONFIG["cove"])(
    make_factory(Cove)
)
