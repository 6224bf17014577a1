"""``spacy-contextual write-manifest``: record the SHA-256 of a model directory's files.

Every model directory that ``save_model_dir`` writes has its ``manifest.json``; this command adds one
to a directory written before manifests existed (or assembled by hand), once its files are trusted.
The bundled models' manifests were written with it: ``SPACY_CONTEXTUAL_ALLOW_PACKAGE_WRITE=1
spacy-contextual write-manifest spacy_contextual/assets/elmo`` (and ``.../cove``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._app import app
from .model_option import Catalog, model_argument
from .params import InPlaceDir, OutputDir


@app.command("write-manifest")
def write_manifest_command(
    model_dir: Annotated[Path, typer.Argument(parser=InPlaceDir(), help="An ELMo or CoVe model directory")],
) -> None:
    """Check MODEL_DIR's config.json and record the size and SHA-256 of its files in manifest.json."""
    from ..formats.model_dir import write_model_manifest

    path = write_model_manifest(model_dir)
    typer.echo(f"wrote {path}")


@app.command("convert-model")
def convert_model_command(
    model: Annotated[
        str, model_argument("elmo", what="ELMo", extra="a folder in any ELMo format: ELMoForManyLangs, bilm-tf or ours")
    ],
    output_dir: Annotated[
        Path, typer.Argument(parser=OutputDir(), help="The new model directory (config.json + model.safetensors)")
    ],
    catalog: Catalog = None,
) -> None:
    """Convert an ELMo model (an unpacked ELMoForManyLangs archive, a bilm-tf options.json + weights.hdf5
    directory) into our model directory: safetensors + JSON + text, so later loads read no pickle or HDF5.
    The outputs stay the same (float32)."""
    from ..formats.bilm_dir import save_bilm
    from ..formats.detect import load_elmo

    path = save_bilm(load_elmo(model), output_dir)
    typer.echo(f"wrote {path}")
