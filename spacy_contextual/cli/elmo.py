"""``spacy-contextual elmo``: embed a file of sentences into HDF5, in the layout of ``allennlp elmo``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import typer
from tqdm import tqdm

from ..embedders.elmo import ElmoEmbedder
from ._app import app


def _read_sentences(path: Path) -> Iterator[list[str]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            yield line.split()


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def load_embedder(options_file: Path | None, weight_file: Path | None, model: str | None, **kwargs) -> ElmoEmbedder:
    """The encoder named on the command line: bilm-tf files, our model dir, or the bundled default."""
    if (options_file is None) != (weight_file is None):
        raise typer.BadParameter("--options-file and --weight-file go together")
    if options_file is not None and model is not None:
        raise typer.BadParameter("give either --model or --options-file/--weight-file, not both")
    if options_file is not None:
        return ElmoEmbedder.from_bilm_tf(options_file, weight_file, **kwargs)
    return ElmoEmbedder.load(model, **kwargs)


@app.command("elmo")
def elmo_command(
    input_file: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="One whitespace-tokenised sentence per line"
    ),
    output_file: Path = typer.Argument(..., help="HDF5 file to write"),
    all_layers: bool = typer.Option(False, "--all", help="Store all layers: (n_layers, n, 2P) per sentence"),
    top: bool = typer.Option(False, "--top", help="Store the top layer: (n, 2P)"),
    average: bool = typer.Option(False, "--average", help="Store the mean of the layers: (n, 2P)"),
    options_file: Path | None = typer.Option(None, "--options-file", exists=True, dir_okay=False),
    weight_file: Path | None = typer.Option(None, "--weight-file", exists=True, dir_okay=False),
    model: str | None = typer.Option(None, "--model", help="Our model directory, or 'default'"),
    batch_size: int = typer.Option(64, "--batch-size", min=1),
    stateful: bool = typer.Option(False, "--stateful", help="Carry LSTM state across batches (AllenNLP behaviour)"),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda"),
    forget_sentences: bool = typer.Option(
        False, "--forget-sentences", help="Do not store sentence_to_index (its JSON holds the whole input text)"
    ),
) -> None:
    """Embed every line of INPUT with ELMo; datasets are keyed "0", "1", ... by line index."""
    if sum((all_layers, top, average)) != 1:
        raise typer.BadParameter("choose exactly one of --all, --top, --average")
    embedder = load_embedder(options_file, weight_file, model, stateful=stateful, device=device)
    sentence_to_index: dict[str, str] = {}  # the only part that grows with the input: its text
    total = _count_lines(input_file)
    with h5py.File(output_file, "w") as out:
        sentences = _read_sentences(input_file)
        progress = tqdm(embedder.iter_embed(sentences, batch_size=batch_size), total=total, unit="sent", desc="elmo")
        written = 0
        for index, layers in enumerate(progress):
            if all_layers:
                data = layers
            elif top:
                data = layers[-1]
            else:
                data = layers.mean(axis=0)
            out.create_dataset(str(index), data=np.ascontiguousarray(data, dtype=np.float32))
            written += 1
        if not forget_sentences:
            with input_file.open(encoding="utf-8") as lines:
                for index, line in enumerate(lines):
                    sentence_to_index[" ".join(line.split())] = str(index)
            dataset = out.create_dataset("sentence_to_index", (1,), dtype=h5py.special_dtype(vlen=str))
            dataset[0] = json.dumps(sentence_to_index)
    typer.echo(f"wrote {written} sentences to {output_file}")
