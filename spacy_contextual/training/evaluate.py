"""Held-out perplexity, the protocol every reported perplexity follows: vocabulary = the model's
(training words with count >= 3 + ``<S>``, ``</S>``, ``<UNK>``), OOV tokens count as ``<UNK>``,
``</S>`` is predicted by the forward LM (``<S>`` by the backward LM), every sentence starts from
zero state.

    ppl_direction = exp( sum of -log p(target) / number of predictions ),  average = (fwd + bwd) / 2
"""

from __future__ import annotations

import math
from itertools import islice
from pathlib import Path

import torch

from ..errors import ContextualError, ModelDirError
from ..formats.bilm_dir import KIND, load_bilm, load_softmax
from ..formats.bilm_tf import load_bilm_tf
from ..formats.model_dir import read_model_config
from ..types import PathLike
from .batch_stream import BatchStream, iter_sentences
from .lm import BidirectionalLM, SoftmaxConfig
from .vocab import LMVocabulary


def perplexity(lm: BidirectionalLM, path: PathLike, max_sentences: int | None = None, batch_tokens: int = 4000) -> dict:
    sentences = list(islice(iter_sentences(path), max_sentences))
    if not sentences:
        raise ContextualError(f"no sentences in {path}")
    batcher = BatchStream([path], batch_tokens)
    was_training = lm.training
    lm.eval()
    forward = backward = 0.0
    predictions = 0
    with torch.no_grad():
        for batch in batcher.chunk_batches(sentences, 0, 0):
            loss = lm(batch)
            forward += float(loss.forward_nll)
            backward += float(loss.backward_nll)
            predictions += loss.predictions
    lm.train(was_training)
    fwd, bwd = math.exp(forward / predictions), math.exp(backward / predictions)
    unknown = sum(1 for s in sentences for w in s if w not in lm.vocab.index)
    tokens = sum(len(s) for s in sentences)
    return {
        "forward": fwd,
        "backward": bwd,
        "average": (fwd + bwd) / 2,
        "sentences": len(sentences),
        "predictions": predictions,
        "oov_rate": unknown / tokens,
    }


def load_language_model(
    model: PathLike,
    options_file: PathLike | None = None,
    vocab: LMVocabulary | None = None,
    softmax_config: SoftmaxConfig | None = None,
    seed: int = 0,
) -> tuple[BidirectionalLM, bool]:
    """A trainable LM from our model directory or from a bilm-tf ``weights.hdf5`` (+ ``options_file``).

    When the model has no softmax (bilm-tf files never do) a new one is initialised over ``vocab``;
    the second return value says whether that happened. A saved softmax is kept only when ``vocab``
    is None or equal to the model's vocabulary.
    """
    path = Path(model)
    if path.suffix in (".hdf5", ".h5"):
        if options_file is None:
            raise ContextualError(f"{path} is a bilm-tf weight file; pass its options.json as well (--options-file)")
        bilm, softmax_state, model_vocab = load_bilm_tf(options_file, path), None, None
    else:
        bilm = load_bilm(path)
        softmax_state, words = load_softmax(path)
        model_vocab = LMVocabulary(words) if words else None
    if softmax_state is not None and model_vocab is not None and (vocab is None or vocab.words == model_vocab.words):
        saved = saved_softmax_config(path)
        lm = BidirectionalLM(bilm, model_vocab, saved)
        lm.softmax.load_state_dict(softmax_state)
        return lm, False
    if vocab is None:
        raise ContextualError(
            f"{path} has no LM softmax and vocabulary; give a vocabulary (or training text to build one)"
        )
    torch.manual_seed(seed)
    return BidirectionalLM(bilm, vocab, softmax_config or SoftmaxConfig()), True


def saved_softmax_config(path: Path) -> SoftmaxConfig:
    """The LM softmax settings a model directory with softmax weights records in ``info.softmax``."""
    source = path / "config.json"
    settings = read_model_config(path, KIND)["info"].get("softmax")
    try:
        return SoftmaxConfig(**settings)
    except TypeError as error:
        raise ModelDirError(
            f"{source}: info.softmax is {settings!r}, not the LM softmax settings its weights need ({error})"
        ) from None
