"""``spacy-contextual models`` lists the model catalog; ``spacy-contextual download NAME`` fetches a model
into the cache ahead of time (what the first use of a name would do), so that later runs, offline
ones included, find it there."""

from __future__ import annotations

from pathlib import Path

import typer

from ..hub.catalog import use_catalog
from ._app import app

CATALOG_HELP = "A catalog JSON file whose entries add to or replace the shipped ones (or $SPACY_CONTEXTUAL_CATALOG)"


@app.command("models")
def models_command(
    catalog: Path | None = typer.Option(None, "--catalog", help=CATALOG_HELP),
    markdown: bool = typer.Option(False, "--markdown", help="Print the table of models (docs/models.md) instead"),
) -> None:
    """List the bundled models and the catalog: name, encoder, language, size, download size ("?" where the
    catalog does not publish it), whether it is cached and where, and how its files are checked (a published
    SHA-256, one recorded at the first download, or none yet)."""
    from ..hub.cache import cache_home, cached_bytes, cached_state, hash_status, human_bytes, model_cache_dir
    from ..hub.catalog import load_catalog, markdown_table
    from ..hub.resolver import KINDS, bundled_model_dir

    use_catalog(catalog)
    entries = load_catalog()
    if markdown:
        typer.echo(markdown_table(entries.values()))
        return
    rows = [("NAME", "ENCODER", "LANG", "SIZE", "DOWNLOAD", "CACHED", "CHECK", "WHERE")]
    for kind in KINDS:
        folder = bundled_model_dir(kind)
        size = sum(path.stat().st_size for path in folder.iterdir() if path.is_file())
        rows.append(
            ("default", kind, "en", "small demo", "-", f"bundled, {human_bytes(size)}", "manifest", str(folder))
        )
    cached, total = 0, 0
    for entry in entries.values():
        directory = model_cache_dir(entry.name)
        state, record = cached_state(directory)
        cached, total = cached + (record is not None), total + cached_bytes(record)
        download = human_bytes(entry.download_bytes) if entry.download_bytes is not None else "?"
        where = str(directory) if directory.exists() else "-"
        row = (entry.name, entry.encoder, entry.language, entry.size or "-", download, state)
        rows.append((*row, hash_status(entry, record), where))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    models = "model" if cached == 1 else "models"
    typer.echo(f"\ncache: {cache_home()} ({cached} {models} cached, {human_bytes(total)})")


@app.command("download")
def download_command(
    name: str = typer.Argument(..., help="A model name that `spacy-contextual models` lists"),
    catalog: Path | None = typer.Option(None, "--catalog", help=CATALOG_HELP),
    retrust: bool = typer.Option(
        False,
        "--retrust",
        help="Download it again and trust what the server sends now, replacing the digests recorded at the first "
        "download (needed when the publisher changed a file, or the cached record is damaged)",
    ),
) -> None:
    """Fetch model NAME into the cache now, with a progress bar. A cached copy whose files are damaged is
    fetched again and checked against the digests recorded at its first download; a changed server file
    is accepted only with --retrust.

    Limits, each set by an environment variable (default):
    SPACY_CONTEXTUAL_MAX_DOWNLOAD_BYTES: a file whose size the catalog does not publish (4 GiB);
    SPACY_CONTEXTUAL_DOWNLOAD_DEADLINE: seconds for one file (3600);
    SPACY_CONTEXTUAL_TIMEOUT: seconds to wait for the server's next bytes (60);
    SPACY_CONTEXTUAL_LOCK_WAIT: seconds to wait for another process fetching the model (3600);
    SPACY_CONTEXTUAL_MAX_UNPACKED_BYTES: what an archive may unpack to (16 GiB).
    The locks are in the cache's .locks/ folder."""
    from ..hub.catalog import get_entry
    from ..hub.fetch import refetch

    use_catalog(catalog)
    path = refetch(get_entry(name), retrust=retrust)
    typer.echo(str(path))
