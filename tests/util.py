"""Helpers the tests share: paths into ../shared, tiny random models built in code, a small
listener pipeline, and the tiny models the dashboard tests serve."""

from __future__ import annotations

import gzip
import json
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path

import numpy as np
import spacy
import torch
from spacy.training import Example
from thinc.api import Config, fix_random_seed

from spacy_contextual.testing import write_manylangs_dir  # noqa: F401  (the tests import it from here)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "elmo_fixtures"
DATA = SHARED / "data"


# -- tiny ELMo ----------------------------------------------------------------------------------


def tiny_config(**overrides):
    from spacy_contextual.models.bilm import BiLMConfig

    settings = dict(
        char_embedding_dim=4, filters=[[1, 4], [2, 8], [3, 16]], n_highway=1, lstm_dim=32, projection_dim=16, n_layers=2
    )
    settings.update(overrides)
    return BiLMConfig(**settings)


def tiny_bilm(seed: int = 0, **overrides):
    from spacy_contextual.models.bilm import BiLM

    torch.manual_seed(seed)
    bilm = BiLM(tiny_config(**overrides))
    with torch.no_grad():  # large enough that clipping engages, small enough to stay non-chaotic
        for lstm in [*bilm.forward_layers, *bilm.backward_layers]:
            lstm.state_linearity.bias.uniform_(-0.5, 0.5)
    return bilm.eval()


# -- tiny ELMoForManyLangs model directories --------------------------------------------------

MANYLANGS_FIXTURE = DATA / "elmoformanylangs"  # the writer: write_manylangs_dir, from spacy_contextual/testing.py

# -- tiny CoVe ----------------------------------------------------------------------------------

COVE_WORDS = [
    "the",
    "a",
    "man",
    "rides",
    "horse",
    "bank",
    "river",
    "money",
    ".",
    "i",
    "like",
    "green",
    "eggs",
    "eat",
    "blue",
    "ham",
]


def tiny_cove_dir(path, seed=0):
    """A "cove-encoder" directory: a random 8-d GloVe table over COVE_WORDS and a 6-unit MT-LSTM."""
    from spacy_contextual.formats.cove_dir import save_encoder
    from spacy_contextual.models.mtlstm import MTLSTM
    from spacy_contextual.mt_text import SPECIALS

    torch.manual_seed(seed)
    encoder = MTLSTM(input_dim=8, hidden_dim=6, num_layers=2).eval()
    vectors = torch.randn(len(SPECIALS) + len(COVE_WORDS), 8)
    vectors[: len(SPECIALS)] = 0  # padding and unknown words: the zero vector
    return save_encoder(encoder, vectors, SPECIALS + COVE_WORDS, path)


# -- a pipeline whose tagger and textcat listen to a tiny ELMo ----------------------------------

LISTENER_CONFIG = """
[paths]
elmo_model = null

[nlp]
lang = "en"
pipeline = ["elmo", "tagger", "textcat"]

[components]

[components.elmo]
factory = "elmo"
frozen = true

[components.tagger]
factory = "tagger"

[components.tagger.model]
@architectures = "spacy.Tagger.v2"
nO = null

[components.tagger.model.tok2vec]
@architectures = "spacy-contextual.ElmoListener.v1"
width = 24

[components.tagger.model.tok2vec.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = 8
attrs = ["NORM", "SHAPE"]
rows = [200, 50]
include_static_vectors = false

[components.textcat]
factory = "textcat"

[components.textcat.model]
@architectures = "spacy.TextCatReduce.v1"
exclusive_classes = true
use_reduce_first = false
use_reduce_last = false
use_reduce_max = true
use_reduce_mean = true
nO = null

[components.textcat.model.tok2vec]
@architectures = "spacy-contextual.ElmoListener.v1"
width = 16
layer_norm = true
dropout = 0.1

[initialize]

[initialize.components]

[initialize.components.elmo]

[initialize.components.elmo.loader]
@misc = "spacy-contextual.ElmoModelDir.v1"
path = ${paths.elmo_model}
"""
LISTENER_TRAIN = [
    ("I like green eggs", ["PRON", "VERB", "ADJ", "NOUN"], "pos"),
    ("Eat the blue ham", ["VERB", "DET", "ADJ", "NOUN"], "pos"),
    ("They hate cold soup", ["PRON", "VERB", "ADJ", "NOUN"], "neg"),
]


def build_listener_pipeline(model_dir, frozen=True, pipeline=None, learn_rate_scale=1.0, **elmo_model):
    fix_random_seed(0)
    config = Config().from_str(LISTENER_CONFIG, interpolate=False)
    config["components"]["elmo"]["frozen"] = frozen
    config["components"]["elmo"]["learn_rate_scale"] = learn_rate_scale
    if elmo_model:
        config["components"]["elmo"]["model"] = {"@architectures": "spacy-contextual.ElmoEncoder.v2", **elmo_model}
    config["paths"]["elmo_model"] = str(model_dir)
    if pipeline:
        config["nlp"]["pipeline"] = pipeline
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    examples = [
        Example.from_dict(
            nlp.make_doc(text), {"tags": tags, "cats": {"pos": float(c == "pos"), "neg": float(c == "neg")}}
        )
        for text, tags, c in LISTENER_TRAIN
    ]
    optimizer = nlp.initialize(lambda: examples)
    return nlp, examples, optimizer


def bilm_state(nlp, name="elmo"):
    return {k: v.clone() for k, v in nlp.get_pipe(name).model.shims[0]._model.state_dict().items()}


def train_steps(nlp, examples, optimizer, steps):
    losses = {}
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer, losses=losses)
    return losses


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Torch on ``count`` threads in this process inside the block, as each worker or rank runs (two
    threads on a shared 2-core machine crawl)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# -- tiny models for the dashboard tests --------------------------------------------------------

TAGGER_MIX = ([0.0, 1.0, 2.0], 1.5)  # s, gamma
TEXTCAT_MIX = ([2.0, 0.0, -1.0], 0.5)


def tiny_elmo_dir(path: Path) -> Path:
    from spacy_contextual.formats.bilm_dir import save_bilm

    return save_bilm(tiny_bilm(), path)


def tiny_cove_mt_dir(path: Path) -> Path:
    """A random translator whose vocabulary covers the demo sentences and the attention page's default."""
    from spacy_contextual.analysis.demo_corpus import DEMO_SENTENCES
    from spacy_contextual.dashboard.cove_attention import DEFAULT_SENTENCE
    from spacy_contextual.formats.cove_dir import save_translator
    from spacy_contextual.models.seq2seq import Seq2SeqConfig, Translator
    from spacy_contextual.mt_text import SPECIALS, tokenize

    words = sorted({w for _, _, text in DEMO_SENTENCES for w in tokenize(text)} | set(tokenize(DEFAULT_SENTENCE)))
    source_vocab, target_vocab = SPECIALS + words, SPECIALS + ["ein", "mann", "spielt", "gitarre", "."]
    torch.manual_seed(0)
    config = Seq2SeqConfig(
        len(source_vocab),
        len(target_vocab),
        embedding_dim=8,
        encoder_hidden=6,
        target_embedding_dim=5,
        decoder_hidden=7,
    )
    model = Translator(config, torch.randn(len(source_vocab), 8))
    with torch.no_grad():  # a random decoder that writes German words (not <pad>/<unk>/</s>) up to max_length
        model.decoder.output.bias[: len(SPECIALS)] = -10.0
    return save_translator(model.eval(), path, source_vocab, target_vocab)


def tiny_listener_pipeline(elmo_dir: Path, path: Path) -> Path:
    """elmo + a tagger and a textcat listening to it, initialised, layer mixes set to TAGGER_MIX / TEXTCAT_MIX."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    listener = {"@architectures": "spacy-contextual.ElmoListener.v1", "width": 16, "upstream": "elmo"}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
    textcat_model = {
        "@architectures": "spacy.TextCatReduce.v1", "exclusive_classes": True, "use_reduce_first": False,
        "use_reduce_last": False, "use_reduce_max": False, "use_reduce_mean": True, "tok2vec": listener,
    }  # fmt: skip
    nlp.add_pipe("textcat", config={"model": textcat_model})
    nlp.config["initialize"]["components"]["elmo"] = {
        "loader": {"@misc": "spacy-contextual.ElmoModelDir.v1", "path": str(elmo_dir)}
    }
    examples = [
        Example.from_dict(nlp.make_doc("the dog runs"), {"tags": ["D", "N", "V"], "cats": {"A": 1.0, "B": 0.0}}),
        Example.from_dict(nlp.make_doc("a cat sleeps"), {"tags": ["D", "N", "V"], "cats": {"A": 0.0, "B": 1.0}}),
    ]
    nlp.initialize(lambda: examples)
    for name, (s, gamma) in (("tagger", TAGGER_MIX), ("textcat", TEXTCAT_MIX)):
        mix = nlp.get_pipe(name).model.get_ref("tok2vec").get_ref("layer_mix")
        mix.set_param("s", np.asarray(s, dtype="float32"))
        mix.set_param("gamma", np.asarray([gamma], dtype="float32"))
    nlp.to_disk(path)
    return path


# -- the bundled models at real size, the command line ------------------------------------------

KINDS = ("elmo", "cove")
SENTENCES = [["The", "bank", "of", "the", "river", "."], ["I", "like", "green", "eggs", "and", "ham", "."]]
NOSKIP = FIXTURES / "tf_golden_bilmtf_noskip"
SKIP = FIXTURES / "tf_golden_allennlp_skip"
GOOD_SENSE = json.dumps({"word": "bank", "tokens": ["the", "bank"], "target": 1, "sense": "money"})


def layers_of(doc, kind):
    return doc._.get(f"{kind}_data").layers


def cli(*args: str):
    from typer.testing import CliRunner

    from spacy_contextual.cli import app

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


def bundled_copy(kind: str, tmp_path: Path) -> Path:
    from spacy_contextual.hub.resolver import bundled_model_dir

    return Path(shutil.copytree(bundled_model_dir(kind), tmp_path / kind))


def flip_middle(path: Path, count: int = 64) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(middle, min(middle + count, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def sentences_file(tmp_path: Path) -> Path:
    path = tmp_path / "sentences.txt"
    path.write_text("The bank of the river .\nI like it .\n", encoding="utf-8")
    return path


def sense_file(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def writer_leftovers(root: Path) -> list[str]:
    """The guarded writer's working files and folders below ``root`` (none after a finished or failed write)."""
    from spacy_contextual.writer import MARK

    endings = (MARK + "new", MARK + "old")
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.name.endswith(endings))


def write_slice(source: Path, target: Path, n: int) -> Path:
    with gzip.open(source, "rt", encoding="utf-8") as lines:
        target.write_text("".join(islice(lines, n)), encoding="utf-8")
    return target


def tiny_pretrain_config(corpus, output_dir, **training):
    from spacy_contextual.training.config import PretrainConfig

    train, valid = corpus
    settings = dict(
        output_dir=str(output_dir), max_steps=12, warmup_steps=2, lr=0.01, validate_minutes=1e6, checkpoint_minutes=1e6
    )
    settings.update(training)
    return PretrainConfig.from_dict(
        {
            "model": tiny_config().to_dict(),
            "softmax": {"cutoffs": [50, 200], "div_value": 2.0},
            "data": {
                "train": [str(train)],
                "valid": str(valid),
                "batch_tokens": 300,
                "chunk_sentences": 200,
                "min_count": 2,
            },
            "training": settings,
        }
    )
