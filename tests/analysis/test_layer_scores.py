"""Per-layer scores of one word's occurrences, each beside the majority-sense share."""

import numpy as np

from spacy_contextual.analysis.layer_scores import PURITY_VS_PROBE, layer_scores
from spacy_contextual.analysis.occurrence_vectors import MIX
from spacy_contextual.analysis.purity import majority_share


def test_every_layer_has_its_score_beside_the_majority_share():
    rng = np.random.default_rng(0)
    senses = ["A"] * 16 + ["B"] * 4
    forms = ["hard"] * 18 + ["harder"] * 2
    layers = rng.normal(size=(20, 3, 8)).astype(np.float32)
    layers[:16, 2] += 6.0  # layer 2 separates the senses (cosine: opposite directions)
    layers[16:, 2] -= 6.0
    layers[:, 0] = [[1.0] * 8 if f == "hard" else [-1.0] * 8 for f in forms]  # type-level: one vector per form
    # a word form alone: hard -> A (16 of 18), harder -> B (2 of 2): 0.9
    scores = layer_scores(layers, None, senses, forms, np.zeros(20, dtype=int))
    assert [s.layer for s in scores] == [0, 1, 2, MIX]
    assert majority_share(senses) == 0.8 and all(s.majority == 0.8 for s in scores)
    assert scores[0].score_name == "word form alone" and scores[0].score == 0.9 and scores[0].projection is None
    assert scores[2].score_name == "5-NN purity" and scores[2].score == 1.0
    assert scores[2].caption() == "5-NN purity 1.00 · majority sense 0.80"
    assert scores[1].projection.coords.shape == (20, 2)
    unlabelled = layer_scores(layers, None, [None] * 20, forms, np.array([0, 1] * 10))
    assert unlabelled[0].score is None and unlabelled[0].caption() == "no score"
    assert unlabelled[2].score_name == "silhouette of the clusters" and unlabelled[2].majority is None
    assert "held-out" in PURITY_VS_PROBE and "nearest other occurrences" in PURITY_VS_PROBE
