"""Token-aligned contextual vectors on a Doc: ``doc._.elmo_data`` / ``doc._.cove_data``.

``ContextualData.layers`` has shape (n_layers, len(doc), width): row i of layer j is h_{i,j}, the
j-th representation of token i. Whitespace tokens have zero rows. A layer narrower than ``width``
(CoVe's 300-d GloVe layer next to its 600-d LSTM layers) is zero-padded on the right and its true
width is kept in ``layer_widths``; ``layer(j)`` returns it unpadded.

The class is registered with srsly's msgpack encoders, so Docs carrying it survive
``doc.to_bytes()``, ``DocBin(store_user_data=True)`` and ``nlp.pipe(..., n_process=2)``; they come
back with numpy data. Equality compares the values wherever they are: GPU (CuPy) data equals the
same values in numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy
import srsly
from spacy.tokens import Doc

EXTENSIONS = ("elmo_data", "cove_data")
_MSGPACK_KEY = "__spacy_contextual_data__"


class ContextualData:
    """Per-layer vectors of one Doc (numpy on CPU, cupy on GPU)."""

    def __init__(self, layers, layer_names: Sequence[str], layer_widths: Sequence[int] | None = None):
        if layers.ndim != 3:
            raise ValueError(f"ContextualData.layers must be (n_layers, n_tokens, width), got shape {layers.shape}")
        if len(layer_names) != layers.shape[0]:
            raise ValueError(f"{len(layer_names)} layer names for {layers.shape[0]} layers")
        self.layers = layers
        self.layer_names = list(layer_names)
        self.layer_widths = list(layer_widths) if layer_widths is not None else [layers.shape[2]] * layers.shape[0]

    @property
    def n_layers(self) -> int:
        return self.layers.shape[0]

    @property
    def width(self) -> int:
        return self.layers.shape[2]

    def layer(self, index: int):
        """Layer ``index`` (negative counts from the end) at its own width: (n_tokens, layer_width)."""
        return self.layers[index, :, : self.layer_widths[index]]

    def token_vectors(self, layer: int | None = None):
        """(n_tokens, width): one layer, or the mean of all layers (the mix with s = 0, γ = 1)."""
        if layer is None:
            return self.layers.mean(axis=0)
        return self.layers[layer]

    def to_dict(self) -> dict[str, Any]:
        return {"layers": host_array(self.layers), "layer_names": self.layer_names, "layer_widths": self.layer_widths}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContextualData:
        return cls(numpy.asarray(data["layers"]), data["layer_names"], data["layer_widths"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ContextualData):
            return NotImplemented
        return (
            self.layer_names == other.layer_names
            and self.layer_widths == other.layer_widths
            and self.layers.shape == other.layers.shape
            and bool((host_array(self.layers) == host_array(other.layers)).all())
        )

    def __repr__(self) -> str:
        return f"ContextualData(layers={self.layer_names}, n_tokens={self.layers.shape[1]}, width={self.width})"


def host_array(array) -> numpy.ndarray:
    """numpy data as it is; a CuPy array copied to the host (CuPy forbids the implicit conversion)."""
    return array if isinstance(array, numpy.ndarray) else array.get()


def install_extensions() -> None:
    """Register ``doc._.elmo_data`` and ``doc._.cove_data`` (idempotent; also run in worker processes)."""
    for name in EXTENSIONS:
        if not Doc.has_extension(name):
            Doc.set_extension(name, default=None)


@srsly.msgpack_encoders("spacy_contextual_data")
def _encode(obj, chain=None):
    if isinstance(obj, ContextualData):
        return {_MSGPACK_KEY: obj.to_dict()}
    return obj if chain is None else chain(obj)


@srsly.msgpack_decoders("spacy_contextual_data")
def _decode(obj, chain=None):
    if isinstance(obj, dict) and _MSGPACK_KEY in obj:
        return ContextualData.from_dict(obj[_MSGPACK_KEY])
    return obj if chain is None else chain(obj)


install_extensions()
