"""Sizes in the catalog: a file's ``bytes`` is exact (the download stops there) and says where it is
published (``bytes_source``); every other file is shown as "size not published", never "?"."""

from __future__ import annotations

import pytest
from model_server import write_catalog
from typer.testing import CliRunner

from spacy_contextual.cli import app
from spacy_contextual.hub.catalog import CATALOG_PATH, CatalogError, download_size, read_catalog

SHIPPED = read_catalog(CATALOG_PATH)


def test_every_published_size_in_the_shipped_catalog_says_where_it_is_published():
    sized = [(name, file) for name, entry in SHIPPED.items() for file in entry.files if file.bytes is not None]
    assert {name for name, _ in sized} >= {"elmo-original", "cove-wmt"}
    for name, file in sized:
        assert file.bytes_source and str(file.bytes) in file.bytes_source.replace(",", ""), (name, file.name)


def test_every_shipped_entry_shows_its_size_or_says_it_is_not_published():
    assert len(SHIPPED) == 53
    for entry in SHIPPED.values():
        text = download_size(entry)
        known = [file.bytes for file in entry.files if file.bytes is not None]
        if len(known) == len(entry.files):
            assert text.endswith(("MiB", "GiB")), text
        else:
            assert "not published" in text or "unpublished size" in text, text
    assert download_size(SHIPPED["elmo-original"]) == "357.1 MiB"  # 336 + 374,434,792 bytes
    assert download_size(SHIPPED["cove-wmt"]) == "2.03 GiB + 1 file of unpublished size"
    assert download_size(SHIPPED["elmo-small"]) == "size not published"


def test_models_never_shows_a_bare_question_mark(home):
    listed = CliRunner().invoke(app, ["models"])
    assert listed.exit_code == 0 and "?" not in listed.stdout


@pytest.mark.parametrize(
    "spec",
    [
        {"url": "http://127.0.0.1:9/w", "bytes_source": "a page"},  # a source without a size
        {"url": "http://127.0.0.1:9/w", "bytes": 5, "bytes_source": " "},
        {"url": "http://127.0.0.1:9/w", "bytes": 5, "bytes_source": 5},
    ],
)
def test_a_size_source_goes_with_a_size(tmp_path, spec):
    entry = {"encoder": "elmo", "format": "bilm_tf", "files": {"weights.hdf5": spec}}
    with pytest.raises(CatalogError, match=r"file 'weights.hdf5': .*bytes_source.* where 'bytes' is published"):
        read_catalog(write_catalog(tmp_path / "catalog.json", {"ours": entry}))
