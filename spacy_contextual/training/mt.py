"""Training the CoVe MT model (English -> German, Multi30k) and scoring it with BLEU.

Config (confection ``.cfg``, dotted overrides as in ``spacy train``) -> vocabularies (the English
source keeps the training words that have a GloVe vector, or all of them with fixed uniform(+-0.1)
vectors when ``oov = "random"``; the German target is words with count >= min_count, or BPE pieces
when ``target = "bpe"``, with ``target_bpe_size`` symbols learned on the training targets) -> teacher
forced cross-entropy, Adam or the paper's SGD (lr halved once validation perplexity rises), gradient
norm clipping -> every epoch: validation perplexity and greedy BLEU, a checkpoint, and ``best/`` (the
lowest validation perplexity). ``--resume`` continues from ``last/`` mid-epoch: batch order is a
function of (seed, epoch), so the batches already done are skipped.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from ..embedders.cove import CoveEmbedder
from ..errors import ContextualError
from ..formats.atomic import atomic_directory, atomic_file
from ..formats.cove_dir import load_translator, save_translator
from ..formats.vectors import load_vectors
from ..models.cove_layers import CoveLayers
from ..models.seq2seq import Seq2SeqConfig, Translator
from ..models.text import SPECIALS, Vocab, detokenize, join_subwords, tokenize
from ..types import PathLike
from .checkpoint import OPTIMIZER_NAME, STATE_NAME, find_checkpoint, is_checkpoint, prepare_checkpoint_dir
from .mt_data import batches, build_vocab, learn_subwords, read_lines, read_parallel


@dataclass
class BleuResult:
    tokenized_lowercase: float  # BLEU(lowercase=True, tokenize='none') on tokenised text (multi-bleu style)
    default: float  # default sacreBLEU on detokenised text
    signature: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "bleu_tok_lc": round(self.tokenized_lowercase, 2),
            "bleu_sacre": round(self.default, 2),
            "signature": self.signature,
        }


def bleu(hypotheses: Sequence[Sequence[str]], references: Sequence[str]) -> BleuResult:
    """Both BLEU forms; hypotheses are token (or subword piece) lists, references raw German lines."""
    from sacrebleu.metrics import BLEU

    tokenized = BLEU(lowercase=True, tokenize="none", force=True).corpus_score(
        [" ".join(join_subwords(h)) for h in hypotheses], [[" ".join(tokenize(r, lower=False)) for r in references]]
    )
    default_metric = BLEU()
    default = default_metric.corpus_score([detokenize(h) for h in hypotheses], [list(references)])
    return BleuResult(tokenized.score, default.score, str(default_metric.get_signature()))


def translate_tokens(
    model: Translator,
    source_words: Sequence[str],
    target_words: Sequence[str],
    sources: Sequence[Sequence[str]],
    beam: int = 1,
    alpha: float = 0.6,
    max_length: int = 100,
    replace_unk: bool = True,
) -> list[list[str]]:
    """Token lists in, German token lists out, in input order (``CoveEmbedder.translate``)."""
    layers = CoveLayers(model.encoder, model.source_vectors, source_words)
    embedder = CoveEmbedder(layers, model, target_words, device=model.source_vectors.device)
    return [t.tokens for t in embedder.translate(sources, beam, alpha, max_length, replace_unk=replace_unk)]


def evaluate_bleu(
    model_dir: PathLike,
    source_file: PathLike,
    reference_file: PathLike,
    beam: int = 1,
    alpha: float = 0.6,
    replace_unk: bool = True,
) -> BleuResult:
    model, source_words, target_words = load_translator(model_dir)
    sources = [tokenize(line) for line in read_lines(source_file)]
    hypotheses = translate_tokens(model, source_words, target_words, sources, beam, alpha, replace_unk=replace_unk)
    return bleu(hypotheses, read_lines(reference_file))


# -- data ---------------------------------------------------------------------------------------


def source_vocabulary(
    train_sources: Sequence[Sequence[str]],
    glove_path: PathLike,
    oov: str,
    min_count: int,
    seed: int,
    input_std: float = 0.0,
) -> tuple[list[str], torch.Tensor]:
    """English vocabulary and its fixed 300-d rows (specials: zero).

    ``input_std > 0`` multiplies the GloVe rows by one scalar so that their per-dimension standard
    deviation is ``input_std`` (GloVe 840B has about 0.4): directions and neighbours are unchanged,
    but vectors trained briefly on a small corpus are an order of magnitude smaller than that, which
    starves the encoder's input gates at the usual uniform(+-0.1) initialisation."""
    if oov not in ("zero", "random"):
        raise ContextualError(f"oov must be 'zero' or 'random', got {oov!r}")
    candidates = build_vocab(train_sources, min_count)[len(SPECIALS) :]
    static = load_vectors(glove_path, vocab=candidates)
    index = static.index()
    words = [w for w in candidates if w in index] if oov == "zero" else candidates
    found = [index[w] for w in words if w in index]
    scale = input_std / float(static.vectors[found].std()) if input_std > 0 and found else 1.0
    table = torch.zeros(len(SPECIALS) + len(words), static.dim)
    generator = torch.Generator().manual_seed(seed)
    for row, word in enumerate(words, start=len(SPECIALS)):
        if word in index:
            table[row] = torch.from_numpy(static.vectors[index[word]]) * scale
        else:
            table[row] = torch.rand(static.dim, generator=generator) * 0.2 - 0.1
    return SPECIALS + words, table


# -- checkpoints --------------------------------------------------------------------------------


def _save_optimizer(optimizer: torch.optim.Optimizer, path: Path) -> None:
    state = optimizer.state_dict()
    tensors, scalars = {}, {"param_groups": state["param_groups"], "state": {}}
    for param_id, values in state["state"].items():
        for name, value in values.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                tensors[f"{param_id}.{name}"] = value.contiguous()
            else:
                scalars["state"].setdefault(str(param_id), {})[name] = float(value)
    save_file(tensors, str(path / OPTIMIZER_NAME))
    (path / "optimizer.json").write_text(json.dumps(scalars), encoding="utf-8")


def _load_optimizer(optimizer: torch.optim.Optimizer, path: Path) -> None:
    scalars = json.loads((path / "optimizer.json").read_text(encoding="utf-8"))
    state: dict[int, dict[str, Any]] = {}
    for key, value in load_file(str(path / OPTIMIZER_NAME)).items():
        param_id, name = key.split(".", 1)
        state.setdefault(int(param_id), {})[name] = value
    for param_id, values in scalars["state"].items():
        for name, value in values.items():
            state.setdefault(int(param_id), {})[name] = torch.tensor(value)
    optimizer.load_state_dict({"state": state, "param_groups": scalars["param_groups"]})


# -- training -----------------------------------------------------------------------------------


def _perplexity(model: Translator, pairs: list[tuple[list[int], list[int]]], batch_size: int) -> float:
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for src, lengths, tgt in batches(pairs, batch_size, shuffle=False):
            loss, n = model.loss(src, lengths, tgt)
            total, count = total + float(loss), count + n
    return math.exp(total / count)


def train_mt(
    config: dict[str, Any], output_dir: PathLike, resume: bool = False, overwrite: bool = False
) -> dict[str, Any]:
    """Train from a resolved config dict (sections paths / vocab / model / training); returns the history.
    An earlier run's checkpoint (``last/``) is continued with ``resume``, deleted with ``overwrite``."""
    torch.set_num_threads(config["training"].get("threads", 1))
    paths, vocab_cfg, model_cfg, train_cfg = config["paths"], config["vocab"], config["model"], config["training"]
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    prepare_checkpoint_dir(output / "last", resume, overwrite)
    seed = train_cfg["seed"]
    random.seed(seed)
    torch.manual_seed(seed)

    train_pairs = read_parallel(paths["train_source"], paths["train_target"])
    if train_cfg.get("max_train_pairs"):
        train_pairs = train_pairs[: train_cfg["max_train_pairs"]]
    val_sources_raw, val_references = read_lines(paths["val_source"]), read_lines(paths["val_target"])
    val_pairs_tokens = read_parallel(paths["val_source"], paths["val_target"])
    target_units = vocab_cfg.get("target", "words")
    if target_units == "bpe":  # deterministic, so a resumed run segments exactly as the first one
        segment = learn_subwords([t for _, t in train_pairs], vocab_cfg["target_bpe_size"])
        train_pairs = [(s, segment(t)) for s, t in train_pairs]
        val_pairs_tokens = [(s, segment(t)) for s, t in val_pairs_tokens]
    elif target_units != "words":
        raise ContextualError(f"vocab.target must be 'words' or 'bpe', got {target_units!r}")

    last = output / "last"
    resumed = find_checkpoint(last) if resume else None  # last/, or the last.old an interrupted write left
    if resumed is not None:
        model, source_words, target_words = load_translator(resumed)
        state = json.loads((resumed / STATE_NAME).read_text(encoding="utf-8"))
    else:
        source_words, vectors = source_vocabulary(
            [s for s, _ in train_pairs],
            paths["glove"],
            vocab_cfg["oov"],
            vocab_cfg["source_min_count"],
            seed,
            vocab_cfg.get("input_std", 0.0),
        )
        target_min_count = vocab_cfg["target_min_count"] if target_units == "words" else 1
        target_words = build_vocab([t for _, t in train_pairs], target_min_count)
        model_config = Seq2SeqConfig(len(source_words), len(target_words), **model_cfg)
        if vectors.shape[1] != model_config.embedding_dim:
            raise ContextualError(
                f"{paths['glove']} has {vectors.shape[1]}-d vectors but model.embedding_dim is "
                f"{model_config.embedding_dim}; "
                "use 300-d GloVe (or set model.embedding_dim to match)"
            )
        model = Translator(model_config, vectors)
        with torch.no_grad():  # uniform(+-0.1) init, as the paper
            for _name, parameter in model.named_parameters():
                parameter.uniform_(-0.1, 0.1)
        state = {
            "epoch": 0,
            "batch": 0,
            "step": 0,
            "lr": train_cfg["learning_rate"],
            "best_ppl": None,
            "ppl_rose": False,
            "history": [],
            "seconds": 0.0,
            "tokens": 0,
        }
    source_vocab, target_vocab = Vocab(source_words), Vocab(target_words)
    encode = lambda pairs: [(source_vocab.encode(s), target_vocab.encode(t)) for s, t in pairs]  # noqa: E731
    train_ids, val_ids = encode(train_pairs), encode(val_pairs_tokens)
    val_sources = [tokenize(s) for s in val_sources_raw]

    parameters = [p for p in model.parameters() if p.requires_grad]
    if train_cfg["optimizer"] == "adam":
        optimizer: torch.optim.Optimizer = torch.optim.Adam(parameters, lr=state["lr"])
    elif train_cfg["optimizer"] == "sgd":
        optimizer = torch.optim.SGD(parameters, lr=state["lr"])
    else:
        raise ContextualError(f"training.optimizer must be 'adam' or 'sgd', got {train_cfg['optimizer']!r}")
    if resumed is not None:
        _load_optimizer(optimizer, resumed)
        for group in optimizer.param_groups:
            group["lr"] = state["lr"]

    info = {"config": config, "longest_training_sentence": max(len(source) for source, _ in train_pairs)}

    def checkpoint(directory: Path) -> None:  # whole, so that a kill leaves the previous one
        with atomic_directory(directory, may_replace=is_checkpoint) as tmp:
            save_translator(model, tmp, source_words, target_words, info=info)
            _save_optimizer(optimizer, tmp)
            (tmp / STATE_NAME).write_text(json.dumps(state, indent=1), encoding="utf-8")

    batch_size, max_epochs = train_cfg["batch_size"], train_cfg["max_epochs"]
    n_batches = math.ceil(len(train_ids) / batch_size)
    max_steps = train_cfg.get("max_steps") or 0
    eval_every = train_cfg.get("eval_every_steps") or 0
    while state["epoch"] < max_epochs and not (max_steps and state["step"] >= max_steps):
        epoch = state["epoch"]
        model.train()
        bar = tqdm(total=n_batches, initial=state["batch"], desc=f"cove epoch {epoch + 1}/{max_epochs}", mininterval=10)
        loss_sum, token_sum = 0.0, 0
        for number, (src, lengths, tgt) in enumerate(
            batches(train_ids, batch_size, shuffle=True, seed=seed * 1000 + epoch)
        ):
            if number < state["batch"]:
                continue
            started = time.perf_counter()
            loss, n = model.loss(src, lengths, tgt)
            optimizer.zero_grad()
            (loss / src.shape[0]).backward()
            torch.nn.utils.clip_grad_norm_(parameters, train_cfg["grad_clip"])
            optimizer.step()
            state["seconds"] += time.perf_counter() - started
            state["tokens"] += int(lengths.sum()) + n
            state["batch"], state["step"] = number + 1, state["step"] + 1
            loss_sum, token_sum = loss_sum + loss.item(), token_sum + n
            bar.update(1)
            bar.set_postfix(ppl=f"{math.exp(loss_sum / token_sum):.1f}", lr=state["lr"], refresh=False)
            if eval_every and state["step"] % eval_every == 0:
                ppl = _perplexity(model, val_ids, 128)
                state["history"].append(
                    {"step": state["step"], "val_ppl": round(ppl, 3), "train_seconds": round(state["seconds"], 1)}
                )
                tqdm.write(json.dumps(state["history"][-1]))
                model.train()
            if train_cfg.get("checkpoint_every_steps") and state["step"] % train_cfg["checkpoint_every_steps"] == 0:
                checkpoint(last)
            if max_steps and state["step"] >= max_steps:
                break
        bar.close()
        if max_steps and state["step"] >= max_steps and state["batch"] < n_batches:
            checkpoint(last)
            break
        ppl = _perplexity(model, val_ids, 128)
        hypotheses = translate_tokens(model, source_words, target_words, val_sources, beam=1)
        scores = bleu(hypotheses, val_references)
        record = {
            "epoch": epoch + 1,
            "step": state["step"],
            "lr": state["lr"],
            "train_ppl": round(math.exp(loss_sum / max(token_sum, 1)), 3),
            "val_ppl": round(ppl, 3),
            **scores.to_dict(),
            "train_seconds": round(state["seconds"], 1),
            "tokens_per_second": round(state["tokens"] / max(state["seconds"], 1e-9), 1),
        }
        state["history"].append(record)
        tqdm.write(json.dumps(record))
        if state["best_ppl"] is not None and ppl > state["best_ppl"]:
            state["ppl_rose"] = True
        if train_cfg["optimizer"] == "sgd" and state["ppl_rose"]:
            state["lr"] /= 2  # the paper: halve every epoch once validation perplexity has risen
        elif train_cfg["optimizer"] == "adam" and state["best_ppl"] is not None and ppl > state["best_ppl"]:
            state["lr"] *= train_cfg.get("adam_decay", 0.5)  # Adam: halve on each rise
        for group in optimizer.param_groups:
            group["lr"] = state["lr"]
        state["epoch"], state["batch"] = epoch + 1, 0
        is_best = state["best_ppl"] is None or ppl < state["best_ppl"]
        state["best_ppl"] = ppl if is_best else state["best_ppl"]
        checkpoint(last)
        if is_best:
            save_translator(model, output / "best", source_words, target_words, info={**info, "record": record})
    with atomic_file(output / "history.json") as path:
        path.write_text(json.dumps(state["history"], indent=1), encoding="utf-8")
    return state
