"""Token-to-vector architectures for downstream components (taggers, textcat, ...).

    source  : the shared listener (``ElmoListener.v1``) or a private encoder (``ElmoTok2Vec.v1``)
              → layers h_{k,0..L} per token
    mix     : this component's own γ · Σ_j softmax(s)_j · h_{k,j}        (``layer_mix.py``)
    embed   : optional spaCy embedding concatenated before it: [v_k; ELMo_k] (e.g. MultiHashEmbed)
    dropout : on the concatenation
    project : optional Linear to ``width``
    encode  : optional contextual encoder on top (e.g. spacy.MaxoutWindowEncoder.v2, same width)

The model's refs: ``listener`` (listener variant), ``encoder`` (private variant) and ``layer_mix``
(read its s and γ with ``layer_mix.layer_weights``).

CoVe's listener with ``combine = "concat"`` mixes only the contextual layers and concatenates the
static one in front, [GloVe_k ; γ · Σ_{j≥1} softmax(s)_j · CoVe_{k,j}], the paper's [GloVe ; CoVe]
with CoVe-1/CoVe-2 weighted; ``combine = "mix"`` mixes all three like ELMo (GloVe zero-padded).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import spacy
from spacy.tokens import Doc
from thinc.api import Dropout, Linear, Model, chain, concatenate, with_array
from thinc.types import Floats2d, Floats3d

from .layer_mix import LayerMix
from .layer_select import StaticAndMixed
from .listener import ContextualListener


def build_mixed_tok2vec(
    source: Model[list[Doc], list[Floats3d]],
    *,
    width: int,
    layer_norm: bool,
    dropout: float,
    layer_dropout: float,
    grad_factor: float,
    project: bool,
    embed: Model[list[Doc], list[Floats2d]] | None,
    encode: Model[list[Floats2d], list[Floats2d]] | None,
    concat_static: bool = False,
) -> Model[list[Doc], list[Floats2d]]:
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


@spacy.registry.architectures("spacy-contextual.ElmoListener.v1")
def elmo_listener_v1(
    width: int,
    upstream: str = "*",
    grad_factor: float = 1.0,
    layer_norm: bool = False,
    dropout: float = 0.0,
    layer_dropout: float = 0.0,
    project: bool = True,
    embed: Model[list[Doc], list[Floats2d]] | None = None,
    encode: Model[list[Floats2d], list[Floats2d]] | None = None,
) -> Model[list[Doc], list[Floats2d]]:
    """Listens to the ``elmo`` component named ``upstream`` ("*" = any) and learns its own mix."""
    listener = ContextualListener("elmo", upstream)
    model = build_mixed_tok2vec(
        listener, width=width, layer_norm=layer_norm, dropout=dropout, layer_dropout=layer_dropout,
        grad_factor=grad_factor, project=project, embed=embed, encode=encode,
    )  # fmt: skip
    model.set_ref("listener", listener)
    return model


@spacy.registry.architectures("spacy-contextual.ElmoTok2Vec.v1")
def elmo_tok2vec_v1(
    encoder: Model[list[Doc], list[Floats3d]],
    width: int,
    frozen: bool = True,
    grad_factor: float = 1.0,
    layer_norm: bool = False,
    dropout: float = 0.0,
    layer_dropout: float = 0.0,
    project: bool = True,
    embed: Model[list[Doc], list[Floats2d]] | None = None,
    encode: Model[list[Floats2d], list[Floats2d]] | None = None,
    loader: Callable[[], Any] | None = None,
) -> Model[list[Doc], list[Floats2d]]:
    """A private (not shared) ELMo: ``encoder`` is ``spacy-contextual.ElmoEncoder.v1``. Its weights
    come from ``loader`` at initialize (e.g. ``spacy-contextual.ElmoModelDir.v1``), or are carried
    over from the ``elmo`` component by ``nlp.replace_listeners``."""
    encoder.attrs["frozen"] = frozen
    encoder.attrs["loader"] = loader
    model = build_mixed_tok2vec(
        encoder, width=width, layer_norm=layer_norm, dropout=dropout, layer_dropout=layer_dropout,
        grad_factor=grad_factor, project=project, embed=embed, encode=encode,
    )  # fmt: skip
    model.set_ref("encoder", encoder)
    return model


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
    embed: Model[list[Doc], list[Floats2d]] | None = None,
    encode: Model[list[Floats2d], list[Floats2d]] | None = None,
) -> Model[list[Doc], list[Floats2d]]:
    """Listens to the ``cove`` component; ``combine``: "concat" = [GloVe ; mix(CoVe-1, CoVe-2)],
    "mix" = one mix of all three layers."""
    listener = ContextualListener("cove", upstream)
    model = build_mixed_tok2vec(
        listener, width=width, layer_norm=layer_norm, dropout=dropout, layer_dropout=layer_dropout,
        grad_factor=grad_factor, project=project, embed=embed, encode=encode, concat_static=_concat(combine),
    )  # fmt: skip
    model.set_ref("listener", listener)
    return model


@spacy.registry.architectures("spacy-contextual.CoveTok2Vec.v1")
def cove_tok2vec_v1(
    encoder: Model[list[Doc], list[Floats3d]],
    width: int,
    combine: str = "concat",
    frozen: bool = True,
    grad_factor: float = 1.0,
    layer_norm: bool = False,
    dropout: float = 0.0,
    layer_dropout: float = 0.0,
    project: bool = True,
    embed: Model[list[Doc], list[Floats2d]] | None = None,
    encode: Model[list[Floats2d], list[Floats2d]] | None = None,
    loader: Callable[[], Any] | None = None,
) -> Model[list[Doc], list[Floats2d]]:
    """A private CoVe (``spacy-contextual.CoveEncoder.v1``), as ``ElmoTok2Vec.v1`` for ELMo."""
    encoder.attrs["frozen"] = frozen
    encoder.attrs["loader"] = loader
    model = build_mixed_tok2vec(
        encoder, width=width, layer_norm=layer_norm, dropout=dropout, layer_dropout=layer_dropout,
        grad_factor=grad_factor, project=project, embed=embed, encode=encode, concat_static=_concat(combine),
    )  # fmt: skip
    model.set_ref("encoder", encoder)
    return model


def _concat(combine: str) -> bool:
    if combine not in ("concat", "mix"):
        raise ValueError(f'combine must be "concat" ([GloVe ; CoVe]) or "mix", got {combine!r}')
    return combine == "concat"


PRIVATE_VARIANTS = {
    "spacy-contextual.ElmoListener.v1": "spacy-contextual.ElmoTok2Vec.v1",
    "spacy-contextual.CoveListener.v1": "spacy-contextual.CoveTok2Vec.v1",
}


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
