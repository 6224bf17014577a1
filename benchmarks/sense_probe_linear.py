"""Does a biLM's layer separate word senses, or is it the probe? The sense probe's nearest-centroid
rule (the ELMo paper's method, ``spacy-contextual sense-probe``) next to a linear classifier
(multinomial logistic regression) and to centroids of mean-centred vectors, same folds, per layer.

A linear probe far above the centroid rule means the senses are linearly separable in that layer
but the centroid rule, which has no class prior, loses on skewed sense distributions. A second
table splits the centroid rule's accuracy by the target's word form (hard / harder / hardest): a
sense centroid averages over forms in that sense's proportions, so a rare form can sit nearer to
the wrong sense's centroid.

    python -m benchmarks.sense_probe_linear ../shared/data/senses/hard.jsonl.gz \
        ../shared/data/senses/serve.jsonl.gz --model default
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from spacy_contextual.analysis.sense_probe import (
    centroid_predictions,
    fold_ids,
    probe_word,
    read_sense_file,
    target_vectors,
)
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder


def linear_probe(vectors: np.ndarray, senses: np.ndarray, folds: int = 5, seed: int = 0) -> list[float]:
    """Cross-validated accuracy of a logistic regression on each layer (same folds as the probe)."""
    fold = fold_ids(senses, folds, seed)
    accuracy = []
    for layer in range(vectors.shape[1]):
        correct = 0
        for k in range(folds):
            train, test = fold != k, fold == k
            model = LogisticRegression(max_iter=500).fit(vectors[train, layer], senses[train])
            correct += int((model.predict(vectors[test, layer]) == senses[test]).sum())
        accuracy.append(correct / len(senses))
    return accuracy


def accuracy_by_form(
    vectors: np.ndarray, senses: np.ndarray, forms: np.ndarray
) -> dict[str, tuple[int, float, list[float]]]:
    """Word form -> (instances, MFS accuracy, nearest-centroid accuracy per layer) on those instances."""
    mfs_predicted, layer_predicted = centroid_predictions(vectors, senses)
    table = {}
    for form in sorted(set(forms), key=lambda f: -(forms == f).sum()):
        rows = forms == form
        table[form] = (
            int(rows.sum()),
            float((mfs_predicted[rows] == senses[rows]).mean()),
            (layer_predicted[rows] == senses[rows][:, None]).mean(0).tolist(),
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--model", default="default", help="ELMo model directory, or 'default'")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    embedder = ElmoEmbedder.load(args.model)
    by_form = []
    for number, path in enumerate(args.files):
        instances = read_sense_file(path)
        vectors = target_vectors(instances, embedder.embed_sentences)
        senses = np.asarray([item["sense"] for item in instances])
        forms = np.asarray([item["tokens"][item["target"]] for item in instances])
        centroid = probe_word(vectors, senses)
        centred = probe_word(vectors - vectors.mean(axis=0, keepdims=True), senses)
        rows = {
            "nearest centroid": centroid["layer_accuracy"],
            "centroid, centred vectors": centred["layer_accuracy"],
            "logistic regression": linear_probe(vectors, senses),
        }
        layers = vectors.shape[1]
        if number == 0:
            print("| word | MFS | probe | " + " | ".join(f"layer {j}" for j in range(layers)) + " |")
            print("|---" * (3 + layers) + "|")
        word = instances[0]["word"]
        for name, accuracy in rows.items():
            cells = " | ".join(f"{a:.3f}" for a in accuracy)
            print(f"| {word} | {centroid['mfs_accuracy']:.3f} | {name} | {cells} |")
        by_form += [(word, form, *scores) for form, scores in accuracy_by_form(vectors, senses, forms).items()]
    print("\nNearest centroid by the target's word form (same folds):\n")
    print("| word | form | instances | MFS | " + " | ".join(f"layer {j}" for j in range(layers)) + " |")
    print("|---" * (4 + layers) + "|")
    for word, form, count, mfs, accuracy in by_form:
        print(f"| {word} | {form} | {count} | {mfs:.3f} | " + " | ".join(f"{a:.3f}" for a in accuracy) + " |")


if __name__ == "__main__":
    main()
