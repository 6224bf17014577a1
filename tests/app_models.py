"""Tiny real models for the dashboard tests: an ELMo model directory, a CoVe MT directory and a
pipeline whose tagger and textcat listen to ``elmo`` with known layer mixes."""

from pathlib import Path

import numpy as np
import torch
from conftest import tiny_bilm

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
    from spacy_contextual.training.mt_data import SPECIALS, tokenize

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
    import spacy
    from spacy.training import Example

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
