"""How the controls name an occurrence and a layer."""

from __future__ import annotations

from ..analysis.neighbours import kwic
from ..analysis.occurrence_vectors import MIX
from ..analysis.sense_probe import TYPE_LEVEL_LAYER

OCCURRENCE_CONTEXT = 12  # characters either side of the word in an occurrence's label


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
