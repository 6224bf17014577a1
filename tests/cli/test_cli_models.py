"""``spacy-contextual models`` and ``download``, and a catalog name as ``--model``, against a catalog
served from a loopback server."""

from __future__ import annotations

import re

import h5py
import numpy as np
import pytest
from model_server import bilm_entry, bilm_tf_files, write_catalog
from typer.testing import CliRunner
from util import tiny_elmo_dir, writer_leftovers

from spacy_contextual.cli import app
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.hub.cache import OFFLINE_ENV

pytestmark = pytest.mark.timeout(120)
runner = CliRunner()


@pytest.fixture
def catalog(tmp_path, server):
    return write_catalog(tmp_path / "catalog.json", {"tiny": bilm_entry(server, bilm_tf_files(tmp_path / "bilm"))})


def row(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(name + " "))


def test_models_lists_the_catalog_and_download_fills_the_cache(home, server, catalog):
    listed = runner.invoke(app, ["models", "--catalog", str(catalog)])
    assert listed.exit_code == 0, listed.output
    assert "elmo-original" in listed.stdout and "elmo-manylangs-fi" in listed.stdout and "cove-wmt" in listed.stdout
    line = row(listed.stdout, "tiny")
    assert line.split()[:4] == ["tiny", "elmo", "en", "-"] and re.search(r"  size not published +no ", line)
    assert "none yet" in line and f"  {catalog}  " in line  # the catalog it comes from
    assert "?" not in listed.stdout.replace("(not set now)", "")
    assert listed.stdout.rstrip().endswith(f"cache: {home} (0 models cached, 0.0 MiB)")  # not the catalog's 54
    bundled = [line.split() for line in listed.stdout.splitlines() if line.startswith("default ")]
    assert [cells[:3] for cells in bundled] == [["default", "elmo", "en"], ["default", "cove", "en"]]
    assert all(cells[-1].endswith(("assets/elmo", "assets/cove")) for cells in bundled)

    fetched = runner.invoke(app, ["download", "tiny", "--catalog", str(catalog)])
    assert fetched.exit_code == 0, fetched.output
    assert fetched.stdout.strip() == str(home / "tiny")
    assert f"downloading {server.url('tiny/weights.hdf5')}\n  into {home / 'tiny'}" in fetched.stderr
    assert "100%" in fetched.stderr  # the progress bar

    listed = runner.invoke(app, ["models", "--catalog", str(catalog)])
    line = row(listed.stdout, "tiny")
    assert "yes, 0.1 MiB" in line and "trust-on-first-use" in line and line.endswith(str(home / "tiny"))
    assert listed.stdout.rstrip().endswith(f"cache: {home} (1 model cached, 0.1 MiB)")
    again = runner.invoke(app, ["download", "tiny", "--catalog", str(catalog)])
    assert again.exit_code == 0 and server.requests == {"tiny/options.json": 1, "tiny/weights.hdf5": 1}


def test_a_failed_download_is_one_error_line(home, server, catalog):
    server.modes["tiny/weights.hdf5"] = "404"
    result = runner.invoke(app, ["download", "tiny", "--catalog", str(catalog)])
    assert result.exit_code == 1
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert error == (f"error: could not download weights.hdf5: {server.url('tiny/weights.hdf5')}: HTTP 404 Not Found")
    assert not (home / "tiny").exists() and writer_leftovers(home) == []


def test_offline_download_and_unknown_names_are_one_line(home, server, catalog, monkeypatch):
    monkeypatch.setenv(OFFLINE_ENV, "1")
    result = runner.invoke(app, ["download", "tiny", "--catalog", str(catalog)])
    assert result.exit_code == 1 and "SPACY_CONTEXTUAL_OFFLINE=1 forbids downloading" in result.stderr
    assert str(home) in result.stderr and server.requests == {}
    result = runner.invoke(app, ["download", "no-such-model"])
    assert result.exit_code == 1 and "'no-such-model' is not in the model catalog" in result.stderr
    result = runner.invoke(app, ["models", "--catalog", str(catalog.parent / "missing.json")])
    assert result.exit_code == 1 and "missing.json does not exist" in result.stderr


def test_a_catalog_name_as_model_of_the_elmo_command(tmp_path, home, server, one_thread):
    model = tiny_elmo_dir(tmp_path / "served")
    files = {p.name: {"url": server.add(f"ours/{p.name}", p.read_bytes())} for p in model.iterdir()}
    catalog = write_catalog(
        tmp_path / "ours.json", {"ours": {"encoder": "elmo", "format": "model_dir", "files": files}}
    )
    (tmp_path / "in.txt").write_text("The bank .\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    args = ["--catalog", str(catalog), "elmo", str(tmp_path / "in.txt"), str(out), "--all", "--model", "ours"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    with h5py.File(out) as written:
        expected = ElmoEmbedder.load(model).embed_sentences([["The", "bank", "."]])[0]
        np.testing.assert_allclose(written["0"][...], expected, atol=1e-6)
    assert server.requests["ours/model.safetensors"] == 1


def test_models_markdown_is_the_docs_table(home):
    from util import REPO

    result = runner.invoke(app, ["models", "--markdown"])
    assert result.exit_code == 0
    assert result.stdout.strip() in (REPO / "docs" / "models.md").read_text(encoding="utf-8")


def test_a_changed_server_file_is_refused_in_one_line_with_both_digests_until_retrust(home, server, catalog):
    import hashlib

    assert runner.invoke(app, ["download", "tiny", "--catalog", str(catalog)]).exit_code == 0
    weights = home / "tiny" / "weights.hdf5"
    trusted = hashlib.sha256(weights.read_bytes()).hexdigest()
    weights.write_bytes(weights.read_bytes()[:-1])  # damaged in the cache
    server.files["tiny/weights.hdf5"] += b"v2"  # and the publisher changed the file
    now = hashlib.sha256(server.files["tiny/weights.hdf5"]).hexdigest()
    result = runner.invoke(app, ["download", "tiny", "--catalog", str(catalog)])
    assert result.exit_code == 1
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert f"wrong SHA-256 {now}, expected {trusted}" in error and "download tiny --retrust" in error
    result = runner.invoke(app, ["download", "tiny", "--retrust", "--catalog", str(catalog)])
    assert result.exit_code == 0, result.output
    assert f"tiny: weights.hdf5 is now trusted as SHA-256 {now} (was {trusted})" in result.stderr
    assert weights.read_bytes() == server.files["tiny/weights.hdf5"]


def test_download_sizes_are_the_published_ones_and_a_damaged_record_is_shown(tmp_path, home, server):
    files = bilm_tf_files(tmp_path / "bilm")
    sizes = {name: {"bytes": len(data)} for name, data in files.items()}
    catalog = write_catalog(tmp_path / "sized.json", {"sized": bilm_entry(server, files, **sizes)})
    listed = runner.invoke(app, ["models", "--catalog", str(catalog)])
    assert row(listed.stdout, "sized").split()[4:6] == [f"{sum(map(len, files.values())) / 2**20:.1f}", "MiB"]
    assert runner.invoke(app, ["download", "sized", "--catalog", str(catalog)]).exit_code == 0
    (home / "sized" / "download.json").write_text("{", encoding="utf-8")
    listed = runner.invoke(app, ["models", "--catalog", str(catalog)])
    assert "damaged record (--retrust)" in row(listed.stdout, "sized")
    assert listed.stdout.rstrip().endswith("(0 models cached, 0.0 MiB)")
