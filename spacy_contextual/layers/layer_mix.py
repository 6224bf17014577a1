"""One downstream component's own layer mix, a native thinc layer (Peters et al. 2018, eq. 1):

    ELMo_k = γ · Σ_j softmax(s)_j · h_{k,j}

with s initialised to 0 and γ to 1, both trained with the component. Options: ``layer_norm``
normalises every layer of every token over its features first (no learned scale; per token, so the
result does not depend on the batch), ``layer_dropout`` drops whole layers from the softmax during
training (at least one is kept), ``grad_factor`` scales the gradient passed back to the encoder
(0 sends none). The parameters are read back with ``layer_weights(model)``.
"""

from __future__ import annotations

from thinc.api import Model
from thinc.types import Floats2d, Floats3d

from .setting_checks import check_finite, check_flag, check_fraction

LAYER_NORM_EPS = 1e-6


def LayerMix(
    nL: int | None = None,
    *,
    layer_norm: bool = False,
    layer_dropout: float = 0.0,
    grad_factor: float = 1.0,
    width: int | None = None,
) -> Model[list[Floats3d], list[Floats2d]]:
    """``width``: when given, the layers must have it (a listener without projection promises it)."""
    check_fraction("layer_dropout", layer_dropout)
    check_flag("layer_norm", layer_norm)
    check_finite("grad_factor", grad_factor, "scales the gradient passed back to the encoder; 0 sends none")
    return Model(
        "layer_mix",
        forward,
        init=init,
        params={"s": None, "gamma": None},
        dims={"nL": nL, "nO": width},
        attrs={"layer_norm": layer_norm, "layer_dropout": layer_dropout, "grad_factor": grad_factor},
    )


def init(model: Model, X: list[Floats3d] | None = None, Y=None) -> None:
    if X:
        model.set_dim("nL", X[0].shape[0])
    if not model.has_dim("nL"):
        raise ValueError("LayerMix needs the number of layers: initialize the upstream encoder first")
    model.set_param("s", model.ops.alloc1f(model.get_dim("nL")))
    gamma = model.ops.alloc1f(1)
    gamma[0] = 1.0
    model.set_param("gamma", gamma)


def layer_weights(model: Model) -> dict[str, object]:
    """{"s": raw s, "weights": softmax(s), "gamma": γ} as Python floats (for reports and the dashboard)."""
    s = model.ops.to_numpy(model.get_param("s"))
    shares = model.ops.to_numpy(model.ops.softmax(model.get_param("s")))
    return {
        "s": s.tolist(),
        "weights": shares.tolist(),
        "gamma": float(model.ops.to_numpy(model.get_param("gamma"))[0]),
    }


def forward(model: Model, Xs: list[Floats3d], is_train: bool):
    ops, xp = model.ops, model.ops.xp
    n_layers = model.get_dim("nL")
    width = model.maybe_get_dim("nO")
    for X in Xs:
        if X.shape[0] != n_layers:
            raise ValueError(f"the layer mix was built for {n_layers} layers but got {X.shape[0]}")
        if width is not None and X.shape[2] != width:
            raise ValueError(
                f"the listener has width = {width} and project = false, but the encoder gives {X.shape[2]}-d "
                "vectors: set width to that or project = true"
            )
    lengths = [X.shape[1] for X in Xs]
    if not Xs:
        return [], lambda dYs: []
    H = xp.concatenate(Xs, axis=1)  # (L, N, W)
    if model.attrs["layer_norm"]:
        mean = H.mean(axis=2, keepdims=True)
        inv_std = 1.0 / xp.sqrt(H.var(axis=2, keepdims=True) + LAYER_NORM_EPS)
        H = (H - mean) * inv_std
    s = model.get_param("s")
    if is_train and model.attrs["layer_dropout"] > 0:
        dropped = xp.random.uniform(size=s.shape) < model.attrs["layer_dropout"]
        if dropped.all():
            dropped[xp.random.randint(len(s))] = False
        s = xp.where(dropped, -xp.inf, s).astype("float32")
    shares = ops.softmax(s)
    gamma = float(model.get_param("gamma")[0])
    Y = gamma * xp.tensordot(shares, H, axes=(0, 0))  # (N, W)

    def backprop(dYs: list[Floats2d]) -> list[Floats3d]:
        dY = xp.concatenate(dYs, axis=0)
        inner = (H * dY[None]).sum(axis=(1, 2))  # <h_j, dY> per layer
        model.inc_grad("gamma", (shares * inner).sum().reshape(1).astype("float32"))
        d_shares = gamma * inner
        model.inc_grad("s", (shares * (d_shares - (shares * d_shares).sum())).astype("float32"))
        grad_factor = model.attrs["grad_factor"]
        if grad_factor == 0:
            return [ops.alloc3f(n_layers, n, X.shape[2]) for n, X in zip(lengths, Xs, strict=True)]
        dH = (grad_factor * gamma) * shares[:, None, None] * dY[None]
        if model.attrs["layer_norm"]:
            normed = H
            dH = inv_std * (dH - dH.mean(axis=2, keepdims=True) - normed * (dH * normed).mean(axis=2, keepdims=True))
        return list(xp.split(dH.astype("float32"), _offsets(lengths), axis=1))

    return list(xp.split(Y, _offsets(lengths), axis=0)), backprop


def _offsets(lengths: list[int]) -> list[int]:
    offsets, total = [], 0
    for length in lengths[:-1]:
        total += length
        offsets.append(total)
    return offsets
