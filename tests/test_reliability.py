"""Reliability at real size: the bundled ELMo and CoVe (not tiny random models) through everything a
user does that can hang, corrupt or crash: nlp.pipe with worker processes, damaged model
directories, bad input files on the command line, interrupted and repeated training runs, hostile
dashboard input, and the inputs that already held (empty, huge, exotic text; bad weight files).

Loaded pipelines and embedders are shared by the whole module; corrupted copies are made per test.
Torch runs one thread here (the tests share the machine) except where threads are what is tested.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import spacy
import torch
from spacy.language import Language
from spacy.tokens import DocBin
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner
from util import DATA, FIXTURES, REPO, build_listener_pipeline, tiny_config, torch_threads, train_steps

from spacy_contextual.cli import app
from spacy_contextual.embedders import load_encoder
from spacy_contextual.errors import ContextualError, ModelDirError
from spacy_contextual.formats import atomic
from spacy_contextual.formats.bilm_dir import load_bilm, save_bilm
from spacy_contextual.formats.bilm_tf import WeightFileError, load_bilm_tf
from spacy_contextual.formats.bundled import bundled_model_dir
from spacy_contextual.formats.cove_pth import CovePthError, expected_shapes, load_cove_pth
from spacy_contextual.formats.model_dir import load_tensors
from spacy_contextual.formats.vectors import write_glove
from spacy_contextual.models.text import tokenize
from spacy_contextual.pipeline import layer_source, set_vector_hooks
from spacy_contextual.training.config import PretrainConfig
from spacy_contextual.training.trainer import pretrain

KINDS = ("elmo", "cove")
TEXTS = [
    "The bank of the river was steep after the rain .",
    "I deposited the money at the bank yesterday .",
    "",
    "   ",
    "Ein Haus 🏠 mit 漢字 und café .",
    "A man rides a horse along the beach while two dogs run behind him .",
] * 4
SENTENCES = [["The", "bank", "of", "the", "river", "."], ["I", "like", "green", "eggs", "and", "ham", "."]]
NOSKIP = FIXTURES / "tf_golden_bilmtf_noskip"
SKIP = FIXTURES / "tf_golden_allennlp_skip"


@pytest.fixture(scope="module", autouse=True)
def one_thread_here():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def pipelines():
    nlps = {}
    for kind in KINDS:
        nlps[kind] = spacy.blank("en")
        nlps[kind].add_pipe(kind)
        nlps[kind].initialize()
    return nlps


@pytest.fixture(scope="module")
def embedders():
    return {kind: load_encoder(kind, "default") for kind in KINDS}


def layers_of(doc, kind):
    return doc._.get(f"{kind}_data").layers


def cli(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *fragments: str) -> str:
    """Exit code 1 and one 'error: ...' line on stderr naming the fragments; no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# -- nlp.pipe(n_process=N) -------------------------------------------------------------------------


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


# -- model directories: manifest, schema, NaN, atomic writes ---------------------------------------


def bundled_copy(kind: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(bundled_model_dir(kind), tmp_path / kind))


def flip_middle(path: Path, count: int = 64) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(middle, min(middle + count, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


BUNDLED_FILES = [
    ("elmo", "model.safetensors"),
    ("elmo", "vocab.txt"),
    ("elmo", "config.json"),
    ("cove", "model-00002-of-00003.safetensors"),
    ("cove", "target_vocab.txt"),
    ("cove", "config.json"),
]


@pytest.mark.parametrize("kind, name", BUNDLED_FILES)
def test_a_flipped_byte_anywhere_is_refused_naming_the_file(kind, name, tmp_path):
    model = bundled_copy(kind, tmp_path)
    flip_middle(model / name, 64 if name.endswith(".safetensors") else 1)
    with pytest.raises(ModelDirError, match=rf"{name}.*(SHA-256|not valid JSON)"):
        load_encoder(kind, model)


def test_a_truncated_or_missing_weight_file_is_refused(tmp_path):
    model = bundled_copy("cove", tmp_path)
    shard = model / "model-00003-of-00003.safetensors"
    shard.write_bytes(shard.read_bytes()[:1000])
    with pytest.raises(ModelDirError, match=r"model-00003-of-00003.safetensors has 1,000 bytes"):
        load_encoder("cove", model)
    shard.unlink()
    with pytest.raises(ContextualError, match="model-00003-of-00003.safetensors is missing"):
        load_encoder("cove", model)


def test_a_directory_without_manifest_names_the_command_that_writes_one(tmp_path):
    model = bundled_copy("elmo", tmp_path)
    (model / "manifest.json").unlink()
    with pytest.raises(ModelDirError, match="no manifest.json.*spacy-contextual write-manifest"):
        load_encoder("elmo", model)
    result = cli("write-manifest", model)
    assert result.exit_code == 0, result.output
    assert load_encoder("elmo", model).embed_sentences(SENTENCES)[0].shape == (3, 6, 256)


def test_the_bundled_manifests_match_and_record_the_weights_as_shipped():
    for kind in KINDS:
        manifest = json.loads((bundled_model_dir(kind) / "manifest.json").read_text())
        assert "config.json" in manifest["files"] and any(n.endswith(".safetensors") for n in manifest["files"])


@pytest.fixture(scope="module")
def noskip_dir(tmp_path_factory):
    """Our model directory holding the bilm-tf fixture without skip connections."""
    bilm = load_bilm_tf(NOSKIP / "options.json", NOSKIP / "lm_weights.hdf5")
    return save_bilm(bilm, tmp_path_factory.mktemp("noskip") / "model")


def edited_config(source: Path, target: Path, edit) -> Path:
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    edit(config)
    (target / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return target


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["bilm"].pop("use_skip_connections"), r"lacks the key 'bilm.use_skip_connections'"),
        (lambda c: c["bilm"].pop("lstm_dim"), r"lacks the key 'bilm.lstm_dim'"),
        (lambda c: c.pop("bilm"), r"lacks the key 'bilm'"),
        (lambda c: c["bilm"].update(lstm_dim="32"), r"bilm.lstm_dim is '32'; expected an integer >= 1"),
        (lambda c: c["bilm"].update(n_layers=-1), r"bilm.n_layers is -1; expected an integer >= 1"),
        (lambda c: c["bilm"].update(use_skip_connections="yes"), r"use_skip_connections is 'yes'; expected true"),
        (lambda c: c["bilm"].update(cell_clip=-3), r"bilm.cell_clip is -3"),
        (lambda c: c.update(extra=1), r"unknown keys \['extra'\]"),
        (lambda c: c["bilm"].update(dropout=0.1), r"unknown keys \['bilm.dropout'\]"),
        (lambda c: c.update(format_version=99), r"format_version 99 .*newer version"),
        (lambda c: c.pop("format_version"), r"lacks the key 'format_version'"),
        (lambda c: c.update(kind="cove-mt"), r"'cove-mt' model, not a 'elmo-bilm'"),
        (
            lambda c: c["bilm"].update(use_skip_connections=True),
            r"config.json (does not match its SHA-256|has \d+ bytes)",
        ),
    ],
)
def test_config_json_is_checked_against_one_schema(noskip_dir, tmp_path, edit, message):
    model = edited_config(noskip_dir, tmp_path / "edited", edit)
    with pytest.raises(ModelDirError, match=message) as error:
        load_bilm(model)
    assert str(model / "config.json") in str(error.value) or "SHA-256" in str(error.value)


def test_a_config_that_is_not_json_is_refused_naming_it(noskip_dir, tmp_path):
    model = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    (model / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelDirError, match=r"config.json is not valid JSON"):
        load_encoder("elmo", model)


def test_the_cove_schema_names_its_keys(tmp_path):
    model = edited_config(bundled_model_dir("cove"), tmp_path / "cove", lambda c: c["model"].pop("dropout"))
    with pytest.raises(ModelDirError, match=r"lacks the key 'model.dropout'"):
        load_encoder("cove", model)


def test_nan_weights_are_refused_in_every_format(noskip_dir, tmp_path):
    bilm = load_bilm(noskip_dir)
    with torch.no_grad():
        bilm.token_encoder.projection.weight.fill_(float("nan"))
    save_bilm(bilm, tmp_path / "ours")
    with pytest.raises(ModelDirError, match=r"model.safetensors: token_encoder.projection.weight holds .* NaN"):
        load_bilm(tmp_path / "ours")
    hdf5 = Path(shutil.copy(SKIP / "lm_weights.hdf5", tmp_path / "weights.hdf5"))
    with h5py.File(hdf5, "r+") as weights:
        weights["CNN_proj/W_proj"][...] = np.nan
    with pytest.raises(WeightFileError, match=r"'CNN_proj/W_proj' .* NaN or infinite"):
        load_bilm_tf(SKIP / "options.json", hdf5)
    result = cli("elmo", sentences_file(tmp_path), tmp_path / "out.hdf5", "--all",
                 "--options-file", SKIP / "options.json", "--weight-file", hdf5)  # fmt: skip
    assert_one_line_error(result, "CNN_proj/W_proj", "NaN")
    state = {k: torch.full(shape, float("inf")) for k, shape in expected_shapes().items()}
    torch.save(state, tmp_path / "inf.pth")
    with pytest.raises(CovePthError, match="NaN or infinite"):
        load_cove_pth(tmp_path / "inf.pth")


def sentences_file(tmp_path: Path) -> Path:
    path = tmp_path / "sentences.txt"
    path.write_text("The bank of the river .\nI like it .\n", encoding="utf-8")
    return path


def test_a_save_that_fails_midway_leaves_the_previous_directory(noskip_dir, tmp_path, monkeypatch):
    from spacy_contextual.formats import model_dir

    target = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    before = load_tensors(target)
    calls = []

    def killed_while_writing(tensors, filename):
        calls.append(filename)
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(model_dir, "save_file", killed_while_writing)
    with pytest.raises(KeyboardInterrupt):
        save_bilm(load_bilm(noskip_dir), target)
    assert calls and not (tmp_path / "model.tmp").exists()
    after = load_tensors(target)
    assert all(torch.equal(before[k], after[k]) for k in before)
    load_bilm(target)  # manifest and all


def test_a_kill_between_the_two_renames_is_named_by_the_reader(noskip_dir, tmp_path, monkeypatch):
    target = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    monkeypatch.setattr(atomic, "_exchange", lambda first, second: False)  # no renameat2: two renames
    real_rename = Path.rename

    def killed_after_the_first(self, destination):
        if str(self).endswith(".tmp"):
            raise KeyboardInterrupt("killed between the renames")
        return real_rename(self, destination)

    monkeypatch.setattr(Path, "rename", killed_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        save_bilm(load_bilm(noskip_dir), target)
    monkeypatch.undo()
    assert not target.exists() and (tmp_path / "model.old").is_dir()
    with pytest.raises(ModelDirError, match=r"model.old is there: a save was interrupted; rename"):
        load_bilm(target)
    load_bilm(tmp_path / "model.old")  # the previous version, complete


def test_saving_over_a_folder_of_other_files_is_refused_and_notes_beside_a_model_are_kept(noskip_dir, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.tex").write_text("precious", encoding="utf-8")
    with pytest.raises(ContextualError, match="already holds other files"):
        save_bilm(load_bilm(noskip_dir), folder)
    assert (folder / "thesis.tex").read_text() == "precious"
    model = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    (model / "TRAINING.md").write_text("how it was made", encoding="utf-8")
    save_bilm(load_bilm(noskip_dir), model)
    assert (model / "TRAINING.md").read_text() == "how it was made"


# -- the command line: one line on stderr, exit code 1 ----------------------------------------------


def sense_file(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD_SENSE = json.dumps({"word": "bank", "tokens": ["the", "bank"], "target": 1, "sense": "money"})


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "bad.jsonl:2: not JSON"),
        ('{"word": "bank"}', "bad.jsonl:2 lacks ['tokens', 'target', 'sense']"),
        ('{"word": "bank", "tokens": ["a"], "target": 5, "sense": "x"}', "bad.jsonl:2: target 5"),
        ("[1, 2]", "bad.jsonl:2: a JSON list, not an object"),
    ],
)
def test_sense_probe_names_file_and_line_of_bad_jsonl(tmp_path, line, message):
    result = cli("sense-probe", sense_file(tmp_path / "bad.jsonl", [GOOD_SENSE, line]))
    assert_one_line_error(result, message)


def test_convert_sentiment_names_file_and_line_of_bad_jsonl(tmp_path):
    good = json.dumps({"id": 1, "text": "good", "label": "pos", "split": "train"})
    result = cli("convert-sentiment", sense_file(tmp_path / "bad.jsonl", [good, "{oops"]), tmp_path / "out")
    assert_one_line_error(result, "bad.jsonl:2: not JSON")
    result = cli("convert-sentiment", sense_file(tmp_path / "bad.jsonl", [good, '{"text": "x"}']), tmp_path / "out")
    assert_one_line_error(result, "bad.jsonl:2: the record lacks ['label', 'split']")


def test_missing_unreadable_and_undecodable_input(tmp_path):
    assert_one_line_error(cli("translate", tmp_path / "missing.txt"), "missing.txt does not exist")
    assert_one_line_error(cli("sense-probe", tmp_path / "missing.jsonl"), "missing.jsonl", "does not exist")
    assert_one_line_error(cli("translate", tmp_path), str(tmp_path), "directory")
    undecodable = tmp_path / "latin1.txt"
    undecodable.write_bytes("A man rides a horse .\nCaf\xe9 au lait .\n".encode("latin-1"))
    assert_one_line_error(cli("translate", undecodable), "latin1.txt:2: not UTF-8 text (byte 0xe9 at column 4)")
    gz = tmp_path / "cut.jsonl.gz"
    gz.write_bytes(gzip.compress((GOOD_SENSE + "\n").encode() * 200)[:100])
    assert_one_line_error(cli("sense-probe", gz), "cut.jsonl.gz", "truncated")


def test_an_output_folder_that_does_not_exist_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    import spacy_contextual.embedders.cove as cove

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded before the output was checked")

    monkeypatch.setattr(cove.CoveEmbedder, "load", no_loading)
    source = sentences_file(tmp_path)
    result = cli("translate", source, "--output", tmp_path / "no" / "such" / "out.de.txt")
    assert_one_line_error(result, "the folder", "does not exist")
    good = sense_file(tmp_path / "ok.jsonl", [GOOD_SENSE])
    result = cli("sense-probe", good, "--json", tmp_path / "missing" / "out.json")
    assert_one_line_error(result, "missing", "does not exist")


def test_a_bad_weight_file_is_one_line(tmp_path):
    truncated = tmp_path / "weights.hdf5"
    truncated.write_bytes((SKIP / "lm_weights.hdf5").read_bytes()[:100_000])
    result = cli("elmo", sentences_file(tmp_path), tmp_path / "out.hdf5", "--all",
                 "--options-file", SKIP / "options.json", "--weight-file", truncated)  # fmt: skip
    assert_one_line_error(result, "weights.hdf5", "truncated")
    model = bundled_copy("elmo", tmp_path)
    flip_middle(model / "model.safetensors")
    result = cli("sense-probe", sense_file(tmp_path / "ok.jsonl", [GOOD_SENSE] * 4), "--model", model)
    assert_one_line_error(result, "model.safetensors does not match its SHA-256")


def test_debug_shows_the_traceback(tmp_path, monkeypatch):
    result = cli("--debug", "translate", tmp_path / "missing.txt")
    assert isinstance(result.exception, FileNotFoundError)
    monkeypatch.setenv("SPACY_CONTEXTUAL_DEBUG", "1")
    assert isinstance(cli("translate", tmp_path / "missing.txt").exception, FileNotFoundError)


def test_the_installed_command_prints_one_line_and_exits_1(tmp_path):
    bad = sense_file(tmp_path / "bad.jsonl", [GOOD_SENSE, "{not json"])
    done = subprocess.run(
        [sys.executable, "-m", "spacy_contextual", "sense-probe", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [f"error: {bad}:2: not JSON (Expecting property name enclosed in double "
                                                "quotes at column 2)"]  # fmt: skip


# -- checkpoints ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lm_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm_corpus")
    with gzip.open(DATA / "lm_corpus" / "train.txt.gz", "rt", encoding="utf-8") as lines:
        (root / "train.txt").write_text("".join(next(lines) for _ in range(200)), encoding="utf-8")
    return root / "train.txt"


def pretrain_config(corpus: Path, output: Path, steps: int = 2) -> PretrainConfig:
    return PretrainConfig.from_dict(
        {
            "model": tiny_config().to_dict(),
            "softmax": {"cutoffs": [50, 200], "div_value": 2.0},
            "data": {"train": [str(corpus)], "batch_tokens": 300, "chunk_sentences": 100, "min_count": 2},
            "training": {"output_dir": str(output), "max_steps": steps, "warmup_steps": 1, "checkpoint_minutes": 1e6},
        }
    )


def quiet(message: str) -> None:
    pass


def test_an_earlier_runs_checkpoint_needs_resume_or_overwrite(lm_corpus, tmp_path):
    output = tmp_path / "run"
    pretrain(pretrain_config(lm_corpus, output), log=quiet)
    checkpoint = output / "checkpoint"
    with pytest.raises(FileExistsError, match="--resume to continue that run, or --overwrite"):
        pretrain(pretrain_config(lm_corpus, output), log=quiet)
    # killed between the two renames: only checkpoint.old and checkpoint.tmp are left
    checkpoint.rename(output / "checkpoint.old")
    shutil.copytree(output / "checkpoint.old", output / "checkpoint.tmp")
    config_file = tmp_path / "config.json"
    pretrain_config(lm_corpus, output).save(config_file)
    assert_one_line_error(cli("pretrain-elmo", config_file), "checkpoint.old holds a checkpoint", "--overwrite")
    assert (output / "checkpoint.old" / "trainer_state.json").is_file()  # nothing was deleted
    summary = pretrain(pretrain_config(lm_corpus, output, steps=4), resume=True, log=quiet)  # from .old
    assert summary["step"] == 4
    summary = pretrain(pretrain_config(lm_corpus, output, steps=1), overwrite=True, log=quiet)
    assert summary["step"] == 1 and not (output / "checkpoint.old").exists()


def test_checkpoints_are_written_whole(lm_corpus, tmp_path):
    output = tmp_path / "run"
    pretrain(pretrain_config(lm_corpus, output), log=quiet)
    left = sorted(p.name for p in output.iterdir())
    assert "checkpoint.tmp" not in left and "checkpoint.old" not in left and "model.tmp" not in left
    assert (output / "checkpoint" / "model" / "manifest.json").is_file()


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory):
    """A tiny Multi30k slice, GloVe rows and an MT config for one training step of train-cove."""
    root = tmp_path_factory.mktemp("mt")
    for split, n in (("train", 40), ("val", 8)):
        for lang in ("en", "de"):
            with gzip.open(DATA / "multi30k" / f"{split}.{lang}.gz", "rt", encoding="utf-8") as lines:
                text = "".join(next(lines) for _ in range(n))
            with gzip.open(root / f"{split}.{lang}.gz", "wt", encoding="utf-8") as out:
                out.write(text)
    words = sorted({w for line in gzip.open(root / "train.en.gz", "rt") for w in tokenize(line)})
    write_glove(root / "glove.txt", words, np.random.default_rng(0).normal(size=(len(words), 8)).astype(np.float32))
    config = f"""
[paths]
glove = "{root / "glove.txt"}"
train_source = "{root / "train.en.gz"}"
train_target = "{root / "train.de.gz"}"
val_source = "{root / "val.en.gz"}"
val_target = "{root / "val.de.gz"}"

[vocab]
oov = "zero"
source_min_count = 1
target_min_count = 1

[model]
embedding_dim = 8
encoder_hidden = 6
target_embedding_dim = 8
decoder_hidden = 8

[training]
seed = 0
threads = 1
optimizer = "adam"
learning_rate = 0.01
batch_size = 16
grad_clip = 5.0
max_epochs = 1
max_steps = 1
eval_every_steps = 0
checkpoint_every_steps = 1
"""
    (root / "mt.cfg").write_text(config, encoding="utf-8")
    return root / "mt.cfg"


def test_train_cove_refuses_an_earlier_run_without_resume_or_overwrite(mt_run, tmp_path):
    output = tmp_path / "cove"
    assert cli("train-cove", mt_run, output).exit_code == 0
    assert json.loads((output / "last" / "config.json").read_text())["info"]["longest_training_sentence"] >= 1
    (output / "last").rename(output / "last.old")
    assert_one_line_error(cli("train-cove", mt_run, output), "last.old holds a checkpoint", "--resume", "--overwrite")
    assert (output / "last.old").is_dir()
    assert cli("train-cove", mt_run, output, "--overwrite").exit_code == 0
    assert (output / "last").is_dir() and not (output / "last.old").exists()


# -- fixes: sense-probe with CoVe, the CoVe hooks line, long sentences --------------------------------


def test_sense_probe_with_the_bundled_cove(tmp_path):
    with gzip.open(DATA / "senses" / "serve.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    by_sense: dict[str, list] = {}
    for record in records:
        by_sense.setdefault(record["sense"], []).append(record)
    chosen = [r for sense in sorted(by_sense)[:2] for r in by_sense[sense][:10]]
    probe = sense_file(tmp_path / "serve.jsonl", [json.dumps(r) for r in chosen])
    result = cli("sense-probe", probe, "--encoder", "cove", "--json", tmp_path / "out.json")
    assert result.exit_code == 0, result.output[-2000:]
    scores = json.loads((tmp_path / "out.json").read_text())[0]
    assert scores["instances"] == 20 and scores["senses"] == 2 and len(scores["layer_accuracy"]) == 3


def test_cove_vector_hooks_after_docbin_as_the_readme_says(pipelines):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert 'set_vector_hooks(doc, layer_source("cove_data"))' in readme
    nlp = pipelines["cove"]
    doc_bin = DocBin(store_user_data=True, docs=[nlp("A man rides a horse .")])
    doc = next(DocBin().from_bytes(doc_bin.to_bytes()).get_docs(nlp.vocab))
    with pytest.raises(ValueError, match="doc._.elmo_data is not set"):
        set_vector_hooks(doc)
        doc[1].vector  # noqa: B018
    set_vector_hooks(doc, layer_source("cove_data"))
    np.testing.assert_allclose(doc[1].vector, layers_of(doc, "cove")[:, 1].mean(axis=0), atol=1e-6)


def test_translate_warns_about_sentences_longer_than_any_it_was_trained_on(embedders, tmp_path):
    cove = embedders["cove"]
    longest = max(len(tokenize(line)) for line in gzip.open(DATA / "multi30k" / "train.en.gz", "rt", encoding="utf-8"))
    assert cove.longest_training_sentence == longest == 40
    long_line = " ".join(["a man rides a horse ."] * 334)  # 2,004 tokens
    with pytest.warns(UserWarning, match=r"sentence 2 has 2,004 tokens, more than .* \(40 tokens\)"):
        cove.translate(["A dog runs .", long_line], beam=1, max_length=20)
    source = tmp_path / "long.txt"
    source.write_text(f"A dog runs .\n{long_line}\n", encoding="utf-8")
    result = cli("translate", source, "--beam", "1", "--max-length", "20")
    assert result.exit_code == 0 and result.stderr.startswith("warning: sentence 2 has 2,004 tokens")


# -- the dashboard: bounded input, short messages ------------------------------------------------------


def run_page(page: str, **state) -> AppTest:
    at = AppTest.from_file(str(REPO / "app" / "pages" / page), default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def page_messages(at: AppTest) -> list[str]:
    assert not at.exception, [e.value[:300] for e in at.exception]
    return [e.value for e in [*at.error, *at.warning]]


def test_a_5000_character_pipeline_path_gets_a_short_message():
    at = run_page("2_Layer_weights.py")
    at.text_area(key="weights_paths").set_value("/tmp/" + "p" * 5000).run()
    (message,) = page_messages(at)
    assert "is not a directory" in message and len(message) < 300


def test_a_5000_character_model_directory_gets_a_short_message():
    (message,) = page_messages(run_page("1_Sense_explorer.py", sense_model_elmo="/tmp/" + "m" * 5000))
    assert "Could not load" in message and message.count("m" * 70) <= 2 and len(message) < 600


def test_a_1mb_word_is_capped_and_not_echoed():
    at = run_page("1_Sense_explorer.py")
    at.text_input(key="sense_word").set_value("w" * 1_000_000).run()
    (message,) = page_messages(at)
    assert "does not occur" in message and len(message) < 300


# -- what already held --------------------------------------------------------------------------------


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


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_truncated_and_wrong_shaped_weight_files_are_refused(tmp_path):
    truncated = tmp_path / "cut.hdf5"
    truncated.write_bytes((SKIP / "lm_weights.hdf5").read_bytes()[:200_000])
    with pytest.raises(WeightFileError, match="truncated"):
        load_bilm_tf(SKIP / "options.json", truncated)
    options = json.loads((SKIP / "options.json").read_text())
    options["lstm"]["projection_dim"] = 32
    (tmp_path / "options.json").write_text(json.dumps(options))
    with pytest.raises(WeightFileError, match="has shape .* but the options imply"):
        load_bilm_tf(tmp_path / "options.json", SKIP / "lm_weights.hdf5")
    state = {k: torch.zeros(shape) for k, shape in expected_shapes().items()}
    state["weight_hh_l0"] = torch.zeros(3, 3)
    torch.save(state, tmp_path / "wrong.pth")
    with pytest.raises(CovePthError, match=r"weight_hh_l0 has shape \(3, 3\)"):
        load_cove_pth(tmp_path / "wrong.pth")
    (tmp_path / "cut.pth").write_bytes(pickle.dumps(state)[:500])
    with pytest.raises(CovePthError, match="could not be read"):
        load_cove_pth(tmp_path / "cut.pth")


class Payload:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "executed"))


def test_a_pickle_payload_in_a_pth_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "marker"
    torch.save({"weight_ih_l0": Payload(marker)}, tmp_path / "evil.pth")
    with pytest.raises(CovePthError, match="weights-only"):
        load_cove_pth(tmp_path / "evil.pth")
    assert not marker.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_a_sentence_alone_or_in_any_batch_gets_the_same_vectors(embedders, kind):
    """The same up to float32 rounding: the BLAS picks its kernels by matrix shape, so the batch a
    sentence shares moves the last bits; the bound is 1e-6 of the sentence's largest value (a few ulps)."""
    embedder = embedders[kind]
    with gzip.open(DATA / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        corpus = [line.split() for line, _ in zip(handle, range(40), strict=False) if line.split()]
    for sentence in [SENTENCES[0], *corpus[:6]]:
        alone = embedder.embed_sentences([sentence])[0]
        batch = [["A"] * 30, SENTENCES[1], sentence, ["Short", "."], *corpus[10:14]]
        bound = 1e-6 * np.abs(alone).max()
        for batched in (embedder.embed_sentences(batch)[2], embedder.embed_sentences(batch[::-1])[-3]):
            assert np.abs(batched - alone).max() <= bound, " ".join(sentence)


@pytest.mark.parametrize("kind", KINDS)
def test_to_disk_and_spacy_load_are_bit_identical(kind, tmp_path):
    nlp = spacy.blank("en")  # not the shared pipeline: its caches were filled at other thread counts
    nlp.add_pipe(kind)
    nlp.initialize()
    nlp.to_disk(tmp_path / kind)
    loaded = spacy.load(tmp_path / kind)
    for text in TEXTS[:5]:
        assert np.array_equal(layers_of(nlp(text), kind), layers_of(loaded(text), kind))
