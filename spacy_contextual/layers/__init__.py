"""thinc layers: the ELMo / CoVe encoder layer (a PyTorch module in a shim), how Docs are cut and
batched for it, its caches, the listener that hands its output to downstream components, and the
per-component layer mix ``γ · Σ_j softmax(s)_j · h_j`` with the architectures built from them.

Importing this package registers the architectures and weight loaders (the package's entry points
do the same for spaCy, so no ``--code`` is needed).
"""

from .architectures import cove_listener_v1, cove_tok2vec_v1, elmo_listener_v1, elmo_tok2vec_v1
from .cove_encoder import cove_encoder_v1, cove_encoder_v2, cove_encoder_v3, cove_model_dir_loader, cove_pth_loader
from .elmo_encoder import elmo_bilm_tf_loader, elmo_encoder_v1, elmo_encoder_v2, elmo_encoder_v3, elmo_model_dir_loader
from .layer_mix import layer_weights

__all__ = [
    "cove_encoder_v1",
    "cove_encoder_v2",
    "cove_encoder_v3",
    "cove_listener_v1",
    "cove_model_dir_loader",
    "cove_pth_loader",
    "cove_tok2vec_v1",
    "elmo_bilm_tf_loader",
    "elmo_encoder_v1",
    "elmo_encoder_v2",
    "elmo_encoder_v3",
    "elmo_listener_v1",
    "elmo_model_dir_loader",
    "elmo_tok2vec_v1",
    "layer_weights",
]
