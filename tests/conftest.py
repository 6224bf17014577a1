"""Shared fixtures: paths into ../shared, tiny random models built in code, the --slow option."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
FIXTURES = SHARED / "elmo_fixtures"
DATA = SHARED / "data"


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False, help="also run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_anchor():
    """The AllenNLP 2.10.1 reference for a random tiny model: (dir, meta, reference arrays)."""
    root = FIXTURES / "tiny_anchor"
    meta = json.loads((root / "meta.json").read_text())
    return root, meta, np.load(root / "reference.npz")


def tiny_config(**overrides):
    from spacy_contextual.models.bilm import BiLMConfig

    settings = dict(
        char_embedding_dim=4, filters=[[1, 4], [2, 8], [3, 16]], n_highway=1, lstm_dim=32, projection_dim=16, n_layers=2
    )
    settings.update(overrides)
    return BiLMConfig(**settings)


def tiny_bilm(seed: int = 0, **overrides):
    from spacy_contextual.models.bilm import BiLM

    torch.manual_seed(seed)
    bilm = BiLM(tiny_config(**overrides))
    with torch.no_grad():  # large enough that clipping engages, small enough to stay non-chaotic
        for lstm in [*bilm.forward_layers, *bilm.backward_layers]:
            lstm.state_linearity.bias.uniform_(-0.5, 0.5)
    return bilm.eval()


@pytest.fixture
def tiny_model_dir(tmp_path):
    from spacy_contextual.formats.bilm_dir import save_bilm

    return save_bilm(tiny_bilm(), tmp_path / "tiny_elmo")
