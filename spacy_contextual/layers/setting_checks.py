"""Checks of the components' and architectures' settings, run when they are built (and, for the
settings that need the model, when its weights are loaded): a bad value fails there, in one line
naming the setting, its allowed values and the value given, instead of deep inside the first batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ContextualError, quoted


def _refuse(name: str, allowed: str, value: object) -> ContextualError:
    shown = quoted(value) if isinstance(value, str) else repr(value)
    return ContextualError(f"{name} must be {allowed}, got {shown}")


def check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise _refuse(name, "true or false", value)


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        raise _refuse(name, "one of " + ", ".join(f'"{choice}"' for choice in choices), value)


def check_count(name: str, value: object, minimum: int, meaning: str) -> None:
    """An integer >= ``minimum``; ``meaning`` says what it counts (in the message)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _refuse(name, f"an integer >= {minimum} ({meaning})", value)


def check_fraction(name: str, value: object) -> None:
    """A probability of dropping something: in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value < 1.0:
        raise _refuse(name, "a number in [0, 1)", value)


def check_positive(name: str, value: object, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < float("inf"):
        raise _refuse(name, f"a number > 0 ({meaning})", value)


def check_finite(name: str, value: object, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not abs(value) < float("inf"):
        raise _refuse(name, f"a finite number ({meaning})", value)


def check_layer_index(name: str, value: object, n_layers: int | None) -> None:
    """null (the mean of all layers) or a layer index; with ``n_layers`` known, in [-n_layers, n_layers - 1]."""
    if value is None:
        return
    if n_layers is None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _refuse(name, "null (the mean of all layers) or a layer index", value)
        return
    if isinstance(value, bool) or not isinstance(value, int) or not -n_layers <= value < n_layers:
        raise _refuse(
            name, f"null (the mean of all layers) or a layer index in [{-n_layers}, {n_layers - 1}] for this "
            f"{n_layers}-layer model", value,
        )  # fmt: skip


def check_encoder_settings(*, window: object, max_batch_tokens: object, segment_cache_mb: object) -> None:
    """The settings the ELMo and CoVe encoder architectures share (``precision``: precision.py)."""
    check_count("window", window, 1, "the longest segment fed to the encoder, in tokens")
    check_count("max_batch_tokens", max_batch_tokens, window + 2, "padded tokens per batch, at least window + 2")
    check_count("segment_cache_mb", segment_cache_mb, 0, "MiB of cached segments; 0 = no cache")


def check_model_name(name: str, value: object) -> None:
    """A model name, a model folder, or "default"/null (the bundled model); whether it is there is
    known at ``nlp.initialize()``, where it is loaded (a saved pipeline never looks)."""
    if value is not None and not isinstance(value, str):
        raise _refuse(name, 'a model name from `spacy-contextual models`, a model folder, or "default"', value)
