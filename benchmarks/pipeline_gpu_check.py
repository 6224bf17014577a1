"""One prepared GPU check of the spaCy integration (about a minute; needs CUDA and CuPy, i.e.
``pip install cupy-cuda12x``): the ``elmo`` component follows spaCy onto the GPU.

1. ``spacy.require_gpu()`` then a pipeline with the bundled ELMo (or ``--model DIR``): the biLM is on
   CUDA, ``doc._.elmo_data.layers`` is a CuPy array, and the layers equal a CPU run to 1e-4.
2. ``configs/elmo_tagger.cfg``-style training steps on GPU with ``frozen = false``: the listener
   mixes and the biLM change, and the loss is finite.
3. words/s of ``nlp.pipe`` on the first ``--lines`` lines of lm_corpus valid, GPU (fp32 and with
   ``mixed_precision``) against CPU.

    python benchmarks/pipeline_gpu_check.py [--model DIR] [--lines 2000]
"""

from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

import numpy as np
import spacy
import torch
from spacy.training import Example
from thinc.api import NumpyOps, set_current_ops, set_gpu_allocator

from spacy_contextual.pipeline import elmo_model_dir_loader, layer_weights

VALID = Path(__file__).resolve().parents[2] / "shared" / "data" / "lm_corpus" / "valid.txt.gz"


def build(model_dir, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=config)
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(model_dir))
    return nlp


def words_per_second(nlp, texts) -> float:
    list(nlp.pipe(texts[:64]))  # warm-up
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    words = sum(len(doc) for doc in nlp.pipe(texts))
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return words / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="ELMo model directory (default: the bundled one)")
    parser.add_argument("--lines", type=int, default=2000)
    args = parser.parse_args()
    with gzip.open(VALID, "rt", encoding="utf-8") as lines:
        texts = [line.strip() for _, line in zip(range(args.lines), lines, strict=False)]

    cpu = build(args.model)
    cpu_layers = [doc._.elmo_data.layers for doc in cpu.pipe(texts[:200])]
    cpu_speed = words_per_second(cpu, texts)

    set_gpu_allocator("pytorch")
    spacy.require_gpu()
    gpu = build(args.model)
    device = next(gpu.get_pipe("elmo").model.shims[0].module.parameters()).device
    docs = list(gpu.pipe(texts[:200]))
    layers = docs[0]._.elmo_data.layers
    difference = max(
        float(np.abs(d._.elmo_data.layers.get() - c).max()) for d, c in zip(docs, cpu_layers, strict=True) if len(d)
    )
    print(
        f"1. biLM on {device}; layers are {type(layers).__module__}.{type(layers).__name__}; max |GPU - CPU| = "
        f"{difference:.2e}"
    )
    assert device.type == "cuda" and type(layers).__module__.startswith("cupy") and difference < 1e-4

    trained = spacy.blank("en")
    trained.add_pipe("elmo", config={"frozen": False})
    tagger = trained.add_pipe("tagger", config={"model": {
        "@architectures": "spacy.Tagger.v2",
        "tok2vec": {"@architectures": "spacy-contextual.ElmoListener.v1", "width": 64},
    }})  # fmt: skip
    tokens = [t.text for t in cpu.make_doc(texts[0])]
    examples = [
        Example.from_dict(trained.make_doc(texts[0]), {"tags": ["X" if i % 2 else "Y" for i in range(len(tokens))]})
    ]
    trained.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(args.model))
    optimizer = trained.initialize(lambda: examples)
    before = {k: v.clone() for k, v in trained.get_pipe("elmo").model.shims[0].module.state_dict().items()}
    losses = {}
    for _ in range(3):
        trained.update(examples, sgd=optimizer, losses=losses)
    after = trained.get_pipe("elmo").model.shims[0].module.state_dict()
    changed = sum(not torch.equal(before[k], after[k]) for k in before)
    mix = layer_weights(tagger.model.get_ref("tok2vec").get_ref("layer_mix"))
    print(f"2. 3 GPU updates, frozen = false: losses {losses}; biLM tensors changed {changed}/{len(before)}; mix {mix}")
    assert changed == len(before) and np.isfinite(losses["tagger"])

    gpu_speed = words_per_second(gpu, texts)
    mixed_speed = words_per_second(build(args.model, model={"mixed_precision": True}), texts)
    print(
        f"3. nlp.pipe words/s: CPU {cpu_speed:,.0f}; GPU fp32 {gpu_speed:,.0f}; GPU mixed precision {mixed_speed:,.0f}"
    )
    set_current_ops(NumpyOps())


if __name__ == "__main__":
    main()
