"""Occurrence vectors, projections, clusters and nearest neighbours."""

import numpy as np
import pytest
from util import tiny_bilm

from spacy_contextual.analysis.clusters import cluster
from spacy_contextual.analysis.neighbours import KWIC_WIDTH, nearest_neighbours, neighbour_table
from spacy_contextual.analysis.occurrence_store import occurrence_layers
from spacy_contextual.analysis.occurrence_vectors import MIX, layer_options, select_layer
from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences, text_corpus
from spacy_contextual.analysis.projection import cosine_knn, project
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder


@pytest.fixture(scope="module")
def embedder():
    return ElmoEmbedder(tiny_bilm())


def blobs(n_per_blob=40, centres=3, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    directions = np.eye(dim)[:centres] * 5
    points = np.concatenate([d + 0.3 * rng.standard_normal((n_per_blob, dim)) for d in directions])
    return points.astype(np.float32), np.repeat(np.arange(centres), n_per_blob)


def test_same_word_in_two_contexts_differs_in_context_layers_only(embedder):
    records = text_corpus("I saw a play last night. Good play by the shortstop! She likes to play chess.")
    occurrences = find_occurrences(records, "play")
    layers = occurrence_layers(embedder.embed_sentences, records, occurrences)
    assert layers.shape == (3, embedder.num_layers, embedder.output_dim) and layers.dtype == np.float32
    np.testing.assert_allclose(layers[0, 0], layers[1, 0])  # layer 0: the char CNN sees only the word
    for layer in range(1, embedder.num_layers):
        assert not np.allclose(layers[0, layer], layers[1, layer])
    # each vector is the one the embedder gives for that token in its sentence
    direct = embedder.embed_sentences([records[2]["tokens"]])[0]
    np.testing.assert_allclose(layers[2], direct[:, occurrences["position"][2]], rtol=1e-5, atol=1e-6)


def test_layer_selection_and_the_mix(embedder):
    layers = np.random.default_rng(0).standard_normal((5, 3, 8)).astype(np.float32)
    assert layer_options(3) == [0, 1, 2, MIX]
    np.testing.assert_array_equal(select_layer(layers, 1), layers[:, 1])
    np.testing.assert_allclose(select_layer(layers, MIX), layers.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(select_layer(layers, MIX, [0, 0, 2]), layers[:, 2])  # weights are normalised
    with pytest.raises(ValueError, match="3 non-negative weights"):
        select_layer(layers, MIX, [1, -1, 1])
    with pytest.raises(ValueError, match="layers 0..2"):
        select_layer(layers, 3)


@pytest.mark.parametrize("method", ["pca", pytest.param("umap", marks=pytest.mark.slow)])  # umap: ~25 s of numba JIT
def test_projection_keeps_blobs_apart(method):
    points, truth = blobs()
    coords = project(points, method).coords
    assert coords.shape == (len(points), 2) and np.isfinite(coords).all()
    centres = np.stack([coords[truth == b].mean(0) for b in range(3)])
    spread = max(np.linalg.norm(coords[truth == b] - centres[b], axis=1).mean() for b in range(3))
    gaps = [np.linalg.norm(centres[a] - centres[b]) for a in range(3) for b in range(a + 1, 3)]
    assert min(gaps) > 2 * spread


def test_cosine_knn_is_exact_blockwise_and_puts_each_point_first():
    points, _ = blobs(n_per_blob=30)
    points[1] = points[0]  # an exact duplicate must not displace the point itself
    indices, distances = cosine_knn(points, k=6, block=7)
    unit = points / np.linalg.norm(points, axis=1, keepdims=True)
    brute = 1 - unit @ unit.T
    assert (indices[:, 0] == np.arange(len(points))).all() and (distances[:, 0] == 0).all()
    assert indices[0, 1] == 1 and distances[0, 1] == pytest.approx(0, abs=1e-6)
    for row in range(len(points)):
        expected = np.sort(np.delete(brute[row], row))[:5]
        np.testing.assert_allclose(distances[row, 1:], np.maximum(expected, 0), atol=1e-5)
        np.testing.assert_allclose(distances[row, 1:], brute[row, indices[row, 1:]].clip(0), atol=1e-5)


def test_projection_of_identical_vectors_and_bad_requests():
    same = np.ones((6, 4), dtype=np.float32)
    np.testing.assert_array_equal(project(same, "pca").coords, np.zeros((6, 2)))
    with pytest.raises(ValueError, match="at least 3"):
        project(same[:2])
    with pytest.raises(ValueError, match="unknown projection"):
        project(same, "tsne")


@pytest.mark.parametrize("method", ["kmeans", "agglomerative"])
def test_silhouette_finds_the_number_of_blobs(method):
    points, truth = blobs()
    result = cluster(points, method)
    assert result.k == 3 and set(result.silhouettes) == set(range(2, 9))
    assert max(result.silhouettes, key=result.silhouettes.get) == 3
    # the clusters are the blobs, up to renaming
    assert len({(t, c) for t, c in zip(truth, result.labels, strict=True)}) == 3
    fixed = cluster(points, method, k=5)
    assert fixed.k == 5 and len(np.unique(fixed.labels)) == 5 and not fixed.silhouettes


def test_identical_vectors_make_one_cluster():
    result = cluster(np.ones((10, 4)), "kmeans")
    assert result.k == 1 and (result.labels == 0).all()


def test_nearest_neighbours_are_cosine_and_exclude_the_query():
    vectors = np.array([[1, 0], [10, 1], [0, 1], [1, 1], [-1, 0]], dtype=np.float32)
    table = nearest_neighbours(vectors, 0, k=3)
    assert list(table["occurrence"]) == [1, 3, 2]
    np.testing.assert_allclose(table["similarity"], [10 / np.sqrt(101), 1 / np.sqrt(2), 0.0], atol=1e-6)
    assert len(nearest_neighbours(vectors, 0, k=50)) == 4
    with pytest.raises(IndexError, match="there are 5"):
        nearest_neighbours(vectors, 5)


def test_neighbour_table_gives_kwic_lines_around_the_word(embedder):
    records = demo_corpus()
    occurrences = find_occurrences(records, "bank")
    layers = occurrence_layers(embedder.embed_sentences, records, occurrences)
    table = neighbour_table(records, occurrences, select_layer(layers, 2), 0, k=4)
    assert len(table) == 4 and table["similarity"].is_monotonic_decreasing
    assert (table["word"].str.lower() == "bank").all() and table["left"].str.len().max() <= KWIC_WIDTH
    assert set(table["sense"]) <= {"bank-finance", "bank-river"}
