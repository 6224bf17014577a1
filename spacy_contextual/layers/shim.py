"""A PyTorch encoder inside a thinc model, stored in the pipeline as JSON config + safetensors.

The encoder's architecture is only known once its weights are loaded (``initialize()``), so the
shim starts empty and builds the module from the stored config when a pipeline is deserialized. No
pickle: ``to_bytes`` writes ``{"config": <module config>, "state": <safetensors bytes>, "sha256": <its
digest>}``, and ``from_bytes`` refuses weights that do not match their digest (a private encoder inside
another component's model file included).

``run(words, is_train)`` is the one way through the module: token strings in, token-aligned layers
(B, n_layers, T, width) out (row b's tokens at positions 0..len_b-1). Without training it runs in
eval mode under no_grad; with training, in train mode, and it returns a backprop callback that takes
the gradient of those layers. Subclasses say how to build the module and how to run it on words
(``layers_of``). The shim also owns the segment cache (``segment_cache.py``) of the layer's
outputs, emptied with every change of weights, and the weights' ``fingerprint``, which names the model
that computed a Doc's vectors.

``precision`` (``precision.py``: fp32, bf16, fp16 on CUDA, or ``MIXED``, what the old
``mixed_precision = true`` meant): training autocasts the float32 module (fp16 gradients scaled by
thinc's grad scaler as its ``PyTorchShim`` does; bf16 needs no scaling). Without training, a shim
whose module runs with cast weights (``casts_weights``: the biLM) runs a copy cast once to the
precision's dtype, as ``ElmoEmbedder`` does, made again only when the weights change (an update,
``use_params``, another device); the others autocast. The stored weights stay float32. The module follows
thinc's ``to_cpu``/``to_gpu``, also when they come before the weights are loaded (the weights then go
there when they come).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager, nullcontext
from itertools import chain
from typing import Any

import srsly
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from thinc.api import PyTorchGradScaler, PyTorchShim, get_torch_default_device

from ..errors import ModelDirError
from ..formats.budget import build_within_bytes
from ..formats.model_dir import check_finite, load_matching_state
from ..precision import (
    DTYPES,
    MIXED,
    autocast,
    cast_weights,
    check_precision,
    resolve_precision,
)
from ..threads import spacy_worker_count, worker_share
from .segment_cache import SegmentCache

Backprop = Callable[[torch.Tensor], None]


class EncoderShim(PyTorchShim):
    #: what the subclass encodes, for error messages ("ELMo biLM", "CoVe encoder")
    description = "encoder"
    #: True where the module runs with its weights in a low precision's dtype (else it is autocast)
    casts_weights = False

    def __init__(self, precision: str = "fp32", segment_cache_mb: int = 0):
        check_precision(precision, allow_mixed=True)
        mixed = precision != "fp32"
        super().__init__(None, mixed_precision=mixed, grad_scaler=PyTorchGradScaler(enabled=False))
        self.precision = precision
        self.segment_cache = SegmentCache(segment_cache_mb)
        self._target_device: torch.device | None = None  # set by to_device()
        self._fingerprint: tuple[Hashable, str] | None = None  # (weights_signature, fingerprint)
        self._cast: tuple[Hashable, torch.nn.Module] | None = None  # (weights_signature, the cast copy)

    # -- to implement ---------------------------------------------------------------------------

    def module_config(self) -> dict[str, Any]:
        """JSON-serializable description from which ``build_module`` rebuilds the architecture."""
        raise NotImplementedError

    def build_module(self, config: dict[str, Any]) -> torch.nn.Module:
        raise NotImplementedError

    def layers_of(self, module: torch.nn.Module, words: Sequence[Sequence[str]]) -> torch.Tensor:
        """The module on a batch of token-string lists: (B, n_layers, T, width)."""
        raise NotImplementedError

    @property
    def layer_names(self) -> list[str]:
        raise NotImplementedError

    @property
    def layer_widths(self) -> list[int]:
        raise NotImplementedError

    # -- running --------------------------------------------------------------------------------

    def run(self, words: Sequence[Sequence[str]], is_train: bool) -> tuple[torch.Tensor, Backprop | None]:
        """Token-aligned layers of ``words``; with ``is_train``, also the callback that backpropagates
        their gradient into the module's parameters."""
        if not is_train:
            module = self.inference_module()
            module.eval()
            with torch.no_grad(), self.autocast(module):
                return self.layers_of(module, words), None
        module = self.module
        module.train()
        with self.autocast():
            layers = self.layers_of(module, words)

        def backprop(d_layers: torch.Tensor) -> None:
            # scaled in float32 first, so that small gradients survive the cast to float16
            torch.autograd.backward(layers, self._grad_scaler.scale(d_layers, inplace=True).to(layers.dtype))
            grads = [p.grad for p in module.parameters() if p.grad is not None]
            if self._grad_scaler.unscale(grads):  # an overflow: this step's gradients are dropped
                for grad in grads:
                    grad.zero_()

        return layers, backprop

    def autocast(self, module: torch.nn.Module | None = None) -> AbstractContextManager:
        """The precision's autocast on the module's device (none for fp32, or for the cast copy)."""
        if module is not None and module is not self.module:
            return nullcontext()
        device = self.device
        return autocast(resolve_precision(self.precision, device), device)

    def inference_module(self) -> torch.nn.Module:
        """The module to run without training: the module itself, or (``casts_weights``, a low precision)
        its copy with the weights cast once, made again after an update or when ``weights_signature`` changes."""
        precision = resolve_precision(self.precision, self.device)
        if precision == "fp32" or not self.casts_weights:
            return self.module
        signature = self.weights_signature()
        if self._cast is None or self._cast[0] != signature:
            self._cast = None  # the old copy's memory goes before the new one is made
            dtype = DTYPES[precision]  # each parameter copied straight into it: no second float32 module
            cast = {
                id(p): torch.nn.Parameter(p.detach().to(dtype), requires_grad=False) for p in self.module.parameters()
            }
            self._cast = signature, cast_weights(copy.deepcopy(self.module, memo=cast), precision)
        return self._cast[1]

    # -- loading --------------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def module(self) -> torch.nn.Module:
        if self._model is None:
            raise ValueError(
                f"the {self.description} has no weights yet: call nlp.initialize() (the component's "
                "[initialize] loader names the model) or load a trained pipeline with spacy.load"
            )
        return self._model

    def load(self, module: torch.nn.Module) -> None:
        self._model = module.to(self._target_device or get_torch_default_device()).eval()
        self._follow_device()

    def to_device(self, device_type: str, device_id: int) -> None:
        """thinc's ``to_cpu`` / ``to_gpu(device_id)``."""
        if device_type not in ("cpu", "gpu"):
            raise ValueError(f"invalid device_type {device_type!r}: use 'cpu' or 'gpu'")
        self._target_device = torch.device("cpu") if device_type == "cpu" else torch.device("cuda", device_id)
        if self._model is not None:
            self._model.to(self._target_device)
            self._follow_device()

    def _follow_device(self) -> None:
        """After the module arrived on a device: a grad scaler there (fp16 on CUDA only), no cached outputs."""
        fp16 = self.precision in ("fp16", MIXED) and self.device.type == "cuda"
        self._grad_scaler = PyTorchGradScaler(enabled=fp16)
        self._grad_scaler.to_(self.device)
        self.segment_cache.clear()
        self._cast = None

    def weights_signature(self) -> Hashable:
        """Changes whenever the outputs may: other tensors, in-place updates (optimizer steps,
        ``use_params``), another device, the precision."""
        tensors = chain(self.module.parameters(), self.module.buffers())
        return self.precision, tuple((id(t), t.data_ptr(), t._version, t.device) for t in tensors)

    def fingerprint(self) -> str:
        """The first 16 hex digits of the SHA-256 of the module's config and weights, computed again
        whenever the weights change."""
        signature = self.weights_signature()
        if self._fingerprint is None or self._fingerprint[0] != signature:
            digest = hashlib.sha256(json.dumps(self.module_config(), sort_keys=True).encode("utf-8"))
            for name, tensor in sorted(self.module.state_dict().items()):
                digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
                digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
            self._fingerprint = signature, digest.hexdigest()[:16]
        return self._fingerprint[1]

    def finish_update(self, optimizer) -> None:
        # thinc's update assigns new ``.data`` to each parameter, which leaves its version counter as it was
        if self._model is not None and any(p.grad is not None for p in self._model.parameters()):
            self.segment_cache.clear()
            self._fingerprint = None
            self._cast = None
        super().finish_update(optimizer)

    @property
    def device(self) -> torch.device:
        parameter = next(self._model.parameters(), None) if self._model is not None else None
        if parameter is not None:
            return parameter.device
        return self._target_device or get_torch_default_device()

    @property
    def width(self) -> int:
        return max(self.layer_widths)

    # -- serialization --------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        if self._model is None:
            return srsly.msgpack_dumps({"config": None, "state": b""})
        state = save_safetensors(
            {name: tensor.detach().cpu().contiguous() for name, tensor in self._model.state_dict().items()}
        )
        return srsly.msgpack_dumps(
            {"config": self.module_config(), "state": state, "sha256": hashlib.sha256(state).hexdigest()}
        )

    def from_bytes(self, bytes_data: bytes) -> EncoderShim:
        msg = srsly.msgpack_loads(bytes_data)
        if msg["config"] is None:
            self._model = None
            return self
        source = f"the {self.description} stored in the pipeline"
        if "sha256" in msg and hashlib.sha256(msg["state"]).hexdigest() != msg["sha256"]:  # absent: saved before
            raise ModelDirError(
                f"{source} does not match the SHA-256 saved with it: the pipeline's file was damaged or altered after "
                "saving; copy or save the pipeline again"
            )
        module = build_within_bytes(lambda: self.build_module(msg["config"]), len(msg["state"]), source, source)
        state = load_safetensors(msg["state"])
        check_finite(state, source)
        load_matching_state(module, state, source)
        self.load(module)
        return self

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for a spawned ``nlp.pipe(n_process=N)`` worker: with the worker's share of the torch threads."""
        return {**self.__dict__, "_cast": None, "_worker_threads": worker_share(spacy_worker_count())}

    def __setstate__(self, state: dict[str, Any]) -> None:
        threads = state.pop("_worker_threads", None)
        self.__dict__.update(state)
        if threads is not None:  # a worker process: set before the encoder first runs
            torch.set_num_threads(threads)

    def use_params(self, params):  # the empty (not yet loaded) shim has nothing to swap
        if self._model is None:
            return nullcontext()
        return super().use_params(params)
