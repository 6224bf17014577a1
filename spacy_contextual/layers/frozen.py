"""A frozen encoder inside a downstream model: ``frozen(encoder)``.

Its forward is the encoder's ``predict`` (eval mode, no_grad, the segment cache), also in training,
and its backprop hands nothing back, so no gradient reaches the encoder and its weights never
change. This is how a private encoder (``ElmoTok2Vec.v1`` / ``CoveTok2Vec.v1`` with
``frozen = true``, and what ``nlp.replace_listeners`` makes of a frozen component's listener) is
frozen; the shared ``elmo`` / ``cove`` component freezes its own encoder in ``update``.
The wrapper shows the encoder's width (nO), layer count (nL) and ``layer_widths``.
"""

from __future__ import annotations

from thinc.api import Model

from .signatures import DocsToLayers


def frozen(encoder: DocsToLayers) -> DocsToLayers:
    model = Model(
        f"frozen({encoder.name})",
        forward,
        init=init,
        layers=[encoder],
        dims={"nO": None, "nL": None},
        attrs={"layer_widths": None},
    )
    if encoder.attrs.get("layer_widths") is not None:  # already loaded (nlp.replace_listeners)
        copy_shape(model)
    return model


def init(model: Model, X=None, Y=None) -> None:
    encoder = model.layers[0]
    encoder.initialize(X=X)
    copy_shape(model)


def copy_shape(model: Model) -> None:
    encoder = model.layers[0]
    for dim in ("nO", "nL"):
        if encoder.has_dim(dim):
            model.set_dim(dim, encoder.get_dim(dim), force=True)
    model.attrs["layer_widths"] = encoder.attrs["layer_widths"]


def forward(model: Model, docs, is_train: bool):
    return model.layers[0].predict(docs), lambda d_outputs: []
