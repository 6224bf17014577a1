"""biLM training: vocabulary, objective, trainer (repeatable, resumable after SIGKILL), DDP under
torchrun, fine-tuning a bilm-tf file, evaluation protocol, export. Tiny models, a few hundred
sentences of the shared LM corpus."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from itertools import islice
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner
from util import FIXTURES, REPO, free_port, tiny_config, tiny_pretrain_config

from spacy_contextual.cli import app
from spacy_contextual.formats.bilm_dir import load_bilm
from spacy_contextual.formats.bilm_tf import load_bilm_tf
from spacy_contextual.models.bilm import BiLM
from spacy_contextual.models.chars import batch_to_ids
from spacy_contextual.training.batch_stream import BatchStream, Windows, WindowStream, iter_sentences
from spacy_contextual.training.config import PretrainConfig, apply_overrides, parse_overrides
from spacy_contextual.training.evaluate import load_language_model, perplexity
from spacy_contextual.training.finetune import finetune
from spacy_contextual.training.lm import BidirectionalLM, SoftmaxConfig
from spacy_contextual.training.trainer import pretrain
from spacy_contextual.training.vocab import LMVocabulary


def quiet(message: str) -> None:
    pass


# -- vocabulary, corpus, objective ---------------------------------------------------------------


def test_vocabulary_keeps_words_seen_three_times_plus_specials(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("a a a b b c\na d d d\n\n", encoding="utf-8")
    vocab = LMVocabulary.build([text])
    assert vocab.words == ["<S>", "</S>", "<UNK>", "a", "d"]
    assert vocab.encode(["a", "b", "zzz", "d"]) == [0, 3, 2, 2, 4, 1]
    vocab.save(tmp_path / "vocab.txt")
    assert LMVocabulary.load(tmp_path / "vocab.txt").words == vocab.words


def test_ddp_shards_partition_the_corpus(corpus):
    train, _ = corpus
    everything = list(iter_sentences(train))
    shards = [list(iter_sentences(train, rank, 2)) for rank in range(2)]
    assert sorted(map(tuple, shards[0] + shards[1])) == sorted(map(tuple, everything))
    assert shards[0][:2] == [everything[0], everything[2]]


def test_batch_stream_resumes_at_a_position(corpus):
    train, _ = corpus
    stream = BatchStream([train], batch_tokens=300, chunk_sentences=150, seed=3)
    first = [(pos, batch) for (pos, batch), _ in zip(stream(), range(120), strict=False)]
    assert all(len(b) * (max(map(len, b)) + 2) <= 300 or len(b) == 1 for _, b in first)
    epoch_0 = [tuple(s) for pos, b in first if pos.epoch == 0 for s in b]
    assert sorted(epoch_0) == sorted(map(tuple, iter_sentences(train)))  # every sentence once per epoch
    assert first[-1][0].epoch >= 1
    last_of_epoch_0 = [pos.epoch for pos, _ in first].index(1) - 1
    for start in (11, last_of_epoch_0):
        resumed = [(pos, batch) for (pos, batch), _ in zip(stream(first[start][0]), range(20), strict=False)]
        assert resumed == first[start + 1 : start + 21]


def test_lm_loss_is_the_sum_of_forward_and_backward_predictions(corpus):
    train, _ = corpus
    vocab = LMVocabulary.build([train], min_count=2)
    torch.manual_seed(0)
    lm = BidirectionalLM(BiLM(tiny_config()), vocab, SoftmaxConfig([50, 200], 2.0)).eval()
    sentences = [["The", "cat", "sat", "."], ["A", "dog", "!"], ["Hi"]]
    with torch.no_grad():
        batched = lm(sentences)
        one_by_one = [lm([s]) for s in sentences]
        assert batched.predictions == sum(len(s) + 1 for s in sentences)  # </S> (and <S>) predicted
        assert torch.allclose(batched.forward_nll, sum(one.forward_nll for one in one_by_one), rtol=1e-5)
        assert torch.allclose(batched.backward_nll, sum(one.backward_nll for one in one_by_one), rtol=1e-5)
        # forward LM of "Hi": -log p(Hi | <S>) - log p(</S> | <S> Hi), from the top forward layer
        out = lm.bilm(batch_to_ids([["Hi"]])).activations[-1][0, :2, :16]
        targets = torch.tensor([vocab["Hi"], vocab.eos])
        manual = -lm.softmax.log_prob(out).gather(1, targets[:, None]).sum()
        assert torch.allclose(one_by_one[2].forward_nll, manual, atol=1e-5)


def test_window_stream_deals_sentences_into_continuous_rows_and_resumes(corpus):
    train, _ = corpus
    stream = WindowStream([train], batch_tokens=60, bptt_steps=5, chunk_sentences=150, seed=3)
    assert stream.rows == 12
    first = [(pos, windows) for (pos, windows), _ in zip(stream(), range(400), strict=False)]
    epoch_0 = [w for pos, w in first if pos.epoch == 0]
    assert first[-1][0].epoch >= 1
    assert all(len(window) == 6 for w in epoch_0 for window in w.forward + w.backward)
    sentences = list(map(tuple, iter_sentences(train)))
    seen = []
    for row in range(stream.rows):
        forward = epoch_0[0].forward[row][:1] + [t for w in epoch_0 for t in w.forward[row][1:]]
        backward = epoch_0[0].backward[row][:1] + [t for w in epoch_0 for t in w.backward[row][1:]]
        for w, following in itertools.pairwise(epoch_0):  # consecutive windows overlap by one token
            assert w.forward[row][-1] == following.forward[row][0]
        text = " ".join(forward).split("</S>")
        complete = [tuple(part.split()[1:]) for part in text[:-1]]  # "<S> w1 .. wn"
        assert all(part.split()[0] == "<S>" for part in text[:-1])
        seen += complete
        reversed_text = " ".join(backward).split("<S>")
        assert [tuple(reversed(part.split()[1:])) for part in reversed_text[:-1]] == complete
    assert not Counter(seen) - Counter(sentences)  # every sentence at most once per epoch
    assert len(seen) > 0.9 * len(sentences)  # only the rows' unfinished tails are left out
    for start in (17, len(epoch_0) - 1):
        resumed = [(pos, w) for (pos, w), _ in zip(stream(first[start][0]), range(10), strict=False)]
        assert resumed == first[start + 1 : start + 11]


def test_window_loss_with_carried_state_equals_one_long_window(corpus):
    """Truncated BPTT: two consecutive windows from the carried states score exactly like one window
    twice as long from zero state."""
    train, _ = corpus
    vocab = LMVocabulary.build([train], min_count=2)
    torch.manual_seed(0)
    lm = BidirectionalLM(BiLM(tiny_config()), vocab, SoftmaxConfig([50, 200], 2.0)).eval()
    stream = WindowStream([train], batch_tokens=24, bptt_steps=8)
    (_, a), (_, b) = islice(stream(), 2)
    joined = Windows(
        [x + y[1:] for x, y in zip(a.forward, b.forward, strict=True)],
        [x + y[1:] for x, y in zip(a.backward, b.backward, strict=True)],
    )
    with torch.no_grad():
        first = lm(a)
        second = lm(b, first.states)
        whole = lm(joined)
        fresh = lm(b)
    assert whole.predictions == first.predictions + second.predictions == 3 * 16
    assert torch.allclose(first.forward_nll + second.forward_nll, whole.forward_nll, rtol=1e-5)
    assert torch.allclose(first.backward_nll + second.backward_nll, whole.backward_nll, rtol=1e-5)
    assert not torch.allclose(fresh.forward_nll, second.forward_nll, rtol=1e-3)  # the state matters


# -- the trainer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, softmax",
    [({}, {}), ({"batching": "windows", "bptt_steps": 10}, {}), ({}, {"kind": "sampled", "negatives": 64})],
    ids=["sentences-adaptive", "bptt-windows", "sampled-softmax"],
)
@pytest.mark.integration  # trains to a measurable change: minutes of the fast tier
def test_training_lowers_validation_perplexity(corpus, tmp_path, data, softmax):
    config = tiny_pretrain_config(corpus, tmp_path / "run", max_steps=40)
    config.data = replace(config.data, **data)
    config.softmax = replace(config.softmax, **softmax)
    torch.manual_seed(0)
    summary = pretrain(config, log=quiet)
    vocab = LMVocabulary.load(tmp_path / "run" / "vocab.txt")
    torch.manual_seed(config.training.seed)
    untrained = BidirectionalLM(BiLM(config.model), vocab, config.softmax)
    before = perplexity(untrained, config.data.valid)["average"]
    assert summary["step"] == 40 and summary["tokens"] > 0
    assert summary["valid"]["average"] < 0.5 * before
    state = json.loads((tmp_path / "run" / "checkpoint" / "trainer_state.json").read_text())
    assert state["history"][-1] == summary["valid"]  # the last checkpoint knows the final validation,
    assert state["best_valid"] == min(h["average"] for h in state["history"])  # so --resume exports only better
    trained, _ = load_language_model(tmp_path / "run" / "model")
    assert trained.softmax_config == config.softmax
    assert perplexity(trained, config.data.valid)["average"] == pytest.approx(summary["valid"]["average"], rel=1e-5)


def test_unknown_batching_is_named(corpus, tmp_path):
    config = tiny_pretrain_config(corpus, tmp_path / "run", max_steps=2)
    config.data.batching = "stream"
    with pytest.raises(ValueError, match="data.batching must be 'sentences' or 'windows'"):
        pretrain(config, log=quiet)


@pytest.mark.integration  # trains to a measurable change: minutes of the fast tier
def test_same_seed_gives_identical_weights(corpus, tmp_path):
    runs = []
    for name in ("a", "b"):
        pretrain(tiny_pretrain_config(corpus, tmp_path / name, max_steps=6, seed=7), log=quiet)
        runs.append(load_file(str(tmp_path / name / "model" / "model.safetensors")))
    assert runs[0].keys() == runs[1].keys()
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
    pretrain(tiny_pretrain_config(corpus, tmp_path / "c", max_steps=6, seed=8), log=quiet)
    other = load_file(str(tmp_path / "c" / "model" / "model.safetensors"))
    assert not torch.equal(
        other["forward_layers.0.state_linearity.weight"], runs[0]["forward_layers.0.state_linearity.weight"]
    )


def test_existing_run_needs_resume(corpus, tmp_path):
    pretrain(tiny_pretrain_config(corpus, tmp_path / "run", max_steps=2), log=quiet)
    with pytest.raises(FileExistsError, match="--resume"):
        pretrain(tiny_pretrain_config(corpus, tmp_path / "run", max_steps=2), log=quiet)


@pytest.mark.integration
def test_run_killed_with_sigkill_resumes_from_its_checkpoint(corpus, tmp_path):
    """A run writing a checkpoint every step is SIGKILLed mid-way; ``--resume`` continues from that
    checkpoint (its step counter, weights, optimizer, data position and RNG) and ends with exactly
    the weights of an uninterrupted run."""
    steps = 20
    config = tiny_pretrain_config(corpus, tmp_path / "x", max_steps=steps, checkpoint_minutes=0, dropout=0.2)
    config_file = tmp_path / "config.json"
    config.save(config_file)

    def command(output_dir: Path, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-c",
            "from spacy_contextual.cli import app; app()",
            "pretrain-elmo",
            str(config_file),
            f"training.output_dir={output_dir}",
            *extra,
        ]

    killed = tmp_path / "killed"
    state_file = killed / "checkpoint" / "trainer_state.json"
    process = subprocess.Popen(command(killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        if state_file.is_file() and json.loads(state_file.read_text())["step"] >= 6:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    from spacy_contextual.training.checkpoint import find_checkpoint

    checkpoint = find_checkpoint(killed / "checkpoint")
    saved_step = json.loads((checkpoint / "trainer_state.json").read_text())["step"]
    saved_weights = load_file(str(checkpoint / "model" / "model.safetensors"))
    assert 6 <= saved_step < steps

    resumed = subprocess.run(command(killed, "--resume"), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resumed from {killed / 'checkpoint'} at step {saved_step}" in resumed.stdout
    assert json.loads((killed / "summary.json").read_text())["step"] == steps

    straight = tmp_path / "straight"
    pretrain(tiny_pretrain_config(corpus, straight, max_steps=steps, dropout=0.2), log=quiet)
    final_killed = load_file(str(killed / "model" / "model.safetensors"))
    final_straight = load_file(str(straight / "model" / "model.safetensors"))
    assert all(torch.equal(final_killed[k], final_straight[k]) for k in final_straight)
    assert not torch.equal(
        saved_weights["forward_layers.0.state_linearity.weight"],
        final_killed["forward_layers.0.state_linearity.weight"],
    )


DDP_SCRIPT = """
import os, sys
import torch
from safetensors.torch import save_file
from spacy_contextual.training.config import PretrainConfig
from spacy_contextual.training.trainer import build_language_model, pretrain
from spacy_contextual.training.vocab import LMVocabulary

config = PretrainConfig.load(sys.argv[1])
lm = build_language_model(config, LMVocabulary.load(sys.argv[2]))
initial = {k: v.clone() for k, v in lm.state_dict().items()}
summary = pretrain(config, lm=lm, log=lambda m: None)
rank = os.environ["RANK"]
save_file({k: v.contiguous() for k, v in lm.state_dict().items()}, f"{sys.argv[3]}/rank{rank}.safetensors")
save_file({k: v.contiguous() for k, v in initial.items()}, f"{sys.argv[3]}/initial{rank}.safetensors")
"""


def torchrun(*args: str) -> list[str]:
    """``python -m torch.distributed.run`` with two local processes on a free port, running ``args``."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_addr=127.0.0.1",
        f"--master_port={free_port()}",
        *args,
    ]


@pytest.mark.integration
def test_ddp_two_cpu_processes_under_torchrun_keep_identical_weights(corpus, tmp_path):
    config = tiny_pretrain_config(corpus, tmp_path / "run", max_steps=5, dropout=0.1)
    config.save(tmp_path / "config.json")
    LMVocabulary.build(config.data.train, 2).save(tmp_path / "vocab.txt")
    (tmp_path / "ddp.py").write_text(DDP_SCRIPT, encoding="utf-8")
    command = torchrun(
        str(tmp_path / "ddp.py"),
        str(tmp_path / "config.json"),
        str(tmp_path / "vocab.txt"),
        str(tmp_path),
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    ranks = [load_file(str(tmp_path / f"rank{r}.safetensors")) for r in range(2)]
    initial = load_file(str(tmp_path / "initial0.safetensors"))
    assert all(torch.equal(ranks[0][k], ranks[1][k]) for k in ranks[0])
    assert not torch.equal(ranks[0]["softmax.head.weight"], initial["softmax.head.weight"])
    state = json.loads((tmp_path / "run" / "checkpoint" / "trainer_state.json").read_text())
    assert state["step"] == 5 and len(state["positions"]) == 2


# -- fine-tuning, evaluation, export ------------------------------------------------------------


@pytest.mark.integration  # trains to a measurable change: minutes of the fast tier
def test_finetuning_a_bilm_tf_file_initialises_a_new_softmax_and_says_so(corpus, tmp_path):
    root = FIXTURES / "tiny_anchor"
    config = tiny_pretrain_config(corpus, tmp_path / "ft", max_steps=15)
    messages: list[str] = []
    result = finetune(root / "weights.hdf5", config, options_file=root / "options.json", log=messages.append)
    assert result["new_softmax"] is True
    assert any("no LM softmax" in m and "initialised a new adaptive softmax" in m for m in messages)
    assert any(m.startswith("held-out perplexity before") for m in messages)
    assert result["after"]["average"] < result["before"]["average"]
    # the fine-tuned model keeps the bilm-tf architecture and now has a softmax: fine-tune it again
    again = finetune(tmp_path / "ft" / "model", tiny_pretrain_config(corpus, tmp_path / "ft2", max_steps=3), log=quiet)
    assert again["new_softmax"] is False
    assert again["before"]["average"] == pytest.approx(result["after"]["average"], rel=1e-5)


def test_cli_finetune_prints_perplexity_before_and_after(corpus, tmp_path):
    root = FIXTURES / "tiny_anchor"
    config_file = tmp_path / "config.json"
    tiny_pretrain_config(corpus, tmp_path / "ft", max_steps=2).save(config_file)
    result = CliRunner().invoke(
        app,
        ["finetune-elmo", str(root / "weights.hdf5"), str(config_file), "--options-file", str(root / "options.json")],
    )
    assert result.exit_code == 0, result.output
    assert "initialised a new adaptive softmax" in result.output
    assert "held-out perplexity before" in result.output and "held-out perplexity after" in result.output
    assert load_bilm(tmp_path / "ft" / "model").config.n_highway == 2  # the bilm-tf architecture is kept


def test_cli_finetune_takes_a_catalog_name(corpus, tmp_path, home, server):
    from model_server import write_catalog

    root = FIXTURES / "tiny_anchor"
    config_file = tmp_path / "config.json"
    tiny_pretrain_config(corpus, tmp_path / "ft", max_steps=2).save(config_file)
    files = {name: {"url": server.add(name, (root / name).read_bytes())} for name in ("options.json", "weights.hdf5")}
    catalog = write_catalog(tmp_path / "c.json", {"anchor": {"encoder": "elmo", "format": "bilm_tf", "files": files}})
    result = CliRunner().invoke(app, ["--catalog", str(catalog), "finetune-elmo", "anchor", str(config_file)])
    assert result.exit_code == 0, result.output
    assert "held-out perplexity after" in result.output
    assert load_bilm(tmp_path / "ft" / "model").config.n_highway == 2  # the published pair's architecture


@pytest.mark.integration
def test_cli_finetune_under_torchrun_trains_on_two_shards_and_reports_once(corpus, tmp_path):
    root = FIXTURES / "tiny_anchor"
    config_file = tmp_path / "config.json"
    tiny_pretrain_config(corpus, tmp_path / "ft", max_steps=3).save(config_file)
    command = torchrun(
        "-m",
        "spacy_contextual",
        "finetune-elmo",
        str(root / "weights.hdf5"),
        str(config_file),
        "--options-file",
        str(root / "options.json"),
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("held-out perplexity before fine-tuning") == 1
    assert result.stdout.count("held-out perplexity after fine-tuning") == 1
    state = json.loads((tmp_path / "ft" / "checkpoint" / "trainer_state.json").read_text())
    assert state["step"] == 3 and len(state["positions"]) == 2


def test_export_reads_back_through_the_bilm_tf_loader_to_identical_outputs(corpus, tmp_path):
    pretrain(tiny_pretrain_config(corpus, tmp_path / "run", max_steps=3), log=quiet)
    result = CliRunner().invoke(app, ["export-elmo", str(tmp_path / "run"), str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    ours = load_bilm(tmp_path / "run" / "model").eval()
    exported = load_bilm_tf(tmp_path / "out" / "options.json", tmp_path / "out" / "weights.hdf5").eval()
    again = load_bilm(tmp_path / "out").eval()
    ids = batch_to_ids([["Export", "me", "."], ["Twice"]])
    with torch.no_grad():
        for a, b, c in zip(ours(ids).activations, exported(ids).activations, again(ids).activations, strict=True):
            assert torch.equal(a, b) and torch.equal(a, c)


def test_cli_pretrain_with_overrides_then_evaluate(corpus, tmp_path):
    config_file = tmp_path / "config.json"
    tiny_pretrain_config(corpus, tmp_path / "unused").save(config_file)
    runner = CliRunner()
    result = runner.invoke(
        app, ["pretrain-elmo", str(config_file), "--training.output_dir", str(tmp_path / "run"), "training.max_steps=4"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["step"] == 4
    scores = tmp_path / "scores.json"
    result = runner.invoke(app, ["evaluate-lm", str(tmp_path / "run"), str(corpus[1]), "--json", str(scores)])
    assert result.exit_code == 0, result.output
    assert "forward" in result.output and json.loads(scores.read_text())["sentences"] == 60


@pytest.mark.parametrize("name", sorted(path.name for path in (REPO / "configs").glob("*.json")))
def test_shipped_pretraining_configs_load_and_train(name, corpus, tmp_path):
    """Every JSON config in configs/ still loads and its training and batching settings run (on a tiny
    model and corpus), so none goes stale."""
    shipped = PretrainConfig.load(REPO / "configs" / name)
    tiny = tiny_pretrain_config(corpus, tmp_path / "run", max_steps=2)
    config = replace(
        shipped,
        model=tiny.model,
        softmax=replace(tiny.softmax, kind=shipped.softmax.kind, negatives=min(shipped.softmax.negatives, 50)),
        data=replace(
            shipped.data,
            train=tiny.data.train,
            valid=tiny.data.valid,
            vocab=None,
            batch_tokens=300,
            chunk_sentences=200,
            min_count=2,
        ),
        training=replace(
            shipped.training,
            output_dir=str(tmp_path / "run"),
            export_dir=None,
            max_steps=2,
            max_minutes=None,
            validate_minutes=1e6,
            checkpoint_minutes=1e6,
            num_threads=torch.get_num_threads(),
            device="cpu",
        ),  # fmt: skip
    )
    assert pretrain(config, log=quiet)["step"] == 2


def test_bad_overrides_are_refused_with_the_fix():
    assert parse_overrides(["--training.lr", "0.1", "data.batch_tokens=5"]) == [
        "training.lr=0.1",
        "data.batch_tokens=5",
    ]
    assert apply_overrides({}, ["training.lr=0.1", 'data.train=["a.txt"]']) == {
        "training": {"lr": 0.1},
        "data": {"train": ["a.txt"]},
    }
    with pytest.raises(ValueError, match="has no key 'lrr'"):
        apply_overrides({}, ["training.lrr=1"])
    with pytest.raises(ValueError, match=r"unknown keys in \[model\]"):
        PretrainConfig.from_dict({"model": {"lstm_size": 3}})
    with pytest.raises(ValueError, match="section.key=value"):
        parse_overrides(["lr"])


def test_evaluate_lm_refuses_a_model_without_softmax(tiny_model_dir, corpus):
    result = CliRunner().invoke(app, ["evaluate-lm", str(tiny_model_dir), str(corpus[1])])
    assert result.exit_code != 0
    assert "no LM softmax" in result.output
