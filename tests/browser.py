"""Serving the dashboard in the background and looking at it in headless Chromium (Debian's
``chromium`` + ``chromium-driver``, nothing downloaded): used by the browser test and by
``docs/make_screenshots.py``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHROMEDRIVER = "/usr/bin/chromedriver"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def served_app(
    script: Path, env: dict | None = None, startup_timeout: float = 90.0
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``streamlit run script`` on 127.0.0.1 at a free port; yields (url, server process) and stops
    exactly that process afterwards."""
    port = free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
        "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", "--client.toolbarMode", "minimal",
    ]  # fmt: skip
    log = tempfile.TemporaryFile()
    server = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if server.poll() is not None:
                log.seek(0)
                raise RuntimeError(
                    f"streamlit exited with {server.returncode}:\n{log.read().decode(errors='replace')[-3000:]}"
                )
            try:  # the local server is up once its port accepts a connection (nothing leaves this machine)
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"streamlit did not answer on {url} within {startup_timeout:.0f} s")
            time.sleep(0.3)
        yield url, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@contextmanager
def headless_chromium(width: int = 1500, height: int = 1100):
    """A Selenium driver for Debian's chromium, with a fresh profile directory."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = chromium_binary()
    if binary is None or not Path(CHROMEDRIVER).is_file():
        raise FileNotFoundError("chromium and chromium-driver are needed: apt-get install chromium chromium-driver")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()
