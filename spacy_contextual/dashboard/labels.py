"""How the controls and chart titles name an occurrence, a layer and a model."""

from __future__ import annotations

from pathlib import PurePath

from ..analysis.neighbours import kwic
from ..analysis.occurrence_vectors import MIX
from ..analysis.sense_probe import TYPE_LEVEL_LAYER

OCCURRENCE_CONTEXT = 12  # characters either side of the word in an occurrence's label
MODEL_LABEL_CHARS = 20  # a model's name in a chart title, which must fit half of an 800 px window


def occurrence_label(records, occurrences, index: int) -> str:
    """ "#12: Can you play the …": an occurrence as a select box shows it, short enough to fit at 800 px."""
    record, position = int(occurrences["record"].iloc[index]), int(occurrences["position"].iloc[index])
    left, word, right = kwic(records[record]["tokens"], position, OCCURRENCE_CONTEXT)
    return f"#{index}: " + " ".join(part for part in (left, word, right) if part)


def layer_label(labels: list[str], layer, mix_name: str = "uniform") -> str:
    """ "char-CNN (type-level)", "LSTM-2", "mix (uniform)": a layer choice as the controls show it."""
    if layer == MIX:
        return f"mix ({mix_name})"
    return f"{labels[layer]} (type-level)" if layer == TYPE_LEVEL_LAYER else labels[layer]


def model_label(model: str) -> str:
    """ "default", "elmo-small", "…/my_elmo": a model as a chart title names it (the folder's own name; the full
    name or path is in the sidebar), at most ``MODEL_LABEL_CHARS`` characters."""
    name = PurePath(model).name if "/" in model else model
    label = name if name == model else f"…/{name}"
    return label if len(label) <= MODEL_LABEL_CHARS else label[: MODEL_LABEL_CHARS - 1] + "…"
