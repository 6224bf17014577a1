"""spaCy integration: the ``elmo`` / ``cove`` components, listener architectures, Doc data, vector hooks.

Importing this package registers the factories, architectures and loaders (the package's entry
points do the same for spaCy, so no ``--code`` is needed).
"""

from .architectures import cove_listener_v1, cove_tok2vec_v1, elmo_listener_v1, elmo_tok2vec_v1
from .cove_component import Cove, make_cove
from .cove_encoder import CoveLayers, cove_encoder_v1, cove_model_dir_loader, cove_pth_loader
from .doc_data import ContextualData, install_extensions
from .elmo_component import Elmo, make_elmo
from .elmo_encoder import elmo_bilm_tf_loader, elmo_encoder_v1, elmo_model_dir_loader
from .layer_mix import layer_weights
from .vector_hooks import layer_source, set_vector_hooks, tensor_source

__all__ = [
    "ContextualData",
    "Cove",
    "CoveLayers",
    "cove_encoder_v1",
    "cove_listener_v1",
    "cove_model_dir_loader",
    "cove_pth_loader",
    "cove_tok2vec_v1",
    "make_cove",
    "Elmo",
    "elmo_bilm_tf_loader",
    "elmo_encoder_v1",
    "elmo_listener_v1",
    "elmo_model_dir_loader",
    "elmo_tok2vec_v1",
    "install_extensions",
    "layer_source",
    "layer_weights",
    "make_elmo",
    "set_vector_hooks",
    "tensor_source",
]
