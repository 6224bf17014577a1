"""[static layer ; mix of the contextual layers] per token, e.g. CoVe's [GloVe(w) ; CoVe(w)].

    y_k = [h_{k,0}[:w_0] ; mix(h_{k,1..L})]

``source`` (the listener or a private encoder) gives the stacked layers; h_{k,0} is taken at its own
width w_0 (GloVe's 300, without the zero padding; from the source's ``attrs["layer_widths"]``) and
``mix`` is a ``LayerMix`` over the remaining layers.
"""

from __future__ import annotations

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Floats3d


def StaticAndMixed(
    source: Model[list[Doc], list[Floats3d]], mix: Model[list[Floats3d], list[Floats2d]]
) -> Model[list[Doc], list[Floats2d]]:
    return Model("static_and_mixed", forward, init=init, layers=[source, mix])


def init(model: Model, X: list[Doc] | None = None, Y=None) -> None:
    source, mix = model.layers
    source.initialize(X=X)
    mix.initialize(X=None if X is None else [layers[1:] for layers in source.predict(X)])


def forward(model: Model, docs: list[Doc], is_train: bool):
    source, mix = model.layers
    Xs, backprop_source = source(docs, is_train)
    width = source.attrs["layer_widths"][0]
    xp = model.ops.xp
    mixed, backprop_mix = mix([X[1:] for X in Xs], is_train)
    shapes = [X.shape for X in Xs]

    def backprop(dYs: list[Floats2d]) -> list[Doc]:
        d_mixed = backprop_mix([xp.ascontiguousarray(dY[:, width:]) for dY in dYs])
        dXs = [model.ops.alloc3f(*shape) for shape in shapes]
        for dX, dY, d_mix in zip(dXs, dYs, d_mixed, strict=True):
            dX[0, :, :width] = dY[:, :width]
            dX[1:] = d_mix
        return backprop_source(dXs)

    return [xp.hstack([X[0, :, :width], Y]) for X, Y in zip(Xs, mixed, strict=True)], backprop
