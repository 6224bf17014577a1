"""``spacy-contextual sense-probe``: 1-nearest-neighbour sense centroids per layer (the ELMo paper's WSD
probe), 5-fold cross-validated per word, next to the most-frequent-sense baseline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ._app import app
from .model_option import Catalog, model_option
from .params import InputFile, OutputFile, Precision


@app.command("sense-probe")
def sense_probe_command(
    files: Annotated[list[Path], typer.Argument(parser=InputFile(), help="Sense-labelled JSONL (.gz ok)")],
    model: Annotated[str | None, model_option(None, what="model of --encoder")] = None,
    encoder: Annotated[str, typer.Option("--encoder", help="elmo or cove", is_eager=True)] = "elmo",
    catalog: Catalog = None,
    folds: Annotated[int, typer.Option("--folds", min=2)] = 5,
    max_per_word: Annotated[
        int | None,
        typer.Option("--max-per-word", min=2, help="Sample at most this many instances per word, stratified by sense"),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sampling, the folds and the bootstrap")] = 0,
    json_out: Annotated[
        Path | None, typer.Option("--json", parser=OutputFile(), help="Write the results (a list, one object per word)")
    ] = None,
    precision: Precision = "fp32",
) -> None:
    """The ELMo paper's WSD probe: per word, stratified 5-fold CV nearest sense centroid per layer vs. MFS."""
    from ..analysis.sense_probe import format_table, read_sense_file, sense_probe
    from ..embedders import load_encoder
    from ..writer import atomic_file, check_can_write

    if encoder not in ("elmo", "cove"):
        raise typer.BadParameter(f"--encoder must be elmo or cove, got {encoder!r}")
    if json_out:
        check_can_write(json_out)
    instances = [read_sense_file(path) for path in files]  # bad input is found before the model loads
    embedder = load_encoder(encoder, model, precision=precision)
    results = []
    for file_instances in instances:
        results += sense_probe(
            file_instances, embedder.embed_sentences, folds, seed, max_per_word, embedder.layer_labels
        )
    typer.echo(format_table(results))
    if json_out:
        with atomic_file(json_out) as path:
            path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        typer.echo(f"wrote {json_out}")
