"""A contextual encoder as a thinc layer: Docs in, one array (n_layers, len(doc), width) per Doc out.

Row i of layer j is h_{i,j} for token i (zero for whitespace tokens). Docs are cut into segments and
batched as described in ``segments.py``; each batch runs through the shim's PyTorch module.

Predicting (``model.predict``, also what a frozen encoder does in training: see the component and
``frozen.py``), the module runs in eval mode under ``no_grad`` and segments found in the shim's
segment cache (``segment_cache.py``; off unless ``segment_cache_mb`` > 0) are copied from it; only
the others are encoded. Training (``begin_update``), the gradient of every output row flows back
into the module and ``finish_update`` updates it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from spacy.tokens import Doc
from thinc.api import Model, torch2xp, xp2torch
from thinc.types import Floats3d

from ..batching import plan_batches
from ..errors import quoted
from .segments import Segment, doc_segments
from .shim import EncoderShim
from .signatures import DocsToLayers


def ContextualEncoder(
    name: str,
    shim: EncoderShim,
    *,
    window: int,
    max_batch_tokens: int,
    stateful: bool,
    weights: str | None,
    load: Callable[[str | None], object],
) -> DocsToLayers:
    """``weights``: the model name, folder or "default" (None) whose weights ``load`` reads at initialize."""
    if stateful and shim.segment_cache.enabled:
        raise ValueError(
            "segment_cache_mb needs stateful = false: a stateful encoder's vectors depend on what it "
            "encoded before, so they cannot be reused; set segment_cache_mb = 0 or stateful = false"
        )
    model = Model(
        name,
        forward,
        init=init,
        shims=[shim],
        dims={"nO": None, "nL": None},
        attrs={
            "window": window,
            "max_batch_tokens": max_batch_tokens,
            "stateful": stateful,
            "layer_widths": None,  # set with the weights
            "name": weights,  # what nlp.initialize() loads, recorded in the config as model.name
            "loader": partial(load_named, load, weights),
        },
    )
    return model


def load_named(load: Callable[[str | None], object], name: str | None) -> object:
    """The weights ``model.name`` names; a name that is not there fails in one line naming the setting."""
    try:
        return load(name)
    except FileNotFoundError as error:
        message = " ".join(str(error).split())
        raise FileNotFoundError(f"model.name = {quoted(name)}: {message}") from error


def get_shim(model: Model) -> EncoderShim:
    return model.shims[0]


def load_weights(model: Model, module) -> None:
    """Put loaded weights into the encoder layer and set its dims (width nO, layer count nL)."""
    get_shim(model).load(module)
    set_encoder_dims(model)


def set_encoder_dims(model: Model) -> None:
    shim = get_shim(model)
    for dim, value in (("nO", shim.width), ("nL", len(shim.layer_names))):
        model.set_dim(dim, value, force=True)  # new weights may replace ones of another shape
    model.attrs["layer_widths"] = shim.layer_widths


def init(model: Model, X=None, Y=None) -> None:
    """An encoder without weights loads them here from ``attrs["loader"]`` (``model.name``, or a private
    encoder's ``loader``); the component's ``initialize`` does the same, with its own ``loader`` first."""
    shim = get_shim(model)
    if not shim.loaded and model.attrs.get("loader") is not None:
        shim.load(model.attrs["loader"]())
    if shim.loaded:
        set_encoder_dims(model)


def forward(model: Model, docs: list[Doc], is_train: bool):
    shim = get_shim(model)
    widths, width = shim.layer_widths, shim.width  # raises a clear error when no weights were loaded
    outputs = [model.ops.alloc3f(len(widths), len(doc), width) for doc in docs]
    segments = []
    for index, doc in enumerate(docs):
        doc_segs = list(doc_segments(doc, index, model.attrs["window"]))
        if not doc_segs and model.attrs["stateful"]:
            doc_segs = [Segment(index, ())]  # a stateful row per doc, as in the reference, even if empty
        segments.extend(doc_segs)
    cache = shim.segment_cache if shim.segment_cache.enabled and not is_train else None
    if cache is not None:
        cache.validate(shim.weights_signature())
    keys = {segment: tuple(docs[segment.doc_index][i].text for i in segment.token_indices) for segment in segments}
    to_encode = []
    for segment in segments:
        cached = cache.get(keys[segment]) if cache is not None else None
        if cached is None:
            to_encode.append(segment)
        else:
            outputs[segment.doc_index][:, list(segment.token_indices)] = cached
    plan = plan_batches(
        [len(s) for s in to_encode], model.attrs["max_batch_tokens"], keep_order=model.attrs["stateful"]
    )
    callbacks = []
    for batch in ([to_encode[i] for i in indices] for indices in plan):
        layers, torch_backprop = shim.run([keys[segment] for segment in batch], is_train)
        values = torch2xp(layers.detach().float(), ops=model.ops)
        for row, segment in enumerate(batch):
            segment_layers = values[row, :, : len(segment)]
            outputs[segment.doc_index][:, list(segment.token_indices)] = segment_layers
            if cache is not None:
                cache.put(keys[segment], segment_layers)
        if torch_backprop is not None:
            callbacks.append((batch, layers, torch_backprop))

    def backprop(d_outputs: list[Floats3d]) -> list[Doc]:
        for batch, layers, torch_backprop in callbacks:
            d_layers = model.ops.alloc4f(*layers.shape)
            for row, segment in enumerate(batch):
                d_layers[row, :, : len(segment)] = d_outputs[segment.doc_index][:, list(segment.token_indices)]
            torch_backprop(xp2torch(d_layers, device=layers.device))
        return []

    return outputs, backprop
