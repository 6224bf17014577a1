"""``spacy-contextual info``: the versions and the hardware the encoders run on here.

The CPU line says which vector instruction set torch uses (AVX2, AVX-512, ...), which matrix extensions
the CPU has (AVX-512 BF16, AMX-BF16, AMX-INT8, VNNI) and whether bf16 matrix products are fast here.
"""

from __future__ import annotations

from importlib.metadata import version

import typer

from ._app import app


@app.command("info")
def info_command() -> None:
    """Print the package, spaCy and torch versions, the CPU's capabilities and the CUDA devices."""
    import spacy
    import torch

    from ..hardware import describe_cpu

    cuda = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    typer.echo(f"spacy-contextual {version('spacy-contextual')}, spaCy {spacy.__version__}, torch {torch.__version__}")
    typer.echo(f"CPU: {describe_cpu()}; torch threads {torch.get_num_threads()}")
    typer.echo(f"CUDA: {', '.join(cuda) if cuda else 'none'}")
