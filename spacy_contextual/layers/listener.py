"""Listener: a downstream component's window onto the shared ``elmo`` / ``cove`` component.

During ``nlp.update`` the upstream component runs the encoder once per batch and hands every
listener the per-doc layers with a backprop callback (spacy-transformers' pattern); outside training
the listener reads ``doc._.elmo_data`` / ``doc._.cove_data`` (the upstream needs ``store = "all"``).
The listener returns the layers, (n_layers, len(doc), width) per doc; the architectures in
``architectures.py`` put each component's own layer mix on top. It knows the fingerprint of its
upstream encoder's weights and refuses Doc data computed by another model (a DocBin made with
another pipeline) instead of scoring it.
"""

from __future__ import annotations

from collections.abc import Callable

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats3d

from ..errors import ContextualError
from .encoder import get_shim


class ContextualListener(Model):
    name = "contextual_listener"

    def __init__(self, kind: str, upstream_name: str):
        Model.__init__(
            self,
            name=self.name,
            forward=forward,
            init=init,
            dims={"nO": None, "nL": None},
            attrs={"layer_widths": None, "fingerprint": None},
        )
        self.kind = kind  # "elmo" or "cove": only a pipe of that kind binds this listener
        self.upstream_name = upstream_name
        self._batch_id: int | None = None
        self._outputs: list[Floats3d] | None = None
        self._backprop: Callable | None = None
        self._shape_pass = False

    @property
    def extension(self) -> str:
        return f"{self.kind}_data"

    @classmethod
    def get_batch_id(cls, docs: list[Doc]) -> int:
        return sum(sum(token.orth for token in doc) for doc in docs)

    def receive(self, batch_id: int, outputs: list[Floats3d], backprop: Callable) -> None:
        self._batch_id, self._outputs, self._backprop = batch_id, outputs, backprop
        self._shape_pass = False

    def verify_inputs(self, docs: list[Doc]) -> bool:
        if self._batch_id is None and self._outputs is None:
            raise ValueError(
                f"the {self.kind} listener got no outputs from its upstream component: "
                f"is '{self.kind}' in the pipeline before this component and being updated?"
            )
        batch_id = self.get_batch_id(docs)
        if batch_id != self._batch_id:
            raise ValueError(f"Mismatched IDs! {batch_id} vs {self._batch_id}: the listener got another batch")
        return True

    def backprop_and_clear(self, d_outputs: list[Floats3d]) -> list[Doc]:
        result = self._backprop(d_outputs) if self._backprop is not None else []
        self._batch_id = self._outputs = self._backprop = None
        return result

    def end_shape_pass(self) -> None:
        self._shape_pass = False

    def set_upstream_dims(self, encoder: Model) -> None:
        """Width, layer count, per-layer widths and weights' fingerprint of the upstream encoder."""
        self.set_dim("nO", encoder.get_dim("nO"), force=True)
        self.set_dim("nL", encoder.get_dim("nL"), force=True)
        self.attrs["layer_widths"] = encoder.attrs["layer_widths"]
        self.attrs["fingerprint"] = get_shim(encoder).fingerprint()


def init(model: ContextualListener, X=None, Y=None) -> None:
    # spaCy components infer shapes by running the model on un-annotated example docs right after
    # this; until the upstream links the listener again (end of nlp.initialize) or real data
    # arrives, those passes get zeros instead of an error (see _annotated_layers).
    model._shape_pass = X is not None


def forward(model: ContextualListener, docs: list[Doc], is_train: bool):
    if is_train and model._batch_id is not None:
        model.verify_inputs(docs)
        return model._outputs, model.backprop_and_clear
    # Predicting, or training while the upstream is not updated (frozen_components/annotating):
    # the upstream component annotated the docs.
    outputs = [_annotated_layers(model, doc, is_train) for doc in docs]
    return outputs, lambda d_outputs: []


def _annotated_layers(model: ContextualListener, doc: Doc, is_train: bool) -> Floats3d:
    data = doc._.get(model.extension) if Doc.has_extension(model.extension) else None
    if data is None:
        if model._shape_pass and model.has_dim("nO") and model.has_dim("nL"):
            return model.ops.alloc3f(model.get_dim("nL"), len(doc), model.get_dim("nO"))
        hint = (
            f"in training, a '{model.kind}' listed in [training] frozen_components must also be in "
            f"annotating_components (or use the component's own setting frozen = true instead)"
            if is_train
            else "is it disabled or missing?"
        )
        raise ValueError(
            f"doc._.{model.extension} is not set: the '{model.kind}' component must run before this component; {hint}"
        )
    expected = model.attrs.get("fingerprint")
    if expected is not None and data.fingerprint is None:
        raise ContextualError(
            f"doc._.{model.extension} carries no fingerprint of the model that computed it (written by an earlier "
            f"version of spacy-contextual, or by hand), so it may come from another model: run this pipeline's "
            f"'{model.kind}' on the Docs again to recompute it (e.g. nlp.get_pipe('{model.kind}')(doc))"
        )
    if expected is not None and data.fingerprint != expected:
        raise ContextualError(
            f"doc._.{model.extension} was computed by another model (fingerprint {data.fingerprint}) than this "
            f"pipeline's '{model.kind}' (fingerprint {expected}): run this pipeline's '{model.kind}' on the Docs again"
        )
    if model.has_dim("nL") and data.n_layers != model.get_dim("nL"):
        raise ValueError(
            f"doc._.{model.extension} holds {data.n_layers} layer(s) but the listener mixes "
            f"{model.get_dim('nL')}: set store = \"all\" on the '{model.kind}' component"
        )
    model._shape_pass = False
    return model.ops.asarray3f(data.layers)
