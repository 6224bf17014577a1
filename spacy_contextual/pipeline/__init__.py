"""spaCy integration: the ``elmo`` / ``cove`` components, Doc data and vector hooks; the listener
architectures and weight loaders they are configured with are re-exported from ``layers``.

Importing this package registers the factories, architectures and loaders (the package's entry
points do the same for spaCy, so no ``--code`` is needed).
"""

from ..layers import (
    cove_encoder_v1,
    cove_listener_v1,
    cove_model_dir_loader,
    cove_pth_loader,
    cove_tok2vec_v1,
    elmo_bilm_tf_loader,
    elmo_encoder_v1,
    elmo_listener_v1,
    elmo_model_dir_loader,
    elmo_tok2vec_v1,
    layer_weights,
)
from .cove_component import Cove, make_cove
from .doc_data import ContextualData, install_extensions
from .elmo_component import Elmo, make_elmo
from .vector_hooks import layer_source, set_vector_hooks, tensor_source

__all__ = [
    "ContextualData",
    "Cove",
    "Elmo",
    "cove_encoder_v1",
    "cove_listener_v1",
    "cove_model_dir_loader",
    "cove_pth_loader",
    "cove_tok2vec_v1",
    "elmo_bilm_tf_loader",
    "elmo_encoder_v1",
    "elmo_listener_v1",
    "elmo_model_dir_loader",
    "elmo_tok2vec_v1",
    "install_extensions",
    "layer_source",
    "layer_weights",
    "make_cove",
    "make_elmo",
    "set_vector_hooks",
    "tensor_source",
]
