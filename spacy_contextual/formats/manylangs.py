"""Read an ELMoForManyLangs (HIT-SCIR) model directory as its ``Embedder(model_dir)`` reads it.

    config.json           the training options; only ``config_path`` is read
    <architecture>.json   model_dir/config_path (an absolute path stays absolute), else
                          model_dir/<its basename>, else the copy shipped in assets/manylangs/ of the
                          two architectures the original package ships (identical files)
    word.dic / char.dic   ``key<TAB>id`` lines (read when word_dim / char_dim > 0)
    token_embedder.pkl    ``torch.save``'d state dicts, read with ``torch.load(weights_only=True)``
    encoder.pkl           only: no code in them runs

Dictionary lines are split as the original's ``codecs`` reader splits them (``str.splitlines``) and
parsed as ``line.strip().split('\\t')``; a line left with one field had a whitespace key that
``strip()`` ate, and its key is U+3000. The table of a dictionary has ``len(dict)`` rows.

Before any module is built, every tensor's name and shape is checked against what the architecture
and the dictionaries imply, and weights holding NaN or infinity are refused. The weights are then
put into ``ManyLangsBiLM``'s layout: the highway gate negated into CharCNN's carry gate, the LSTM
gates reordered from i, f, g, o to i, j(=g), f, o.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ..errors import ModelDirError
from ..locations import ASSETS
from ..models.manylangs_bilm import ManyLangsBiLM, ManyLangsConfig
from ..models.manylangs_ids import CHAR_SPECIALS, WORD_SPECIALS
from ..text_files import read_json
from ..types import PathLike
from .budget import build_within_budget
from .model_config import MANYLANGS, Rule, integer, number, one_of, validate_section
from .model_dir import check_finite, check_state
from .weights_only import load_weights_only

CONFIG_NAME, WORDS_NAME, CHARS_NAME = "config.json", "word.dic", "char.dic"
TOKEN_EMBEDDER_NAME, ENCODER_NAME = "token_embedder.pkl", "encoder.pkl"
SHIPPED_ARCHITECTURES = ASSETS / "manylangs"

CLIP = Rule("a number >= 0 (0 or null: no clipping)", lambda v: v is None or number(0, float("inf")).test(v))
ENCODER_SECTION = {
    "name": one_of("elmo"),
    "projection_dim": integer(1),
    "dim": integer(1),
    "n_layers": integer(1),
    "cell_clip": CLIP,
    "proj_clip": CLIP,
}
TOKEN_EMBEDDER_SECTION = {
    "name": one_of("cnn"),
    "word_dim": integer(0),
    "char_dim": integer(0),
    "max_characters_per_token": MANYLANGS["max_characters_per_token"],
}
CHAR_CNN_KEYS = ("filters", "n_highway", "activation")  # read only when char_dim > 0


def find_architecture(directory: Path) -> Path:
    """The architecture JSON that ``config.json``'s ``config_path`` names, in the original's order."""
    options = _read_json(directory / CONFIG_NAME)
    config_path = options.get("config_path") if isinstance(options, dict) else None
    if not isinstance(config_path, str) or not config_path.strip():
        raise ModelDirError(
            f"{directory / CONFIG_NAME} has no 'config_path' (the architecture JSON's path); it is not an "
            "ELMoForManyLangs config.json"
        )
    basename = os.path.basename(config_path)
    candidates = [directory / config_path, directory / basename, SHIPPED_ARCHITECTURES / basename]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"the architecture JSON {config_path!r} named in {directory / CONFIG_NAME} is in none of "
        f"{[str(c) for c in candidates[:2]]}; put it into {directory} (the published models use "
        f"{', '.join(sorted(p.name for p in SHIPPED_ARCHITECTURES.glob('*.json')))}, which are shipped)"
    )


def read_architecture(path: Path) -> dict[str, Any]:
    """The ``encoder`` and ``token_embedder`` sections, checked, as ManyLangsConfig's keys."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ModelDirError(f"{path} holds a JSON {type(data).__name__}, not an architecture object")
    encoder = validate_section(data.get("encoder"), ENCODER_SECTION, str(path), "encoder.", other_keys=True)
    embedder = validate_section(
        data.get("token_embedder"), TOKEN_EMBEDDER_SECTION, str(path), "token_embedder.", other_keys=True
    )
    char_dim = embedder["char_dim"]
    if char_dim:
        char_cnn = {key: MANYLANGS[key] for key in CHAR_CNN_KEYS}
        validate_section(embedder, char_cnn, str(path), "token_embedder.", other_keys=True)
    architecture = {
        "projection_dim": encoder["projection_dim"],
        "lstm_dim": encoder["dim"],
        "n_layers": encoder["n_layers"],
        "cell_clip": encoder["cell_clip"] or None,
        "proj_clip": encoder["proj_clip"] or None,
        "word_dim": embedder["word_dim"],
        "char_dim": char_dim,
        "filters": [list(f) for f in embedder["filters"]] if char_dim else [],
        "n_highway": embedder["n_highway"] if char_dim else 0,
        "activation": embedder["activation"] if char_dim else "relu",
        "max_characters_per_token": embedder["max_characters_per_token"],
    }
    check_architecture(architecture, str(path))
    return architecture


def check_architecture(architecture: dict[str, Any], source: str) -> None:
    """What the keys' own rules cannot say: some token features, filters that fit a token."""
    if not architecture["char_dim"] and not architecture["word_dim"]:
        raise ModelDirError(f"{source}: word_dim and char_dim are both 0, so tokens have no features")
    if architecture["char_dim"] and not architecture["filters"]:
        raise ModelDirError(f"{source}: char_dim is {architecture['char_dim']} but there are no filters")
    widest = max((width for width, _ in architecture["filters"]), default=0)
    if widest > architecture["max_characters_per_token"]:
        raise ModelDirError(
            f"{source}: a filter of width {widest} is wider than max_characters_per_token "
            f"({architecture['max_characters_per_token']})"
        )


def read_dictionary(path: Path, specials: tuple[str, ...]) -> dict[str, int]:
    """``key -> id`` of a word.dic / char.dic, ids checked to be rows of its ``len(dict)``-row table."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing; the model's architecture needs it") from None
    except UnicodeDecodeError as error:
        raise ModelDirError(f"{path} is not UTF-8 text ({error}); the file is damaged") from None
    entries: dict[str, int] = {}
    for line_number, line in enumerate(text.splitlines(), 1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, "\u3000")
        try:
            key, row = fields
            entries[key] = int(row)
        except ValueError:
            raise ModelDirError(
                f"{path}:{line_number}: expected 'key<TAB>id', got {line[:40]!r}; the file is damaged"
            ) from None
    missing = [key for key in specials if key not in entries]
    if missing:
        raise ModelDirError(f"{path} lacks the entries {missing}, which the model's input needs")
    outside = [(key, i) for key, i in entries.items() if not 0 <= i < len(entries)]
    if outside:
        raise ModelDirError(
            f"{path}: the id of {outside[0][0]!r} is {outside[0][1]}, outside its {len(entries)}-row table"
        )
    return entries


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """A ``torch.save``'d state dict (legacy or zip format), unpickled with ``weights_only=True``."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing; an ELMoForManyLangs model has {TOKEN_EMBEDDER_NAME} and {ENCODER_NAME}"
        )
    state = load_weights_only(path, ModelDirError)
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ModelDirError(
            f"{path} does not hold a state dict (names -> tensors); it is not an ELMoForManyLangs weight file"
        )
    not_float = [name for name, tensor in state.items() if not tensor.is_floating_point()]
    if not_float:
        raise ModelDirError(
            f"{path}: {not_float[0]} holds {state[not_float[0]].dtype} values, not floating point weights"
        )
    return state


def expected_shapes(config: ManyLangsConfig) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """The original's parameter names and shapes for ``token_embedder.pkl`` and ``encoder.pkl``."""
    P, C = config.projection_dim, config.lstm_dim
    embedder: dict[str, tuple[int, ...]] = {}
    features = 0
    if config.words is not None:
        embedder["word_emb_layer.embedding.weight"] = (len(config.words), config.word_dim)
        features += config.word_dim
    if config.chars is not None:
        E = config.char_dim
        F = sum(num for _, num in config.filters)
        embedder["char_emb_layer.embedding.weight"] = (len(config.chars), E)
        for i, (width, num) in enumerate(config.filters):
            embedder[f"convolutions.{i}.weight"] = (num, E, width)
            embedder[f"convolutions.{i}.bias"] = (num,)
        for k in range(config.n_highway):
            embedder[f"highways._layers.{k}.weight"] = (2 * F, F)
            embedder[f"highways._layers.{k}.bias"] = (2 * F,)
        features += F
    embedder["projection.weight"] = (P, features)
    embedder["projection.bias"] = (P,)
    encoder: dict[str, tuple[int, ...]] = {}
    for k in range(config.n_layers):
        for direction in ("forward", "backward"):
            prefix = f"{direction}_layer_{k}"
            encoder[f"{prefix}.input_linearity.weight"] = (4 * C, P)
            encoder[f"{prefix}.state_linearity.weight"] = (4 * C, P)
            encoder[f"{prefix}.state_linearity.bias"] = (4 * C,)
            encoder[f"{prefix}.state_projection.weight"] = (P, C)
    return embedder, encoder


def read_manylangs(
    path: PathLike, dtype: torch.dtype = torch.float32
) -> tuple[ManyLangsConfig, dict[str, torch.Tensor]]:
    """The architecture, the dictionaries and the weights in ``dtype`` (in ``ManyLangsBiLM``'s names and layout)."""
    directory = Path(path)
    architecture = read_architecture(find_architecture(directory))
    words = read_dictionary(directory / WORDS_NAME, WORD_SPECIALS) if architecture["word_dim"] else None
    chars = read_dictionary(directory / CHARS_NAME, CHAR_SPECIALS) if architecture["char_dim"] else None
    config = ManyLangsConfig(**architecture, words=words, chars=chars)
    expected_embedder, expected_encoder = expected_shapes(config)
    original: dict[str, torch.Tensor] = {}
    for name, expected in ((TOKEN_EMBEDDER_NAME, expected_embedder), (ENCODER_NAME, expected_encoder)):
        state = read_state_dict(directory / name)
        check_state(expected, state, str(directory / name))
        check_finite(state, str(directory / name))
        original.update({key: tensor.to(dtype) for key, tensor in state.items()})
    return config, ours_from_original(config, original)


def ours_from_original(config: ManyLangsConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The original's state dicts in ``ManyLangsBiLM``'s names, gate order and highway form (the LSTM
    tensors of ``state`` are reordered in place: no 32 MB copy of each)."""
    C = config.lstm_dim
    out: dict[str, torch.Tensor] = {}
    if config.words is not None:
        out["token_encoder.word_embedding.weight"] = state["word_emb_layer.embedding.weight"]
    if config.chars is not None:
        F = sum(num for _, num in config.filters)
        out["token_encoder.char_cnn.char_embedding.weight"] = state["char_emb_layer.embedding.weight"]
        for i in range(len(config.filters)):
            for part in ("weight", "bias"):
                out[f"token_encoder.char_cnn.convolutions.{i}.{part}"] = state[f"convolutions.{i}.{part}"]
        for k in range(config.n_highway):
            prefix = f"token_encoder.char_cnn.highways.{k}"
            for part in ("weight", "bias"):
                both = state[f"highways._layers.{k}.{part}"]  # [h; g]
                out[f"{prefix}.transform.{part}"] = both[:F].clone()
                out[f"{prefix}.carry.{part}"] = -both[F:]  # carry = 1 - sigmoid(g) = sigmoid(-g)
    out["token_encoder.projection.weight"] = state["projection.weight"]
    out["token_encoder.projection.bias"] = state["projection.bias"]
    for k in range(config.n_layers):
        for direction in ("forward", "backward"):
            original, ours = f"{direction}_layer_{k}", f"{direction}_layers.{k}"
            for name in ("input_linearity.weight", "state_linearity.weight", "state_linearity.bias"):
                out[f"{ours}.{name}"] = _swap_f_and_g(state[f"{original}.{name}"], C)
            out[f"{ours}.state_projection.weight"] = state[f"{original}.state_projection.weight"]
    return out


def _swap_f_and_g(gates: torch.Tensor, C: int) -> torch.Tensor:
    """Rows [i; f; g; o] (C each) -> [i; g; f; o], in place."""
    f = gates[C : 2 * C].clone()
    gates[C : 2 * C] = gates[2 * C : 3 * C]
    gates[2 * C : 3 * C] = f
    return gates


def load_manylangs(path: PathLike, stateful: bool = False, dtype: torch.dtype = torch.float32) -> ManyLangsBiLM:
    """Built uninitialised (no random initialisation, ``budget.py``), then given the read tensors themselves,
    in ``dtype``: every parameter is in the checked state dict, so none keeps its uninitialised memory."""
    config, state = read_manylangs(path, dtype)
    directory = Path(path)
    bilm = build_within_budget(
        lambda: ManyLangsBiLM(config, stateful=stateful),
        [directory / TOKEN_EMBEDDER_NAME, directory / ENCODER_NAME],
        str(directory / CONFIG_NAME),
        initialise=False,
        dtype=dtype,
    )
    bilm.load_state_dict(state, assign=True)
    return bilm.eval()


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing")
    return read_json(path, "the file is damaged", ModelDirError)
