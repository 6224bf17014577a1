"""Fetching catalog models into the cache, against a catalog served from a loopback server: by name,
each published layout, corrupted bytes, HTTP failures, a kill mid-download, two processes at once,
offline mode, a relocated cache, and a pipeline built from a named model loaded with the network off."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest
import spacy
from model_server import (
    MANYLANGS_MODEL,
    bilm_entry,
    bilm_tf_files,
    cove_pth_bytes,
    glove_zip,
    manylangs_zip,
    write_catalog,
    zip_bytes,
)
from util import tiny_bilm, tiny_elmo_dir, tiny_listener_pipeline, writer_leftovers

from spacy_contextual.hub.archive import ArchiveError, unpack_zip
from spacy_contextual.hub.cache import (
    HOME_ENV,
    OFFLINE_ENV,
    RECORD_NAME,
    CacheError,
    hash_status,
    model_cache_dir,
    read_record,
)
from spacy_contextual.hub.catalog import CATALOG_ENV, get_entry
from spacy_contextual.hub.fetch import TIMEOUT_ENV, FetchError, fetch
from spacy_contextual.hub.resolver import resolve_model_dir
from spacy_contextual.writer import MARK

pytestmark = pytest.mark.timeout(120)
SENTENCES = [["The", "bank", "."], ["a", "river", "bank", "of", "the", "river"]]
FETCH_SCRIPT = (
    "from spacy_contextual.hub.catalog import get_entry\n"
    "from spacy_contextual.hub.fetch import fetch\n"
    "print(fetch(get_entry({name!r}), progressbar=False))\n"
)


@pytest.fixture(scope="module")
def bilm_files(tmp_path_factory):
    return bilm_tf_files(tmp_path_factory.mktemp("bilm_tf"))


def use_catalog(tmp_path, monkeypatch, models: dict):
    path = write_catalog(tmp_path / "catalog.json", models)
    monkeypatch.setenv(CATALOG_ENV, str(path))
    return path


def assert_nothing_partial(home, name):
    assert not model_cache_dir(name).exists()
    assert writer_leftovers(home) == []


# -- each published layout, by name ---------------------------------------------------------------


def test_bilm_tf_pair_by_name_loads_and_is_fetched_once(tmp_path, monkeypatch, home, server, bilm_files):
    from spacy_contextual.embedders import load_encoder
    from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder

    use_catalog(tmp_path, monkeypatch, {"tiny": bilm_entry(server, bilm_files)})
    directory = resolve_model_dir("elmo", "tiny")
    assert directory == home / "tiny"
    assert sorted(p.name for p in directory.iterdir()) == [RECORD_NAME, "options.json", "weights.hdf5"]
    fetched = load_encoder("elmo", "tiny")  # by name: the cached bilm-tf pair, recognised by its files
    expected = ElmoEmbedder(tiny_bilm()).embed_sentences(SENTENCES)
    for ours, reference in zip(fetched.embed_sentences(SENTENCES), expected, strict=True):
        np.testing.assert_array_equal(ours, reference)
    record = read_record(directory)
    assert record["downloads"]["weights.hdf5"]["check"] == "trust-on-first-use"
    assert hash_status(get_entry("tiny"), record) == "trust-on-first-use"
    assert resolve_model_dir("elmo", "tiny") == directory  # from the cache: no second request
    assert server.requests == {"tiny/options.json": 1, "tiny/weights.hdf5": 1}


def test_manylangs_archive_is_unpacked_without_its_folder(tmp_path, monkeypatch, home, server):
    url = server.add("11/144.zip", manylangs_zip("en.model"))
    entry = {"encoder": "elmo", "format": "manylangs", "files": {"144.zip": {"url": url, "unpack": True}}}
    use_catalog(tmp_path, monkeypatch, {"many-en": entry})
    directory = resolve_model_dir("elmo", "many-en")
    for path in MANYLANGS_MODEL.iterdir():
        assert (directory / path.name).read_bytes() == path.read_bytes()
    assert "144.zip" not in {p.name for p in directory.iterdir()}
    assert read_record(directory)["downloads"]["144.zip"]["sha256"] == hashlib.sha256(manylangs_zip()).hexdigest()
    from spacy_contextual.embedders import load_encoder

    sentences = json.loads((MANYLANGS_MODEL.parent / "sentences.json").read_text(encoding="utf-8"))[:5]
    reference = np.load(MANYLANGS_MODEL.parent / "reference_all.npz")
    for i, layers in enumerate(load_encoder("elmo", "many-en").embed_sentences(sentences)):
        np.testing.assert_allclose(layers, reference[str(i)], atol=1e-5, rtol=1e-5)


def test_cove_pth_hash_prefix_is_checked_and_the_files_load(tmp_path, monkeypatch, home, server):
    from spacy_contextual.embedders import load_encoder

    pth = cove_pth_bytes()
    prefix = hashlib.sha256(pth).hexdigest()[:8]
    name = f"wmtlstm-{prefix}.pth"
    files = {
        name: {"url": server.add(f"cove/{name}", pth), "sha256_prefix": prefix},
        "glove.zip": {"url": server.add("glove.zip", glove_zip()), "unpack": True},
    }
    wrong = {**files, name: {**files[name], "sha256_prefix": "00000000"}}
    use_catalog(
        tmp_path,
        monkeypatch,
        {"cove-test": {"encoder": "cove", "format": "cove_pth", "files": files},
         "cove-wrong": {"encoder": "cove", "format": "cove_pth", "files": wrong}},
    )  # fmt: skip
    directory = resolve_model_dir("cove", "cove-test")
    assert (directory / "glove.test.300d.txt").is_file()
    embedder = load_encoder("cove", "cove-test")
    assert embedder.embed_sentences([["the", "bank", "."]])[0].shape[:2] == (3, 3)
    assert hash_status(get_entry("cove-test"), read_record(directory)).endswith(f"(+ published prefix {prefix})")
    with pytest.raises(FetchError, match=f"cove/{name}: wrong SHA-256 {prefix}.*published prefix is 00000000"):
        resolve_model_dir("cove", "cove-wrong")
    assert_nothing_partial(home, "cove-wrong")


def test_a_name_of_the_other_encoder_is_refused(tmp_path, monkeypatch, home, server, bilm_files):
    use_catalog(tmp_path, monkeypatch, {"tiny": bilm_entry(server, bilm_files)})
    with pytest.raises(ValueError, match="'tiny' is an ELMo model; this needs a CoVe model"):
        resolve_model_dir("cove", "tiny")
    assert server.requests == {}


# -- damaged bytes and failures -------------------------------------------------------------------


def test_corrupted_bytes_against_a_published_sha256(tmp_path, monkeypatch, home, server, bilm_files):
    digest = hashlib.sha256(bilm_files["weights.hdf5"]).hexdigest()
    entry = bilm_entry(server, bilm_files, mode="corrupt", **{"weights.hdf5": {"sha256": digest}})
    use_catalog(tmp_path, monkeypatch, {"tiny": entry})
    assert hash_status(get_entry("tiny"), None) == "none yet"  # options.json has no published digest
    with pytest.raises(FetchError) as caught:
        resolve_model_dir("elmo", "tiny")
    message = str(caught.value)
    corrupted = bytearray(bilm_files["weights.hdf5"])
    corrupted[-1] ^= 0xFF
    computed = hashlib.sha256(corrupted).hexdigest()  # the hash of what arrived, never a '?'
    assert f"{server.url('tiny/weights.hdf5')}: wrong SHA-256 {computed}, expected {digest} (published)" in message
    assert "\n" not in message and "?" not in message.replace(server.base, "")
    assert_nothing_partial(home, "tiny")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    "mode, cause",
    [
        ("404", "HTTP 404 Not Found"),
        ("500", "HTTP 500 Internal Server Error"),
        ("drop", "the connection dropped before the whole file arrived"),
        ("slow", "timed out"),
        ("refused", "connection refused"),
    ],
)
def test_a_failure_is_one_line_naming_the_url_and_the_cause(
    tmp_path, monkeypatch, home, server, bilm_files, mode, cause
):
    monkeypatch.setenv(TIMEOUT_ENV, "0.5")
    server.stall = 5.0
    entry = bilm_entry(server, bilm_files)
    url = server.add("tiny/weights.hdf5", bilm_files["weights.hdf5"], mode)
    if mode == "refused":
        url = f"http://127.0.0.1:{free_port()}/tiny/weights.hdf5"
    entry["files"]["weights.hdf5"]["url"] = url
    use_catalog(tmp_path, monkeypatch, {"tiny": entry})
    with pytest.raises(FetchError) as caught:
        resolve_model_dir("elmo", "tiny")
    message = str(caught.value)
    assert message.startswith(f"could not download weights.hdf5: {url}: {cause}"), message
    assert "\n" not in message and len(message) < 300
    assert_nothing_partial(home, "tiny")


def test_a_mirror_is_used_when_the_first_url_fails(tmp_path, monkeypatch, home, server, bilm_files):
    entry = bilm_entry(server, bilm_files)
    mirror = server.add("mirror/weights.hdf5", bilm_files["weights.hdf5"])
    entry["files"]["weights.hdf5"] = {"url": server.url("gone/weights.hdf5"), "mirrors": [mirror]}
    use_catalog(tmp_path, monkeypatch, {"tiny": entry})
    directory = resolve_model_dir("elmo", "tiny")
    assert read_record(directory)["downloads"]["weights.hdf5"]["url"] == mirror


def test_a_published_size_is_checked_and_a_wrong_file_falls_back_to_the_mirror(
    tmp_path, monkeypatch, home, server, bilm_files
):
    weights = bilm_files["weights.hdf5"]
    entry = bilm_entry(server, bilm_files)
    short, mirror = server.add("short/weights.hdf5", weights[:-10]), server.add("mirror/weights.hdf5", weights)
    entry["files"]["weights.hdf5"] = {"url": short, "bytes": len(weights)}
    use_catalog(tmp_path, monkeypatch, {"tiny": entry})
    with pytest.raises(
        FetchError, match=f"{short}: {len(weights) - 10:,} bytes arrived, {len(weights):,} are published"
    ):
        resolve_model_dir("elmo", "tiny")
    assert_nothing_partial(home, "tiny")
    entry["files"]["weights.hdf5"]["mirrors"] = [mirror]
    use_catalog(tmp_path, monkeypatch, {"tiny": entry})
    assert read_record(resolve_model_dir("elmo", "tiny"))["downloads"]["weights.hdf5"]["url"] == mirror


def test_a_file_url_is_copied(tmp_path, monkeypatch, home, bilm_files):
    (tmp_path / "files").mkdir()
    files = {}
    for name, data in bilm_files.items():
        (tmp_path / "files" / name).write_bytes(data)
        files[name] = {"url": (tmp_path / "files" / name).as_uri()}
    use_catalog(tmp_path, monkeypatch, {"local": {"encoder": "elmo", "format": "bilm_tf", "files": files}})
    assert (resolve_model_dir("elmo", "local") / "weights.hdf5").read_bytes() == bilm_files["weights.hdf5"]


# -- processes: a kill mid-download, two at once --------------------------------------------------


def start_fetch(name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", FETCH_SCRIPT.format(name=name)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_kill_mid_download_leaves_nothing_that_is_used_and_a_rerun_completes(
    tmp_path, monkeypatch, home, server, bilm_files
):
    server.trickle_seconds = 30.0
    use_catalog(tmp_path, monkeypatch, {"tiny": bilm_entry(server, bilm_files)})
    server.modes["tiny/weights.hdf5"] = "trickle"
    process = start_fetch("tiny")
    deadline = time.monotonic() + 60
    while server.sent["tiny/weights.hdf5"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 0 < server.sent["tiny/weights.hdf5"] < len(bilm_files["weights.hdf5"])
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert not model_cache_dir("tiny").exists()  # never looks cached: only the working folder is left
    assert read_record(model_cache_dir("tiny")) is None
    server.modes["tiny/weights.hdf5"] = "ok"
    other = home / f".tiny.x.abcd1234{MARK}new"  # the working folder of another model, "tiny.x"
    other.mkdir()
    directory = fetch(get_entry("tiny"), progressbar=False)
    assert (directory / "weights.hdf5").read_bytes() == bilm_files["weights.hdf5"]
    assert writer_leftovers(home) == [other.name]  # the killed download's working folder is cleared under the lock
    assert server.requests["tiny/weights.hdf5"] == 2  # the rerun restarted the file from the beginning


def test_two_processes_asking_for_one_model_download_it_once(tmp_path, monkeypatch, home, server, bilm_files):
    server.trickle_seconds = 3.0
    use_catalog(tmp_path, monkeypatch, {"tiny": bilm_entry(server, bilm_files, mode="trickle")})
    processes = [start_fetch("tiny"), start_fetch("tiny")]
    outputs = [process.communicate(timeout=90) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    assert {out.strip() for out, _ in outputs} == {str(home / "tiny")}
    assert server.requests == {"tiny/options.json": 1, "tiny/weights.hdf5": 1}
    waited = [(i, err) for i, (_, err) in enumerate(outputs) if "is downloading it; waiting" in err]
    assert len(waited) == 1  # one waited for the other, and named it
    other = processes[1 - waited[0][0]].pid
    assert f"tiny: another process (pid {other} on {socket.gethostname()}, since " in waited[0][1]


# -- offline, a relocated cache, a saved pipeline ------------------------------------------------


def test_offline_mode_never_touches_the_network(tmp_path, monkeypatch, home, server, bilm_files):
    use_catalog(tmp_path, monkeypatch, {"tiny": bilm_entry(server, bilm_files)})
    monkeypatch.setenv(OFFLINE_ENV, "1")
    with pytest.raises(CacheError) as caught:
        resolve_model_dir("elmo", "tiny")
    message = str(caught.value)
    assert str(home) in message and "`spacy-contextual download tiny`" in message
    assert server.requests == {}
    monkeypatch.setenv(OFFLINE_ENV, "0")
    directory = resolve_model_dir("elmo", "tiny")
    monkeypatch.setenv(OFFLINE_ENV, "1")
    assert resolve_model_dir("elmo", "tiny") == directory
    assert sum(server.requests.values()) == 2


def test_a_copied_cache_works_offline_on_another_path(tmp_path, monkeypatch, home, server, bilm_files):
    from spacy_contextual.embedders import load_encoder

    use_catalog(tmp_path, monkeypatch, {"tiny": bilm_entry(server, bilm_files)})
    original = resolve_model_dir("elmo", "tiny")
    copy = tmp_path / "elsewhere" / "cache"
    shutil.copytree(home, copy)
    shutil.rmtree(home)
    monkeypatch.setenv(HOME_ENV, str(copy))
    monkeypatch.setenv(OFFLINE_ENV, "1")
    directory = resolve_model_dir("elmo", "tiny")
    assert directory == copy / "tiny" != original
    assert load_encoder("elmo", "tiny").embed_sentences(SENTENCES)[0].shape[1] == 3


def test_spacy_load_of_a_pipeline_built_from_a_named_model_needs_no_network(
    tmp_path, monkeypatch, home, server, one_thread
):
    model = tiny_elmo_dir(tmp_path / "served")
    files = {p.name: {"url": server.add(f"ours/{p.name}", p.read_bytes())} for p in model.iterdir()}
    use_catalog(tmp_path, monkeypatch, {"tiny-ours": {"encoder": "elmo", "format": "model_dir", "files": files}})
    pipeline = tiny_listener_pipeline("tiny-ours", tmp_path / "pipeline")
    assert server.requests["ours/model.safetensors"] == 1
    expected = spacy.load(pipeline)("the dog runs")
    server.httpd.shutdown()  # no network at all from here on
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "empty-cache"))
    monkeypatch.setenv(OFFLINE_ENV, "1")
    doc = spacy.load(pipeline)("the dog runs")
    assert [t.tag_ for t in doc] == [t.tag_ for t in expected]
    np.testing.assert_array_equal(doc._.elmo_data.layers, expected._.elmo_data.layers)
    assert not (tmp_path / "empty-cache").exists()


# -- archives -------------------------------------------------------------------------------------


def symlink_zip() -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        link = zipfile.ZipInfo("model/link")
        link.external_attr = 0o120777 << 16  # a symbolic link to /etc/passwd
        bundle.writestr(link, "/etc/passwd")
    return buffer.getvalue()


@pytest.mark.parametrize(
    "archive, reason",
    [
        (zip_bytes({"../escape.txt": b"x"}), "a '..' component"),
        (zip_bytes({"model/../../escape.txt": b"x"}), "a '..' component"),
        (zip_bytes({"/tmp/absolute.txt": b"x"}), "an absolute path"),
        (zip_bytes({"C:/windows.txt": b"x"}), "an absolute path"),
        (symlink_zip(), "a symbolic link"),
    ],
)
def test_unsafe_archives_are_refused_before_anything_is_written(tmp_path, archive, reason):
    path = tmp_path / "bad.zip"
    path.write_bytes(archive)
    (tmp_path / "into").mkdir()
    with pytest.raises(ArchiveError, match=reason):
        unpack_zip(path, tmp_path / "into")
    assert list((tmp_path / "into").iterdir()) == []
    assert not (tmp_path / "escape.txt").exists()


def test_an_archive_larger_than_the_free_space_is_refused(tmp_path, monkeypatch):
    from spacy_contextual.hub import archive as archive_module

    path = tmp_path / "big.zip"
    path.write_bytes(zip_bytes({"model/weights.bin": b"0" * 4096}))
    monkeypatch.setattr(archive_module.shutil, "disk_usage", lambda _: SimpleNamespace(free=1000))
    (tmp_path / "into").mkdir()
    with pytest.raises(ArchiveError, match="unpacks to 0.00 GiB but .* has 0.00 GiB free"):
        unpack_zip(path, tmp_path / "into")
    assert list((tmp_path / "into").iterdir()) == []


def test_an_unsafe_archive_from_the_catalog_leaves_nothing(tmp_path, monkeypatch, home, server):
    url = server.add("evil.zip", zip_bytes({"../../escape.txt": b"x"}))
    entry = {"encoder": "elmo", "format": "manylangs", "files": {"evil.zip": {"url": url, "unpack": True}}}
    use_catalog(tmp_path, monkeypatch, {"evil": entry})
    with pytest.raises(ArchiveError, match="a '..' component"):
        resolve_model_dir("elmo", "evil")
    assert_nothing_partial(home, "evil")
    assert not any(p.name == "escape.txt" for p in tmp_path.rglob("*"))


def test_a_damaged_archive_is_one_clear_error(tmp_path, monkeypatch, home, server):
    data = manylangs_zip()
    url = server.add("cut.zip", data[: len(data) // 2])
    entry = {"encoder": "elmo", "format": "manylangs", "files": {"cut.zip": {"url": url, "unpack": True}}}
    use_catalog(tmp_path, monkeypatch, {"cut": entry})
    with pytest.raises(ArchiveError, match="is not a readable zip archive"):
        resolve_model_dir("elmo", "cut")
    assert_nothing_partial(home, "cut")


def test_cached_files_and_folders_get_the_permissions_of_the_umask(tmp_path, monkeypatch, home, server, bilm_files):
    """A team cache or a mirror is readable by others: 0644 files and 0755 folders under umask 0022,
    archives' members included (not the private 0600 of a temporary file renamed into place)."""
    url = server.add("11/144.zip", manylangs_zip("en.model"))
    many = {"encoder": "elmo", "format": "manylangs", "files": {"144.zip": {"url": url, "unpack": True}}}
    use_catalog(tmp_path, monkeypatch, {"tiny": bilm_entry(server, bilm_files), "many-en": many})
    previous = os.umask(0o022)
    try:
        folders = [fetch(get_entry(name), progressbar=False) for name in ("tiny", "many-en")]
    finally:
        os.umask(previous)
    modes = {p: p.stat().st_mode & 0o777 for folder in folders for p in [folder, *folder.rglob("*")]}
    assert {p.name: oct(m) for p, m in modes.items() if m != (0o755 if p.is_dir() else 0o644)} == {}
    assert sum(p.is_file() for p in modes) > 5


def test_a_failed_download_leaves_no_lock_file_beside_the_models(tmp_path, monkeypatch, home, server, bilm_files):
    use_catalog(tmp_path, monkeypatch, {"tiny": bilm_entry(server, bilm_files, mode="404")})
    with pytest.raises(FetchError):
        fetch(get_entry("tiny"), progressbar=False)
    assert os.listdir(home) == [".locks"]  # the locks' own folder, nothing named after the model beside it
    assert [p.name for p in (home / ".locks").iterdir() if p.suffix != ".lock"] == []  # no owner file left


def test_a_failed_tls_handshake_is_one_line(tmp_path, monkeypatch, home, server, bilm_files):
    entry = bilm_entry(server, bilm_files)
    url = server.url("tiny/weights.hdf5").replace("http://", "https://")  # a plain HTTP server answers TLS
    entry["files"]["weights.hdf5"]["url"] = url
    use_catalog(tmp_path, monkeypatch, {"tiny": entry})
    with pytest.raises(FetchError) as caught:
        resolve_model_dir("elmo", "tiny")
    assert str(caught.value) == (
        f"could not download weights.hdf5: {url}: the TLS connection failed (the server's certificate or handshake; "
        "is the clock right?)"
    )
