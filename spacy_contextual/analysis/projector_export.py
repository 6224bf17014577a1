"""Export to the TensorFlow Embedding Projector (projector.tensorflow.org, "Load"): ``tensors.tsv``
(one vector a row, tab-separated, no header) and ``metadata.tsv`` (a header row, then one row per
vector), zipped with a ``projector_config.json`` for the standalone projector."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd


def _cell(value) -> str:
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def projector_tsv(vectors: np.ndarray, metadata: pd.DataFrame) -> tuple[str, str]:
    """(tensors.tsv, metadata.tsv) as text."""
    if len(vectors) != len(metadata):
        raise ValueError(f"{len(vectors)} vectors but {len(metadata)} metadata rows")
    tensors = "".join("\t".join(f"{x:.6g}" for x in row) + "\n" for row in np.asarray(vectors, dtype=np.float32))
    lines = ["\t".join(_cell(c) for c in metadata.columns)]
    lines += ["\t".join(_cell(v) for v in row) for row in metadata.itertuples(index=False)]
    return tensors, "\n".join(lines) + "\n"


def projector_zip(vectors: np.ndarray, metadata: pd.DataFrame, name: str = "occurrences") -> bytes:
    tensors, meta = projector_tsv(vectors, metadata)
    config = {
        "embeddings": [
            {
                "tensorName": name,
                "tensorShape": list(np.asarray(vectors).shape),
                "tensorPath": "tensors.tsv",
                "metadataPath": "metadata.tsv",
            }
        ]
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("tensors.tsv", tensors)
        archive.writestr("metadata.tsv", meta)
        archive.writestr("projector_config.json", json.dumps(config, indent=2))
    return buffer.getvalue()
