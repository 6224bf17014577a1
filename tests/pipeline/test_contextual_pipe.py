"""The bundled ELMo and CoVe components at real size: nlp.pipe with worker processes (forked and
spawned) gives one process's results, empty, exotic and huge docs, and to_disk/spacy.load round trips."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import numpy as np
import pytest
import spacy
import torch
from spacy.language import Language
from util import KINDS, build_listener_pipeline, layers_of, train_steps

from spacy_contextual.hub.resolver import bundled_model_dir

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


TEXTS = [
    "The bank of the river was steep after the rain .",
    "I deposited the money at the bank yesterday .",
    "",
    "   ",
    "Ein Haus 🏠 mit 漢字 und café .",
    "A man rides a horse along the beach while two dogs run behind him .",
] * 4


@Language.component("reliability_threads")
def record_threads(doc):
    doc.user_data["torch_threads"] = torch.get_num_threads()
    return doc


@pytest.fixture
def default_threads():
    """The parent at (at least) two torch threads with a live OpenMP team, as by default on a
    multi-core machine; afterwards no worker may be left behind."""
    torch.set_num_threads(max(2, len(os.sched_getaffinity(0))))
    torch.nn.functional.conv1d(torch.randn(8, 64, 512), torch.randn(64, 64, 5))  # starts the OpenMP team
    yield torch.get_num_threads()
    for child in multiprocessing.active_children():
        child.kill()
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def one_process(pipelines):
    return {kind: [layers_of(doc, kind) for doc in pipelines[kind].pipe(TEXTS)] for kind in KINDS}


@pytest.mark.integration
@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("parent", ["initialized", "processed", "spacy.load"])
def test_n_process_2_finishes_and_matches_one_process(pipelines, one_process, kind, parent, default_threads, tmp_path):
    nlp, single = pipelines[kind], one_process[kind]
    if parent == "spacy.load":
        nlp.to_disk(tmp_path / kind)
        nlp = spacy.load(tmp_path / kind)
    elif parent == "processed":
        list(nlp.pipe(TEXTS[:6], batch_size=3))
    nlp.add_pipe("reliability_threads")
    try:
        docs = list(nlp.pipe(TEXTS, n_process=2, batch_size=4))
    finally:
        nlp.remove_pipe("reliability_threads")
    assert [doc.text for doc in docs] == TEXTS
    for expected, doc in zip(single, docs, strict=True):
        np.testing.assert_allclose(layers_of(doc, kind), expected, atol=1e-5)
    worker_threads = {doc.user_data["torch_threads"] for doc in docs}
    assert max(worker_threads) * 2 <= default_threads  # N processes x threads <= the parent's threads


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_n_process_2_with_trained_listeners_after_spacy_load(default_threads, tmp_path):
    """A trained pipeline (bundled ELMo, a tagger and a textcat each listening with its own mix),
    saved and loaded: workers give the tags, categories and layers of one process."""
    nlp, examples, optimizer = build_listener_pipeline(bundled_model_dir("elmo"))
    train_steps(nlp, examples, optimizer, 3)
    nlp.to_disk(tmp_path / "trained")
    nlp = spacy.load(tmp_path / "trained")
    texts = [text for text in TEXTS if text.strip()]
    single = list(nlp.pipe(texts))
    docs = list(nlp.pipe(texts, n_process=2, batch_size=3))
    for expected, doc in zip(single, docs, strict=True):
        assert [t.tag_ for t in doc] == [t.tag_ for t in expected]
        assert doc.cats == pytest.approx(expected.cats, abs=1e-5)
        np.testing.assert_allclose(layers_of(doc, "elmo"), layers_of(expected, "elmo"), atol=1e-5)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_n_process_with_spawned_workers(tmp_path):
    """Spawned workers (the default start method on Python >= 3.14 is forkserver) receive the
    component pickled and set their thread share."""
    script = tmp_path / "spawned.py"
    script.write_text(
        "import multiprocessing, spacy, numpy as np\n"
        "if __name__ == '__main__':\n"
        "    multiprocessing.set_start_method('spawn')\n"
        f"    texts = {TEXTS[:6]!r}\n"
        "    for kind in ('elmo', 'cove'):\n"
        "        nlp = spacy.blank('en'); nlp.add_pipe(kind); nlp.initialize()\n"
        "        one = [d._.get(kind + '_data').layers for d in nlp.pipe(texts)]\n"
        "        two = [d._.get(kind + '_data').layers for d in nlp.pipe(texts, n_process=2, batch_size=2)]\n"
        "        assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(one, two))\n"
        "    print('spawned ok')\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=280)
    assert done.returncode == 0 and "spawned ok" in done.stdout, done.stderr[-3000:]


@pytest.mark.parametrize("kind", KINDS)
def test_empty_whitespace_exotic_and_huge_docs(pipelines, kind):
    nlp = pipelines[kind]
    for text in ("", "   \n\t ", "🏠🎉 漢字かな交じり文 ☃", "x" * 10_000 + " bank ."):
        doc = nlp(text)
        assert layers_of(doc, kind).shape[1] == len(doc) and np.isfinite(layers_of(doc, kind)).all()
    doc = nlp(" ".join(["the river bank was steep ."] * 700))  # 4,200 tokens (100,000: --slow)
    assert layers_of(doc, kind).shape[1] == len(doc) == 4_200


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_100000_token_doc(pipelines, kind):
    doc = pipelines[kind](" ".join(["the river bank was steep ."] * 16_667))
    assert layers_of(doc, kind).shape[1] == len(doc) > 100_000 and np.isfinite(layers_of(doc, kind)).all()


@pytest.mark.parametrize("kind", KINDS)
def test_to_disk_and_spacy_load_are_bit_identical(kind, tmp_path):
    nlp = spacy.blank("en")  # not the shared pipeline: its caches were filled at other thread counts
    nlp.add_pipe(kind)
    nlp.initialize()
    nlp.to_disk(tmp_path / kind)
    loaded = spacy.load(tmp_path / kind)
    for text in TEXTS[:5]:
        assert np.array_equal(layers_of(nlp(text), kind), layers_of(loaded(text), kind))
