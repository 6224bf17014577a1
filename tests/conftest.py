"""Shared fixtures (the AllenNLP tiny anchor, a tiny model directory), the --slow option and the test
tiers; the helpers behind them are in util.py.

Tiers: ``-m "not integration"`` is the fast in-process tier. A test is ``integration`` when it starts a
process (a subprocess, a multiprocessing worker: ``nlp.pipe(n_process=2)``, torchrun), serves files
(the ``server`` fixture), drives a browser, runs ``spacy train`` or trains a model end to end. Tests using
the server fixture are marked here, the others in their modules; a test that starts a process without
the mark fails, so the fast tier stays in-process by construction."""

from __future__ import annotations

import functools
import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
import util
from util import FIXTURES, KINDS, NOSKIP, tiny_bilm, torch_threads


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False, help="also run tests marked slow")


INTEGRATION_FIXTURES = {"server"}  # a loopback HTTP server
PROBES = ("lscpu",)  # what a library runs to count cores (joblib's loky), not a process of the test


def pytest_collection_modifyitems(config, items):
    for item in items:
        if INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
    if not util.SHARED.is_dir():  # a checkout without ../shared: a test whose fixtures read it is skipped
        for item in items:
            reading = fixture_reading_shared(item)
            if reading is not None:
                reason = f"its fixture {reading} needs ../shared ({util.SHARED}: the project's data and fixtures)"
                item.add_marker(pytest.mark.skip(reason=reason))
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


class NeedsShared(pytest.Module):
    """A test module that reads ../shared in a checkout without it: skipped whole, with the reason, before it is
    imported (a module may read a fixture at import time)."""

    def collect(self):
        module = self.path.relative_to(util.REPO)
        reason = f"{module} needs ../shared ({util.SHARED}: the project's data and fixtures)"
        pytest.skip(reason, allow_module_level=True)


def pytest_pycollect_makemodule(module_path, parent):
    if not util.SHARED.is_dir() and reads_shared(module_path):
        return NeedsShared.from_parent(parent, path=module_path)
    return None


# util's paths into ../shared, and model_server's helper that zips one of them
SHARED_NAMES = re.compile(r"\b(SHARED|DATA|FIXTURES|NOSKIP|SKIP|MANYLANGS_MODEL|MANYLANGS_FIXTURE|manylangs_zip)\b")


@functools.cache
def reads_shared(module: Path) -> bool:
    """Whether a test module reads ../shared: it names one of ``SHARED_NAMES``."""
    return bool(SHARED_NAMES.search(module.read_text(encoding="utf-8")))


def fixture_reading_shared(item) -> str | None:
    """The first fixture ``item`` uses (itself or through another) whose code reads ../shared: it names util's
    paths into it, or a global of its module that is a path inside it (``CORPUS = DATA / "lm_corpus"``)."""
    for name, definitions in item._fixtureinfo.name2fixturedefs.items():
        if any(code_reads_shared(definition.func) for definition in definitions):
            return name
    return None


@functools.cache
def code_reads_shared(function) -> bool:
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):  # pytest's own fixtures
        return False
    shared = str(util.SHARED)
    named_paths = (function.__globals__.get(name) for name in function.__code__.co_names)
    return bool(SHARED_NAMES.search(source)) or any(
        isinstance(value, Path) and str(value).startswith(shared) for value in named_paths
    )


@pytest.fixture(autouse=True)
def in_process_unless_integration(request, monkeypatch):
    """A test outside the integration tier may not start a process (see the module docstring)."""
    if request.node.get_closest_marker("integration"):
        yield
        return
    import multiprocessing.process
    import subprocess

    started = []
    execute_child, start = subprocess.Popen._execute_child, multiprocessing.process.BaseProcess.start

    def record_child(self, args, *rest, **kwargs):
        command = args if isinstance(args, str) else " ".join(map(str, args))
        if not command.startswith(PROBES):
            started.append(command[:120])
        return execute_child(self, args, *rest, **kwargs)

    def record_start(self):
        started.append(f"multiprocessing {self.name}")
        return start(self)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", record_child)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", record_start)
    yield
    if started:
        pytest.fail(f"this test starts a process ({started[0]}): mark it @pytest.mark.integration", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def fused_lstm_cell():
    """The fused LSTM cell operator, built (a compiler run, the first time on a machine) or loaded from
    torch's extension cache once, before any test: setting up, not a process a test starts. Where it
    cannot be built, the tests that need it skip with the reason (``tests/models/test_fused_cell.py``)."""
    from spacy_contextual.models.fused_cell import cell_operator

    cell_operator()


@pytest.fixture(autouse=True)
def no_model_downloads(tmp_path_factory, monkeypatch):
    """No test downloads a model: offline, with an empty cache of its own; the download tests serve
    their files on 127.0.0.1 and go online through the ``home`` fixture."""
    from spacy_contextual.hub.cache import HOME_ENV, OFFLINE_ENV

    monkeypatch.setenv(OFFLINE_ENV, "1")
    monkeypatch.setenv(HOME_ENV, str(tmp_path_factory.getbasetemp() / "model_cache"))


@pytest.fixture(scope="session")
def tiny_anchor():
    """The AllenNLP 2.10.1 reference for a random tiny model: (dir, meta, reference arrays)."""
    root = FIXTURES / "tiny_anchor"
    meta = json.loads((root / "meta.json").read_text())
    return root, meta, np.load(root / "reference.npz")


@pytest.fixture
def tiny_model_dir(tmp_path):
    from spacy_contextual.formats.bilm_dir import save_bilm

    return save_bilm(tiny_bilm(), tmp_path / "tiny_elmo")


@pytest.fixture
def one_thread():
    with torch_threads(1):
        yield


@pytest.fixture
def exact_cuda():
    """CUDA in full float32 for comparisons with the CPU at 1e-4: no TF32 (cuDNN's default for
    convolutions and RNNs on recent GPUs) during the test."""
    from spacy_contextual.devices import tf32

    with tf32(False):
        yield


@pytest.fixture(scope="module")
def one_thread_per_module():
    """One torch thread for a whole module (the tests share the machine), for modules that load the
    bundled models once and share them."""
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def pipelines():
    """Blank English pipelines with the bundled ELMo and CoVe components, shared by a module."""
    import spacy

    nlps = {}
    for kind in KINDS:
        nlps[kind] = spacy.blank("en")
        nlps[kind].add_pipe(kind)
        nlps[kind].initialize()
    return nlps


@pytest.fixture(scope="module")
def embedders():
    """The bundled ELMo and CoVe embedders, shared by a module."""
    from spacy_contextual.embedders import load_encoder

    return {kind: load_encoder(kind, "default") for kind in KINDS}


@pytest.fixture(scope="module")
def noskip_dir(tmp_path_factory):
    """Our model directory holding the bilm-tf fixture without skip connections."""
    from spacy_contextual.formats.bilm_dir import save_bilm
    from spacy_contextual.formats.bilm_tf import load_bilm_tf

    bilm = load_bilm_tf(NOSKIP / "options.json", NOSKIP / "lm_weights.hdf5")
    return save_bilm(bilm, tmp_path_factory.mktemp("noskip") / "model")


@pytest.fixture
def server():
    """A loopback HTTP server of model files (``model_server.py``), stopped after the test."""
    from model_server import ModelServer

    with ModelServer() as running:
        yield running


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty model cache for the test, online, with a short server timeout and no user catalog."""
    from spacy_contextual.hub.cache import HOME_ENV, OFFLINE_ENV
    from spacy_contextual.hub.catalog import CATALOG_ENV
    from spacy_contextual.hub.limits import TIMEOUT_ENV

    monkeypatch.setenv(HOME_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    monkeypatch.setenv(TIMEOUT_ENV, "10")
    monkeypatch.setenv(CATALOG_ENV, "")  # --catalog sets it: restored after each test
    return tmp_path / "cache"
