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
    with pytest.raises(CovePthError) as caught:
        load_cove_pth(tmp_path / "evil.pth")
    assert not marker.exists()
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'evil.pth'} contains code or objects that are not plain weights (")
    assert message.endswith("); refused, nothing was run: load only weight files from a source you trust")
    assert "weights_only" not in message and "damaged" not in message and "\n" not in message


def test_a_truncated_pth_is_called_damaged(tmp_path):
    torch.save({"w": torch.zeros(1000)}, tmp_path / "w.pth")
    (tmp_path / "w.pth").write_bytes((tmp_path / "w.pth").read_bytes()[:2000])
    with pytest.raises(CovePthError, match=r"w.pth is not a readable PyTorch state dict \(.*\); the file is damaged"):
        load_cove_pth(tmp_path / "w.pth")
