"""The CoVe MT model's commands: train-glove, train-cove, translate, bleu, export-cove, package-cove."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ._app import app
from .model_option import Catalog, model_option
from .params import (
    InputDir,
    InputFile,
    LegacyStoragePrecision,
    OutputDir,
    OutputFile,
    Precision,
    StorageDtype,
    storage_dtype,
)

CoveMT = Annotated[str, model_option("cove", what="CoVe MT model", extra="a cove-mt model")]


@app.command("train-glove")
def train_glove_command(
    corpus: Annotated[
        list[Path], typer.Argument(parser=InputFile(), help="Text files (.gz ok), one sentence per line")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", parser=OutputFile(), help="GloVe text file to write (.gz ok)")
    ],
    dim: Annotated[int, typer.Option("--dim", min=1)] = 300,
    window: Annotated[int, typer.Option("--window", min=1)] = 10,
    min_count: Annotated[int, typer.Option("--min-count", min=1)] = 5,
    epochs: Annotated[int, typer.Option("--epochs", min=1)] = 15,
    learning_rate: Annotated[float, typer.Option("--lr")] = 0.5,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    neighbours: Annotated[
        str | None, typer.Option("--neighbours", help="Comma-separated words whose nearest neighbours are reported")
    ] = None,
) -> None:
    """Train GloVe vectors on a corpus (lowercased regex tokens, 1/d weighted window, AdaGrad)."""
    import torch

    from ..training.glove import nearest_neighbours, train_glove_files

    torch.set_num_threads(1)
    result = train_glove_files(
        [str(p) for p in corpus], str(output), dim, window, min_count, epochs, learning_rate, seed=seed
    )
    report = {"vocab": len(result.vocab), "losses": [round(x, 5) for x in result.losses]}
    if neighbours:
        report["neighbours"] = nearest_neighbours(result.vectors, result.vocab, neighbours.split(","), 8)
    typer.echo(json.dumps(report, indent=1))


@app.command("train-cove", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def train_cove_command(
    ctx: typer.Context,
    config_path: Annotated[
        Path, typer.Argument(parser=InputFile(), help="MT config (.cfg), e.g. spacy_contextual/assets/cove/mt.cfg")
    ],
    output: Annotated[
        Path,
        typer.Argument(
            parser=OutputDir(), help="Output directory: last/ (checkpoint), best/ (lowest val perplexity), history.json"
        ),
    ],
    resume: Annotated[bool, typer.Option("--resume", help="Continue from OUTPUT/last")] = False,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Delete an earlier run's checkpoint (OUTPUT/last) and train from the start"),
    ] = False,
) -> None:
    """Train the CoVe English->German MT model; overrides as in spacy train: --training.max_epochs 3."""
    from confection import Config
    from spacy.cli._util import parse_config_overrides

    from ..training.checkpoint import check_checkpoint_files, has_checkpoint
    from ..training.config import MT_RANGES, check_ranges
    from ..training.mt import train_mt
    from ..training.mt_config import MTConfig
    from ..writer import check_output_dir
    from .bilm_commands import say_how_to_resume

    overrides = parse_config_overrides(ctx.args)
    config = Config().from_disk(config_path, overrides=overrides, interpolate=True)
    check_ranges(config, MT_RANGES, str(config_path))
    check_output_dir(output)
    if resume and has_checkpoint(output / "last"):
        check_checkpoint_files(output / "last")
    say_how_to_resume(ctx, output / "last")
    state = train_mt(MTConfig.from_dict(config), output, resume=resume, overwrite=overwrite)
    typer.echo(json.dumps(state["history"][-1] if state["history"] else {}, indent=1))


@app.command("translate")
def translate_command(
    input_file: Annotated[
        Path, typer.Argument(parser=InputFile(stdin=True), help="One raw English sentence per line; '-' reads stdin")
    ],
    model: CoveMT = "default",
    catalog: Catalog = None,
    beam: Annotated[int, typer.Option("--beam", min=1, help="Beam width; 1 = greedy")] = 5,
    alpha: Annotated[float, typer.Option("--alpha", min=0.0, help="GNMT length penalty exponent; 0 = none")] = 0.6,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", parser=OutputFile(), help="Write German here instead of stdout")
    ] = None,
    max_length: Annotated[int, typer.Option("--max-length", min=1)] = 100,
    replace_unk: Annotated[
        bool, typer.Option("--replace-unk/--keep-unk", help="Write the most-attended source word for <unk>")
    ] = True,
    precision: Precision = "fp32",
) -> None:
    """Translate English to German, one detokenised sentence per line."""
    from ..embedders.cove_embedder import CoveEmbedder
    from ..text_files import numbered_lines
    from ..writer import atomic_file, check_can_write

    if output is not None:
        check_can_write(output)
    if str(input_file) == "-":
        lines = sys.stdin.read().splitlines()
    elif not input_file.exists():
        raise FileNotFoundError(f"{input_file} does not exist; give a text file, one English sentence a line")
    else:
        lines = [line for _, line in numbered_lines(input_file)]
    translations = CoveEmbedder.load(model, precision=precision).translate(
        lines, beam=beam, alpha=alpha, max_length=max_length, replace_unk=replace_unk
    )
    text = "".join(t.text + "\n" for t in translations)
    if output is None:
        typer.echo(text, nl=False)
    else:
        with atomic_file(output) as path:
            path.write_text(text, encoding="utf-8")


@app.command("bleu")
def bleu_command(
    source: Annotated[Path, typer.Argument(parser=InputFile(), help="Raw English, one sentence per line (.gz ok)")],
    reference: Annotated[Path, typer.Argument(parser=InputFile(), help="Raw German references, line-aligned (.gz ok)")],
    model: CoveMT = "default",
    catalog: Catalog = None,
    beam: Annotated[int, typer.Option("--beam", min=1)] = 5,
    alpha: Annotated[float, typer.Option("--alpha", min=0.0)] = 0.6,
    replace_unk: Annotated[
        bool, typer.Option("--replace-unk/--keep-unk", help="Write the most-attended source word for <unk>")
    ] = True,
) -> None:
    """Translate SOURCE and score against REFERENCE: tokenised lowercased BLEU and default sacreBLEU."""
    from ..training.bleu import evaluate_bleu

    typer.echo(json.dumps(evaluate_bleu(Path(model), source, reference, beam, alpha, replace_unk).to_dict(), indent=1))


@app.command("export-cove")
def export_cove_command(
    mt_dir: Annotated[Path, typer.Argument(parser=InputDir(), help="A cove-mt model directory")],
    out_dir: Annotated[Path, typer.Argument(parser=OutputDir(), help="Where to write the cove-encoder directory")],
    dtype: StorageDtype = None,
    legacy_precision: LegacyStoragePrecision = None,
) -> None:
    """Truncate the MT model to its frozen encoder: MT-LSTM + source vocabulary + GloVe rows (float16 by default)."""
    from ..formats.cove_dir import export_encoder

    path = export_encoder(mt_dir, out_dir, storage_dtype(dtype, legacy_precision, "float16"))
    typer.echo(f"wrote the CoVe encoder to {path}")


@app.command("package-cove")
def package_cove_command(
    mt_dir: Annotated[Path, typer.Argument(parser=InputDir(), help="A cove-mt model directory (e.g. a run's best/)")],
    out_dir: Annotated[Path, typer.Argument(parser=OutputDir(), help="Where to write the repacked cove-mt directory")],
    dtype: StorageDtype = None,
    legacy_precision: LegacyStoragePrecision = None,
) -> None:
    """Re-save a whole MT model at a smaller storage precision (how the bundled default is made)."""
    from ..formats.cove_dir import load_translator, save_translator

    stored = storage_dtype(dtype, legacy_precision, "float16")
    model, source_vocab, target_vocab = load_translator(mt_dir)
    path = save_translator(model, out_dir, source_vocab, target_vocab, stored)
    typer.echo(f"wrote the CoVe MT model ({stored}) to {path}")
