"""The biLM commands: ``spacy-contextual pretrain-elmo / finetune-elmo / export-elmo / evaluate-lm``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ._app import app, say_on_interrupt
from .model_option import Catalog, model_argument
from .params import InputDir, InputFile, OutputDir, OutputFile, StorageDtype, checks_first, hold_output, storage_dtype

OVERRIDES_HELP = "Config overrides: section.key=value or --section.key value (e.g. --training.lr 0.1)"
EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}
OVERWRITE_HELP = "Delete an earlier run's checkpoint in the output directory and train from the start"


def _check_outputs(ctx: typer.Context, config) -> None:
    """Before any work: the output folders can be written (not a file or device, not inside the package's
    bundled models), and no other run is writing them (their locks held until the command ends)."""
    from ..writer import check_output_dir

    for folder in (config.training.output_dir, config.training.export_dir):
        if folder:
            check_output_dir(folder)
            hold_output(ctx, Path(folder))
    say_how_to_resume(ctx, Path(config.training.output_dir) / "checkpoint")


def say_how_to_resume(ctx: typer.Context, checkpoint: Path) -> None:
    """An interrupted run says how to resume, once its first checkpoint exists (before that, a rerun
    starts from the beginning anyway)."""
    from ..training.checkpoint import has_checkpoint

    say_on_interrupt(ctx, lambda: RESUME_HINT if has_checkpoint(checkpoint) else None)


RESUME_HINT = "run the same command with --resume to resume"


def _print_perplexity(label: str, scores: dict) -> None:
    typer.echo(
        f"{label}: forward {scores['forward']:.2f}  backward {scores['backward']:.2f}  average "
        f"{scores['average']:.2f}  "
        f"({scores['sentences']} sentences, {scores['predictions']} predictions per direction, OOV "
        f"{scores['oov_rate']:.2%})"
    )


@app.command("pretrain-elmo", context_settings=EXTRA_ARGS)
def pretrain_command(
    ctx: typer.Context,
    config_path: Annotated[Path, typer.Argument(parser=InputFile(), help="Pretraining config (JSON)")],
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the checkpoint in training.output_dir")
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
) -> None:
    """Train a biLM from scratch (under torchrun: DDP, one corpus shard per process)."""
    from ..runtime import process_rank
    from ..training.config import PretrainConfig, parse_overrides
    from ..training.trainer import pretrain

    config = PretrainConfig.load(config_path, parse_overrides(ctx.args))
    _check_outputs(ctx, config)
    summary = pretrain(config, resume=resume, log=typer.echo, overwrite=overwrite)
    if process_rank() == 0:
        typer.echo(json.dumps(summary, indent=2))


def _finetune_config(ctx: typer.Context):
    from ..training.config import PretrainConfig, parse_overrides

    return PretrainConfig.load(ctx.params["config_path"], parse_overrides(ctx.args))


@app.command("finetune-elmo", context_settings=EXTRA_ARGS)
@checks_first(lambda ctx: _check_outputs(ctx, _finetune_config(ctx)))  # the config's folders, before any download
def finetune_command(
    ctx: typer.Context,
    model: Annotated[
        str, model_argument("elmo", what="ELMo", extra="or a bilm-tf weights.hdf5 (with --options-file)", files=True)
    ],
    config_path: Annotated[
        Path,
        typer.Argument(
            parser=InputFile(), help="Config (JSON); its model section is ignored (the model brings its own)"
        ),
    ],
    options_file: Annotated[
        Path | None, typer.Option("--options-file", parser=InputFile(), help="options.json of a bilm-tf model")
    ] = None,
    heldout: Annotated[
        Path | None,
        typer.Option("--heldout", parser=InputFile(), help="Held-out text of the domain (default data.valid)"),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the checkpoint in training.output_dir")
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
    catalog: Catalog = None,
) -> None:
    """Continue training a biLM on a new domain; prints held-out perplexity before and after."""
    from ..training.finetune import finetune

    config = _finetune_config(ctx)  # its output folders were checked before the model was resolved
    source = Path(model)
    if source.is_dir() and (source / "weights.hdf5").is_file():  # a bilm-tf pair (e.g. a catalog name's folder)
        source, options_file = source / "weights.hdf5", options_file or source / "options.json"
    result = finetune(
        source, config, options_file=options_file, heldout=heldout, resume=resume, log=typer.echo, overwrite=overwrite
    )
    if result["before"]:
        _print_perplexity("held-out perplexity before", result["before"])
    if result["after"]:
        _print_perplexity("held-out perplexity after ", result["after"])


@app.command("export-elmo")
def export_command(
    model_dir: Annotated[Path, typer.Argument(parser=InputDir(), help="Model dir or training output dir")],
    output_dir: Annotated[Path, typer.Argument(parser=OutputDir(), help="Where to write the export")],
    dtype: StorageDtype = None,  # float32 or float16 here (bilm-tf HDF5 stays float32)
    fp16: Annotated[bool, typer.Option("--fp16", hidden=True)] = False,
    no_softmax: Annotated[bool, typer.Option("--no-softmax", help="Leave the LM softmax out (encoder only)")] = False,
    no_bilm_tf: Annotated[bool, typer.Option("--no-bilm-tf", help="Skip options.json + weights.hdf5")] = False,
) -> None:
    """Write our model directory and bilm-tf options.json + weights.hdf5 for a trained biLM."""
    import torch

    from ..training.export import export_model

    legacy = "float16" if fp16 else None
    stored = storage_dtype(dtype, legacy, "float32", choices=("float32", "float16"), legacy_flag="--fp16")
    dtype_of = {"float32": None, "float16": torch.float16}
    written = export_model(model_dir, output_dir, dtype_of[stored], not no_softmax, not no_bilm_tf)
    for path in written:
        typer.echo(f"wrote {path}")


@app.command("evaluate-lm")
def evaluate_command(
    model_dir: Annotated[
        str, model_argument("elmo", what="ELMo", extra="or a training output folder; it needs its LM softmax")
    ],
    text: Annotated[Path, typer.Argument(parser=InputFile(), help="One tokenised sentence per line (.gz ok)")],
    max_sentences: Annotated[int | None, typer.Option("--max-sentences", min=1)] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", parser=OutputFile(), help="Also write the scores here")
    ] = None,
    catalog: Catalog = None,
) -> None:
    """Perplexity (forward, backward, average): every sentence from zero state, </S> predicted, words
    outside the model's vocabulary counted as <UNK>."""
    from ..errors import ContextualError
    from ..formats.detect import BILM_TF, format_of
    from ..training.evaluate import load_language_model, perplexity
    from ..training.export import find_trained_model
    from ..training.finetune import has_softmax
    from ..writer import atomic_file, check_can_write

    if json_out:
        check_can_write(json_out)
    if format_of(model_dir) == BILM_TF:
        raise ContextualError(
            f"{model_dir} holds bilm-tf files, which carry no LM softmax; perplexity needs one: fine-tune the "
            "model with finetune-elmo first"
        )
    source = find_trained_model(model_dir)
    if not has_softmax(source):
        raise typer.BadParameter(
            f"{source} has no LM softmax (an encoder-only or bilm-tf model); perplexity needs one: fine-tune it "
            "with finetune-elmo first"
        )
    lm, _ = load_language_model(source)
    scores = perplexity(lm, text, max_sentences)
    _print_perplexity(str(text), scores)
    if json_out:
        with atomic_file(json_out) as path:
            path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
