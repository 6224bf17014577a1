"""Training the CoVe MT model (English -> German, Multi30k).

Config (:class:`MTConfig`) -> data (tokenised pairs; German BPE pieces when ``vocab.target = "bpe"``)
-> vocabularies and a new translator (``mt_data.source_vocabulary``: fixed GloVe rows for the English
source; the German target is words with count >= min_count, or the BPE pieces), or the checkpoint in
``last/`` with ``--resume`` -> per batch: teacher-forced cross-entropy, gradient norm clipping, an
Adam or SGD step -> per epoch: validation perplexity and greedy BLEU, the learning rate halved once
validation perplexity rises (SGD: every epoch from then on, as the paper; Adam: on each rise, times
``adam_decay``), a checkpoint in ``last/``, and ``best/`` (the lowest validation perplexity).

``--resume`` continues mid-epoch: batch order is a function of (seed, epoch), so the batches already
done are skipped, and the optimizer state comes back from the checkpoint (``checkpoint.py``'s format).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from ..errors import ContextualError
from ..formats.cove_dir import load_translator, save_translator
from ..models.seq2seq import Seq2SeqConfig, Translator
from ..mt_text import MTVocab, tokenize
from ..text_files import read_json
from ..types import PathLike
from ..writer import atomic_directory, atomic_file
from .bleu import bleu, translate_tokens
from .checkpoint import (
    DAMAGED_CHECKPOINT,
    OPTIMIZER_NAME,
    STATE_NAME,
    find_checkpoint,
    is_checkpoint,
    optimizer_from_flat,
    optimizer_to_flat,
    prepare_checkpoint_dir,
)
from .mt_config import MTConfig, MTTrainingConfig
from .mt_data import batches, build_vocab, learn_subwords, read_lines, read_parallel, source_vocabulary

Pairs = list[tuple[list[str], list[str]]]
IdPairs = list[tuple[list[int], list[int]]]


@dataclass
class MTData:
    train: Pairs  # tokenised (English, German) pairs; German as BPE pieces with vocab.target = "bpe"
    val: Pairs
    val_sources: list[list[str]]  # the validation English for BLEU
    val_references: list[str]  # the raw German lines BLEU compares with


def read_data(config: MTConfig) -> MTData:
    paths = config.paths
    train = read_parallel(paths.train_source, paths.train_target)
    if config.training.max_train_pairs:
        train = train[: config.training.max_train_pairs]
    val = read_parallel(paths.val_source, paths.val_target)
    if config.vocab.target == "bpe":  # deterministic, so a resumed run segments exactly as the first one
        segment = learn_subwords([target for _, target in train], config.vocab.target_bpe_size)
        train = [(source, segment(target)) for source, target in train]
        val = [(source, segment(target)) for source, target in val]
    val_sources = [tokenize(line) for line in read_lines(paths.val_source)]
    return MTData(train, val, val_sources, read_lines(paths.val_target))


def new_translator(config: MTConfig, data: MTData) -> tuple[Translator, list[str], list[str]]:
    """A translator over the training data's vocabularies, initialised uniform(+-0.1) as the paper."""
    vocab = config.vocab
    source_words, vectors = source_vocabulary(
        [source for source, _ in data.train],
        config.paths.glove,
        vocab.oov,
        vocab.source_min_count,
        config.training.seed,
        vocab.input_std,
    )
    target_min_count = vocab.target_min_count if vocab.target == "words" else 1
    target_words = build_vocab([target for _, target in data.train], target_min_count)
    model_config = Seq2SeqConfig(len(source_words), len(target_words), **config.model)
    if vectors.shape[1] != model_config.embedding_dim:
        raise ContextualError(
            f"{config.paths.glove} has {vectors.shape[1]}-d vectors but model.embedding_dim is "
            f"{model_config.embedding_dim}; use 300-d GloVe (or set model.embedding_dim to match)"
        )
    model = Translator(model_config, vectors)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.uniform_(-0.1, 0.1)
    return model, source_words, target_words


def encode_pairs(pairs: Pairs, words: tuple[list[str], list[str]]) -> IdPairs:
    source_vocab, target_vocab = MTVocab(words[0]), MTVocab(words[1])
    return [(source_vocab.encode(source), target_vocab.encode(target)) for source, target in pairs]


def new_state(config: MTTrainingConfig) -> dict[str, Any]:
    return {
        "epoch": 0,
        "batch": 0,  # batches of the current epoch already trained on
        "step": 0,
        "lr": config.learning_rate,
        "best_ppl": None,
        "ppl_rose": False,
        "history": [],
        "seconds": 0.0,
        "tokens": 0,
    }


def make_optimizer(config: MTTrainingConfig, parameters: list[torch.nn.Parameter], lr: float) -> torch.optim.Optimizer:
    if config.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=lr)
    return torch.optim.SGD(parameters, lr=lr)


def save_checkpoint(
    directory: Path, model: Translator, words: tuple[list[str], list[str]], optimizer, state: dict, info: dict
) -> None:
    """The translator, the optimizer state and the trainer state, written whole (a kill leaves the previous one)."""
    with atomic_directory(directory, may_replace=is_checkpoint) as tmp:
        save_translator(model, tmp, *words, info=info)
        tensors, meta = optimizer_to_flat(optimizer)
        save_file(tensors, str(tmp / OPTIMIZER_NAME))
        (tmp / STATE_NAME).write_text(json.dumps({**state, "optimizer": meta}, indent=1), encoding="utf-8")


def load_checkpoint(directory: Path) -> tuple[Translator, list[str], list[str], dict[str, Any], dict[str, Any]]:
    """(translator, source words, target words, trainer state, optimizer state dict) of a checkpoint."""
    model, source_words, target_words = load_translator(directory)
    state = read_json(directory / STATE_NAME, DAMAGED_CHECKPOINT)
    if "optimizer" not in state:
        raise ContextualError(
            f"{directory} was written by an earlier version of train-cove (optimizer.json); continue it with that "
            "version, or start again with --overwrite"
        )
    optimizer_state = optimizer_from_flat(load_file(str(directory / OPTIMIZER_NAME)), state.pop("optimizer"))
    return model, source_words, target_words, state, optimizer_state


def perplexity(model: Translator, pairs: IdPairs, batch_size: int = 128) -> float:
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for src, lengths, tgt in batches(pairs, batch_size, shuffle=False):
            loss, n = model.loss(src, lengths, tgt)
            total, count = total + float(loss), count + n
    return math.exp(total / count)


def train_epoch(
    model: Translator,
    optimizer: torch.optim.Optimizer,
    train_ids: IdPairs,
    val_ids: IdPairs,
    state: dict[str, Any],
    config: MTTrainingConfig,
    save: Callable[[], None],
) -> tuple[float, int]:
    """The rest of epoch ``state["epoch"]`` (from batch ``state["batch"]``), up to ``max_steps``:
    (summed loss, target tokens) of the batches trained on."""
    parameters = [p for p in model.parameters() if p.requires_grad]
    n_batches = math.ceil(len(train_ids) / config.batch_size)
    epoch = state["epoch"]
    model.train()
    bar = tqdm(
        total=n_batches, initial=state["batch"], desc=f"cove epoch {epoch + 1}/{config.max_epochs}", mininterval=10
    )
    loss_sum, token_sum = 0.0, 0
    for number, (src, lengths, tgt) in enumerate(
        batches(train_ids, config.batch_size, shuffle=True, seed=config.seed * 1000 + epoch)
    ):
        if number < state["batch"]:
            continue
        started = time.perf_counter()
        loss, n = model.loss(src, lengths, tgt)
        optimizer.zero_grad()
        (loss / src.shape[0]).backward()
        torch.nn.utils.clip_grad_norm_(parameters, config.grad_clip)
        optimizer.step()
        state["seconds"] += time.perf_counter() - started
        state["tokens"] += int(lengths.sum()) + n
        state["batch"], state["step"] = number + 1, state["step"] + 1
        loss_sum, token_sum = loss_sum + loss.item(), token_sum + n
        bar.update(1)
        bar.set_postfix(ppl=f"{math.exp(loss_sum / token_sum):.1f}", lr=state["lr"], refresh=False)
        if config.eval_every_steps and state["step"] % config.eval_every_steps == 0:
            record = {"step": state["step"], "val_ppl": round(perplexity(model, val_ids), 3)}
            state["history"].append({**record, "train_seconds": round(state["seconds"], 1)})
            tqdm.write(json.dumps(state["history"][-1]))
            model.train()
        if config.checkpoint_every_steps and state["step"] % config.checkpoint_every_steps == 0:
            save()
        if config.max_steps and state["step"] >= config.max_steps:
            break
    bar.close()
    return loss_sum, token_sum


def validate(
    model: Translator, words: tuple[list[str], list[str]], val_ids: IdPairs, data: MTData
) -> tuple[float, dict[str, Any]]:
    """(validation perplexity, greedy BLEU in both forms)."""
    ppl = perplexity(model, val_ids)
    hypotheses = translate_tokens(model, *words, data.val_sources, beam=1)
    return ppl, bleu(hypotheses, data.val_references).to_dict()


def update_learning_rate(state: dict[str, Any], config: MTTrainingConfig, ppl: float) -> None:
    rose = state["best_ppl"] is not None and ppl > state["best_ppl"]
    state["ppl_rose"] = state["ppl_rose"] or rose
    if config.optimizer == "sgd" and state["ppl_rose"]:
        state["lr"] /= 2  # the paper: halve every epoch once validation perplexity has risen
    elif config.optimizer == "adam" and rose:
        state["lr"] *= config.adam_decay


def train_mt(config: MTConfig, output_dir: PathLike, resume: bool = False, overwrite: bool = False) -> dict[str, Any]:
    """Train into ``output_dir`` (``last/``, ``best/``, ``history.json``); returns the trainer state.
    An earlier run's checkpoint (``last/``) is continued with ``resume``, deleted with ``overwrite``."""
    settings = config.training
    torch.set_num_threads(settings.threads)
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    last = output / "last"
    prepare_checkpoint_dir(last, resume, overwrite)
    random.seed(settings.seed)
    torch.manual_seed(settings.seed)

    data = read_data(config)
    if resume:  # last/, or the version an interrupted write left beside it
        model, source_words, target_words, state, optimizer_state = load_checkpoint(find_checkpoint(last))
    else:
        model, source_words, target_words = new_translator(config, data)
        state, optimizer_state = new_state(settings), None
    words = (source_words, target_words)
    train_ids, val_ids = encode_pairs(data.train, words), encode_pairs(data.val, words)

    optimizer = make_optimizer(settings, [p for p in model.parameters() if p.requires_grad], state["lr"])
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state)
        for group in optimizer.param_groups:
            group["lr"] = state["lr"]
    info = {"config": config.to_dict(), "longest_training_sentence": max(len(source) for source, _ in data.train)}

    def save() -> None:
        save_checkpoint(last, model, words, optimizer, state, info)

    n_batches = math.ceil(len(train_ids) / settings.batch_size)
    max_steps = settings.max_steps
    while state["epoch"] < settings.max_epochs and not (max_steps and state["step"] >= max_steps):
        loss_sum, token_sum = train_epoch(model, optimizer, train_ids, val_ids, state, settings, save)
        if max_steps and state["step"] >= max_steps and state["batch"] < n_batches:
            save()  # stopped mid-epoch: --resume continues from here
            break
        ppl, scores = validate(model, words, val_ids, data)
        record = {
            "epoch": state["epoch"] + 1,
            "step": state["step"],
            "lr": state["lr"],
            "train_ppl": round(math.exp(loss_sum / max(token_sum, 1)), 3),
            "val_ppl": round(ppl, 3),
            **scores,
            "train_seconds": round(state["seconds"], 1),
            "tokens_per_second": round(state["tokens"] / max(state["seconds"], 1e-9), 1),
        }
        state["history"].append(record)
        tqdm.write(json.dumps(record))
        update_learning_rate(state, settings, ppl)
        for group in optimizer.param_groups:
            group["lr"] = state["lr"]
        state["epoch"], state["batch"] = state["epoch"] + 1, 0
        is_best = state["best_ppl"] is None or ppl < state["best_ppl"]
        state["best_ppl"] = ppl if is_best else state["best_ppl"]
        save()
        if is_best:
            save_translator(model, output / "best", *words, info={**info, "record": record})
    with atomic_file(output / "history.json") as path:
        path.write_text(json.dumps(state["history"], indent=1), encoding="utf-8")
    return state
