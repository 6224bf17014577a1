"""The ELMo paper's word-sense probe (Peters et al. 2018, §5.3): 1-nearest-neighbour to sense centroids.

For every word, with stratified k-fold cross-validation over its instances and every layer j separately:

    centroid_{s,j} = mean of the layer-j vectors of the target token over the training-fold
                     instances of sense s
    prediction     = argmax_s cos(v_j, centroid_{s,j})         for a held-out instance's vector v_j

accuracy_j = correct predictions / instances (over all folds), with a 95 % bootstrap interval
(instances resampled with replacement). Every fold holds each sense in the proportion of the whole
word (stratified), so the baseline, the most frequent sense (MFS) of the training folds, scores
the majority share and never falls below it by chance. A word with more instances than
``max_per_word`` is sampled per sense, in proportion to the sense counts (seeded), never the first n.
Layer 0 of ELMo (char-CNN) and CoVe (GloVe) is type-level: one vector per word form, whatever the
context. Nearest-centroid on it is a tie among identical vectors (with one form, every centroid is that
one vector and the tie goes to the first sense name), decided by how the tie is broken, not by what the
layer knows. So a layer whose vectors are one per word form (``type_level_layers``, found in the data)
is scored as what it can know: each held-out instance gets its form's majority sense in the training
folds (the folds' most frequent sense for a form they lack), and is reported as such.

Works with any encoder given as a callable ``embed(list of token lists) -> list of arrays
(n_layers, n_tokens, dim)`` (ELMo, CoVe, ...).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from ..errors import ContextualError
from ..text_files import InputFileError, read_jsonl
from ..types import PathLike
from .purity import majority_share, word_form_accuracy
from .sense_records import check_record

Embed = Callable[[list[list[str]]], Sequence[np.ndarray]]
TYPE_LEVEL_LAYER = 0  # char-CNN / GloVe: one vector per word form
MIN_INSTANCES_PER_SENSE = 5  # fewer: a warning (too few held-out predictions to trust)
BOOTSTRAP_SAMPLES = 1000


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
        check_record(item, f"{path}:{number}", labelled=True, error=InputFileError)
        instances.append(item)
    if not instances:
        raise InputFileError(f"{path} holds no instances")
    return instances


def labelled_instances(records: Iterable[dict]) -> list[dict]:
    """The records that have a target and a sense, each with its (lowercased) word and its index in
    ``records`` ("record")."""
    return [
        {**record, "word": (record.get("word") or record["tokens"][record["target"]]).lower(), "record": index}
        for index, record in enumerate(records)
        if record.get("target") is not None and record.get("sense")
    ]


def sense_quotas(counts: dict[str, int], n: int, minimum: int = MIN_INSTANCES_PER_SENSE) -> dict[str, int]:
    """How many instances of each sense a sample of ``n`` takes: proportional to ``counts`` (largest
    remainder), each sense raised to min(its count, ``minimum``) where ``n`` allows it."""
    total = sum(counts.values())
    if n >= total:
        return dict(counts)
    exact = {s: n * c / total for s, c in counts.items()}
    quotas = {s: int(e) for s, e in exact.items()}
    for s in sorted(exact, key=lambda s: quotas[s] - exact[s])[: n - sum(quotas.values())]:
        quotas[s] += 1
    for s in sorted(counts, key=counts.get):  # rare senses first
        while quotas[s] < min(counts[s], minimum):
            donor = max(quotas, key=lambda d: quotas[d] - min(counts[d], minimum))
            if quotas[donor] <= min(counts[donor], minimum):
                break
            quotas[donor] -= 1
            quotas[s] += 1
    return quotas


def sampled_counts(instances: Sequence[dict], max_per_word: int | None) -> dict[str, tuple[int, int]]:
    """{word: (instances the probe uses, instances there are)} for a sample of ``max_per_word``."""
    available = Counter(item["word"] for item in instances)
    return {w: (n if max_per_word is None else min(n, max_per_word), n) for w, n in available.items()}


def sample_per_sense(instances: Sequence[dict], max_per_word: int | None, seed: int = 0) -> list[dict]:
    """At most ``max_per_word`` instances of every word, drawn at random (seeded) within each sense in
    the numbers ``sense_quotas`` gives; the chosen instances keep their corpus order."""
    if max_per_word is None:
        return list(instances)
    rng = np.random.RandomState(seed)
    by_word: dict[str, list[int]] = {}
    for index, item in enumerate(instances):
        by_word.setdefault(item["word"], []).append(index)
    chosen: list[int] = []
    for indices in by_word.values():
        by_sense: dict[str, list[int]] = {}
        for index in indices:
            by_sense.setdefault(instances[index]["sense"], []).append(index)
        quotas = sense_quotas({s: len(members) for s, members in by_sense.items()}, max_per_word)
        for sense in sorted(by_sense):
            members = by_sense[sense]
            take = quotas[sense]
            chosen += [int(i) for i in rng.choice(members, take, replace=False)] if take < len(members) else members
    return [instances[i] for i in sorted(chosen)]


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


def fold_ids(senses: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """Fold of every instance, stratified: each sense's instances, in a seeded random order, are dealt
    to the folds in turn (continuing where the previous sense stopped, so fold sizes stay within one)."""
    labels = np.asarray(senses)
    rng = np.random.RandomState(seed)
    ids = np.empty(len(labels), dtype=int)
    dealt = 0
    for sense in sorted(set(labels.tolist())):
        members = np.flatnonzero(labels == sense)
        rng.shuffle(members)
        ids[members] = (dealt + np.arange(len(members))) % folds
        dealt += len(members)
    return ids


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


TYPE_LEVEL_TOLERANCE = 1e-4  # relative: vectors of one form closer than this are the same vector


def type_level_layers(vectors: np.ndarray, forms: Sequence[str] | None) -> list[bool]:
    """Per layer of ``vectors`` (n, layers, dim): True when it gives every occurrence of a word form one
    vector (some form occurring at least twice); all False without ``forms``."""
    n_layers = vectors.shape[1]
    if forms is None or len(set(forms)) == len(forms):
        return [False] * n_layers
    forms = np.asarray(forms, dtype=object)
    flags = []
    for layer in range(n_layers):
        values = np.asarray(vectors[:, layer], dtype=np.float64)
        scale = max(float(np.abs(values).max()), 1e-12)
        same = all(
            np.abs(values[forms == form] - values[forms == form][0]).max() <= TYPE_LEVEL_TOLERANCE * scale
            for form in set(forms.tolist())
        )
        flags.append(bool(same))
    return flags


def centroid_predictions(
    vectors: np.ndarray,
    senses: Sequence[str],
    folds: int = 5,
    seed: int = 0,
    forms: Sequence[str] | None = None,
    type_level: Sequence[bool] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cross-validated predictions for one word's ``vectors`` (n, layers, dim): the most frequent
    sense of each instance's training folds (n,) and per layer (n, layers) its nearest sense centroid, or
    at a ``type_level`` layer its form's majority sense in the training folds (``forms`` needed)."""
    n = len(senses)
    if n < folds:
        raise ContextualError(f"{n} instances cannot be split into {folds} folds")
    labels = np.asarray(senses)
    type_level = list(type_level or [False] * vectors.shape[1])
    fold = fold_ids(labels, folds, seed)
    mfs_predicted = np.empty(n, dtype=labels.dtype)
    layer_predicted = np.empty((n, vectors.shape[1]), dtype=labels.dtype)
    for k in range(folds):
        train, test = fold != k, fold == k
        names = sorted(set(labels[train]))
        counts = Counter(labels[train])
        majority = max(names, key=lambda s: (counts[s], -names.index(s)))
        mfs_predicted[test] = majority
        centroids = np.stack(
            [vectors[train & (labels == s)].mean(axis=0) for s in names], axis=1
        )  # (layers, senses, dim)
        similarity = np.einsum("nld,lsd->nls", _unit(vectors[test]), _unit(centroids))
        layer_predicted[test] = np.asarray(names)[similarity.argmax(-1)]
        if any(type_level):
            form_of = np.asarray(forms, dtype=object)
            by_form = form_majorities(form_of[train], labels[train], majority)
            predicted = np.asarray([by_form.get(form, majority) for form in form_of[test]], dtype=labels.dtype)
            layer_predicted[np.ix_(test, np.flatnonzero(type_level))] = predicted[:, None]
    return mfs_predicted, layer_predicted


def form_majorities(forms: np.ndarray, senses: np.ndarray, fallback: str) -> dict[str, str]:
    """Each form's most frequent sense; among tied senses ``fallback`` (the overall majority) if it is one,
    else the first name."""
    by_form: dict[str, Counter] = {}
    for form, sense in zip(forms.tolist(), senses.tolist(), strict=True):
        by_form.setdefault(form, Counter())[sense] += 1
    chosen = {}
    for form, counts in by_form.items():
        top = max(counts.values())
        tied = sorted(s for s, c in counts.items() if c == top)
        chosen[form] = fallback if fallback in tied else tied[0]
    return chosen


def bootstrap_intervals(correct: np.ndarray, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> np.ndarray:
    """95 % percentile intervals of the mean of each column of ``correct`` (n, m) booleans: (m, 2)."""
    rng = np.random.RandomState(seed)
    draws = rng.randint(0, len(correct), size=(samples, len(correct)))
    means = correct.astype(np.float32)[draws].mean(axis=1)  # (samples, m)
    return np.percentile(means, [2.5, 97.5], axis=0).T


def word_warnings(word: str, senses: Sequence[str], minimum: int = MIN_INSTANCES_PER_SENSE) -> list[str]:
    counts = Counter(senses)
    if len(counts) == 1:
        return [
            f"'{word}' has one sense ({next(iter(counts))}) among its {len(senses)} instances: every layer scores "
            "1.000 trivially; there is nothing to probe."
        ]
    rare = [f"{sense} ({count})" for sense, count in sorted(counts.items()) if count < minimum]
    if rare:
        return [
            f"'{word}': {', '.join(rare)} {'has' if len(rare) == 1 else 'have'} fewer than {minimum} instances: "
            "too few held-out predictions to trust the accuracy."
        ]
    return []


def probe_word(
    vectors: np.ndarray,
    senses: Sequence[str],
    folds: int = 5,
    seed: int = 0,
    layer_labels: Sequence[str] | None = None,
    word: str = "",
    forms: Sequence[str] | None = None,
) -> dict:
    """Cross-validated MFS and per-layer centroid accuracy for one word's ``vectors`` (n, layers, dim),
    with bootstrap intervals, the layers' names, which of them are type-level (one vector per form of
    ``forms``: scored by the form's majority sense, as the module docstring says) and warnings."""
    labels = np.asarray(senses)
    type_level = type_level_layers(vectors, forms)
    mfs_predicted, layer_predicted = centroid_predictions(vectors, senses, folds, seed, forms, type_level)
    correct = np.column_stack([mfs_predicted == labels, layer_predicted == labels[:, None]])
    intervals = bootstrap_intervals(correct, seed=seed)
    n_layers = vectors.shape[1]
    names = list(layer_labels) if layer_labels is not None else [f"layer {j}" for j in range(n_layers)]
    if len(names) != n_layers:
        raise ValueError(f"{len(names)} layer labels for {n_layers} layers")
    counts = Counter(labels.tolist())
    return {
        "instances": len(labels),
        "senses": len(counts),
        "sense_counts": dict(sorted(counts.items())),
        "majority_share": majority_share(labels.tolist()),
        "mfs_accuracy": float(correct[:, 0].mean()),
        "mfs_interval": intervals[0].tolist(),
        "layer_accuracy": correct[:, 1:].mean(0).tolist(),
        "layer_interval": intervals[1:].tolist(),
        "layers": names,
        "type_level": type_level,
        "warnings": word_warnings(word or "this word", labels.tolist()),
    }


def sense_probe(
    instances: Iterable[dict],
    embed: Embed,
    folds: int = 5,
    seed: int = 0,
    max_per_word: int | None = None,
    layer_labels: Sequence[str] | None = None,
    vectors_of: Callable[[Sequence[dict]], np.ndarray] | None = None,
) -> list[dict]:
    """One result per word (in order of first appearance): ``{"word", "available", "instances",
    "senses", "sense_counts", "majority_share", "word_form_accuracy", "mfs_accuracy", "mfs_interval",
    "layer_accuracy", "layer_interval", "layers", "type_level", "warnings"}``; ``available`` counts the
    word's instances before sampling (``max_per_word``); ``word_form_accuracy`` is the best a word form
    alone can do (each form's majority sense, on the probed instances). ``vectors_of(instances)`` gives
    the target vectors (default: ``target_vectors`` with ``embed``)."""
    vectors_of = vectors_of or (lambda items: target_vectors(items, embed))
    instances = list(instances)
    available = Counter(item["word"] for item in instances)
    by_word: dict[str, list[dict]] = {}
    for item in sample_per_sense(instances, max_per_word, seed):
        by_word.setdefault(item["word"], []).append(item)
    results = []
    for word, items in by_word.items():
        senses = [item["sense"] for item in items]
        forms = [item["tokens"][item["target"]] for item in items]
        result = probe_word(vectors_of(items), senses, folds, seed, layer_labels, word, forms)
        results.append({"word": word, "available": available[word], **result,
                        "word_form_accuracy": word_form_accuracy(forms, senses)})  # fmt: skip
    return results


def layer_heading(result: dict, layer: int) -> str:
    """ "char-CNN (type-level)", "LSTM-1", ...: the layer's name as tables and charts show it (type-level:
    scored by each form's majority sense)."""
    name = result["layers"][layer]
    return f"{name} (type-level)" if result["type_level"][layer] else name


def format_table(results: Sequence[dict]) -> str:
    """A plain-text table: word, instances, senses, MFS, accuracy per layer with its 95 % interval; the
    warnings and a note on the type-level layer below."""
    widest = max(results, key=lambda r: len(r["layer_accuracy"]))
    header = ["word", "instances", "senses", "MFS"] + [
        layer_heading(widest, j) for j in range(len(widest["layer_accuracy"]))
    ]

    def cell(value: float, interval: Sequence[float]) -> str:
        return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"

    rows = [
        [
            r["word"],
            f"{r['instances']}" + (f" of {r['available']}" if r["available"] > r["instances"] else ""),
            str(r["senses"]),
            cell(r["mfs_accuracy"], r["mfs_interval"]),
        ]
        + [cell(a, i) for a, i in zip(r["layer_accuracy"], r["layer_interval"], strict=True)]
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.append(
        "Accuracy [95 % bootstrap interval], stratified folds; MFS = most frequent sense of the training folds. "
        "Type-level: one vector per word form, so nearest-centroid would be a tie among identical vectors: "
        "scored instead as each form's majority sense in the training folds."
    )
    lines += [f"warning: {warning}" for r in results for warning in r["warnings"]]
    return "\n".join(lines)
