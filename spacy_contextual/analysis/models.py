"""The encoders the analysis works with, named by kind ("elmo" or "cove") and model: "default" (the
bundled model) or anything else the one resolver (``hub.resolver.resolve_model_dir``) accepts.
``load_model`` turns every way a model can fail to load into one ``ModelUnavailable`` line;
``model_status`` says where each kind's model is; ``training_domain_of`` what a CoVe MT model was
trained on."""

from __future__ import annotations

from pathlib import Path

from ..embedders import Embedder, load_encoder
from ..errors import ContextualError, quoted
from ..hub.resolver import KINDS, is_default, resolve_model_dir
from ..kinds import a_model
from .attention import training_domain

__all__ = [
    "KINDS", "Embedder", "ModelUnavailable", "is_bundled", "load_model", "model_dir", "model_status",
    "training_domain_of",
]  # fmt: skip


class ModelUnavailable(ContextualError):
    """A model that cannot be loaded; the message names it and why."""


def load_model(kind: str, model: str) -> Embedder:
    """The embedder of ``kind`` for ``model`` (blank = "default"); its arrays are (n_layers, n, width)."""
    try:
        return load_encoder(kind, model.strip() or "default")
    except (OSError, ValueError) as error:
        raise ModelUnavailable(f"Could not load {a_model(kind)} from {quoted(model)}: {error}.") from None


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
