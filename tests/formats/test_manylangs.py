"""ELMoForManyLangs model directories: parity with the original's outputs (the shared fixture), tiny
models of other shapes against a plain re-statement of the original's equations, conversion to our
format, detection, and one-line errors for damaged files."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys

import h5py
import numpy as np
import pytest
import torch
from typer.testing import CliRunner
from util import MANYLANGS_FIXTURE, write_manylangs_dir

from spacy_contextual.cli import app
from spacy_contextual.embedders import ElmoEmbedder, load_encoder
from spacy_contextual.errors import ModelDirError
from spacy_contextual.formats.bilm_tf import export_bilm_tf
from spacy_contextual.formats.detect import MANYLANGS, OURS, detect_format
from spacy_contextual.formats.manylangs import (
    SHIPPED_ARCHITECTURES,
    find_architecture,
    load_manylangs,
    read_dictionary,
)
from spacy_contextual.models.manylangs_bilm import ManyLangsBiLM

runner = CliRunner()
MODEL = MANYLANGS_FIXTURE / "model"
SENTENCES = json.loads((MANYLANGS_FIXTURE / "sentences.json").read_text(encoding="utf-8"))
TOLERANCE = dict(atol=1e-5, rtol=1e-5)
TINY_SENTENCES = [
    ["the", "bank", "."],
    ["Bank", "Ufer", "Fluss", "river", "the", "bank", "of", "the", "river", "."],
    [],
    ["<bos>", "<eos>", "<pad>", "<oov>", "\u3000", "a\u3000b", "überlang-und-noch-länger", ""],
    ["bank"],
]

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def fixture_embedder():
    return load_encoder("elmo", MODEL)


# -- the fixture: the original code's outputs ---------------------------------------------------


def test_all_layers_match_the_original(fixture_embedder):
    reference = np.load(MANYLANGS_FIXTURE / "reference_all.npz")
    outputs = fixture_embedder.embed_sentences(SENTENCES)
    assert len(outputs) == len(reference.files) == 41
    for i, layers in enumerate(outputs):
        assert layers.dtype == np.float32 and layers.shape == reference[str(i)].shape
        np.testing.assert_allclose(layers, reference[str(i)], **TOLERANCE)
    assert outputs[26].shape == (3, 0, 128)


def test_average_matches_the_original(fixture_embedder):
    reference = np.load(MANYLANGS_FIXTURE / "reference_average.npz")
    outputs = fixture_embedder.embed_sentences(SENTENCES)
    for key in reference.files:
        np.testing.assert_allclose(outputs[int(key)].mean(0), reference[key], **TOLERANCE)


def test_same_outputs_in_any_batch(fixture_embedder):
    """Stateless: a sentence gives the same vectors alone, in small batches and after other calls."""
    together = fixture_embedder.embed_sentences(SENTENCES)
    fixture_embedder.max_batch_tokens = 40
    try:
        small = fixture_embedder.embed_sentences(SENTENCES[::-1], batch_size=3)[::-1]
    finally:
        fixture_embedder.max_batch_tokens = 4096
    for a, b in zip(together, small, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_stateful_reproduces_the_original_state_carrying():
    reference = np.load(MANYLANGS_FIXTURE / "reference_stateful.npz")
    embedder = ElmoEmbedder.load(MODEL, stateful=True)
    assert isinstance(embedder.bilm, ManyLangsBiLM)
    first = embedder.embed_sentences(SENTENCES)  # call 1 = the stateless reference
    np.testing.assert_allclose(first[0], np.load(MANYLANGS_FIXTURE / "reference_all.npz")["0"], **TOLERANCE)
    second = embedder.embed_sentences([SENTENCES[i] for i in reference["call2_indices"]])
    for k, layers in enumerate(second):
        np.testing.assert_allclose(layers, reference[f"call2/{k}"], **TOLERANCE)


def test_cli_all_layers_match_the_original(tmp_path):
    """``spacy-contextual elmo --all --model DIR`` on the fixture's sentences (whitespace-free tokens
    joined by spaces; the rest are left out of this check)."""
    reference = np.load(MANYLANGS_FIXTURE / "reference_all.npz")
    kept = _space_free_sentences()
    input_file = tmp_path / "input.txt"
    input_file.write_text("".join(" ".join(SENTENCES[i]) + "\n" for i in kept), encoding="utf-8")
    out = tmp_path / "out.hdf5"
    result = runner.invoke(app, ["elmo", str(input_file), str(out), "--all", "--model", str(MODEL)])
    assert result.exit_code == 0, result.output
    with h5py.File(out) as f:
        for row, i in enumerate(kept):
            np.testing.assert_allclose(f[str(row)][...], reference[str(i)], **TOLERANCE)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cli_sharded_matches_the_original(tmp_path):
    """``--processes 2``: two ranks each load the model and embed their share."""
    reference = np.load(MANYLANGS_FIXTURE / "reference_all.npz")
    kept = _space_free_sentences()
    input_file = tmp_path / "input.txt"
    input_file.write_text("".join(" ".join(SENTENCES[i]) + "\n" for i in kept), encoding="utf-8")
    out = tmp_path / "out.hdf5"
    command = [sys.executable, "-m", "spacy_contextual", "elmo", input_file, out, "--all", "--model", MODEL]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([str(a) for a in (*command, "--processes", "2")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    with h5py.File(out) as f:
        for row, i in enumerate(kept):
            np.testing.assert_allclose(f[str(row)][...], reference[str(i)], **TOLERANCE)


def test_sense_probe_runs_on_the_model(tmp_path):
    lines = [
        {"id": f"b{n}", "word": "bank", "sense": sense, "tokens": tokens, "target": tokens.index("bank")}
        for n, (sense, tokens) in enumerate(
            [
                ("money", ["the", "bank", "."]),
                ("money", ["Bank", "the", "bank"]),
                ("money", ["the", "bank", "the"]),
                ("river", ["river", "bank", "."]),
                ("river", ["the", "river", "bank"]),
                ("river", ["bank", "river", "."]),
            ]
        )
    ]
    path = tmp_path / "bank.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    model = write_manylangs_dir(tmp_path / "m")
    result = runner.invoke(app, ["sense-probe", str(path), "--model", str(model), "--folds", "2"])
    assert result.exit_code == 0, result.output
    assert "bank" in result.output and "word + char-CNN" in result.output


def _space_free_sentences() -> list[int]:
    """The fixture's sentences that survive being written as one line of space-separated tokens."""
    kept = [i for i, s in enumerate(SENTENCES) if s and all(t and not any(c.isspace() for c in t) for t in s)]
    assert len(kept) > 30
    return kept


# -- tiny models of other shapes against the original's equations --------------------------------


def original_outputs(directory, sentences):
    """The original's forward pass, re-stated step by step from its state dicts (no code of ours)."""
    options = json.loads((directory / "config.json").read_text())
    arch = json.loads(find_architecture(directory).read_text())
    del options
    enc, emb = arch["encoder"], arch["token_embedder"]
    tok = torch.load(directory / "token_embedder.pkl", weights_only=True)
    lstm = torch.load(directory / "encoder.pkl", weights_only=True)

    def dic(name):
        out = {}
        for line in (directory / name).read_text(encoding="utf-8").splitlines():
            fields = line.strip().split("\t")
            if len(fields) == 1:
                fields.insert(0, "\u3000")
            out[fields[0]] = int(fields[1])
        return out

    words = dic("word.dic") if emb["word_dim"] else None
    chars = dic("char.dic") if emb["char_dim"] else None
    max_chars, C = emb["max_characters_per_token"], enc["dim"]
    act = torch.relu if emb["activation"] == "relu" else torch.tanh
    results = []
    for sentence in sentences:
        tokens = ["<bos>"] + [t[: max_chars - 2] if len(t) + 2 > max_chars else t for t in sentence] + ["<eos>"]
        features = []
        if words is not None:
            ids = torch.tensor([words.get(t, words["<oov>"]) for t in tokens])
            features.append(tok["word_emb_layer.embedding.weight"][ids])
        if chars is not None:
            grid = torch.full((len(tokens), max_chars), chars["<pad>"])
            for j, t in enumerate(tokens):
                grid[j, 0] = chars["<eow>"]
                spelled = [chars[t]] if t in ("<bos>", "<eos>") else [chars.get(c, chars["<oov>"]) for c in t]
                grid[j, 1 : len(spelled) + 1] = torch.tensor(spelled, dtype=torch.long)
                grid[j, len(spelled) + 1] = chars["<bow>"]
            x = tok["char_emb_layer.embedding.weight"][grid].transpose(1, 2)
            convs = [
                act(
                    torch.nn.functional.conv1d(x, tok[f"convolutions.{i}.weight"], tok[f"convolutions.{i}.bias"])
                    .max(-1)
                    .values
                )
                for i in range(len(emb["filters"]))
            ]
            y = torch.cat(convs, -1)
            for k in range(emb["n_highway"]):
                proj = y @ tok[f"highways._layers.{k}.weight"].T + tok[f"highways._layers.{k}.bias"]
                h, g = proj.chunk(2, -1)
                y = torch.sigmoid(g) * y + (1 - torch.sigmoid(g)) * torch.relu(h)
            features.append(y)
        e = torch.cat(features, -1) @ tok["projection.weight"].T + tok["projection.bias"]
        layers = [torch.cat([e, e], -1)]
        inputs = {"forward": e, "backward": e}
        for k in range(enc["n_layers"]):
            outs = {}
            for direction, x in inputs.items():
                p = f"{direction}_layer_{k}"
                h, c = torch.zeros(enc["projection_dim"]), torch.zeros(C)
                steps = range(len(tokens)) if direction == "forward" else reversed(range(len(tokens)))
                out = [None] * len(tokens)
                for t in steps:
                    z = lstm[f"{p}.input_linearity.weight"] @ x[t] + lstm[f"{p}.state_linearity.weight"] @ h
                    z = z + lstm[f"{p}.state_linearity.bias"]
                    i, f, g, o = z[:C].sigmoid(), z[C : 2 * C].sigmoid(), z[2 * C : 3 * C].tanh(), z[3 * C :].sigmoid()
                    c = i * g + f * c
                    c = c.clamp(-enc["cell_clip"], enc["cell_clip"]) if enc["cell_clip"] else c
                    h = lstm[f"{p}.state_projection.weight"] @ (o * c.tanh())
                    h = h.clamp(-enc["proj_clip"], enc["proj_clip"]) if enc["proj_clip"] else h
                    out[t] = h
                outs[direction] = torch.stack(out) + (x if k > 0 else 0)
            layers.append(torch.cat([outs["forward"], outs["backward"]], -1))
            inputs = outs
        results.append(torch.stack(layers)[:, 1:-1].numpy())
    return results


SHAPES = {
    "word and char": {},
    "char only": {"word_dim": 0},
    "word only": {"char_dim": 0},
    "projection = cell": {"projection_dim": 12, "lstm_dim": 12},
    "tanh, no highway, one layer": {"activation": "tanh", "n_highway": 0, "n_layers": 1},
    "three layers, short tokens": {"n_layers": 3, "max_characters": 7, "filters": ((1, 2), (3, 4), (7, 2))},
    "tokens of 3 characters": {"max_characters": 3, "filters": ((1, 2), (3, 2))},
    "projection wider than the cell, no clipping": {"projection_dim": 12, "lstm_dim": 8, "clip": 0},
    "zip format": {"zip_format": True},
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_tiny_models_follow_the_original_equations(tmp_path, shape):
    directory = write_manylangs_dir(tmp_path / "m", **shape)
    assert detect_format(directory) == MANYLANGS
    sentences = TINY_SENTENCES
    if shape.get("max_characters", 10) < 7:  # the original would cut a literal "<bos>" there; we keep it whole
        sentences = [s for s in sentences if "<bos>" not in s]
    ours = load_encoder("elmo", directory).embed_sentences(sentences)
    for got, expected in zip(ours, original_outputs(directory, sentences), strict=True):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, atol=2e-5, rtol=1e-5)


def test_loading_draws_no_random_numbers_and_reads_straight_into_the_dtype(tmp_path):
    """The modules are built uninitialised (every parameter comes from the files), in the dtype asked for."""
    directory = write_manylangs_dir(tmp_path / "m")
    exact = load_manylangs(directory)
    generator = torch.random.get_rng_state()
    low = load_manylangs(directory, dtype=torch.bfloat16)
    assert torch.equal(torch.random.get_rng_state(), generator)
    for (name, want), got in zip(exact.state_dict().items(), low.state_dict().values(), strict=True):
        assert got.dtype == (torch.bfloat16 if want.is_floating_point() else want.dtype), name
        assert torch.equal(want.to(got.dtype), got), name


def test_conversion_gives_identical_outputs_without_pickles(tmp_path):
    source = write_manylangs_dir(tmp_path / "source")
    result = runner.invoke(app, ["convert-model", str(source), str(tmp_path / "converted")])
    assert result.exit_code == 0, result.output
    converted = tmp_path / "converted"
    assert detect_format(converted) == OURS and not list(converted.glob("*.pkl"))
    expected = load_encoder("elmo", source).embed_sentences(TINY_SENTENCES)
    shutil.rmtree(source)
    got = load_encoder("elmo", converted).embed_sentences(TINY_SENTENCES)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_converted_fixture_matches_the_original(tmp_path):
    result = runner.invoke(app, ["convert-model", str(MODEL), str(tmp_path / "converted")])
    assert result.exit_code == 0, result.output
    reference = np.load(MANYLANGS_FIXTURE / "reference_all.npz")
    outputs = load_encoder("elmo", tmp_path / "converted").embed_sentences(SENTENCES)
    for i, layers in enumerate(outputs):
        np.testing.assert_allclose(layers, reference[str(i)], **TOLERANCE)


def test_conversion_never_overwrites_the_source(tmp_path):
    source = write_manylangs_dir(tmp_path / "source")
    before = {p.name: p.read_bytes() for p in source.iterdir()}
    for target in (source, tmp_path / "source" / "."):
        result = runner.invoke(app, ["convert-model", str(source), str(target)])
        assert result.exit_code == 1 and "error:" in result.output
    other = write_manylangs_dir(tmp_path / "other", seed=1)
    result = runner.invoke(app, ["convert-model", str(source), str(other)])
    assert result.exit_code == 1 and "already holds other files" in result.output
    assert {p.name: p.read_bytes() for p in source.iterdir()} == before


# -- finding files: the architecture JSON, dictionaries -------------------------------


def test_architecture_json_resolution(tmp_path):
    directory = write_manylangs_dir(tmp_path / "m")
    arch = next(p for p in directory.glob("cnn_*.json"))
    assert find_architecture(directory) == arch  # the absolute config_path does not exist: its basename
    options = json.loads((directory / "config.json").read_text())
    (directory / "sub").mkdir()
    arch.rename(directory / "sub" / arch.name)
    options["config_path"] = f"sub/{arch.name}"  # relative to the model directory
    (directory / "config.json").write_text(json.dumps(options))
    assert find_architecture(directory) == directory / "sub" / arch.name
    options["config_path"] = "/users4/conll18st/elmo/src/configs/cnn_50_100_512_4096_sample.json"
    (directory / "config.json").write_text(json.dumps(options))
    assert find_architecture(directory) == SHIPPED_ARCHITECTURES / "cnn_50_100_512_4096_sample.json"
    shipped = {p.name: json.loads(p.read_text()) for p in SHIPPED_ARCHITECTURES.glob("*.json")}
    assert sorted(shipped) == ["cnn_0_100_512_4096_sample.json", "cnn_50_100_512_4096_sample.json"]
    assert shipped["cnn_0_100_512_4096_sample.json"] == shipped["cnn_50_100_512_4096_sample.json"]
    options["config_path"] = "elsewhere/missing.json"
    (directory / "config.json").write_text(json.dumps(options))
    with pytest.raises(FileNotFoundError, match="missing.json"):
        find_architecture(directory)


def test_dictionary_whitespace_key_becomes_u3000(tmp_path):
    path = tmp_path / "char.dic"
    path.write_text("a\t0\n \t1\nb \t2\n\u3000c\t3\n", encoding="utf-8")  # strip() eats a line's outer whitespace only
    assert read_dictionary(path, ()) == {"a": 0, "\u3000": 1, "b ": 2, "c": 3}


# -- damaged or hostile files: one line naming the file -------------------------------------------


def _damage(directory, name, change):
    state = torch.load(directory / name, weights_only=True)
    change(state)
    torch.save(state, directory / name, _use_new_zipfile_serialization=False)


def _truncate(path):
    path.write_bytes(path.read_bytes()[:3000])


def _claim_a_huge_storage(path):
    """A legacy pickle whose storage claims 2**31 - 1 elements (8 GiB) but holds 123457."""
    torch.save({"w": torch.zeros(123457)}, path, _use_new_zipfile_serialization=False)
    needle = b"J" + struct.pack("<i", 123457)
    path.write_bytes(path.read_bytes().replace(needle, b"J" + struct.pack("<i", 2**31 - 1), 1))


class Evil:
    def __reduce__(self):
        return (print, ("this code must never run",))


class SystemCall:
    """A payload from a module torch blocks outright (its refusal has no "WeightsUnpickler error:")."""

    def __reduce__(self):
        return (os.system, ("echo this code must never run",))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "config.json").write_text("{}"), "no 'config_path'"),
        (lambda d: (d / "config.json").write_text("{not json"), "not valid JSON"),
        (lambda d: (d / "word.dic").write_text("a\t0\nb\tx\n"), r"word.dic:2: expected 'key<TAB>id'"),
        (lambda d: (d / "char.dic").write_text("a\t0\n"), r"char.dic lacks the entries \['<bos>'"),
        (lambda d: (d / "word.dic").write_text("<oov>\t0\n<pad>\t7\n"), "outside its 2-row table"),
        (lambda d: (d / "encoder.pkl").unlink(), "encoder.pkl is missing"),
        (
            lambda d: (d / "encoder.pkl").write_bytes(b"\x80\x02garbage"),
            r"encoder.pkl is not a readable PyTorch state dict \(Unsupported operand 103\); the file is damaged",
        ),
        (
            lambda d: torch.save({"w": Evil()}, d / "encoder.pkl"),
            r"encoder.pkl contains code or objects that are not plain weights \(Unsupported global: GLOBAL print "
            r"was not an allowed global by default\); refused, nothing was run: load only weight files from a source "
            "you trust$",
        ),
        (
            lambda d: torch.save({"w": SystemCall()}, d / "encoder.pkl"),
            r"encoder.pkl contains code or objects that are not plain weights \(Trying to load unsupported GLOBAL "
            r"posix.system whose module posix is blocked\); refused, nothing was run",
        ),
        (lambda d: _truncate(d / "encoder.pkl"), r"encoder.pkl is not a readable PyTorch state dict \(unexpected EOF"),
        (lambda d: _claim_a_huge_storage(d / "encoder.pkl"), r"encoder.pkl is not a readable PyTorch state dict"),
        (lambda d: torch.save([torch.zeros(2)], d / "encoder.pkl"), "encoder.pkl does not hold a state dict"),
        (
            lambda d: _damage(
                d, "encoder.pkl", lambda s: s.__setitem__("forward_layer_0.state_linearity.bias", torch.zeros(5))
            ),
            r"encoder.pkl: forward_layer_0.state_linearity.bias has shape \(5,\)",
        ),
        (
            lambda d: _damage(d, "token_embedder.pkl", lambda s: s.pop("projection.bias")),
            r"token_embedder.pkl: the weights do not match .*missing \['projection.bias'\]",
        ),
        (
            lambda d: _damage(d, "token_embedder.pkl", lambda s: s["projection.bias"].__setitem__(0, float("nan"))),
            "token_embedder.pkl: projection.bias holds 1 NaN",
        ),
    ],
)
def test_damaged_directories_are_one_line_errors(tmp_path, capsys, damage, message):
    directory = write_manylangs_dir(tmp_path / "m")
    damage(directory)
    with pytest.raises((ModelDirError, FileNotFoundError), match=message) as error:
        load_encoder("elmo", directory)
    assert "\n" not in str(error.value)
    assert "must never run" not in capsys.readouterr().out


def test_architecture_errors_name_the_key(tmp_path):
    directory = write_manylangs_dir(tmp_path / "m")
    arch = next(directory.glob("cnn_*.json"))
    data = json.loads(arch.read_text())
    data["token_embedder"]["filters"] = [[60, 4]]
    arch.write_text(json.dumps(data))
    with pytest.raises(ModelDirError, match="wider than max_characters_per_token"):
        load_encoder("elmo", directory)
    data["encoder"]["name"] = "lstm"
    arch.write_text(json.dumps(data))
    with pytest.raises(ModelDirError, match="encoder.name is 'lstm'"):
        load_encoder("elmo", directory)


def test_bilm_tf_export_is_refused_cleanly(tmp_path):
    from spacy_contextual.errors import ContextualError

    bilm = load_encoder("elmo", write_manylangs_dir(tmp_path / "m")).bilm
    with pytest.raises(ContextualError, match="no place for this model's token embedder"):
        export_bilm_tf(bilm, tmp_path / "out")
    assert not (tmp_path / "out").exists()
