"""The ELMo paper's word-sense probe (Peters et al. 2018, §5.3): 1-nearest-neighbour to sense centroids.

For every word, with 5-fold cross-validation over its instances and every layer j separately:

    centroid_{s,j} = mean of the layer-j vectors of the target token over the training-fold
                     instances of sense s
    prediction     = argmax_s cos(v_j, centroid_{s,j})         for a held-out instance's vector v_j

accuracy_j = correct predictions / instances (over all folds). The baseline predicts the most
frequent sense of the training folds. Works with any encoder given as a callable
``embed(list of token lists) -> list of arrays (n_layers, n_tokens, dim)`` (ELMo, CoVe, ...).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from ..errors import ContextualError
from ..text_files import InputFileError, read_jsonl
from ..types import PathLike

Embed = Callable[[list[list[str]]], Sequence[np.ndarray]]


def read_sense_file(path: PathLike) -> list[dict]:
    """Instances ``{"id", "word", "tokens", "target", "sense"}``, one JSON object per line (``.gz`` ok)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"sense file not found: {path}")
    instances = []
    for number, item in read_jsonl(path):
        missing = [k for k in ("word", "tokens", "target", "sense") if k not in item]
        if missing:
            raise InputFileError(f"{path}:{number} lacks {missing}; each line needs word, tokens, target, sense")
        if not isinstance(item["tokens"], list) or not all(isinstance(t, str) for t in item["tokens"]):
            raise InputFileError(f"{path}:{number}: tokens must be a list of strings")
        target = item["target"]
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target < len(item["tokens"]):
            raise InputFileError(
                f"{path}:{number}: target {target!r} is not an index into its {len(item['tokens'])} tokens"
            )
        instances.append(item)
    if not instances:
        raise InputFileError(f"{path} holds no instances")
    return instances


def target_vectors(instances: Sequence[dict], embed: Embed, chunk_size: int = 256) -> np.ndarray:
    """(instances, n_layers, dim): every layer's vector of each instance's target token."""
    out = []
    for start in range(0, len(instances), chunk_size):
        chunk = instances[start : start + chunk_size]
        arrays = embed([list(item["tokens"]) for item in chunk])
        for item, layers in zip(chunk, arrays, strict=True):
            if layers.shape[1] != len(item["tokens"]):
                raise ContextualError(
                    f"the encoder returned {layers.shape[1]} vectors for {len(item['tokens'])} tokens"
                )
            out.append(np.asarray(layers[:, item["target"]], dtype=np.float32))
    return np.stack(out)


def fold_ids(n: int, folds: int, seed: int) -> np.ndarray:
    """Fold of every instance: a seeded permutation cut into ``folds`` nearly equal parts."""
    order = np.random.RandomState(seed).permutation(n)
    ids = np.empty(n, dtype=int)
    for fold, part in enumerate(np.array_split(order, folds)):
        ids[part] = fold
    return ids


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


def centroid_predictions(
    vectors: np.ndarray, senses: Sequence[str], folds: int = 5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Cross-validated predictions for one word's ``vectors`` (n, layers, dim): the most frequent
    sense of each instance's training folds (n,), and its nearest sense centroid per layer (n, layers)."""
    n = len(senses)
    if n < folds:
        raise ContextualError(f"{n} instances cannot be split into {folds} folds")
    labels = np.asarray(senses)
    fold = fold_ids(n, folds, seed)
    mfs_predicted = np.empty(n, dtype=labels.dtype)
    layer_predicted = np.empty((n, vectors.shape[1]), dtype=labels.dtype)
    for k in range(folds):
        train, test = fold != k, fold == k
        names = sorted(set(labels[train]))
        counts = Counter(labels[train])
        mfs_predicted[test] = max(names, key=lambda s: (counts[s], -names.index(s)))
        centroids = np.stack(
            [vectors[train & (labels == s)].mean(axis=0) for s in names], axis=1
        )  # (layers, senses, dim)
        similarity = np.einsum("nld,lsd->nls", _unit(vectors[test]), _unit(centroids))
        layer_predicted[test] = np.asarray(names)[similarity.argmax(-1)]
    return mfs_predicted, layer_predicted


def probe_word(vectors: np.ndarray, senses: Sequence[str], folds: int = 5, seed: int = 0) -> dict:
    """Cross-validated MFS and per-layer centroid accuracy for one word's ``vectors`` (n, layers, dim)."""
    labels = np.asarray(senses)
    mfs_predicted, layer_predicted = centroid_predictions(vectors, senses, folds, seed)
    return {
        "instances": len(labels),
        "senses": len(set(senses)),
        "mfs_accuracy": float((mfs_predicted == labels).mean()),
        "layer_accuracy": (layer_predicted == labels[:, None]).mean(0).tolist(),
    }


def sense_probe(instances: Iterable[dict], embed: Embed, folds: int = 5, seed: int = 0) -> list[dict]:
    """One result per word (in order of first appearance):
    ``{"word", "instances", "senses", "mfs_accuracy", "layer_accuracy": [layer 0, layer 1, ...]}``."""
    by_word: dict[str, list[dict]] = {}
    for item in instances:
        by_word.setdefault(item["word"], []).append(item)
    results = []
    for word, items in by_word.items():
        vectors = target_vectors(items, embed)
        results.append({"word": word, **probe_word(vectors, [item["sense"] for item in items], folds, seed)})
    return results


def format_table(results: Sequence[dict]) -> str:
    """A plain-text table: word, instances, senses, MFS, accuracy per layer."""
    layers = max(len(r["layer_accuracy"]) for r in results)
    header = ["word", "instances", "senses", "MFS"] + [f"layer {j}" for j in range(layers)]
    rows = [
        [r["word"], str(r["instances"]), str(r["senses"]), f"{r['mfs_accuracy']:.3f}"]
        + [f"{a:.3f}" for a in r["layer_accuracy"]]
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)
