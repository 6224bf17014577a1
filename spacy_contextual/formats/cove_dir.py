"""CoVe model directories (safetensors + JSON + vocabulary text), on top of ``model_dir``.

kind "cove-mt": the whole translation model (``Translator``): config.json holds the
``Seq2SeqConfig``, vocab.txt the English source vocabulary (row i of ``source_vectors``),
target_vocab.txt the German vocabulary. The dashboard's attention page needs this one.

kind "cove-encoder": the truncated model (decoder dropped, as CoVe is used downstream): the MT-LSTM under the
published ``nn.LSTM`` key names (prefix ``encoder.``), the source vocabulary and its GloVe rows
(``source_vectors``). A "cove-mt" directory contains everything an encoder needs, so
``load_cove_layers`` reads either kind.

Storage precision: "float32", "float16", or "int8" (every matrix stored as int8 with one float32
scale per row, w = q * absmax_row / 127, in ``<name>.int8_scale``; vectors stay float16). Loading
always gives float32 modules.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..errors import ContextualError, ModelDirError
from ..models.cove_layers import CoveLayers
from ..models.mtlstm import MTLSTM
from ..models.seq2seq import Seq2SeqConfig, Translator
from ..types import PathLike
from .budget import build_within_budget
from .model_config import PRECISIONS, integer
from .model_dir import (
    CONFIG_NAME,
    TARGET_VOCAB_NAME,
    check_state,
    load_matching_state,
    load_tensors,
    load_vocab,
    read_config_file,
    read_model_config,
    save_model_dir,
    weight_files,
)

MT_KIND, ENCODER_KIND = "cove-mt", "cove-encoder"
SCALE_SUFFIX = ".int8_scale"


def _stored(tensors: dict[str, torch.Tensor], precision: str) -> dict[str, torch.Tensor]:
    if precision not in PRECISIONS:
        raise ContextualError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "int8":
        return {k: v.to(getattr(torch, precision)) if v.is_floating_point() else v for k, v in tensors.items()}
    out = {}
    for name, value in tensors.items():
        if value.is_floating_point() and value.dim() == 2:
            scale = value.abs().amax(dim=1).clamp(min=1e-12) / 127.0
            out[name] = torch.round(value / scale[:, None]).clamp(-127, 127).to(torch.int8)
            out[name + SCALE_SUFFIX] = scale.float()
        else:
            out[name] = value.half() if value.is_floating_point() else value
    return out


def _load_weights(path: PathLike) -> dict[str, torch.Tensor]:
    """float32 tensors, int8 matrices multiplied back by their row scales."""
    tensors = load_tensors(path)
    for scale_name in [k for k in tensors if k.endswith(SCALE_SUFFIX)]:
        name = scale_name[: -len(SCALE_SUFFIX)]
        tensors[name] = tensors[name].float() * tensors.pop(scale_name)[:, None]
    return tensors


def save_translator(
    model: Translator,
    path: PathLike,
    source_vocab: list[str],
    target_vocab: list[str],
    precision: str = "float32",
    info: dict | None = None,
) -> Path:
    tensors = {k: v for k, v in model.state_dict().items() if k not in _tied_keys(model.config)}
    config = {"model": model.config.to_dict(), "precision": precision, "info": info or {}}
    return save_model_dir(
        path, MT_KIND, config, _stored(tensors, precision), source_vocab, text_files={TARGET_VOCAB_NAME: target_vocab}
    )


def _tied_keys(config: Seq2SeqConfig) -> set[str]:
    """State-dict entries that alias another tensor and are therefore not stored."""
    return {"decoder.output.weight"} if config.tie_embeddings else set()


def load_translator(path: PathLike) -> tuple[Translator, list[str], list[str]]:
    """(model in eval mode, source vocabulary, target vocabulary) from a "cove-mt" directory."""
    source = Path(path) / "config.json"
    try:
        config = Seq2SeqConfig.from_dict(read_model_config(path, MT_KIND)["model"])
    except ValueError as error:
        raise ModelDirError(f"{source}: {error}") from None
    model = build_within_budget(lambda: Translator(config), weight_files(path), str(source))
    load_matching_state(model, _load_weights(path), str(path), not_stored=frozenset(_tied_keys(config)))
    vocab, target_vocab = load_vocab(path), load_vocab(path, TARGET_VOCAB_NAME)
    _check_vocab_size(vocab, config.source_vocab_size, Path(path) / "vocab.txt", "English source")
    _check_vocab_size(target_vocab, config.target_vocab_size, Path(path) / TARGET_VOCAB_NAME, "German")
    return model.eval(), vocab, target_vocab


def _check_vocab_size(words: list[str] | None, size: int, path: Path, what: str) -> None:
    if words is None:
        raise ModelDirError(f"{path} is missing: a cove-mt directory needs its {what} vocabulary")
    if len(words) != size:
        raise ModelDirError(f"{path} has {len(words)} words but config.json says {size}; copy the directory again")


def export_encoder(mt_path: PathLike, out_path: PathLike, precision: str = "float16") -> Path:
    """Truncate a "cove-mt" directory to a "cove-encoder" directory (decoder and output layer dropped)."""
    model, source_vocab, _ = load_translator(mt_path)
    return save_encoder(model.encoder, model.source_vectors, source_vocab, out_path, precision)


def save_encoder(
    encoder: MTLSTM, source_vectors: torch.Tensor, vocab: list[str], path: PathLike, precision: str = "float32"
) -> Path:
    if len(vocab) != source_vectors.shape[0]:
        raise ContextualError(f"{len(vocab)} vocabulary words but {source_vectors.shape[0]} vector rows")
    tensors = {f"encoder.{k}": v for k, v in encoder.published_state_dict().items()}
    tensors["source_vectors"] = source_vectors
    config = {
        "input_dim": encoder.input_dim,
        "hidden_dim": encoder.hidden_dim,
        "num_layers": encoder.num_layers,
        "precision": precision,
    }
    return save_model_dir(path, ENCODER_KIND, config, _stored(tensors, precision), vocab)


def longest_training_sentence(path: PathLike) -> int | None:
    """The token count of the longest English sentence the MT model was trained on (``info``), if recorded."""
    longest = read_model_config(path, MT_KIND)["info"].get("longest_training_sentence")
    rule = integer(1)
    if longest is not None and not rule.test(longest):
        source = Path(path) / "config.json"
        raise ModelDirError(f"{source}: info.longest_training_sentence is {longest!r}; expected {rule.expects}")
    return longest


def model_kind(path: PathLike) -> str:
    config = read_config_file(path)
    return config.get("kind", "") if isinstance(config, dict) else ""


def load_cove_layers(path: PathLike) -> CoveLayers:
    """The encoder of either kind of directory as ``CoveLayers`` (GloVe + MT-LSTM), in eval mode."""
    if model_kind(path) == MT_KIND:
        model, vocab, _ = load_translator(path)
        return CoveLayers(model.encoder, model.source_vectors, vocab).eval()
    config = read_model_config(path, ENCODER_KIND)
    tensors = _load_weights(path)
    vocab = load_vocab(path)
    if vocab is None:
        raise ModelDirError(f"{Path(path) / 'vocab.txt'} is missing: a cove-encoder directory needs its vocabulary")
    encoder = build_within_budget(
        lambda: MTLSTM(config["input_dim"], config["hidden_dim"], config["num_layers"]),
        weight_files(path),
        str(Path(path) / CONFIG_NAME),
    )
    expected = {f"encoder.{k}": tuple(v.shape) for k, v in encoder.published_state_dict().items()}
    check_state(expected | {"source_vectors": (len(vocab), config["input_dim"])}, tensors, str(path))
    encoder.load_published_state_dict({k[len("encoder.") :]: v for k, v in tensors.items() if k.startswith("encoder.")})
    return CoveLayers(encoder, tensors["source_vectors"], vocab).eval()
