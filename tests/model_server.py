"""A loopback HTTP server for the download tests: serves files from memory on 127.0.0.1, counts the
requests per path, and misbehaves on demand (per path): "404", "500", "drop" (announces the full
length, sends half, closes), "slow" (sends the headers, then nothing for ``stall`` seconds),
"trickle" (the whole file in small pieces over ``trickle_seconds``), "corrupt" (one byte flipped).
The hostile modes: "endless" (no length, the file's bytes over and over until the client hangs up or
``endless_limit`` bytes are sent), "huge" (announces ``endless_limit`` bytes, then sends like
"endless"), "gzip" (the file gzip-compressed, sent with ``Content-Encoding: gzip`` whatever the
client asked for), "drip" (no length, one byte a second until the client hangs up), "drip-headers"
(the status line, then a header one byte a second), "digits" (a ``Content-Length`` of 5,000 digits). It
also serves as an HTTP proxy (the path of the URL asked for). No Range requests: pooch never sends one
(a killed download restarts from the beginning).

Also the random-weight files in each published layout that the tests serve, and a catalog for them.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import threading
import time
import zipfile
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from util import DATA

MANYLANGS_MODEL = DATA / "elmoformanylangs" / "model"


class ModelServer:
    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.modes: dict[str, str] = {}
        self.requests: Counter[str] = Counter()
        self.sent: Counter[str] = Counter()
        self.headers: dict[str, dict[str, str]] = {}  # the last request's headers, per path
        self.endless_limit = 1 << 30
        self.stall = 30.0
        self.trickle_seconds = 3.0
        handler = type("Handler", (_Handler,), {"owner": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, path: str) -> str:
        return f"{self.base}/{path}"

    def add(self, path: str, data: bytes, mode: str = "ok") -> str:
        self.files[path], self.modes[path] = data, mode
        return self.url(path)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    owner: ModelServer

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        server, path = self.owner, self.path.lstrip("/")
        if "://" in self.path:  # "GET http://host/path": it serves as the client's proxy
            path = self.path.split("://", 1)[1].partition("/")[2]
        server.requests[path] += 1
        mode = server.modes.get(path, "404")
        if path not in server.files or mode in ("404", "500"):
            self.send_error(500 if mode == "500" else 404)
            return
        server.headers[path] = dict(self.headers.items())
        if mode == "drip-headers":
            self._send(path, b"HTTP/1.0 200 OK\r\nX-Slow: ")
            self._drip(path, b"x")
            return
        data = server.files[path]
        if mode == "corrupt":
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        if mode == "gzip":
            data = gzip.compress(data, mtime=0)
        self.send_response(200)
        if mode == "gzip":
            self.send_header("Content-Encoding", "gzip")
        if mode == "huge":
            self.send_header("Content-Length", str(server.endless_limit))
        elif mode == "digits":
            self.send_header("Content-Length", "9" * 5000)
        elif mode not in ("endless", "drip"):
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        body = data
        try:
            if mode in ("endless", "huge"):
                while server.sent[path] < server.endless_limit:
                    self._send(path, body)
            elif mode == "drip":
                self._drip(path, body)
            elif mode == "drop":
                self._send(path, body[: len(body) // 2])
            elif mode == "slow":
                time.sleep(server.stall)
                self._send(path, body)
            elif mode == "trickle":
                pieces = 50
                step = max(1, len(body) // pieces)
                for offset in range(0, len(body), step):
                    self._send(path, body[offset : offset + step])
                    time.sleep(server.trickle_seconds / pieces)
            else:
                self._send(path, body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        if mode in ("drop", "endless", "huge", "drip", "drip-headers"):
            self.close_connection = True

    def _drip(self, path: str, data: bytes) -> None:
        """``data``, over and over, one byte a second until the client hangs up."""
        try:
            for offset in itertools.count():
                self._send(path, data[offset % len(data)].to_bytes(1, "big"))
                time.sleep(1.0)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, path: str, chunk: bytes) -> None:
        self.wfile.write(chunk)
        self.wfile.flush()
        self.owner.sent[path] += len(chunk)


# -- the files of each published layout, random weights --------------------------------------------


def bilm_tf_files(directory: Path) -> dict[str, bytes]:
    """options.json + weights.hdf5 of the tiny random biLM, as bilm-tf writes them."""
    from util import tiny_bilm

    from spacy_contextual.formats.bilm_tf import export_bilm_tf

    options, weights = export_bilm_tf(tiny_bilm(), directory)
    return {"options.json": options.read_bytes(), "weights.hdf5": weights.read_bytes()}


def manylangs_zip(folder: str | None = "en.model") -> bytes:
    """The ELMoForManyLangs fixture's files zipped (inside ``folder``, or at the top when None)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(MANYLANGS_MODEL.iterdir()):
            bundle.write(path, f"{folder}/{path.name}" if folder else path.name)
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return buffer.getvalue()


def cove_pth_bytes(seed: int = 0) -> bytes:
    """A random nn.LSTM(300, 300, 2, bidirectional) state dict, saved as salesforce's file is."""
    import torch

    torch.manual_seed(seed)
    buffer = io.BytesIO()
    lstm = torch.nn.LSTM(300, 300, num_layers=2, bidirectional=True).half()  # float16 like a small download
    torch.save(lstm.state_dict(), buffer)
    return buffer.getvalue()


def glove_zip(words=("the", "bank", "river", ".")) -> bytes:
    import numpy as np

    rows = np.random.default_rng(0).normal(size=(len(words), 300)).round(4)
    text = "".join(w + " " + " ".join(f"{v:g}" for v in row) + "\n" for w, row in zip(words, rows, strict=True))
    return zip_bytes({"glove.test.300d.txt": text.encode()})


def write_catalog(path: Path, models: dict) -> Path:
    path.write_text(json.dumps({"models": models}, indent=1), encoding="utf-8")
    return path


def bilm_entry(server: ModelServer, files: dict[str, bytes], prefix: str = "tiny", mode: str = "ok", **extra):
    """A catalog entry for a bilm-tf pair served at ``<prefix>/options.json`` and ``<prefix>/weights.hdf5``."""
    urls = {name: server.add(f"{prefix}/{name}", data, mode) for name, data in files.items()}
    entry = {"encoder": "elmo", "format": "bilm_tf", "language": "en", "source": server.base, "licence": "test"}
    entry["files"] = {name: {"url": url, **extra.get(name, {})} for name, url in urls.items()}
    return entry


def model_dir_entry(server: ModelServer, kind: str, directory: Path, prefix: str) -> dict:
    """A catalog entry serving the files of our model directory ``directory`` at ``<prefix>/<file>``."""
    files = {p.name: {"url": server.add(f"{prefix}/{p.name}", p.read_bytes())} for p in sorted(directory.iterdir())}
    return {"encoder": kind, "format": "model_dir", "files": files}
