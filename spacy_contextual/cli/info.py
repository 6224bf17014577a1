"""``spacy-contextual info``: the versions and the hardware the encoders run on here, and the state of
the native code; ``spacy-contextual build``: the native code built ahead of the first job.

The CPU line says which vector instruction set torch uses (AVX2, AVX-512, ...), which matrix extensions
the CPU has (AVX-512 BF16, AMX-BF16, AMX-INT8, VNNI) and whether bf16 matrix products are fast here. The
fused LSTM cell's line says whether it is loaded, built, not built yet, failed (and why), refused or
switched off, for which CPU variant, and where it lives (as DeepSpeed's ``ds_report`` lists its ops).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated

import typer

from ._app import app


@app.command("info")
def info_command() -> None:
    """Print the package, spaCy and torch versions, the CPU's capabilities, the CUDA devices and the
    state of the fused LSTM cell (the C++ step of ELMo's LSTM on the CPU)."""
    import spacy
    import torch

    from ..hardware import describe_cpu
    from ..models.fused_cell import cell_state

    cuda = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    typer.echo(f"spacy-contextual {version('spacy-contextual')}, spaCy {spacy.__version__}, torch {torch.__version__}")
    typer.echo(f"CPU: {describe_cpu()}; torch threads {torch.get_num_threads()}")
    typer.echo(f"CUDA: {', '.join(cuda) if cuda else 'none'}")
    typer.echo(f"fused LSTM cell: {describe_cell(cell_state())}")


@app.command("build")
def build_command(
    force: Annotated[bool, typer.Option("--force", help="Build it again even where it is built.")] = False,
) -> None:
    """Build the fused LSTM cell for this CPU now (once per machine; otherwise the first ELMo job builds
    it), or again after a failed build, printing the compiler's output if it fails."""
    from ..models.fused_cell import build_cell, cell_state

    state = build_cell(force=force or cell_state().state == "failed", announce=typer.echo)
    typer.echo(f"fused LSTM cell: {describe_cell(state)}")
    if state.state == "failed":
        log = state.folder / "build.log" if state.folder else None
        if log is not None and log.is_file():
            typer.echo(log.read_text(encoding="utf-8", errors="replace"), err=True)
        raise typer.Exit(1)
    if state.state == "refused":
        raise typer.Exit(1)


def describe_cell(state) -> str:
    """The cell's state as one phrase, with what to do where it is not in use."""
    where = f" in {state.folder}" if state.folder else ""
    return {
        "loaded": f"loaded ({state.detail}){where}",
        "built": f"built ({state.detail}){where}",
        "not built": f"not built yet: the first ELMo run builds it (about 30 s, once), or `spacy-contextual build`"
        f"{'; ' + state.detail if state.detail else ''}",
        "failed": f"failed ({state.detail}): the LSTM runs as torch operations; `spacy-contextual build` "
        f"tries again and shows the compiler's output{where}",
        "refused": f"refused ({state.detail}): the LSTM runs as torch operations",
    }.get(state.state, f"{state.state} ({state.detail}): the LSTM runs as torch operations")
