"""CoVe .pth files: a pickle payload is refused and never run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from spacy_contextual.formats.cove_pth import CovePthError, load_cove_pth


class Payload:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "executed"))


def test_a_pickle_payload_in_a_pth_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "marker"
    torch.save({"weight_ih_l0": Payload(marker)}, tmp_path / "evil.pth")
    with pytest.raises(CovePthError, match="weights-only"):
        load_cove_pth(tmp_path / "evil.pth")
    assert not marker.exists()
