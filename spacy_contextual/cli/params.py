"""The options every command spells the same way, and what a command's path parameters are.

``Precision`` (``--precision``) is the compute precision: fp32, bf16, fp16. ``StorageDtype``
(``--dtype``) is how an export stores its weights: float32, float16, int8. (``--precision`` as a
storage dtype on the exports, and ``--fp16`` on ``export-elmo``, are hidden aliases for one release.)

Path parameters declare their role once, on the parameter: ``InputFile``, ``InputDir``,
``OutputFile``, ``OutputDir``, ``InPlaceDir`` (given as typer's ``parser=``).

``GuardedCommand`` (every command's class) runs a command in this order:

1. click parses the command line: paths get their roles, a model (``NAME|DIR``, ``model_option.py``)
   is read as a ``hub.resolver.ModelName`` (an unknown name is refused here), nothing is fetched;
2. each output is checked by the one writer (``writer.py``) against every input of the command and
   every model folder already on disk (so ``OUTPUT = INPUT``, an output inside a model folder or a
   FIFO is refused in one line before any work);
3. the command's own checks of its options together (``checks_first``: e.g. the embed commands' ranges
   and precision, finetune-elmo's output folders named in its config), still before any download;
4. inside ``writer.command_reads(inputs)``, each model is resolved once (a catalog model fetched if it
   is not cached), the outputs are checked against the resolved folders, and the command runs with
   each model's folder as a plain path; whatever it opens later (a text file, a model named in a
   config) is added by ``writer.note_read`` and protected in the same way.

With ``--no-overwrite`` (which every command with an output takes), step 2 also refuses an output that
exists, a file or a folder that is not empty. Between steps 3 and 4 the command takes
``writer.output_lock`` on each output (held until it ends), so a second run writing the same output is
refused in one line. A command that replaced an existing output says so in one line on stderr
(``replaced out.hdf5 (12.3 MiB)``; in a folder it kept, each file it replaced).

A refused command therefore downloads nothing. The tests find every output parameter of the CLI by
these types, so a new command that writes is covered by the same checks.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from .. import writer
from ..hub.resolver import KINDS, ModelName, bundled_model_dir
from ..user_paths import HomeError, expand_user

MODEL_METAVAR = "NAME|DIR"  # a model parameter (cli/model_option.py): a catalog name, a folder or default
PRECISION_HELP = "fp32 (exact), bf16 (fast only on CPUs with AVX-512 BF16 or AMX), or fp16 (CUDA only)"
STORAGE_DTYPES = ("float32", "float16", "int8")
Precision = Annotated[str, typer.Option("--precision", help=PRECISION_HELP)]
StorageDtype = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        help="How our safetensors store the weights: float32, float16, or int8 (row-wise scaled) where the export "
        "takes it; a bilm-tf HDF5 stays float32",
    ),
]
LegacyStoragePrecision = Annotated[str | None, typer.Option("--precision", hidden=True)]


def storage_dtype(
    dtype: str | None, legacy: str | None, default: str, choices=STORAGE_DTYPES, legacy_flag: str = "--precision"
) -> str:
    """The ``--dtype`` value (or the hidden old spelling's, with a warning), checked against ``choices``."""
    if legacy is not None:
        if dtype is not None and dtype != legacy:
            raise typer.BadParameter(f"--dtype {dtype} and {legacy_flag} disagree: give --dtype only")
        warnings.warn(f"{legacy_flag} on an export is now --dtype {legacy} (the storage dtype)", stacklevel=2)
    value = dtype or legacy or default
    if value not in choices:
        raise typer.BadParameter(f"--dtype {value!r} is not one of {', '.join(choices)}")
    return value


class PathRole:
    """A path parameter with a role: "input" (read), "output" (written) or "inplace" (updated in place)."""

    role = "input"
    directory = False

    def __call__(self, value: Any) -> Path:
        return self.convert(value)

    def convert(self, value: Any) -> Path:
        if isinstance(value, Path):
            return value
        text = str(value)
        if text == "":
            raise typer.BadParameter("an empty path; give a file or folder name")
        try:
            return expand_user(text)
        except HomeError as error:
            raise typer.BadParameter(str(error)) from None


class InputFile(PathRole):
    """A file the command reads ('-' for stdin where the command says so); it must exist."""

    def __init__(self, stdin: bool = False):
        self.stdin = stdin

    def convert(self, value: Any) -> Path:
        path = super().convert(value)
        if self.stdin and str(path) == "-":
            return path
        if not path.exists():
            raise typer.BadParameter(f"{path} does not exist; give an existing file")
        if path.is_dir():
            raise typer.BadParameter(f"{path} is a directory; give a file")
        return path


class InputDir(PathRole):
    """A folder the command reads (a model directory, a training output); it must exist."""

    directory = True

    def convert(self, value: Any) -> Path:
        path = super().convert(value)
        if not path.is_dir():
            raise typer.BadParameter(f"{path} is not a directory; give an existing folder")
        return path


class OutputFile(PathRole):
    """A file the command writes (through the one writer, atomically)."""

    role = "output"


class OutputDir(PathRole):
    """A folder the command writes (a new or empty one, or one the command wrote before)."""

    role = "output"
    directory = True


class InPlaceDir(InputDir):
    """An existing folder the command updates in place (``write-manifest``): not an input to protect."""

    role = "inplace"


def path_role(param) -> PathRole | None:
    """The role a path parameter was declared with (its typer ``parser``), or None."""
    role = getattr(getattr(getattr(param, "type_descriptor", None), "parameter_info", None), "parser", None)
    return role if isinstance(role, PathRole) else None


def role_of(param) -> str | None:
    """ "input", "output" or "inplace" for a path parameter; a model (``NAME|DIR``, resolved to its folder
    as the command line is read) is an input too."""
    role = path_role(param)
    if role is not None:
        return role.role
    return "input" if getattr(param, "metavar", None) == MODEL_METAVAR else None


def is_directory(param) -> bool:
    role = path_role(param)
    return role.directory if role is not None else True  # a model is a folder


def values_of(ctx: typer.Context, param) -> list[Path]:
    """The paths a parameter was given (a model not resolved yet is none: see ``models_of``)."""
    value = ctx.params.get(param.name)
    values = value if isinstance(value, (list, tuple)) else [value]
    given = [item for item in values if item is not None and not isinstance(item, ModelName)]
    return [Path(item) for item in given if str(item) not in ("", "-")]


def models_of(ctx: typer.Context) -> dict[str, ModelName]:
    """The command's model parameters as read from the command line, not resolved yet."""
    return {name: value for name, value in ctx.params.items() if isinstance(value, ModelName)}


def bundled_models_of(ctx: typer.Context, params) -> list[Path]:
    """The bundled model's folder for every model parameter left out (that is what the command loads)."""
    kinds = [
        getattr(param.callback, "kind", None) or ctx.params.get("encoder")
        for param in params
        if getattr(param, "metavar", None) == MODEL_METAVAR and ctx.params.get(param.name) is None
    ]
    return [bundled_model_dir(kind) for kind in kinds if kind in KINDS]


CHECK_FIRST = "spacy_contextual_check_first"


def checks_first(check: Callable[[typer.Context], None]) -> Callable:
    """Give a command ``check(ctx)``: its options checked together (ranges, options that go together,
    what an output needs, outputs named in a config), which ``GuardedCommand`` runs before any model is
    fetched; ``ctx.params`` holds the models as read (``ModelName``), not resolved."""

    def mark(function: Callable) -> Callable:
        setattr(function, CHECK_FIRST, check)
        return function

    return mark


NO_OVERWRITE = "spacy_contextual.no_overwrite"
NO_OVERWRITE_HELP = "Refuse to replace an output that exists (a file, or a folder that is not empty)"


def _no_overwrite_option():
    """``--no-overwrite``, as typer builds it; ``GuardedCommand`` adds it to every command with an output."""
    probe = typer.Typer()

    def remember(ctx: typer.Context, value: bool) -> None:
        ctx.meta[NO_OVERWRITE] = value

    option = typer.Option(False, "--no-overwrite", expose_value=False, callback=remember, help=NO_OVERWRITE_HELP)

    @probe.command()
    def command(no_overwrite: bool = option) -> None:
        """The option's only carrier."""

    return typer.main.get_command(probe).params[0]


def is_main_rank() -> bool:
    """Not a torchrun rank other than 0 (rank 0 speaks and holds the locks for the run)."""
    return os.environ.get("RANK", "0") == "0"


def hold_output(ctx: typer.Context, path: Path) -> None:
    """Hold ``path``'s ``writer.output_lock`` until the command ends, so that a second run writing it is
    refused in one line (also for an output a config names, e.g. ``training.output_dir``)."""
    if is_main_rank():
        ctx.with_resource(writer.output_lock(path))


def size_in_words(size: int) -> str:
    from ..hub.cache import human_bytes

    return human_bytes(size) if size >= 2**20 else f"{size:,} bytes"


class GuardedCommand(TyperCommand):
    """Checks the outputs, then the options, holds each output's lock, then resolves each model once and
    runs the command inside ``writer.command_reads``, and says what it replaced (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if any(role_of(param) == "output" for param in self.params):
            self.params.append(_no_overwrite_option())

    def invoke(self, ctx: typer.Context) -> Any:
        reads = [path for param in self.params if role_of(param) == "input" for path in values_of(ctx, param)]
        reads += bundled_models_of(ctx, self.params)
        models = models_of(ctx)
        self.check_outputs(ctx, [*reads, *(model.visible() for model in models.values())])
        outputs = [path for param in self.params if role_of(param) == "output" for path in values_of(ctx, param)]
        self.check_not_overwriting(ctx, outputs)
        check = getattr(self.callback, CHECK_FIRST, None)
        if check is not None:
            check(ctx)
        for path in outputs:
            hold_output(ctx, path)
        before = self.check_not_overwriting(ctx, outputs)  # again, now that no other run can write them
        with writer.command_reads(reads):
            for name, model in models.items():
                ctx.params[name] = str(model.resolve())
            if models:
                self.check_outputs(ctx, writer.read_by_command())
            result = super().invoke(ctx)
        for found in before if is_main_rank() else ():
            for path, size in writer.replaced(found):
                typer.echo(f"replaced {path} ({size_in_words(size)})", err=True)
        return result

    def check_not_overwriting(self, ctx: typer.Context, outputs: list[Path]) -> list[writer.Existing]:
        """What is at the outputs now; with ``--no-overwrite``, any of them that exists is refused."""
        existing = [found for path in outputs if (found := writer.existing_output(path)) is not None]
        if existing and ctx.meta.get(NO_OVERWRITE):
            raise writer.OutputError(
                f"{existing[0].path} exists ({size_in_words(existing[0].bytes)}) and --no-overwrite refuses to "
                "replace it; move it away or give another output"
            )
        return existing

    def check_outputs(self, ctx: typer.Context, reads: list[Path | None]) -> None:
        """Every output may be written: none of ``reads``, not inside one, not special or protected."""
        for param in self.params:
            if role_of(param) != "output":
                continue
            for path in values_of(ctx, param):
                if is_directory(param):
                    writer.check_output_dir(path, reads)
                else:
                    writer.check_output_file(path, reads)
