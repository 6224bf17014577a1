"""The encoders the analysis works with, named by kind ("elmo" or "cove") and model: "default" (the
bundled model) or anything else the one resolver (``hub.resolver.resolve_model_dir``) accepts.
``load_model`` turns every way a model can fail to load into one ``ModelUnavailable`` line;
``name_notice`` is the notice a name carries (a folder here with the name of the model used), as the
commands print it;
``model_status`` says where each kind's model is; ``training_domain_of`` what a CoVe MT model was
trained on."""

from __future__ import annotations

import warnings
from pathlib import Path

from ..embedders import Embedder, load_encoder
from ..errors import ContextualError, quoted
from ..hub.resolver import KINDS, ShadowWarning, is_default, read_model_name, resolve_model_dir
from ..kinds import a_model
from .attention import training_domain

__all__ = [
    "KINDS", "Embedder", "ModelUnavailable", "is_bundled", "load_model", "model_dir", "model_status",
    "name_notice", "training_domain_of",
]  # fmt: skip


class ModelUnavailable(ContextualError):
    """A model that cannot be loaded; the message names it and why."""


def load_model(kind: str, model: str) -> Embedder:
    """The embedder of ``kind`` for ``model`` (blank = "default"); its arrays are (n_layers, n, width)."""
    try:
        return load_encoder(kind, model.strip() or "default")
    except (OSError, ValueError) as error:
        raise ModelUnavailable(f"Could not load {a_model(kind)} from {quoted(model)}: {error}.") from None


def name_notice(kind: str, model: str) -> str | None:
    """The ``ShadowWarning`` the name ``model`` carries (a folder here has the name of the model used), the
    same words the commands print; None when there is none, or the name is none (loading says why)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ShadowWarning)
        try:
            read_model_name(kind, model.strip() or "default")
        except (OSError, ValueError):
            return None
    return next((str(warning.message) for warning in caught if issubclass(warning.category, ShadowWarning)), None)


def is_bundled(model: str) -> bool:
    """True for the names that mean the bundled model ("default", blank)."""
    return is_default(model)


def model_dir(kind: str, model: str) -> Path:
    """The directory ``model`` names (FileNotFoundError with what to pass when there is none)."""
    return resolve_model_dir(kind, model)


def model_status(models: dict[str, str]) -> list[dict]:
    """One row per kind: {"encoder", "model" (its directory when found), "status" ("found" or why not)}."""
    rows = []
    for kind, model in models.items():
        try:
            rows.append({"encoder": kind, "model": str(model_dir(kind, model)), "status": "found"})
        except (OSError, ValueError) as error:  # missing, damaged, or a catalog name not cached while offline
            rows.append({"encoder": kind, "model": model, "status": str(error)})
    return rows


def training_domain_of(model: str) -> str:
    """What the CoVe MT model ``model`` was trained on (``attention.training_domain``)."""
    try:
        bundled = model_dir("cove", "default")
    except FileNotFoundError:
        bundled = None
    try:
        return training_domain(model_dir("cove", model), bundled)
    except FileNotFoundError:
        return "unknown (the model directory was not found)."
