"""spaCy integration: the ``elmo`` / ``cove`` components, Doc data and vector hooks (the listener
architectures and weight loaders they are configured with live in ``layers``).

Importing this package registers the factories, architectures and loaders (the package's entry
points do the same for spaCy, so no ``--code`` is needed).
"""

from .. import layers  # noqa: F401  (registers the architectures and loaders the components are configured with)
from .cove_component import Cove, make_cove
from .doc_data import ContextualData, install_extensions
from .elmo_component import Elmo, make_elmo
from .vector_hooks import layer_source, set_vector_hooks, tensor_source

__all__ = [
    "ContextualData",
    "Cove",
    "Elmo",
    "install_extensions",
    "layer_source",
    "make_cove",
    "make_elmo",
    "set_vector_hooks",
    "tensor_source",
]
