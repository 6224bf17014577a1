"""Token-aligned contextual vectors on a Doc: ``doc._.elmo_data`` / ``doc._.cove_data``.

``ContextualData.layers`` has shape (n_layers, len(doc), width): row i of layer j is h_{i,j}, the
j-th representation of token i. Whitespace tokens have zero rows. A layer narrower than ``width``
(CoVe's 300-d GloVe layer next to its 600-d LSTM layers) is zero-padded on the right and its true
width is kept in ``layer_widths``; ``layer(j)`` returns it unpadded.

The data records the character span of every token it was computed for (``token_offsets``, set when
it is assigned to a Doc) and the ``fingerprint`` of the encoder that computed it. Reading
``doc._.elmo_data`` after a retokenization (``merge_entities``, ``Doc.retokenize`` merges and
splits) returns the rows re-aligned with the current tokens, as ``alignment.py`` describes: a merged
token takes the row of its last token, as spaCy does for ``doc.tensor``; every piece of a split token
takes that token's row.

The class is registered with srsly's msgpack encoders, so Docs carrying it survive
``doc.to_bytes()``, ``DocBin(store_user_data=True)`` and ``nlp.pipe(..., n_process=2)``; they come
back with numpy data. Equality compares the values wherever they are: GPU (CuPy) data equals the
same values in numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy
import srsly
from spacy.tokens import Doc
from thinc.api import get_array_module

from ..errors import ContextualError
from .alignment import aligned_rows, same_tokens, text_digest, token_offsets, token_starts

EXTENSIONS = ("elmo_data", "cove_data")
_MSGPACK_KEY = "__spacy_contextual_data__"


class ContextualData:
    """Per-layer vectors of one Doc (numpy on CPU, cupy on GPU)."""

    def __init__(
        self,
        layers,
        layer_names: Sequence[str],
        layer_widths: Sequence[int] | None = None,
        *,
        fingerprint: str | None = None,
        token_offsets: numpy.ndarray | None = None,
        text_digest: int | None = None,
    ):
        if layers.ndim != 3:
            raise ValueError(f"ContextualData.layers must be (n_layers, n_tokens, width), got shape {layers.shape}")
        if len(layer_names) != layers.shape[0]:
            raise ValueError(f"{len(layer_names)} layer names for {layers.shape[0]} layers")
        if token_offsets is not None and token_offsets.shape != (layers.shape[1], 2):
            raise ValueError(f"token_offsets must be (n_tokens, 2) = ({layers.shape[1]}, 2), got {token_offsets.shape}")
        self.layers = layers
        self.layer_names = list(layer_names)
        self.layer_widths = list(layer_widths) if layer_widths is not None else [layers.shape[2]] * layers.shape[0]
        self.fingerprint = fingerprint  # of the encoder's weights (``EncoderShim.fingerprint``)
        self.token_offsets = token_offsets  # [start, end) in characters of the token of every row
        self.text_digest = text_digest  # CRC-32 of the Doc's text

    @property
    def n_tokens(self) -> int:
        return self.layers.shape[1]

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

    def with_layers(self, layers, layer_names: Sequence[str], layer_widths: Sequence[int] | None = None):
        """Other layers for the same tokens (e.g. only the mixed vector), from the same model."""
        return ContextualData(
            layers, layer_names, layer_widths,
            fingerprint=self.fingerprint, token_offsets=self.token_offsets, text_digest=self.text_digest,
        )  # fmt: skip

    # -- alignment with the Doc's tokens ---------------------------------------------------------

    def bound_to(self, doc: Doc) -> ContextualData:
        """This data with the tokens of ``doc`` recorded as the ones its rows belong to."""
        if self.n_tokens != len(doc):
            raise ContextualError(f"{self!r} has rows for {self.n_tokens} tokens but the Doc has {len(doc)}")
        return ContextualData(
            self.layers, self.layer_names, self.layer_widths,
            fingerprint=self.fingerprint, token_offsets=token_offsets(doc), text_digest=text_digest(doc),
        )  # fmt: skip

    def rows_belong_to(self, doc: Doc, start: int = 0, end: int | None = None) -> bool:
        """Whether rows ``start:end`` are those of ``doc``'s tokens ``start:end``: each token spans the
        characters recorded for its row (checked token by token for a short span, O(1) for one token)."""
        end = len(doc) if end is None else end
        if self.token_offsets is None:  # data saved without offsets: only the token count can be checked
            return self.n_tokens == len(doc)
        if end > self.n_tokens:
            return False
        if end - start > 64:
            return self.n_tokens == len(doc) and numpy.array_equal(self.token_offsets[:, 0], token_starts(doc))
        recorded = self.token_offsets[start:end].tolist()
        return all(
            doc[i].idx == first and doc[i].idx + len(doc[i]) == last for i, (first, last) in enumerate(recorded, start)
        )

    def aligned_to(self, doc: Doc) -> ContextualData:
        """This data if its rows belong to ``doc``'s tokens, else its rows re-aligned with them
        (``alignment.py``); a clear error where they cannot be."""
        if self.rows_belong_to(doc):
            return self
        if self.token_offsets is None:
            raise ContextualError(
                f"{self!r} has rows for {self.n_tokens} tokens but the Doc has {len(doc)}, and it records no "
                "token offsets to align them with; run the component again on the Doc"
            )
        offsets = token_offsets(doc)
        digest = text_digest(doc)
        if self.text_digest is None or digest == self.text_digest:  # retokenized
            rows = aligned_rows(self.token_offsets, offsets, repr(self))
        elif same_tokens(self.token_offsets, offsets):  # re-spaced, as a DocBin re-spaces split tokens
            rows = numpy.arange(len(doc))
        else:
            raise ContextualError(f"{self!r} was computed for another text; run the component again on the Doc")
        xp = get_array_module(self.layers)
        return ContextualData(
            self.layers[:, xp.asarray(rows)], self.layer_names, self.layer_widths,
            fingerprint=self.fingerprint, token_offsets=offsets, text_digest=digest,
        )  # fmt: skip

    # -- serialization ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "layers": host_array(self.layers),
            "layer_names": self.layer_names,
            "layer_widths": self.layer_widths,
            "fingerprint": self.fingerprint,
            "token_offsets": self.token_offsets,
            "text_digest": self.text_digest,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContextualData:
        offsets = data.get("token_offsets")  # absent in data saved by earlier versions
        return cls(
            numpy.asarray(data["layers"]), data["layer_names"], data["layer_widths"],
            fingerprint=data.get("fingerprint"), text_digest=data.get("text_digest"),
            token_offsets=None if offsets is None else numpy.asarray(offsets, dtype=numpy.int64),
        )  # fmt: skip

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
    """Register ``doc._.elmo_data`` and ``doc._.cove_data`` (idempotent; also run in worker processes).

    The data lives in ``doc.user_data`` under spaCy's key for a plain extension value, so ``doc.to_bytes``,
    ``DocBin(store_user_data=True)`` and pickling carry it; assigning records the Doc's tokens, reading
    re-aligns the rows if the tokens changed since."""
    for name in EXTENSIONS:
        if not Doc.has_extension(name):
            Doc.set_extension(name, getter=partial(_get_data, name), setter=partial(_set_data, name))


def _user_data_key(name: str) -> tuple:
    return ("._.", name, None, None)


def stored_data(doc: Doc, name: str) -> ContextualData | None:
    """``doc._.<name>`` as stored, not re-aligned (``rows_belong_to`` tells whether the rows a caller
    needs are still the right ones)."""
    return doc.user_data.get(_user_data_key(name))


def _get_data(name: str, doc: Doc) -> ContextualData | None:
    data = stored_data(doc, name)
    if data is None:
        return None
    aligned = data.aligned_to(doc)
    if aligned is not data:
        doc.user_data[_user_data_key(name)] = aligned
    return aligned


def _set_data(name: str, doc: Doc, data: ContextualData | None) -> None:
    if data is not None and data.token_offsets is None:
        data = data.bound_to(doc)
    doc.user_data[_user_data_key(name)] = data


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
