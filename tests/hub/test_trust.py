"""Trust is never reset by accident: a damaged file, a damaged or missing record, or a changed server
file is refused, and only ``download NAME --retrust`` accepts a new version; record names stay inside
the model folder; a folder that shadows a catalog name is reported; catalog names cannot take the
cache's own working names, and a download deletes nothing but its own working folder."""

from __future__ import annotations

import hashlib
import json
import os
import warnings

import pytest
from model_server import bilm_entry, bilm_tf_files, write_catalog
from typer.testing import CliRunner
from util import writer_leftovers

from spacy_contextual.cli import app
from spacy_contextual.hub.cache import RECORD_NAME, CacheError, read_record
from spacy_contextual.hub.catalog import CATALOG_ENV, CatalogError, get_entry, read_catalog
from spacy_contextual.hub.fetch import FetchError, fetch, refetch
from spacy_contextual.hub.resolver import ShadowWarning, resolve_model_dir

pytestmark = pytest.mark.timeout(120)
runner = CliRunner()


@pytest.fixture(scope="module")
def bilm_files(tmp_path_factory):
    return bilm_tf_files(tmp_path_factory.mktemp("bilm_tf"))


@pytest.fixture
def cached(tmp_path, monkeypatch, home, server, bilm_files):
    """The model "tiny", downloaded once (trust on first use); returns its cache folder."""
    catalog = write_catalog(tmp_path / "catalog.json", {"tiny": bilm_entry(server, bilm_files)})
    monkeypatch.setenv(CATALOG_ENV, str(catalog))
    directory = fetch(get_entry("tiny"), progressbar=False)
    assert server.requests == {"tiny/options.json": 1, "tiny/weights.hdf5": 1}
    return directory


def damage(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_changed_server_file_is_refused_with_both_digests_until_retrust(cached, server, bilm_files):
    damage(cached / "weights.hdf5")
    with pytest.raises(CacheError, match="does not match its SHA-256 in download.json.*spacy-contextual download tiny"):
        fetch(get_entry("tiny"), progressbar=False)  # a load never downloads over a damaged copy
    trusted = hashlib.sha256(bilm_files["weights.hdf5"]).hexdigest()
    server.files["tiny/weights.hdf5"] = changed = bilm_files["weights.hdf5"] + b"new version"
    with pytest.raises(FetchError) as caught:
        refetch(get_entry("tiny"), progressbar=False)  # `download`: checked against the recorded digest
    message = str(caught.value)
    assert f"wrong SHA-256 {hashlib.sha256(changed).hexdigest()}, expected {trusted}" in message
    assert "spacy-contextual download tiny --retrust accepts the new one" in message and "\n" not in message
    assert read_record(cached)["files"]["weights.hdf5"]["sha256"] == trusted  # the record is unchanged
    reports = []
    assert refetch(get_entry("tiny"), reports.append, progressbar=False, retrust=True) == cached
    assert (cached / "weights.hdf5").read_bytes() == changed
    assert read_record(cached)["downloads"]["weights.hdf5"]["sha256"] == hashlib.sha256(changed).hexdigest()
    assert f"tiny: weights.hdf5 is now trusted as SHA-256 {hashlib.sha256(changed).hexdigest()} (was {trusted})" in (
        reports
    )
    assert writer_leftovers(cached.parent) == []


def test_download_repairs_a_damaged_file_when_the_server_still_sends_the_trusted_one(cached, bilm_files):
    damage(cached / "weights.hdf5")
    assert refetch(get_entry("tiny"), progressbar=False) == cached
    assert (cached / "weights.hdf5").read_bytes() == bilm_files["weights.hdf5"]


@pytest.mark.parametrize(
    "spoil, reason",
    [
        (lambda record: record.write_text("{", encoding="utf-8"), "is not valid JSON"),
        (lambda record: rewrite(record, files={}), "it lists no files, so nothing could be checked"),
        (lambda record: rewrite(record, downloads={"weights.hdf5": {"sha256": "?"}}), "64-digit sha256"),
    ],
    ids=["damaged", "no-files", "bad-digest"],
)
def test_a_damaged_or_missing_record_is_refused_and_download_does_not_trust_a_changed_server_file(
    cached, server, bilm_files, spoil, reason
):
    spoil(cached / RECORD_NAME)
    server.files["tiny/weights.hdf5"] = bilm_files["weights.hdf5"] + b"changed"  # whatever the server sends now
    requests = sum(server.requests.values())
    for attempt in (lambda: fetch(get_entry("tiny"), progressbar=False), lambda: refetch(get_entry("tiny"))):
        with pytest.raises(CacheError, match=reason) as caught:
            attempt()
        assert "`spacy-contextual download tiny --retrust` downloads it again and trusts" in str(caught.value)
    assert sum(server.requests.values()) == requests  # nothing was downloaded, nothing trusted
    result = runner.invoke(app, ["download", "tiny"])
    assert result.exit_code == 1 and "--retrust" in result.stderr and "Traceback" not in result.output
    result = runner.invoke(app, ["download", "tiny", "--retrust"])
    assert result.exit_code == 0, result.output
    assert (cached / "weights.hdf5").read_bytes() == server.files["tiny/weights.hdf5"]
    assert read_record(cached) is not None


def test_a_folder_without_a_record_is_refused_and_never_replaced(cached, server, bilm_files):
    (cached / RECORD_NAME).unlink()  # or a folder of the user's, in a cache folder they chose
    server.files["tiny/weights.hdf5"] = bilm_files["weights.hdf5"] + b"changed"
    requests = sum(server.requests.values())
    for retrust in (False, True):
        with pytest.raises(CacheError, match="has no download.json, the record of the files trusted") as caught:
            refetch(get_entry("tiny"), progressbar=False, retrust=retrust)
        assert "it is never deleted here); move it away, then `spacy-contextual download tiny`" in str(caught.value)
    with pytest.raises(CacheError, match="has no download.json"):
        fetch(get_entry("tiny"), progressbar=False)
    assert sum(server.requests.values()) == requests
    assert (cached / "weights.hdf5").read_bytes() == bilm_files["weights.hdf5"]  # untouched
    cached.rename(cached.with_name("moved"))
    assert (fetch(get_entry("tiny"), progressbar=False) / "weights.hdf5").read_bytes() == server.files[
        "tiny/weights.hdf5"
    ]


def test_an_empty_folder_in_the_cache_is_filled(tmp_path, monkeypatch, home, server, bilm_files):
    (home / "tiny").mkdir(parents=True)
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "c.json", {"tiny": bilm_entry(server, bilm_files)})))
    assert (fetch(get_entry("tiny"), progressbar=False) / "weights.hdf5").read_bytes() == bilm_files["weights.hdf5"]


def rewrite(path, **fields) -> None:
    record = json.loads(path.read_text(encoding="utf-8"))
    record.update(fields)
    path.write_text(json.dumps(record), encoding="utf-8")


@pytest.mark.parametrize("name", ["../outside.txt", "../../outside.txt", "/etc/hostname", "a/../../outside.txt"])
def test_record_names_outside_the_model_folder_are_refused(cached, name):
    outside = cached.parent / "outside.txt"
    outside.write_text("not the model's", encoding="utf-8")
    entry = {"bytes": outside.stat().st_size, "sha256": hashlib.sha256(outside.read_bytes()).hexdigest()}
    record = json.loads((cached / RECORD_NAME).read_text(encoding="utf-8"))
    rewrite(cached / RECORD_NAME, files={**record["files"], name: entry})
    with pytest.raises(CacheError, match="which is not a file inside") as caught:
        fetch(get_entry("tiny"), progressbar=False)
    assert "\n" not in str(caught.value) and "--retrust" in str(caught.value)


def test_a_link_in_the_model_folder_to_a_file_outside_is_refused(cached):
    outside = cached.parent / "outside.txt"
    outside.write_bytes((cached / "options.json").read_bytes())
    (cached / "options.json").unlink()
    (cached / "options.json").symlink_to(outside)
    with pytest.raises(CacheError, match="is a link to .*outside.txt, outside"):
        fetch(get_entry("tiny"), progressbar=False)


def test_a_folder_that_shadows_a_catalog_name_is_reported_and_the_name_means_the_catalog_model(
    cached, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny").mkdir()
    with pytest.warns(ShadowWarning, match=r"'tiny' is a model of the catalog, and also the folder \./tiny here"):
        assert resolve_model_dir("elmo", "tiny") == cached
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShadowWarning)  # a path means the folder, silently
        assert resolve_model_dir("elmo", "./tiny").resolve() == tmp_path / "tiny"
        assert resolve_model_dir("elmo", str(tmp_path / "tiny")) == tmp_path / "tiny"


@pytest.mark.parametrize(
    "name", ["foo.tmp", "foo.old", "foo.new", "foo.lock", "foo.owner", ".foo", "foo.abc.spacy-contextual-new"]
)
def test_catalog_names_cannot_take_the_caches_own_names(tmp_path, name):
    entry = {"encoder": "elmo", "format": "bilm_tf", "files": {"w": {"url": "http://127.0.0.1:9/w"}}}
    with pytest.raises(CatalogError, match="model name") as caught:
        read_catalog(write_catalog(tmp_path / "catalog.json", {name: entry}))
    assert "\n" not in str(caught.value)


def test_a_download_deletes_nothing_but_its_own_working_folder(tmp_path, monkeypatch, home, server, bilm_files):
    home.mkdir(parents=True)
    kept = [home / "tiny.tmp" / "keep.txt", home / "tiny.old" / "keep.txt", home / ".tiny.lock", home / "tiny.x" / "k"]
    for path in kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the user's", encoding="utf-8")
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "c.json", {"tiny": bilm_entry(server, bilm_files)})))
    damage_after = fetch(get_entry("tiny"), progressbar=False)
    damage(damage_after / "weights.hdf5")
    refetch(get_entry("tiny"), progressbar=False)
    refetch(get_entry("tiny"), progressbar=False, retrust=True)
    assert all(path.read_text(encoding="utf-8") == "the user's" for path in kept)
    assert writer_leftovers(home) == []
    assert sorted(os.listdir(home)) == sorted([".locks", ".tiny.lock", "tiny", "tiny.old", "tiny.tmp", "tiny.x"])


def test_a_file_the_record_does_not_list_is_refused(cached):
    record = json.loads((cached / RECORD_NAME).read_text(encoding="utf-8"))
    del record["files"]["weights.hdf5"]  # the entry gone, the file (perhaps replaced) still read by the loader
    (cached / RECORD_NAME).write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(CacheError, match="weights.hdf5 is not listed in download.json, so it cannot be checked"):
        fetch(get_entry("tiny"), progressbar=False)
    assert refetch(get_entry("tiny"), progressbar=False) == cached  # the record is intact: download repairs it
    assert "weights.hdf5" in read_record(cached)["files"]
