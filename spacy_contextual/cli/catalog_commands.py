"""``spacy-contextual models`` lists the model catalog; ``spacy-contextual download NAME`` fetches a model
into the cache ahead of time (what the first use of a name would do), so that later runs, offline
ones included, find it there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..hub.catalog import use_catalog
from ._app import app

CATALOG_HELP = "A catalog JSON file whose entries add to or replace the shipped ones (or $SPACY_CONTEXTUAL_CATALOG)"


@app.command("models")
def models_command(
    catalog: Annotated[Path | None, typer.Option("--catalog", help=CATALOG_HELP)] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the table of models (docs/models.md) instead")
    ] = False,
) -> None:
    """List the bundled models, the catalog and the models only the cache holds: name, encoder, language,
    size, download size (or "size not published"), whether it is cached and where, how its files are
    checked (a published SHA-256, one recorded at the first download, or none yet), and the catalog it
    comes from ("shipped", a user catalog's file, or for a cached model whose catalog is not set now,
    that catalog "(not set now)": it still loads by its name)."""
    from ..hub.cache import cache_home, cached_bytes, cached_models, cached_state, hash_status, model_cache_dir
    from ..hub.catalog import catalog_label, download_size, human_bytes, load_catalog, markdown_table
    from ..hub.resolver import KINDS, bundled_model_dir

    use_catalog(catalog)
    entries = load_catalog()
    if markdown:
        typer.echo(markdown_table(entries.values()))
        return
    rows = [("NAME", "ENCODER", "LANG", "SIZE", "DOWNLOAD", "CACHED", "CHECK", "CATALOG", "WHERE")]
    for kind in KINDS:
        folder = bundled_model_dir(kind)
        size = sum(path.stat().st_size for path in folder.iterdir() if path.is_file())
        row = ("default", kind, "en", "small demo", "-", f"bundled, {human_bytes(size)}", "manifest", "package")
        rows.append((*row, str(folder)))
    cached, total = 0, 0
    for entry in entries.values():
        directory = model_cache_dir(entry.name)
        state, record = cached_state(directory)
        cached, total = cached + (record is not None), total + cached_bytes(record)
        where = str(directory) if directory.exists() else "-"
        row = (entry.name, entry.encoder, entry.language, entry.size or "-", download_size(entry), state)
        rows.append((*row, hash_status(entry, record), catalog_label(entry.origin), where))
    for name, record in cached_models().items():
        if name in entries:
            continue
        cached, total = cached + 1, total + cached_bytes(record)
        origin = f"{record.get('catalog', 'not recorded')} (not set now)"
        state = f"yes, {human_bytes(cached_bytes(record))}"
        row = (name, record["encoder"], record.get("language") or "-", "-", "-", state, "as recorded", origin)
        rows.append((*row, str(model_cache_dir(name))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    models = "model" if cached == 1 else "models"
    typer.echo(f"\ncache: {cache_home()} ({cached} {models} cached, {human_bytes(total)})")


@app.command("download")
def download_command(
    name: Annotated[str, typer.Argument(help="A model name that `spacy-contextual models` lists")],
    catalog: Annotated[Path | None, typer.Option("--catalog", help=CATALOG_HELP)] = None,
    retrust: Annotated[
        bool,
        typer.Option(
            "--retrust",
            help="Download it again and trust what the server sends now, replacing the digests recorded at the first "
            "download (needed when the publisher changed a file, or the cached record is damaged)",
        ),
    ] = False,
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
    from ..hub.cache import cached_record
    from ..hub.catalog import CatalogError, find_entry
    from ..hub.fetch import refetch
    from ..hub.resolver import nearest_hint

    use_catalog(catalog)
    entry = find_entry(name)
    if entry is None:
        record = cached_record(name)
        if record is not None:
            raise CatalogError(
                f"{name!r} is cached, fetched through the catalog {record.get('catalog', '(not recorded)')}, which "
                "is not set now: it loads by its name as it is; to download it again, give that catalog with --catalog"
            )
        raise CatalogError(
            f"{name!r} is not in the model catalog{nearest_hint(name)}; `spacy-contextual models` lists the names"
        )
    typer.echo(str(refetch(entry, retrust=retrust)))
