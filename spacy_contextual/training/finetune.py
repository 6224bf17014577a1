"""Domain fine-tuning (the ELMo paper's domain transfer: the biLM adapted to the task's text):
continue training any loadable biLM (our model directory, or a bilm-tf ``weights.hdf5`` +
``options.json``) on new text, and report the held-out perplexity of that domain before and after.

A model without an LM softmax (every published bilm-tf file) gets a new softmax over a vocabulary
built from the new text (count >= ``data.min_count``); the "before" perplexity of such a model is
that of an untrained softmax, and the log says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import ContextualError
from ..formats.bilm_dir import load_softmax
from ..runtime import process_rank
from ..types import PathLike
from .checkpoint import prepare_checkpoint_dir
from .config import PretrainConfig
from .evaluate import load_language_model, perplexity
from .trainer import pretrain
from .vocab import LMVocabulary


def finetune(
    model: PathLike,
    config: PretrainConfig,
    options_file: PathLike | None = None,
    heldout: PathLike | None = None,
    resume: bool = False,
    log: Callable[[str], None] = print,
    overwrite: bool = False,
) -> dict:
    """Fine-tune ``model`` on ``config.data.train``; ``heldout`` (default ``config.data.valid``) is
    scored before and after. Returns ``{"new_softmax", "before", "after", "training"}``."""
    if not config.data.train:
        raise ContextualError("data.train is empty: give the domain's training text")
    heldout = heldout or config.data.valid
    main = process_rank() == 0  # under torchrun only rank 0 scores the held-out text and reports
    if main:  # before the held-out scoring, which an existing run would waste
        prepare_checkpoint_dir(Path(config.training.output_dir) / "checkpoint", resume, overwrite)
    log = log if main else (lambda message: None)
    if has_softmax(model):
        lm, new_softmax = load_language_model(model)
    else:
        vocab = (
            LMVocabulary.load(config.data.vocab)
            if config.data.vocab
            else LMVocabulary.build(config.data.train, config.data.min_count)
        )
        lm, new_softmax = load_language_model(
            model, options_file, vocab=vocab, softmax_config=config.softmax, seed=config.training.seed
        )
        log(
            f"{model} has no LM softmax (bilm-tf weight files never do): initialised a new {lm.softmax_config.kind} "
            "softmax over "
            f"{len(vocab)} words of the new text; its perplexity before fine-tuning is that of an untrained softmax"
        )
    config = replace(config, model=lm.bilm.config, softmax=lm.softmax_config)
    output_dir = Path(config.training.output_dir)
    if main:
        output_dir.mkdir(parents=True, exist_ok=True)
        lm.vocab.save(output_dir / "vocab.txt")
    config = replace(config, data=replace(config.data, vocab=str(output_dir / "vocab.txt")))
    before = perplexity(lm, heldout) if heldout and main and not resume else None
    if before:
        log(
            f"held-out perplexity before fine-tuning: forward {before['forward']:.1f} backward "
            f"{before['backward']:.1f} average {before['average']:.1f}"
        )
    training = pretrain(config, resume=resume, lm=lm, log=log, overwrite=overwrite)
    after = perplexity(lm, heldout) if heldout and main else None
    if after:
        log(
            f"held-out perplexity after fine-tuning: forward {after['forward']:.1f} backward {after['backward']:.1f} "
            f"average {after['average']:.1f}"
        )
    return {"new_softmax": new_softmax, "before": before, "after": after, "training": training}


def has_softmax(model: PathLike) -> bool:
    """Whether ``model`` is one of our model directories saved with its LM softmax."""
    path = Path(model)
    return path.is_dir() and load_softmax(path)[0] is not None
