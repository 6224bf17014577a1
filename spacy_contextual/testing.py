"""Random models built in code, for the tests (``tests/util.py`` re-exports them) and the benchmarks
(``benchmarks/``), which import them from the package rather than from the test folder: an
ELMoForManyLangs model directory as the original writes it (``write_manylangs_dir``). Imports torch only."""

from __future__ import annotations

import json
from pathlib import Path

import torch

MANYLANGS_WORDS = ["<oov>", "<bos>", "<eos>", "<pad>", "the", "bank", "river", "Bank", "Fluss", "Ufer", "."]
MANYLANGS_CHARS = [*"thebakrivFlsU.", "\u3000", "<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>"]


def write_manylangs_dir(
    path,
    *,
    word_dim: int = 6,
    char_dim: int = 4,
    filters=((1, 3), (2, 5)),
    n_highway: int = 1,
    projection_dim: int = 8,
    lstm_dim: int = 12,
    n_layers: int = 2,
    max_characters: int = 10,
    activation: str = "relu",
    clip: float = 3,
    zip_format: bool = False,
    seed: int = 0,
    extra_words: int = 0,
) -> Path:
    """A random ELMoForManyLangs model directory as the original writes it: config.json naming an
    absolute config_path that does not exist (the published models' way), the architecture JSON
    beside it, word.dic / char.dic (char.dic with a whitespace-key line), and the two state dicts
    under the original's names, ``torch.save``'d in the legacy format (or the zip one).
    ``extra_words`` adds that many words (``word0``, ``word1``, ...) to the word dictionary."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    rng = torch.Generator().manual_seed(seed)

    def weights(*shape, scale=0.5):
        return (torch.rand(*shape, generator=rng) * 2 - 1) * scale

    arch_name = f"cnn_{char_dim}_{word_dim}_{projection_dim}_{lstm_dim}_test.json"
    architecture = {
        "encoder": {
            "name": "elmo",
            "projection_dim": projection_dim,
            "cell_clip": clip,
            "proj_clip": clip,
            "dim": lstm_dim,
            "n_layers": n_layers,
        },
        "token_embedder": {
            "name": "cnn",
            "activation": activation,
            "filters": [list(f) for f in filters],
            "n_highway": n_highway,
            "word_dim": word_dim,
            "char_dim": char_dim,
            "max_characters_per_token": max_characters,
        },
        "classifier": {"name": "sampled_softmax", "n_samples": 8192},
        "dropout": 0.1,
    }
    (path / arch_name).write_text(json.dumps(architecture), encoding="utf-8")
    options = {"seed": 1, "config_path": f"/nonexistent/elmo/src/configs/{arch_name}", "model": "/nonexistent/x.model"}
    (path / "config.json").write_text(json.dumps(options), encoding="utf-8")
    words = [*MANYLANGS_WORDS, *(f"word{i}" for i in range(extra_words))]
    (path / "word.dic").write_text("".join(f"{w}\t{i}\n" for i, w in enumerate(words)), encoding="utf-8")
    (path / "char.dic").write_text("".join(f"{c}\t{i}\n" for i, c in enumerate(MANYLANGS_CHARS)), encoding="utf-8")
    embedder, features = {}, 0
    if word_dim:
        embedder["word_emb_layer.embedding.weight"] = weights(len(words), word_dim)
        features += word_dim
    if char_dim:
        n_filters = sum(num for _, num in filters)
        embedder["char_emb_layer.embedding.weight"] = weights(len(MANYLANGS_CHARS), char_dim)
        for i, (width, num) in enumerate(filters):
            embedder[f"convolutions.{i}.weight"] = weights(num, char_dim, width)
            embedder[f"convolutions.{i}.bias"] = weights(num)
        for k in range(n_highway):
            embedder[f"highways._layers.{k}.weight"] = weights(2 * n_filters, n_filters)
            embedder[f"highways._layers.{k}.bias"] = weights(2 * n_filters)
        features += n_filters
    embedder["projection.weight"] = weights(projection_dim, features, scale=1.0)
    embedder["projection.bias"] = weights(projection_dim)
    encoder = {}
    for k in range(n_layers):
        for direction in ("forward", "backward"):
            prefix = f"{direction}_layer_{k}"
            encoder[f"{prefix}.input_linearity.weight"] = weights(4 * lstm_dim, projection_dim)
            encoder[f"{prefix}.state_linearity.weight"] = weights(4 * lstm_dim, projection_dim)
            encoder[f"{prefix}.state_linearity.bias"] = weights(4 * lstm_dim)
            encoder[f"{prefix}.state_projection.weight"] = weights(projection_dim, lstm_dim, scale=1.0)
    for name, state in (("token_embedder.pkl", embedder), ("encoder.pkl", encoder)):
        torch.save(state, path / name, _use_new_zipfile_serialization=zip_format)
    return path
