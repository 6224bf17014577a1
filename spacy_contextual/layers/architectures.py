"""Token-to-vector architectures for downstream components (taggers, textcat, ...).

    source  : the shared listener (``ElmoListener.v1``) or a private encoder (``ElmoTok2Vec.v1``)
              → layers h_{k,0..L} per token
    mix     : this component's own γ · Σ_j softmax(s)_j · h_{k,j}        (``layer_mix.py``)
    embed   : optional spaCy embedding concatenated before it: [v_k; ELMo_k] (e.g. MultiHashEmbed)
    dropout : on the concatenation
    project : optional Linear to ``width``
    encode  : optional contextual encoder on top (e.g. spacy.MaxoutWindowEncoder.v2, same width)

The model's refs: ``listener`` (listener variant), ``encoder`` (private variant) and ``layer_mix``
(read its s and γ with ``layer_mix.layer_weights``). A private encoder with ``frozen = true`` sits
inside ``frozen.frozen``.

CoVe's listener with ``combine = "concat"`` mixes only the contextual layers and concatenates the
static one in front, [GloVe_k ; γ · Σ_{j≥1} softmax(s)_j · CoVe_{k,j}], the paper's [GloVe ; CoVe]
with CoVe-1/CoVe-2 weighted; ``combine = "mix"`` mixes all three like ELMo (GloVe zero-padded).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import spacy
from thinc.api import Dropout, Linear, Model, chain, concatenate, with_array

from .frozen import frozen as frozen_encoder
from .layer_mix import LayerMix
from .listener import ContextualListener
from .setting_checks import check_choice, check_count, check_flag, check_fraction
from .signatures import DocsToLayers, DocsToVectors, VectorsToVectors
from .static_and_mixed import StaticAndMixed


def build_mixed_tok2vec(
    source: DocsToLayers,
    *,
    width: int,
    layer_norm: bool,
    dropout: float,
    layer_dropout: float,
    grad_factor: float,
    project: bool,
    embed: DocsToVectors | None,
    encode: VectorsToVectors | None,
    concat_static: bool = False,
) -> DocsToVectors:
    check_count("width", width, 1, "the output width")
    check_fraction("dropout", dropout)
    check_flag("project", project)
    if not project and (embed is not None or concat_static):
        raise ValueError(
            "concatenating an embed layer or GloVe needs project = true (the concatenation is wider than width)"
        )
    n_layers = source.maybe_get_dim("nL")
    mix = LayerMix(
        n_layers - 1 if concat_static and n_layers else n_layers,
        layer_norm=layer_norm, layer_dropout=layer_dropout, grad_factor=grad_factor,
        width=None if project else width,
    )  # fmt: skip
    if concat_static:
        mixed = StaticAndMixed(source, mix)
    else:
        mixed = chain(source, mix)
    layers: list[Model] = [mixed if embed is None else concatenate(embed, mixed)]
    if dropout > 0:
        layers.append(with_array(Dropout(dropout)))
    if project:
        layers.append(with_array(Linear(nO=width)))
    if encode is not None:
        layers.append(encode)
    model = chain(*layers) if len(layers) > 1 else layers[0]
    if not model.has_dim("nO"):
        model.set_dim("nO", width)
    model.set_ref("layer_mix", mix)
    return model


def listener_tok2vec(kind: str, upstream: str, concat_static: bool = False, **settings) -> DocsToVectors:
    """A listener to the ``kind`` component named ``upstream`` ("*" = any) and this component's own mix."""
    listener = ContextualListener(kind, upstream)
    model = build_mixed_tok2vec(listener, concat_static=concat_static, **settings)
    model.set_ref("listener", listener)
    return model


def private_tok2vec(
    encoder: DocsToLayers, frozen: bool, loader: Callable[[], Any] | None, concat_static: bool = False, **settings
) -> DocsToVectors:
    """A private encoder (its weights from ``loader`` or else the encoder's ``name`` at initialize, or
    carried over by ``nlp.replace_listeners``), frozen or fine-tuned, and this component's own mix."""
    check_flag("frozen", frozen)
    if loader is not None:
        encoder.attrs["loader"] = loader
    source = frozen_encoder(encoder) if frozen else encoder
    model = build_mixed_tok2vec(source, concat_static=concat_static, **settings)
    model.set_ref("encoder", encoder)
    return model


@spacy.registry.architectures("spacy-contextual.ElmoListener.v1")
def elmo_listener_v1(
    width: int,
    upstream: str = "*",
    grad_factor: float = 1.0,
    layer_norm: bool = False,
    dropout: float = 0.0,
    layer_dropout: float = 0.0,
    project: bool = True,
    embed: DocsToVectors | None = None,
    encode: VectorsToVectors | None = None,
) -> DocsToVectors:
    """Listens to the ``elmo`` component named ``upstream`` ("*" = any) and learns its own mix."""
    return listener_tok2vec(
        "elmo", upstream, width=width, grad_factor=grad_factor, layer_norm=layer_norm, dropout=dropout,
        layer_dropout=layer_dropout, project=project, embed=embed, encode=encode,
    )  # fmt: skip


@spacy.registry.architectures("spacy-contextual.ElmoTok2Vec.v1")
def elmo_tok2vec_v1(
    encoder: DocsToLayers,
    width: int,
    frozen: bool = True,
    grad_factor: float = 1.0,
    layer_norm: bool = False,
    dropout: float = 0.0,
    layer_dropout: float = 0.0,
    project: bool = True,
    embed: DocsToVectors | None = None,
    encode: VectorsToVectors | None = None,
    loader: Callable[[], Any] | None = None,
) -> DocsToVectors:
    """A private (not shared) ELMo: ``encoder`` is ``spacy-contextual.ElmoEncoder.v3``. Its weights
    come from the encoder's ``name`` (or ``loader``, e.g. ``spacy-contextual.ElmoModelDir.v1``) at
    initialize, or are carried over from the ``elmo`` component by ``nlp.replace_listeners``."""
    return private_tok2vec(
        encoder, frozen, loader, width=width, grad_factor=grad_factor, layer_norm=layer_norm, dropout=dropout,
        layer_dropout=layer_dropout, project=project, embed=embed, encode=encode,
    )  # fmt: skip


@spacy.registry.architectures("spacy-contextual.CoveListener.v1")
def cove_listener_v1(
    width: int,
    upstream: str = "*",
    combine: str = "concat",
    grad_factor: float = 1.0,
    layer_norm: bool = False,
    dropout: float = 0.0,
    layer_dropout: float = 0.0,
    project: bool = True,
    embed: DocsToVectors | None = None,
    encode: VectorsToVectors | None = None,
) -> DocsToVectors:
    """Listens to the ``cove`` component; ``combine``: "concat" = [GloVe ; mix(CoVe-1, CoVe-2)],
    "mix" = one mix of all three layers."""
    return listener_tok2vec(
        "cove", upstream, _concat(combine), width=width, grad_factor=grad_factor, layer_norm=layer_norm,
        dropout=dropout, layer_dropout=layer_dropout, project=project, embed=embed, encode=encode,
    )  # fmt: skip


@spacy.registry.architectures("spacy-contextual.CoveTok2Vec.v1")
def cove_tok2vec_v1(
    encoder: DocsToLayers,
    width: int,
    combine: str = "concat",
    frozen: bool = True,
    grad_factor: float = 1.0,
    layer_norm: bool = False,
    dropout: float = 0.0,
    layer_dropout: float = 0.0,
    project: bool = True,
    embed: DocsToVectors | None = None,
    encode: VectorsToVectors | None = None,
    loader: Callable[[], Any] | None = None,
) -> DocsToVectors:
    """A private CoVe (``spacy-contextual.CoveEncoder.v3``), as ``ElmoTok2Vec.v1`` for ELMo."""
    return private_tok2vec(
        encoder, frozen, loader, _concat(combine), width=width, grad_factor=grad_factor, layer_norm=layer_norm,
        dropout=dropout, layer_dropout=layer_dropout, project=project, embed=embed, encode=encode,
    )  # fmt: skip


def _concat(combine: str) -> bool:
    check_choice("combine", combine, ("concat", "mix"))  # [GloVe ; mix of CoVe], or one mix of all layers
    return combine == "concat"


PRIVATE_VARIANTS = {
    "spacy-contextual.ElmoListener.v1": "spacy-contextual.ElmoTok2Vec.v1",
    "spacy-contextual.CoveListener.v1": "spacy-contextual.CoveTok2Vec.v1",
}


def replace_listener(encoder: DocsToLayers, *, frozen: bool) -> DocsToLayers:
    """The node that takes a listener's place in ``nlp.replace_listeners``: a copy of the component's
    encoder, frozen as the component is."""
    return frozen_encoder(encoder) if frozen else encoder


def replace_listener_cfg(encoder_cfg: dict, listener_cfg: dict, *, frozen: bool) -> dict:
    """Config of the private variant replacing a listener (``nlp.replace_listeners``)."""
    architecture = listener_cfg["@architectures"]
    if architecture not in PRIVATE_VARIANTS:
        raise ValueError(f"cannot replace a {architecture!r} listener with a spacy-contextual encoder")
    result = {key: value for key, value in listener_cfg.items() if key not in ("@architectures", "upstream")}
    result["@architectures"] = PRIVATE_VARIANTS[architecture]
    result["encoder"] = encoder_cfg
    result["frozen"] = frozen
    return result
