"""What the benchmark scripts share: data paths, sentences, random models of the standard sizes,
timing, differences and FLOP counts.

The benchmarks import it as ``.common`` (each runs as ``python -m benchmarks.NAME`` from the repository
root). Importing it loads neither torch nor the package (``processes.py`` measures child processes and
must stay small): what needs them imports them inside.

The LSTM's FLOPs: 2 * positions * (P*4D + P*4D + D*P) per direction and layer (W_x x, W_h h, W_P),
positions with the sentence boundaries, padding not counted.
"""

from __future__ import annotations

import gzip
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from itertools import islice
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
LM_CORPUS = SHARED_DATA / "lm_corpus"
VALID = LM_CORPUS / "valid.txt.gz"
SIZES = {
    "tiny": dict(char_embedding_dim=4, filters=[[1, 4], [2, 8], [3, 16]], lstm_dim=32, projection_dim=16),  # dry runs
    "small": dict(lstm_dim=1024, projection_dim=128, n_highway=1),
    "original": dict(lstm_dim=4096, projection_dim=512, n_highway=2),  # bilm-tf's 2x4096_512
}


def open_text(path: Path):
    """A text file for reading, gzip-compressed (.gz) or plain."""
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def read_sentences(lines: int, path: Path = VALID) -> list[list[str]]:
    """The first ``lines`` whitespace-tokenised lines of a text file (.gz or plain)."""
    with open_text(path) as handle:
        return [line.split() for line in islice(handle, lines)]


def copy_lines(source: Path, target: Path, lines: int) -> Path:
    """The first ``lines`` lines of ``source`` (.gz or plain) written to the plain text file ``target``."""
    with open_text(source) as handle:
        target.write_text("".join(islice(handle, lines)), encoding="utf-8")
    return target


def random_bilm(size: str):
    """A biLM of one of ``SIZES`` with random weights (seed 0, halved so that activations stay moderate)."""
    import torch

    from spacy_contextual.models.bilm import BiLM, BiLMConfig

    torch.manual_seed(0)
    bilm = BiLM(BiLMConfig(**SIZES[size]))
    with torch.no_grad():
        for p in bilm.parameters():
            p.mul_(0.5)
    return bilm.eval()


def lstm_flops(config, positions: int) -> int:
    """FLOPs of the biLM's LSTM stacks over ``positions`` (boundaries included), both directions."""
    P, D = config.projection_dim, config.lstm_dim
    return 2 * positions * (P * 4 * D + P * 4 * D + D * P) * 2 * config.n_layers


def max_difference(a, b) -> float:
    """The largest absolute difference between two equally long sequences of arrays."""
    import numpy as np

    return max((float(np.abs(x - y).max()) if x.size else 0.0 for x, y in zip(a, b, strict=True)), default=0.0)


def elapsed(run: Callable[[], Any]) -> float:
    """Wall seconds of ``run()``."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def timed_embed(embedder, sentences: list[list[str]], context=None) -> tuple[list, float]:
    """``embedder.embed_sentences(sentences)`` after a warm-up on 8 of them, inside ``context`` if given:
    the arrays and the wall seconds."""
    with context or nullcontext():
        embedder.embed_sentences(sentences[:8])
        start = time.perf_counter()
        arrays = embedder.embed_sentences(sentences)
    return arrays, time.perf_counter() - start


class Timer:
    """Wall seconds spent inside wrapped functions, summed by phase (``seconds[phase]``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, function: Callable, phase: str) -> Callable:
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - start

        return timed

    def wrap_iterator(self, function: Callable, phase: str) -> Callable:
        """For a function that returns an iterator: the time of every step of it is the phase's."""

        def timed(*args, **kwargs) -> Iterator:
            items = iter(function(*args, **kwargs))
            while True:
                start = time.perf_counter()
                try:
                    item = next(items)
                except StopIteration:
                    return
                finally:
                    self.seconds[phase] += time.perf_counter() - start
                yield item

        return timed

    def time_method(self, owner: Any, name: str, phase: str, iterator: bool = False) -> None:
        """Replace ``owner.name`` (an instance's method, or a class's function or classmethod) by its timed self."""
        method = getattr(owner, name)
        setattr(owner, name, (self.wrap_iterator if iterator else self.wrap)(method, phase))


def model_files(size: str, lines: int, workdir: Path, corpus: Path = VALID) -> dict[str, Path]:
    """The first ``lines`` lines of ``corpus`` (lm_corpus valid: 5,000 lines; train for more) as ``input``, and a
    ``random_bilm(size)`` as our model directory (``model``) and as bilm-tf files (``options``, ``weights``),
    built once under ``workdir``."""
    from spacy_contextual.formats.bilm_dir import save_bilm
    from spacy_contextual.formats.bilm_tf import export_bilm_tf

    root = workdir / size
    paths = {
        "input": root / f"{corpus.name.split('.')[0]}_{lines}.txt",
        "model": root / "model",
        "options": root / "bilm_tf" / "options.json",
        "weights": root / "bilm_tf" / "weights.hdf5",
    }
    if not paths["input"].is_file():
        root.mkdir(parents=True, exist_ok=True)
        copy_lines(corpus, paths["input"], lines)
    if not paths["weights"].is_file():
        bilm = random_bilm(size)
        save_bilm(bilm, paths["model"])
        export_bilm_tf(bilm, paths["weights"].parent)
    return paths


MANYLANGS_EXTRA_WORDS = 100_000


def manylangs_model(workdir: Path) -> Path:
    """A random ELMoForManyLangs model directory of the published architecture (the shipped
    ``cnn_50_100_512_4096_sample.json``), with a word dictionary of 100,000 words, written once under
    ``workdir`` by the tests' writer (``spacy_contextual.testing``)."""
    from spacy_contextual.formats.manylangs import SHIPPED_ARCHITECTURES, read_architecture
    from spacy_contextual.testing import write_manylangs_dir

    path = workdir / "manylangs" / "model"
    if not (path / "encoder.pkl").is_file():
        published = read_architecture(SHIPPED_ARCHITECTURES / "cnn_50_100_512_4096_sample.json")
        sizes = ("word_dim", "char_dim", "filters", "n_highway", "projection_dim", "lstm_dim", "n_layers")
        write_manylangs_dir(
            path,
            **{key: published[key] for key in sizes},
            max_characters=published["max_characters_per_token"],
            clip=published["cell_clip"],
            activation=published["activation"],
            extra_words=MANYLANGS_EXTRA_WORDS,
        )
    return path
