"""The one schema of a model directory's ``config.json``, checked by every reader.

    {"kind": K, "format_version": 1, <the keys of kind K>}

Every key is required and has a type and a range (sizes have sane upper limits: ``MAX_WIDTH`` units,
``MAX_LAYERS`` layers, ``MAX_VOCAB`` words; the loaders also check them against the weight files,
``budget.py``); unknown keys are refused; nothing is filled in
with a default, so no two readers can disagree about a missing value. ``info`` (where a kind has it)
is free-form metadata (perplexities, training steps) and is not interpreted, except for the keys
that the readers of that metadata check themselves. The biLM section is also what a saved spaCy
pipeline stores for its ``elmo`` component, and is checked with the same rules.
"""

from __future__ import annotations

from typing import Any

from ..errors import ModelDirError
from ..kinds import a_model
from ..models.chars import MAX_CHARACTERS_PER_TOKEN, N_CHARACTERS
from ..models.seq2seq import ATTENTION_FORMS
from ..schema import BOOLEAN, OBJECT, Rule, integer, number, one_of, positive_or_null, shown, validate_section

__all__ = ["BOOLEAN", "OBJECT", "Rule", "integer", "number", "one_of", "positive_or_null", "validate_section"]

FORMAT_VERSIONS = (1,)
PRECISIONS = ("float32", "float16", "int8")
MAX_WIDTH, MAX_LAYERS, MAX_VOCAB = 2**16, 64, 2**24


FILTERS = Rule(
    f"a list of 1 to {MAX_LAYERS} [width, count] pairs (width in [1, {MAX_CHARACTERS_PER_TOKEN}], count in "
    f"[1, {MAX_WIDTH:_}])",
    lambda v: (
        isinstance(v, list)
        and 0 < len(v) <= MAX_LAYERS
        and all(
            isinstance(p, list)
            and len(p) == 2
            and integer(1, MAX_CHARACTERS_PER_TOKEN).test(p[0])
            and integer(1, MAX_WIDTH).test(p[1])
            for p in v
        )
    ),
)

BILM = {  # models/bilm.py: BiLMConfig
    "char_embedding_dim": integer(1, MAX_WIDTH),
    "filters": FILTERS,
    "n_highway": integer(0, MAX_LAYERS),
    "activation": one_of("relu", "tanh"),
    "n_characters": integer(N_CHARACTERS, MAX_WIDTH),
    "lstm_dim": integer(1, MAX_WIDTH),
    "projection_dim": integer(1, MAX_WIDTH),
    "n_layers": integer(1, MAX_LAYERS),
    "cell_clip": positive_or_null(),
    "proj_clip": positive_or_null(),
    "use_skip_connections": BOOLEAN,
}
MANYLANGS = {  # models/manylangs_bilm.py: ManyLangsConfig less its dictionaries (word.dic / char.dic beside it)
    "projection_dim": integer(1, MAX_WIDTH),
    "lstm_dim": integer(1, MAX_WIDTH),
    "n_layers": integer(1, MAX_LAYERS),
    "cell_clip": positive_or_null(),
    "proj_clip": positive_or_null(),
    "word_dim": integer(0, MAX_WIDTH),
    "char_dim": integer(0, MAX_WIDTH),
    "filters": Rule(
        f"[] or a list of at most {MAX_LAYERS} [width, count] pairs of integers in [1, {MAX_WIDTH:_}]",
        lambda v: (
            isinstance(v, list)
            and len(v) <= MAX_LAYERS
            and all(isinstance(p, list) and len(p) == 2 and all(integer(1, MAX_WIDTH).test(x) for x in p) for p in v)
        ),
    ),
    "n_highway": integer(0, MAX_LAYERS),
    "activation": one_of("relu", "tanh"),
    "max_characters_per_token": integer(3, MAX_WIDTH),  # a boundary token's ids: <eow>, <bos> or <eos>, <bow>
}
SEQ2SEQ = {  # models/seq2seq.py: Seq2SeqConfig
    "source_vocab_size": integer(1, MAX_VOCAB),
    "target_vocab_size": integer(1, MAX_VOCAB),
    "embedding_dim": integer(1, MAX_WIDTH),
    "encoder_hidden": integer(1, MAX_WIDTH),
    "encoder_layers": integer(1, MAX_LAYERS),
    "target_embedding_dim": integer(1, MAX_WIDTH),
    "decoder_hidden": integer(1, MAX_WIDTH),
    "decoder_layers": integer(1, MAX_LAYERS),
    "attention_form": one_of(*ATTENTION_FORMS),
    "tie_embeddings": BOOLEAN,
    "dropout": number(0.0, 1.0),
    "pad_id": integer(0, MAX_VOCAB),
    "bos_id": integer(0, MAX_VOCAB),
    "eos_id": integer(0, MAX_VOCAB),
}
SCHEMAS = {
    "elmo-bilm": {"bilm": BILM, "info": OBJECT},
    "elmo-manylangs": {"manylangs": MANYLANGS, "info": OBJECT},
    "cove-mt": {"model": SEQ2SEQ, "precision": one_of(*PRECISIONS), "info": OBJECT},
    "cove-encoder": {
        "input_dim": integer(1, MAX_WIDTH),
        "hidden_dim": integer(1, MAX_WIDTH),
        "num_layers": integer(1, MAX_LAYERS),
        "precision": one_of(*PRECISIONS),
    },
}


def validate_config(config: Any, kind: str, source: str) -> dict[str, Any]:
    """``config`` (config.json of ``source``) if it is a valid ``kind`` config; else ModelDirError."""
    if not isinstance(config, dict):
        raise ModelDirError(f"{source} holds a JSON {type(config).__name__}, not an object")
    if "kind" not in config:
        raise ModelDirError(f"{source} lacks the key 'kind': it is not a spacy-contextual model config")
    if config["kind"] != kind:
        raise ModelDirError(f"{source} describes {a_model(config['kind'])}, not {a_model(kind)}")
    version = config.get("format_version")
    if "format_version" not in config:
        raise ModelDirError(f"{source} lacks the key 'format_version' ({', '.join(map(str, FORMAT_VERSIONS))})")
    if not integer(1).test(version) or version not in FORMAT_VERSIONS:
        newer = integer(1).test(version) and version > max(FORMAT_VERSIONS)
        raise ModelDirError(
            f"{source}: format_version {shown(version)} is not one this spacy-contextual reads "
            f"({', '.join(map(str, FORMAT_VERSIONS))})"
            + ("; it was written by a newer version: upgrade spacy-contextual" if newer else "")
        )
    rest = {k: v for k, v in config.items() if k not in ("kind", "format_version")}
    validate_section(rest, SCHEMAS[kind], source)
    return config
