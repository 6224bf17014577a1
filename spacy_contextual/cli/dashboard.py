"""``spacy-contextual app``: start the Streamlit dashboard on the bundled models (or the ones named)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..dashboard.environment_names import COVE_MODEL_ENV, ELMO_MODEL_ENV, PIPELINE_ENV, SENSE_DATA_ENV
from ._app import app
from .model_option import Catalog, model_option

MAIN = Path(__file__).resolve().parent.parent / "dashboard" / "main.py"


@app.command("app")
def run_dashboard(
    port: Annotated[int, typer.Option(help="port to serve on")] = 8501,
    address: Annotated[str, typer.Option(help="address to bind; 0.0.0.0 to serve other machines")] = "127.0.0.1",
    elmo_model: Annotated[str | None, model_option("elmo", "--elmo-model", what="ELMo, also when not given")] = None,
    cove_model: Annotated[str | None, model_option("cove", "--cove-model", what="CoVe, also when not given")] = None,
    catalog: Catalog = None,
    pipeline: Annotated[
        list[Path] | None,
        typer.Option(
            exists=True,
            file_okay=False,
            help="trained spaCy pipeline for the Layer weights page (repeat to compare several)",
        ),
    ] = None,
    sense_data: Annotated[
        Path | None, typer.Option(exists=True, file_okay=False, help="folder of sense-labelled .jsonl(.gz) files")
    ] = None,
    headless: Annotated[bool, typer.Option(help="do not open a browser")] = True,
) -> None:
    """Serve the dashboard: sense explorer, layer weights, CoVe attention, layer probe."""
    if importlib.util.find_spec("streamlit") is None:
        raise typer.BadParameter("the dashboard needs streamlit: pip install 'spacy-contextual[app]'")
    env = dict(os.environ)
    for name, value in ((ELMO_MODEL_ENV, elmo_model), (COVE_MODEL_ENV, cove_model), (SENSE_DATA_ENV, sense_data)):
        if value is not None:
            env[name] = str(Path(value).resolve())
    if pipeline:
        env[PIPELINE_ENV] = os.pathsep.join(str(path.resolve()) for path in pipeline)
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(MAIN),
        "--server.port",
        str(port),
        "--server.address",
        address,
        "--server.headless",
        str(headless).lower(),
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "minimal",
    ]
    os.execve(sys.executable, command, env)  # become the server: signals and exit status are streamlit's
