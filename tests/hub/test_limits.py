"""Downloads bounded while they stream, against a hostile loopback server: a body that never ends, an
announced size above the cap, a gzip body, a one-byte-a-second trickle, a lock held by another
process, and archives that are zip bombs, have too many members, are encrypted or use an unknown
compression method. Each stops early, leaves nothing behind, and is one line."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from model_server import write_catalog, zip_bytes
from util import writer_leftovers

from spacy_contextual.hub.archive import ArchiveError, unpack_zip
from spacy_contextual.hub.catalog import CATALOG_ENV, get_entry
from spacy_contextual.hub.fetch import FetchError, fetch
from spacy_contextual.hub.limits import DEADLINE_ENV, LOCK_WAIT_ENV, MAX_BYTES_ENV, MAX_UNPACKED_ENV
from spacy_contextual.hub.lock import LOCKS, LockWaitError

pytestmark = pytest.mark.timeout(60)
DATA = bytes(range(256)) * 4  # 1,024 bytes


def one_file_model(tmp_path, monkeypatch, server, mode: str, **spec) -> str:
    """A catalog of the model "m" with the one file "w.bin" served in ``mode``; returns its URL."""
    url = server.add("m/w.bin", DATA, mode)
    entry = {"encoder": "elmo", "format": "model_dir", "files": {"w.bin": {"url": url, **spec}}}
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "catalog.json", {"m": entry})))
    return url


def refused(home) -> str:
    with pytest.raises(FetchError) as caught:
        fetch(get_entry("m"), progressbar=False)
    message = str(caught.value)
    assert "\n" not in message
    assert not (home / "m").exists() and writer_leftovers(home) == []
    return message


def test_an_endless_body_stops_at_the_published_size(tmp_path, monkeypatch, home, server):
    url = one_file_model(tmp_path, monkeypatch, server, "endless", bytes=1000)
    started = time.monotonic()
    message = refused(home)
    assert (
        message
        == f"could not download w.bin: {url}: more than 1,000 bytes arrived, but 1,000 are published; stopped there"
    )
    assert time.monotonic() - started < 10
    assert server.sent["m/w.bin"] < 64 << 20  # the server stopped when the client hung up, long before its 1 GiB


def test_an_endless_body_of_unpublished_size_stops_at_the_ceiling_a_user_can_raise(tmp_path, monkeypatch, home, server):
    url = one_file_model(tmp_path, monkeypatch, server, "endless")
    monkeypatch.setenv(MAX_BYTES_ENV, "100000")
    message = refused(home)
    assert message.startswith(f"could not download w.bin: {url}: more than 100,000 bytes arrived; 100,000 bytes is")
    assert f"set {MAX_BYTES_ENV} to a larger number" in message
    server.modes["m/w.bin"] = "ok"
    assert (fetch(get_entry("m"), progressbar=False) / "w.bin").read_bytes() == DATA  # under the ceiling: fine


def test_an_announced_size_above_the_cap_is_refused_before_the_body(tmp_path, monkeypatch, home, server):
    server.endless_limit = 1 << 40
    url = one_file_model(tmp_path, monkeypatch, server, "huge", bytes=1000)
    message = refused(home)
    announced = f"the server announces {1 << 40:,} bytes, but 1,000 are published; stopped there"
    assert message == f"could not download w.bin: {url}: {announced}"


def test_a_gzip_body_is_never_expanded(tmp_path, monkeypatch, home, server):
    bomb = bytes(50 << 20)  # 50 MiB of zeros, about 50 KB gzipped
    url = server.add("m/w.bin", bomb, "gzip")
    entry = {"encoder": "elmo", "format": "model_dir", "files": {"w.bin": {"url": url}}}
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "catalog.json", {"m": entry})))
    monkeypatch.setenv(MAX_BYTES_ENV, str(1 << 20))
    directory = fetch(get_entry("m"), progressbar=False)  # stored as sent: the compressed bytes
    assert (directory / "w.bin").read_bytes() == gzip.compress(bomb, mtime=0) and (
        directory / "w.bin"
    ).stat().st_size < 1 << 20
    assert server.headers["m/w.bin"]["Accept-Encoding"] == "identity"


@pytest.mark.parametrize("mode", ["drip", "drip-headers"])
def test_a_trickle_stops_at_the_deadline_of_the_file(tmp_path, monkeypatch, home, server, mode):
    url = one_file_model(tmp_path, monkeypatch, server, mode)
    monkeypatch.setenv(DEADLINE_ENV, "2.5")
    started = time.monotonic()
    message = refused(home)
    assert time.monotonic() - started < 4.5  # each byte came within the 10 s read timeout: only the deadline stops it
    deadline = f"not complete after 2.5 s, the deadline for one file; stopped ({DEADLINE_ENV} sets the deadline)"
    assert message == f"could not download w.bin: {url}: {deadline}"


def test_a_trickle_through_a_proxy_stops_at_the_deadline_too(tmp_path, monkeypatch, home, server):
    server.add("m/w.bin", DATA, "drip")
    url = "http://models.example.invalid/m/w.bin"  # reached only through the proxy
    entry = {"encoder": "elmo", "format": "model_dir", "files": {"w.bin": {"url": url}}}
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "catalog.json", {"m": entry})))
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.base)
    monkeypatch.setenv(DEADLINE_ENV, "2.5")
    started = time.monotonic()
    assert refused(home).endswith(
        "not complete after 2.5 s, the deadline for one file; stopped (" + DEADLINE_ENV + " sets the deadline)"
    )
    assert time.monotonic() - started < 4.5 and server.requests["m/w.bin"] == 1


@pytest.mark.parametrize("value", ["abc", "0", "-5", "inf", "nan", "1e10"])
def test_a_limit_out_of_its_range_is_one_line(tmp_path, monkeypatch, home, server, value):
    one_file_model(tmp_path, monkeypatch, server, "ok")
    monkeypatch.setenv(DEADLINE_ENV, value)
    message = refused(home)
    assert message.endswith(
        f"{DEADLINE_ENV}={value!r} is not a number from 0.001 to 9,223,372,036: set one in that range, or unset it "
        "for the default (3,600)"
    )
    assert server.requests.get("m/w.bin", 0) == 0  # refused before the request


def test_an_announced_size_of_5000_digits_is_refused_as_too_large(tmp_path, monkeypatch, home, server):
    """Its digits are counted before int() reads them (Python refuses more than 4,300, with a traceback)."""
    url = one_file_model(tmp_path, monkeypatch, server, "digits", bytes=1024)
    assert refused(home) == (
        f"could not download w.bin: {url}: the server announces a size of 5,000 digits, but 1,024 are published; "
        "stopped there"
    )


HOLD_LOCK = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from spacy_contextual.hub.lock import model_lock\n"
    "with model_lock(Path(sys.argv[1]), 'm', print):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(60)\n"
)


def test_a_lock_held_by_another_process_is_waited_for_a_bounded_time_and_named(
    tmp_path, monkeypatch, home, server, capsys
):
    one_file_model(tmp_path, monkeypatch, server, "ok")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(home)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv(LOCK_WAIT_ENV, "1")
        started = time.monotonic()
        with pytest.raises(LockWaitError) as caught:
            fetch(get_entry("m"), progressbar=False)
        assert time.monotonic() - started < 10
    finally:
        holder.kill()
        holder.wait(timeout=30)
    message = str(caught.value)
    assert message.startswith(f"m: another process (pid {holder.pid} on ")
    assert "is still downloading it after 1 s of waiting" in message and LOCK_WAIT_ENV in message
    assert "\n" not in message and server.requests == {}
    assert f"(pid {holder.pid} on " in capsys.readouterr().err  # said while it waited, too
    assert fetch(get_entry("m"), progressbar=False).is_dir()  # the holder is gone: the lock is free
    assert sorted(p.name for p in (home / LOCKS).iterdir()) in ([], ["m.lock"])  # no owner file left


# -- archives -------------------------------------------------------------------------------------


def unpack(tmp_path, data: bytes) -> str:
    path = tmp_path / "a.zip"
    path.write_bytes(data)
    (tmp_path / "into").mkdir()
    with pytest.raises(ArchiveError) as caught:
        unpack_zip(path, tmp_path / "into")
    assert list((tmp_path / "into").iterdir()) == []
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def deflated(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return buffer.getvalue()


def patched(members: dict[str, bytes], **fields) -> bytes:
    """A zip whose central directory gives its members other ``fields`` (flag_bits, compress_type)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
        for info in bundle.infolist():
            for field, value in fields.items():
                setattr(info, field, getattr(info, field) | value if field == "flag_bits" else value)
    return buffer.getvalue()


def test_a_zip_bomb_by_ratio_is_refused(tmp_path):
    message = unpack(tmp_path, deflated({"model/weights.bin": bytes(8 << 20)}))
    assert f"{8 << 20:,} bytes packed into" in message and "more than 200:1, a zip bomb" in message


def test_many_small_members_at_a_bomb_ratio_are_refused_together(tmp_path):
    message = unpack(tmp_path, deflated({f"m/{i}.bin": bytes(1 << 19) for i in range(8)}))
    assert f"into {8 << 19:,} (more than 200:1, a zip bomb)" in message


def test_too_many_members_are_refused(tmp_path):
    message = unpack(tmp_path, zip_bytes({f"m/{i}": b"" for i in range(10_001)}))
    assert "holds 10,001 members, more than the 10,000 a model archive may have" in message


def test_the_total_unpacked_size_is_bounded_by_a_limit_a_user_can_raise(tmp_path, monkeypatch):
    monkeypatch.setenv(MAX_UNPACKED_ENV, "1000")
    message = unpack(tmp_path, zip_bytes({"m/a": b"x" * 600, "m/b": b"y" * 600}))
    assert "unpacks to 1,200 bytes, more than 1,000" in message and MAX_UNPACKED_ENV in message


def test_an_encrypted_member_is_one_line(tmp_path):
    message = unpack(tmp_path, patched({"m/weights.bin": b"x" * 100}, flag_bits=0x1))
    assert "'m/weights.bin', encrypted (a password-protected archive)" in message


def test_an_unknown_compression_method_is_one_line(tmp_path):
    message = unpack(tmp_path, patched({"m/weights.bin": b"x" * 100}, compress_type=99))
    assert "compressed with method 99, which is not stored, deflate, bzip2 or lzma" in message


def test_a_member_name_this_system_cannot_hold_is_one_line(tmp_path):
    message = unpack(tmp_path, zip_bytes({"m/" + "a" * 300: b"x"}))
    assert f"its member 'm/{'a' * 77}…' cannot be written here (File name too long)" in message


def test_an_encrypted_archive_from_the_catalog_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, home, server):
    url = server.add("m.zip", patched({"m/weights.bin": b"x" * 100}, flag_bits=0x1))
    entry = {"encoder": "elmo", "format": "manylangs", "files": {"m.zip": {"url": url, "unpack": True}}}
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "catalog.json", {"m": entry})))
    with pytest.raises(ArchiveError, match="encrypted") as caught:
        fetch(get_entry("m"), progressbar=False)
    assert "\n" not in str(caught.value)
    assert not (home / "m").exists() and writer_leftovers(home) == []


def test_a_file_url_is_capped_too(tmp_path, monkeypatch, home):
    source = tmp_path / "w.bin"
    source.write_bytes(DATA * 100)
    entry = {"encoder": "elmo", "format": "model_dir", "files": {"w.bin": {"url": source.as_uri(), "bytes": 1000}}}
    monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "catalog.json", {"m": entry})))
    message = refused(home)
    assert message.endswith("the file has more than 1,000 bytes, but 1,000 are published; stopped there")


def test_a_file_url_of_a_fifo_or_a_device_is_refused_without_blocking(tmp_path, monkeypatch, home):
    os.mkfifo(tmp_path / "fifo")
    for source in (tmp_path / "fifo", Path("/dev/zero")):
        entry = {"encoder": "elmo", "format": "model_dir", "files": {"w.bin": {"url": source.as_uri()}}}
        monkeypatch.setenv(CATALOG_ENV, str(write_catalog(tmp_path / "catalog.json", {"m": entry})))
        assert refused(home).endswith(
            f"{source} is not a regular file (a device, FIFO or folder); give the URL of a file"
        )
