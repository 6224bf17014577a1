"""Weights holding NaN or infinity are refused in every format, naming the tensor."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from util import SKIP, assert_one_line_error, cli, sentences_file

from spacy_contextual.errors import ModelDirError
from spacy_contextual.formats.bilm_dir import load_bilm, save_bilm
from spacy_contextual.formats.bilm_tf import WeightFileError, load_bilm_tf
from spacy_contextual.formats.cove_pth import CovePthError, expected_shapes, load_cove_pth

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


def test_nan_weights_are_refused_in_every_format(noskip_dir, tmp_path):
    bilm = load_bilm(noskip_dir)
    with torch.no_grad():
        bilm.token_encoder.projection.weight.fill_(float("nan"))
    save_bilm(bilm, tmp_path / "ours")
    with pytest.raises(ModelDirError, match=r"model.safetensors: token_encoder.projection.weight holds .* NaN"):
        load_bilm(tmp_path / "ours")
    hdf5 = Path(shutil.copy(SKIP / "lm_weights.hdf5", tmp_path / "weights.hdf5"))
    with h5py.File(hdf5, "r+") as weights:
        weights["CNN_proj/W_proj"][...] = np.nan
    with pytest.raises(WeightFileError, match=r"'CNN_proj/W_proj' .* NaN or infinite"):
        load_bilm_tf(SKIP / "options.json", hdf5)
    result = cli("elmo", sentences_file(tmp_path), tmp_path / "out.hdf5", "--all",
                 "--options-file", SKIP / "options.json", "--weight-file", hdf5)  # fmt: skip
    assert_one_line_error(result, "CNN_proj/W_proj", "NaN")
    state = {k: torch.full(shape, float("inf")) for k, shape in expected_shapes().items()}
    torch.save(state, tmp_path / "inf.pth")
    with pytest.raises(CovePthError, match="NaN or infinite"):
        load_cove_pth(tmp_path / "inf.pth")
