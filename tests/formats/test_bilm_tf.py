"""bilm-tf weight files: truncated or shaped unlike the options, refused."""

from __future__ import annotations

import json
import pickle

import pytest
import torch
from util import SKIP

from spacy_contextual.formats.bilm_tf import WeightFileError, load_bilm_tf
from spacy_contextual.formats.cove_pth import CovePthError, expected_shapes, load_cove_pth

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_truncated_and_wrong_shaped_weight_files_are_refused(tmp_path):
    truncated = tmp_path / "cut.hdf5"
    truncated.write_bytes((SKIP / "lm_weights.hdf5").read_bytes()[:200_000])
    with pytest.raises(WeightFileError, match="truncated"):
        load_bilm_tf(SKIP / "options.json", truncated)
    options = json.loads((SKIP / "options.json").read_text())
    options["lstm"]["projection_dim"] = 32
    (tmp_path / "options.json").write_text(json.dumps(options))
    with pytest.raises(WeightFileError, match="has shape .* but the options imply"):
        load_bilm_tf(tmp_path / "options.json", SKIP / "lm_weights.hdf5")
    state = {k: torch.zeros(shape) for k, shape in expected_shapes().items()}
    state["weight_hh_l0"] = torch.zeros(3, 3)
    torch.save(state, tmp_path / "wrong.pth")
    with pytest.raises(CovePthError, match=r"weight_hh_l0 has shape \(3, 3\)"):
        load_cove_pth(tmp_path / "wrong.pth")
    (tmp_path / "cut.pth").write_bytes(pickle.dumps(state)[:500])
    with pytest.raises(CovePthError, match="not a readable PyTorch state dict .* damaged or truncated"):
        load_cove_pth(tmp_path / "cut.pth")
