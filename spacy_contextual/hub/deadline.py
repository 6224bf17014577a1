"""A deadline for one whole HTTP download, every wait included: the connection, the TLS handshake,
the status line and headers, the body. requests' timeout bounds each read, so a server that trickles
a byte at a time is never stopped by it; ``Deadline(seconds)`` is.

``deadline_session(deadline)`` is a requests session whose connections register their socket with
``deadline`` as they are made (a duplicate of it, so that the descriptor is never one that has been
closed and reused meanwhile); when the deadline passes, every registered socket is shut down, which
ends any wait for the server at once, and ``deadline.passed`` says why the download failed. Leaving
``with deadline`` stops the timer before the session closes its sockets.
"""

from __future__ import annotations

import socket
import threading


class Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.passed = False
        self._done = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._pass)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        with self._lock:
            self._done = True
            for sock in self._sockets:
                sock.close()  # our duplicates only: the connections close with their session

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock.dup())
            if self.passed:
                _shut(self._sockets[-1])

    def _pass(self) -> None:
        with self._lock:
            if self._done:
                return
            self.passed = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed by the server
        pass


def deadline_session(deadline: Deadline):
    """A requests session (no retries) whose http and https connections ``deadline`` watches, direct or
    through an http(s) proxy (a SOCKS proxy's connections are bounded by the read timeout only)."""
    import requests
    from urllib3 import connection, connectionpool

    def watched(base: type) -> type:
        class Watched(base):
            def _new_conn(self) -> socket.socket:  # the TCP socket, before any TLS handshake on it
                sock = super()._new_conn()
                deadline.watch(sock)
                return sock

        return Watched

    class Pool(connectionpool.HTTPConnectionPool):
        ConnectionCls = watched(connection.HTTPConnection)

    class TLSPool(connectionpool.HTTPSConnectionPool):
        ConnectionCls = watched(connection.HTTPSConnection)

    pools = {"http": Pool, "https": TLSPool}

    class Adapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *args, **kwargs) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = pools

        def proxy_manager_for(self, proxy, **kwargs):
            manager = super().proxy_manager_for(proxy, **kwargs)
            if not proxy.lower().startswith("socks"):
                manager.pool_classes_by_scheme = pools
            return manager

    session = requests.Session()
    session.mount("http://", Adapter(max_retries=0))
    session.mount("https://", Adapter(max_retries=0))
    return session
