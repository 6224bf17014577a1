"""The GPU check of the spaCy integration: the ``elmo`` component follows spaCy onto the GPU.

1. ``spacy.require_gpu()`` (thinc's CuPy ops, ``gpu_allocator = "pytorch"``), then a pipeline with the
   bundled ELMo (or ``--model DIR``): the biLM is on CUDA, ``doc._.elmo_data.layers`` is a CuPy
   array, the layers equal a CPU run to 1e-4 (TF32 off), and a Doc read back from bytes (numpy
   data) equals the GPU Doc's data.
2. Training steps on the GPU with ``frozen = false`` (a tagger listening), in float32 and with
   ``precision`` fp16 on CUDA (autocast and the grad scaler; bf16 on the CPU): the loss is finite and every biLM tensor
   changes.
3. words/s of ``nlp.pipe`` on the ``--lines`` sentences: CPU, GPU fp32 (TF32 on), GPU mixed precision.

``--device cpu`` runs the same steps with spaCy on the CPU (the dry run of ``benchmarks/gpu/run.sh``).
Inputs: ``--data`` (valid.txt from ``benchmarks/gpu/make_data.py``); every row goes to ``--json``
as it is measured; the exit status is 1 if a check failed.

    python -m benchmarks.gpu.pipeline_check --data benchmarks/gpu/data --json out/pipeline.json [--model DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import spacy
import torch
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import NumpyOps, set_current_ops, set_gpu_allocator

from spacy_contextual.devices import resolve_device, tf32
from spacy_contextual.layers import elmo_model_dir_loader
from spacy_contextual.pipeline.doc_data import host_array

from ..record import Results

DATA = Path(__file__).resolve().parent / "data"
TOLERANCE = 1e-4
warnings.filterwarnings("ignore", message=r"\[W109\]")  # the vector hooks are not serialized with a Doc


def build(model_dir, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=config)
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(model_dir))
    return nlp


def bilm_of(nlp):
    return nlp.get_pipe("elmo").model.shims[0].module


def words_per_second(nlp, texts, device: torch.device) -> float:
    list(nlp.pipe(texts[:64]))  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    words = sum(len(doc) for doc in nlp.pipe(texts))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return words / (time.perf_counter() - start)


def fine_tune(model_dir, text: str, steps: int, precision: str) -> tuple[float, int, int]:
    """``steps`` updates of an unfrozen biLM under a tagger: (summed tagger loss, changed tensors, tensors)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"frozen": False, "model": {"precision": precision}})
    listener = {"@architectures": "spacy-contextual.ElmoListener.v1", "width": 64}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
    doc = nlp.make_doc(text)
    examples = [Example.from_dict(doc, {"tags": ["X" if i % 2 else "Y" for i in range(len(doc))]})]
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(model_dir))
    optimizer = nlp.initialize(lambda: examples)
    before = {k: v.clone() for k, v in bilm_of(nlp).state_dict().items()}
    losses: dict[str, float] = {}
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer, losses=losses)
    after = bilm_of(nlp).state_dict()
    return losses["tagger"], sum(not torch.equal(before[k], after[k]) for k in before), len(before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="ELMo model directory (default: the bundled one)")
    parser.add_argument("--data", type=Path, default=DATA, help="valid.txt (make_data.py)")
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--device", default="cuda", help="cuda (spaCy on the GPU) or cpu (the dry run)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here as they come")
    args = parser.parse_args()
    device = resolve_device(args.device)
    results = Results(args.json, "pipeline_gpu_check", device=str(device), spacy=spacy.__version__)
    texts = [line.strip() for line in (args.data / "valid.txt").read_text(encoding="utf-8").splitlines()]
    texts = texts[: args.lines]

    cpu = build(args.model)
    with tf32(False):
        cpu_layers = [doc._.elmo_data.layers for doc in cpu.pipe(texts[:200])]
    cpu_speed = words_per_second(cpu, texts, torch.device("cpu"))

    if device.type == "cuda":
        set_gpu_allocator("pytorch")
        spacy.require_gpu(device.index or 0)
    try:
        on_device = build(args.model)
        where = next(bilm_of(on_device).parameters()).device
        results.add("biLM device after require_gpu", str(where), where.type == device.type)
        with tf32(False):
            docs = list(on_device.pipe(texts[:200]))
        array = docs[0]._.elmo_data.layers
        kind = f"{type(array).__module__}.{type(array).__name__}"
        results.add("doc._.elmo_data.layers type", kind, kind.startswith("cupy" if device.type == "cuda" else "numpy"))
        difference = max(
            float(np.abs(host_array(d._.elmo_data.layers) - c).max())
            for d, c in zip(docs, cpu_layers, strict=True)
            if len(d)
        )
        what = f"{device.type} vs cpu layers, {len(docs)} docs, TF32 off: max abs difference"
        results.add(what, f"{difference:.2e}", difference <= TOLERANCE)
        stored = Doc(on_device.vocab).from_bytes(docs[0].to_bytes())._.elmo_data
        same = stored == docs[0]._.elmo_data
        results.add("Doc read back from bytes (numpy data) equals the device Doc's data", str(same), same)

        low = "fp16" if device.type == "cuda" else "bf16"
        for precision in ("fp32", low):
            loss, changed, total = fine_tune(args.model, texts[0], 3, precision)
            label = precision
            results.add(
                f"3 updates, frozen = false, {label}: tagger loss; biLM tensors changed",
                f"{loss:.4f}; {changed}/{total}",
                bool(np.isfinite(loss)) and changed == total,
            )

        gpu_speed = words_per_second(on_device, texts, device)
        mixed = build(args.model, model={"precision": low})
        mixed_speed = words_per_second(mixed, texts, device)
        results.add(
            f"nlp.pipe words/s, {len(texts)} texts: cpu; {device.type} fp32; {device.type} {low}",
            f"{cpu_speed:,.0f}; {gpu_speed:,.0f}; {mixed_speed:,.0f}",
        )
    finally:
        set_current_ops(NumpyOps())
    sys.exit(1 if results.failed else 0)


if __name__ == "__main__":
    main()
