"""``spacy-contextual app``: start the Streamlit dashboard on the bundled models (or the ones named)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import typer

from ..dashboard.settings import COVE_MODEL_ENV, ELMO_MODEL_ENV, PIPELINE_ENV, SENSE_DATA_ENV
from ._app import app

MAIN = Path(__file__).resolve().parent.parent / "dashboard" / "main.py"


@app.command("app")
def run_dashboard(
    port: int = typer.Option(8501, help="port to serve on"),
    address: str = typer.Option("127.0.0.1", help="address to bind; 0.0.0.0 to serve other machines"),
    elmo_model: Optional[Path] = typer.Option(None, help="ELMo model directory (default: the bundled model)"),
    cove_model: Optional[Path] = typer.Option(None, help="CoVe model directory (default: the bundled model)"),
    pipeline: Optional[Path] = typer.Option(None, help="trained spaCy pipeline shown on the Layer weights page"),
    sense_data: Optional[Path] = typer.Option(None, help="folder of sense-labelled .jsonl(.gz) files"),
    headless: bool = typer.Option(True, help="do not open a browser"),
) -> None:
    """Serve the dashboard: sense explorer, layer weights, CoVe attention, layer probe."""
    try:
        import streamlit  # noqa: F401
    except ImportError:
        raise typer.BadParameter("the dashboard needs streamlit: pip install 'spacy-contextual[app]'") from None
    env = dict(os.environ)
    for name, value in (
        (ELMO_MODEL_ENV, elmo_model),
        (COVE_MODEL_ENV, cove_model),
        (PIPELINE_ENV, pipeline),
        (SENSE_DATA_ENV, sense_data),
    ):
        if value is not None:
            if not value.exists():
                raise typer.BadParameter(f"{value} does not exist")
            env[name] = str(value.resolve())
    command = [
        sys.executable, "-m", "streamlit", "run", str(MAIN),
        "--server.port", str(port), "--server.address", address,
        "--server.headless", str(headless).lower(), "--browser.gatherUsageStats", "false",
    ]
    raise typer.Exit(subprocess.call(command, env=env))
