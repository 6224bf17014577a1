"""CoVe model directories (safetensors + JSON + vocabulary text), on top of ``model_dir``.

kind "cove-mt": the whole translation model (``Translator``): config.json holds the
``Seq2SeqConfig``, vocab.txt the English source vocabulary (row i of ``source_vectors``),
target_vocab.txt the German vocabulary. The dashboard's attention page needs this one.

kind "cove-encoder": the truncated model (design document 000, step 5): the MT-LSTM under the
published ``nn.LSTM`` key names (prefix ``encoder.``), the source vocabulary and its GloVe rows
(``source_vectors``). A "cove-mt" directory contains everything an encoder needs, so
``load_encoder`` reads either kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import torch

from ..models.mtlstm import MTLSTM
from ..models.seq2seq import Seq2SeqConfig, Translator
from .model_dir import CONFIG_NAME, load_tensors, load_vocab, read_model_config, save_model_dir

PathLike = Union[str, Path]
MT_KIND, ENCODER_KIND = "cove-mt", "cove-encoder"
TARGET_VOCAB_NAME = "target_vocab.txt"


def save_translator(
    model: Translator, path: PathLike, source_vocab: list[str], target_vocab: list[str],
    dtype: Optional[torch.dtype] = None, info: Optional[dict] = None,
) -> Path:
    out = save_model_dir(path, MT_KIND, {"model": model.config.to_dict(), "info": info or {}}, model.state_dict(), source_vocab, dtype)
    (out / TARGET_VOCAB_NAME).write_text("\n".join(target_vocab) + "\n", encoding="utf-8")
    return out


def load_translator(path: PathLike) -> tuple[Translator, list[str], list[str]]:
    """(model in eval mode, source vocabulary, target vocabulary) from a "cove-mt" directory."""
    config = Seq2SeqConfig.from_dict(read_model_config(path, MT_KIND)["model"])
    model = Translator(config)
    model.load_state_dict(load_tensors(path))
    target_path = Path(path) / TARGET_VOCAB_NAME
    if not target_path.is_file():
        raise FileNotFoundError(f"{target_path} is missing: a cove-mt directory needs its German vocabulary")
    target_vocab = target_path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    return model.eval(), load_vocab(path), target_vocab


def export_encoder(mt_path: PathLike, out_path: PathLike, dtype: Optional[torch.dtype] = torch.float16) -> Path:
    """Truncate a "cove-mt" directory to a "cove-encoder" directory (decoder and output layer dropped)."""
    model, source_vocab, _ = load_translator(mt_path)
    return save_encoder(model.encoder, model.source_vectors, source_vocab, out_path, dtype)


def save_encoder(encoder: MTLSTM, source_vectors: torch.Tensor, vocab: list[str], path: PathLike, dtype: Optional[torch.dtype] = None) -> Path:
    if len(vocab) != source_vectors.shape[0]:
        raise ValueError(f"{len(vocab)} vocabulary words but {source_vectors.shape[0]} vector rows")
    tensors = {f"encoder.{k}": v for k, v in encoder.published_state_dict().items()}
    tensors["source_vectors"] = source_vectors
    config = {"input_dim": encoder.input_dim, "hidden_dim": encoder.hidden_dim, "num_layers": encoder.num_layers}
    return save_model_dir(path, ENCODER_KIND, config, tensors, vocab, dtype)


def model_kind(path: PathLike) -> str:
    import json

    config_path = Path(path) / CONFIG_NAME
    if not config_path.is_file():
        raise FileNotFoundError(f"{path} is not a CoVe model directory (no {CONFIG_NAME})")
    return json.loads(config_path.read_text(encoding="utf-8")).get("kind", "")


def load_encoder(path: PathLike) -> tuple[MTLSTM, torch.Tensor, list[str]]:
    """(MT-LSTM in eval mode, source vectors (V, 300) float32, vocabulary) from either kind of directory."""
    if model_kind(path) == MT_KIND:
        model, vocab, _ = load_translator(path)
        return model.encoder.eval(), model.source_vectors, vocab
    config = read_model_config(path, ENCODER_KIND)
    tensors = load_tensors(path)
    encoder = MTLSTM(config["input_dim"], config["hidden_dim"], config["num_layers"])
    encoder.load_published_state_dict({k[len("encoder."):]: v for k, v in tensors.items() if k.startswith("encoder.")})
    return encoder.eval(), tensors["source_vectors"], load_vocab(path)
