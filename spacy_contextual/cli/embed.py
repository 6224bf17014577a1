"""``spacy-contextual elmo`` and ``spacy-contextual cove``: embed a file of sentences into HDF5, in the
layout of ``allennlp elmo`` (datasets "0", "1", ... by line, plus ``sentence_to_index``).

One command line, three ways to run it: alone (one process); under torchrun (each rank embeds its
share of the lines, rank 0 writes OUTPUT); or with ``--processes N``, which starts N ranks on this
machine through torchrun's own launcher. A rerun after a kill continues where each rank stopped
(``corpus/job.py``). Everything that can be checked cheaply is checked before a model is fetched or
loaded (``check_embed_options``, run by ``GuardedCommand`` before it resolves the model, once): the
options' ranges and pairs, the precision's name, and OUTPUT, which may not be INPUT or a file of the
model (through links too), a device or a folder, and whose OUTPUT.parts/ must be one this tool made;
INPUT's encoding is checked before the model loads. The ``EmbedJob`` is then built from checked
values, with the model's folder already resolved. A stream
(stdin, a pipe) is first copied to OUTPUT.parts/, since it can be read only once. SIGINT and SIGTERM
end the run with one line, exit code 130 or 143, and a rerun resumes. torch and h5py load only
when a command runs.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer

from ..batching import BATCH_ROWS, MAX_WINDOW_TOKENS, STATEFUL_BATCH_ROWS
from ._app import app, say_on_interrupt
from .launch import launch_local
from .model_option import Catalog, model_option
from .params import InputFile, OutputFile, Precision, checks_first

MAX_BATCH_SIZE = 1 << 16
MAX_WINDOW_OPTION = 1 << 30
MAX_PROCESSES = 64

InputArgument = Annotated[
    Path,
    typer.Argument(
        parser=InputFile(),
        metavar="INPUT",
        help="One whitespace-tokenised sentence per line, UTF-8 (.gz ok)",
    ),
]
OutputArgument = Annotated[
    Path,
    typer.Argument(
        parser=OutputFile(),
        metavar="OUTPUT",
        help="HDF5 file to write; its parts go to OUTPUT.parts/ beside it while the run goes on",
    ),
]
AllLayers = Annotated[bool, typer.Option("--all", help="Store all layers: (n_layers, n, width) per sentence")]
TopLayer = Annotated[bool, typer.Option("--top", help="Store the top layer: (n, width)")]
AverageLayers = Annotated[bool, typer.Option("--average", help="Store the mean of the layers: (n, width)")]
BatchSize = Annotated[
    int | None,
    typer.Option(
        "--batch-size",
        help=f"Sentences per batch (1 to {MAX_BATCH_SIZE}; default {BATCH_ROWS}, "
        f"{STATEFUL_BATCH_ROWS} with --stateful)",
    ),
]
WindowTokens = Annotated[
    int | None,
    typer.Option(
        "--max-window-tokens",
        help=f"A line of more tokens than this runs in windows of this many positions, each LSTM direction "
        f"carrying its state across them: the vectors of the whole line, memory bounded by the window (1 to "
        f"{MAX_WINDOW_OPTION}; default {MAX_WINDOW_TOKENS})",
    ),
]
Device = Annotated[str, typer.Option("--device", help="cpu or cuda (under torchrun: one GPU per local rank)")]
ForgetSentences = Annotated[
    bool, typer.Option("--forget-sentences", help="Do not store sentence_to_index (the JSON of every line's text)")
]
Processes = Annotated[
    int | None,
    typer.Option(
        "--processes",
        help="Start this many ranks on this machine (torchrun's launcher; at most one per CPU core, or per GPU); "
        "not under torchrun",
    ),
]
Merge = Annotated[
    bool | None,
    typer.Option(
        "--merge/--virtual",
        help="--merge: copy the parts into OUTPUT and delete them (the default for one process). --virtual: OUTPUT "
        "holds HDF5 virtual datasets over OUTPUT.parts/, which must stay beside it (the default for several)",
        show_default=False,
    ),
]
Errors = Annotated[
    str, typer.Option("--errors", help="strict: invalid UTF-8 is an error naming FILE:LINE; replace: read it as U+FFFD")
]
ElmoModel = Annotated[str | None, model_option("elmo", what="ELMo, also when not given")]
CoveModel = Annotated[str | None, model_option("cove", what="CoVe, also when not given")]


@dataclass(frozen=True)
class EmbedJob:
    """One embedding run as the command line gave it, every value checked (``check_embed_options``) and
    the model resolved to its folder; each rank runs it (``run_job``)."""

    kind: str
    input_file: Path
    output_file: Path
    layers: str
    model: Path | None  # the model's folder; None with options_file / weight_file
    batch_size: int | None  # None: batching.default_rows
    device: str
    forget_sentences: bool
    merge: bool | None
    errors: str
    options_file: Path | None = None
    weight_file: Path | None = None
    stateful: bool = False
    lines: int | None = None  # INPUT's line count, when the launcher has counted (and so checked) it
    precision: str = "fp32"
    input_identity: list | None = None  # what identifies a spooled stream's text (its size and SHA-256)
    max_window_tokens: int | None = None  # None: batching.MAX_WINDOW_TOKENS


def check_embed_options(kind: str, params: dict) -> None:
    """Everything about an ``elmo`` / ``cove`` command line that can be checked before the model is
    fetched: options that go together, ranges, the precision's name, and that OUTPUT can be written."""
    if kind == "elmo":
        options_file, weight_file = params["options_file"], params["weight_file"]
        if (options_file is None) != (weight_file is None):
            raise typer.BadParameter("--options-file and --weight-file go together")
        if options_file is not None and params["model"] is not None:
            raise typer.BadParameter("give either --model or --options-file/--weight-file, not both")
        if params["stateful"] and (params["processes"] or 1) > 1:
            raise typer.BadParameter("--stateful carries state from line to line, so it runs in one process")
    _layer_choice(params["all_layers"], params["top"], params["average"])
    processes, batch_size, device = params["processes"], params["batch_size"], params["device"]
    if processes is not None and "WORLD_SIZE" in os.environ:
        raise typer.BadParameter("--processes starts its own ranks; under torchrun leave it out")
    if batch_size is not None and not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise typer.BadParameter(f"--batch-size must be between 1 and {MAX_BATCH_SIZE}, got {batch_size}")
    window = params["max_window_tokens"]
    if window is not None and not 1 <= window <= MAX_WINDOW_OPTION:
        raise typer.BadParameter(f"--max-window-tokens must be between 1 and {MAX_WINDOW_OPTION}, got {window}")
    cores = len(os.sched_getaffinity(0))
    most = max(cores, 2) if device == "cpu" else MAX_PROCESSES  # two ranks may always share a core
    if processes is not None and not 1 <= processes <= most:
        where = f"{most} (one per CPU core: {cores} here)" if device == "cpu" else f"{most}"
        raise typer.BadParameter(f"--processes must be between 1 and {where}, got {processes}")
    if params["errors"] not in ("strict", "replace"):
        raise typer.BadParameter(f"--errors must be strict or replace, got {params['errors']!r}")
    from ..corpus.folder import check_parts_folder
    from ..precision import check_precision
    from ..writer import check_can_write

    check_precision(params["precision"])
    check_can_write(params["output_file"], reads=[params["input_file"]])
    check_parts_folder(params["output_file"])


@app.command("elmo")
@checks_first(lambda ctx: check_embed_options("elmo", ctx.params))
def elmo_command(
    ctx: typer.Context,
    input_file: InputArgument,
    output_file: OutputArgument,
    all_layers: AllLayers = False,
    top: TopLayer = False,
    average: AverageLayers = False,
    options_file: Annotated[Path | None, typer.Option("--options-file", parser=InputFile())] = None,
    weight_file: Annotated[Path | None, typer.Option("--weight-file", parser=InputFile())] = None,
    model: ElmoModel = None,
    catalog: Catalog = None,
    batch_size: BatchSize = None,
    max_window_tokens: WindowTokens = None,
    stateful: Annotated[
        bool, typer.Option("--stateful", help="Carry LSTM state across batches (AllenNLP behaviour); one process")
    ] = False,
    device: Device = "cpu",
    precision: Precision = "fp32",
    forget_sentences: ForgetSentences = False,
    processes: Processes = None,
    merge: Merge = None,
    errors: Errors = "strict",
) -> None:
    """Embed every line of INPUT with ELMo: layer 0 the char-CNN token vector (twice), layers 1-2 the
    biLSTM (forward then backward), each 2P wide; datasets are keyed "0", "1", ... by line index."""
    folder = None if options_file is not None else _model_folder("elmo", model)
    layers = _layer_choice(all_layers, top, average)
    job = EmbedJob("elmo", input_file, output_file, layers, folder, batch_size, device, forget_sentences, merge, errors)
    _run(
        ctx,
        replace(
            job,
            options_file=options_file,
            weight_file=weight_file,
            stateful=stateful,
            precision=precision,
            max_window_tokens=max_window_tokens,
        ),
        processes,
    )


@app.command("cove")
@checks_first(lambda ctx: check_embed_options("cove", ctx.params))
def cove_command(
    ctx: typer.Context,
    input_file: InputArgument,
    output_file: OutputArgument,
    all_layers: AllLayers = False,
    top: TopLayer = False,
    average: AverageLayers = False,
    model: CoveModel = None,
    catalog: Catalog = None,
    batch_size: BatchSize = None,
    max_window_tokens: WindowTokens = None,
    device: Device = "cpu",
    precision: Precision = "fp32",
    forget_sentences: ForgetSentences = False,
    processes: Processes = None,
    merge: Merge = None,
    errors: Errors = "strict",
) -> None:
    """Embed every line of INPUT with CoVe: layer 0 GloVe (300 wide, zero-padded to 600), layers 1-2
    CoVe-1 and CoVe-2 (600 wide); datasets are keyed "0", "1", ... by line index."""
    layers, folder = _layer_choice(all_layers, top, average), _model_folder("cove", model)
    job = EmbedJob("cove", input_file, output_file, layers, folder, batch_size, device, forget_sentences, merge, errors)
    _run(ctx, replace(job, precision=precision, max_window_tokens=max_window_tokens), processes)


def _layer_choice(all_layers: bool, top: bool, average: bool) -> str:
    if sum((all_layers, top, average)) != 1:
        raise typer.BadParameter("choose exactly one of --all, --top, --average")
    return "all" if all_layers else "top" if top else "average"


def _model_folder(kind: str, model: str | None) -> Path:
    """The model's folder: the one ``GuardedCommand`` resolved, or the bundled model's."""
    from ..hub.resolver import bundled_model_dir

    return Path(model) if model is not None else bundled_model_dir(kind)


def _run(ctx: typer.Context, job: EmbedJob, processes: int | None) -> None:
    """Embed (the command line is checked already); SIGINT/SIGTERM end it with one line and 128 + the
    signal (``cli/_app.py``), saying that the same command resumes."""
    say_on_interrupt(ctx, "run the same command to resume")
    job = _with_regular_input(job)
    try:
        if processes is not None and processes > 1:
            from ..corpus.lines import Corpus

            lines = Corpus(job.input_file, job.errors).count()  # a bad byte is reported before ranks start
            launch_local(processes, run_job, replace(job, lines=lines))
        else:
            run_job(job)
    finally:
        if job.input_identity is not None:  # the copy of a stream: read again by a rerun
            from ..corpus.folder import remove_spool

            remove_spool(job.output_file)


def _with_regular_input(job: EmbedJob) -> EmbedJob:
    """The job reading a regular file: INPUT, or the file behind /dev/stdin or /dev/fd/N (which mean
    another file in each rank); for a stream (a pipe, a terminal), a copy made in OUTPUT.parts/."""
    if stat.S_ISREG(os.stat(job.input_file).st_mode):
        if str(job.input_file).startswith(("/dev/", "/proc/")):
            return replace(job, input_file=Path(os.path.realpath(job.input_file)))
        return job
    if "WORLD_SIZE" in os.environ:
        raise typer.BadParameter(
            f"{job.input_file} is a stream, which the torchrun ranks cannot each read; give a file, or run "
            "without torchrun (--processes N copies a stream first)"
        )
    from ..corpus.folder import spool

    spooled, identity = spool(job.input_file, job.output_file)
    return replace(job, input_file=spooled, input_identity=identity)


def run_job(job: EmbedJob) -> None:
    """What every rank runs: check INPUT, join the other ranks, load the model, embed its share."""
    from ..corpus.job import embed_corpus
    from ..corpus.lines import Corpus
    from ..runtime import Runtime

    corpus = Corpus(job.input_file, job.errors)
    total = corpus.count() if job.lines is None else job.lines
    runtime = Runtime.from_environment(job.device)
    try:
        embedder, encoder = _load_encoder(job, runtime.device)
        embed_corpus(
            embedder,
            corpus,
            job.output_file,
            job.layers,
            encoder=encoder,
            batch_size=job.batch_size,
            merge=job.merge,
            keep_sentences=not job.forget_sentences,
            runtime=runtime,
            total=total,
            input_identity=job.input_identity,
            log=typer.echo,
        )
    finally:
        runtime.close()
    if runtime.main:
        typer.echo(f"wrote {total} sentences to {job.output_file}")


def _load_encoder(job: EmbedJob, device):
    """The embedder, and what identifies it in the record of a run (kind, files, settings)."""
    from ..corpus.job import file_identity

    settings = {"kind": job.kind, "device": device.type}
    if job.precision != "fp32":  # a run in another precision has other vectors
        settings["precision"] = job.precision
    window = job.max_window_tokens or MAX_WINDOW_TOKENS
    if window != MAX_WINDOW_TOKENS:  # the same vectors, rounded differently where a line is cut
        settings["max_window_tokens"] = window
    options = {"device": device, "precision": job.precision, "max_window_tokens": window}
    if job.kind == "cove":
        from ..embedders.cove_embedder import CoveEmbedder

        embedder = CoveEmbedder.load(job.model, device=device, precision=job.precision)
        return embedder, {**settings, "files": file_identity(job.model)}
    from ..embedders.elmo_embedder import ElmoEmbedder

    settings["stateful"] = job.stateful
    if job.options_file is not None:
        files = [file_identity(job.options_file), file_identity(job.weight_file)]
        embedder = ElmoEmbedder.from_bilm_tf(job.options_file, job.weight_file, stateful=job.stateful, **options)
        return embedder, {**settings, "files": files}
    embedder = ElmoEmbedder.load(job.model, stateful=job.stateful, device=device, precision=job.precision)
    return embedder, {**settings, "files": file_identity(job.model)}
