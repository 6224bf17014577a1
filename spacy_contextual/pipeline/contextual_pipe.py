"""The shared upstream component behind ``elmo`` and ``cove`` (spaCy's Tok2Vec / spacy-transformers'
Transformer pattern).

``predict`` runs the encoder layer (``layers/encoder.py``); ``set_annotations`` stores the
layers on ``doc._.<kind>_data`` ("all" layers, the "mixed" vector, or "none"), optionally the mixed
vector in ``doc.tensor``, and installs the vector hooks. ``update`` runs the encoder once and hands
the outputs to every listening component. The component's ``frozen`` setting is the one place that
decides whether the encoder learns: with ``frozen = true`` (default) ``update`` only predicts (eval
mode, no_grad) and ``finish_update`` does nothing; with ``frozen = false`` the listeners' gradients
are summed and fine-tune it, at the optimizer's learning rate times ``learn_rate_scale`` (a smaller
step for the pretrained encoder than for the task layers, as ULMFiT's discriminative fine-tuning does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial

from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer
from thinc.types import Floats3d

from ..errors import ContextualError
from ..layers.architectures import replace_listener, replace_listener_cfg
from ..layers.encoder import get_shim, load_weights
from ..layers.listener import ContextualListener
from ..layers.setting_checks import check_choice, check_flag, check_layer_index, check_positive
from ..layers.signatures import DocsToLayers
from .component_manifest import verify_component_manifest, write_component_manifest
from .doc_data import ContextualData, install_extensions
from .vector_hooks import layer_source, set_vector_hooks, tensor_source

STORE_OPTIONS = ("all", "mixed", "none")


class ContextualPipe(TrainablePipe):
    kind = "contextual"  # "elmo" / "cove" in the subclasses

    def __init__(
        self,
        vocab: Vocab,
        model: DocsToLayers,
        name: str,
        *,
        frozen: bool = True,
        learn_rate_scale: float = 1.0,
        store: str = "all",
        set_doc_tensor: bool = False,
        vector_hooks: bool = True,
        vector_layer: int | None = None,
    ):
        self.vocab = vocab
        self.model = model
        self.name = name
        self.listener_map: dict[str, list[ContextualListener]] = {}
        self.cfg = {
            "frozen": frozen,
            "learn_rate_scale": learn_rate_scale,
            "store": store,
            "set_doc_tensor": set_doc_tensor,
            "vector_hooks": vector_hooks,
            "vector_layer": vector_layer,
        }
        self.check_settings()
        # nlp.replace_listeners: the copied encoder and the private variant's config are frozen as this component is
        # (bound methods, not lambdas: spawned nlp.pipe workers receive the component pickled)
        self.model.attrs["replace_listener"] = self._replace_listener
        self.model.attrs["replace_listener_cfg"] = self._replace_listener_cfg
        install_extensions()

    def _replace_listener(self, encoder: DocsToLayers) -> Model:
        return replace_listener(encoder, frozen=self.frozen)

    def _replace_listener_cfg(self, encoder_cfg: dict, listener_cfg: dict) -> dict:
        return replace_listener_cfg(encoder_cfg, listener_cfg, frozen=self.frozen)

    @property
    def extension(self) -> str:
        return f"{self.kind}_data"

    @property
    def frozen(self) -> bool:
        return self.cfg["frozen"]

    # -- listeners (spaCy's ListenedToComponent protocol) ---------------------------------------

    @property
    def listeners(self) -> list[ContextualListener]:
        return [m for c in self.listening_components for m in self.listener_map[c]]

    @property
    def listening_components(self) -> list[str]:
        return list(self.listener_map.keys())

    def add_listener(self, listener: ContextualListener, component_name: str) -> None:
        self.listener_map.setdefault(component_name, [])
        if listener not in self.listener_map[component_name]:
            self.listener_map[component_name].append(listener)
        # spaCy links listeners again at the end of nlp.initialize: shape inference is over
        listener.end_shape_pass()
        if get_shim(self.model).loaded:
            listener.set_upstream_dims(self.model)

    def remove_listener(self, listener: ContextualListener, component_name: str) -> bool:
        if listener in self.listener_map.get(component_name, []):
            self.listener_map[component_name].remove(listener)
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
            return True
        return False

    def find_listeners(self, component) -> None:
        names = ("*", self.name)
        if isinstance(getattr(component, "model", None), Model):
            for node in component.model.walk():
                if isinstance(node, ContextualListener) and node.kind == self.kind and node.upstream_name in names:
                    self.add_listener(node, component.name)

    def check_settings(self) -> None:
        """The settings in ``cfg`` (from the config, or from a saved pipeline's ``cfg`` file)."""
        for flag in ("frozen", "set_doc_tensor", "vector_hooks"):
            check_flag(flag, self.cfg[flag])
        check_positive(
            "learn_rate_scale", self.cfg["learn_rate_scale"], "it multiplies the learning rate of a fine-tuned encoder"
        )
        check_choice("store", self.cfg["store"], STORE_OPTIONS)
        check_layer_index("vector_layer", self.cfg["vector_layer"], None)  # its range once the weights are known
        if self.cfg["vector_hooks"] and self.cfg["store"] == "none" and not self.cfg["set_doc_tensor"]:
            raise ContextualError(
                'vector_hooks need the vectors somewhere: set store to "all"/"mixed" or set_doc_tensor = true'
            )

    def check_vector_layer(self) -> None:
        """``vector_layer`` against the loaded encoder's layers (the other settings are checked when built)."""
        check_layer_index("vector_layer", self.cfg["vector_layer"], len(get_shim(self.model).layer_names))

    # -- prediction -----------------------------------------------------------------------------

    def __call__(self, doc: Doc) -> Doc:
        install_extensions()
        self.set_annotations([doc], self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        install_extensions()  # worker processes of nlp.pipe(n_process>1) start here
        yield from super().pipe(stream, batch_size=batch_size)

    def predict(self, docs: Iterable[Doc]) -> list[Floats3d]:
        return self.model.predict(list(docs))

    def set_annotations(self, docs: Iterable[Doc], layers: list[Floats3d]) -> None:
        shim = get_shim(self.model)
        names, widths, fingerprint = shim.layer_names, shim.layer_widths, shim.fingerprint()
        self.check_vector_layer()
        for listener in self.listeners:  # a fine-tuned encoder's fingerprint changes with its weights
            listener.attrs["fingerprint"] = fingerprint
        store, layer = self.cfg["store"], self.cfg["vector_layer"]
        for doc, doc_layers in zip(docs, layers, strict=True):
            data = ContextualData(doc_layers, names, widths, fingerprint=fingerprint)
            if store == "all":
                doc._.set(self.extension, data)
            elif store == "mixed":
                name = "mean" if layer is None else names[layer]
                doc._.set(self.extension, data.with_layers(data.token_vectors(layer)[None], [name]))
            if self.cfg["set_doc_tensor"]:
                doc.tensor = data.token_vectors(layer)
            if self.cfg["vector_hooks"]:
                source = tensor_source if store == "none" else layer_source(self.extension, layer)
                set_vector_hooks(doc, source)

    # -- training -------------------------------------------------------------------------------

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optimizer | None = None,
        losses: dict[str, float] | None = None,
    ) -> dict[str, float]:
        if losses is None:
            losses = {}
        validate_examples(examples, "ContextualPipe.update")
        losses.setdefault(self.name, 0.0)
        docs = [eg.predicted for eg in examples]
        batch_id = ContextualListener.get_batch_id(docs)
        listeners = self.listeners
        if self.frozen:
            outputs = self.model.predict(docs)
            for listener in listeners:
                listener.receive(batch_id, outputs, _no_backprop)
            return losses
        outputs, backprop_encoder = self.model.begin_update(docs)
        d_outputs = [self.model.ops.alloc3f(*out.shape) for out in outputs]

        def accumulate_gradient(one_d_outputs: list[Floats3d]) -> list[Doc]:
            for total, one in zip(d_outputs, one_d_outputs, strict=True):
                total += one
                losses[self.name] += float((one**2).sum())
            return []

        def backprop(one_d_outputs: list[Floats3d]) -> list[Doc]:
            accumulate_gradient(one_d_outputs)
            backprop_encoder(d_outputs)
            if sgd is not None:
                self.finish_update(sgd)
            return []

        for listener in listeners[:-1]:
            listener.receive(batch_id, outputs, accumulate_gradient)
        if listeners:
            listeners[-1].receive(batch_id, outputs, backprop)
        return losses

    def get_loss(self, examples, scores):
        """No loss of its own: the encoder learns from its listeners' gradients."""
        return 0.0, None

    def finish_update(self, sgd: Optimizer) -> None:
        if not self.frozen:
            scale = self.cfg["learn_rate_scale"]
            self.model.finish_update(sgd if scale == 1.0 else partial(sgd, lr_scale=scale))

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]] | None = None,
        *,
        nlp: Language | None = None,
        loader: Callable[[], object] | None = None,
    ) -> None:
        """Load the weights from ``loader`` (``[initialize.components.<name>.loader]``); without one,
        keep weights already there (a sourced component) or load what ``model.name`` names."""
        if loader is not None or not get_shim(self.model).loaded:
            load_weights(self.model, (loader or self.model.attrs["loader"])())
        self.check_vector_layer()
        self.model.initialize()
        for listener in self.listeners:
            listener.set_upstream_dims(self.model)
        if nlp is not None:
            for index, (_, component) in enumerate(nlp.pipeline):
                if component is self:
                    for _, later in nlp.pipeline[index:]:
                        self.find_listeners(later)

    # -- saving and loading ---------------------------------------------------------------------

    def to_disk(self, path, *, exclude: Iterable[str] = ()) -> None:
        """spaCy's files, and the manifest of their sizes and SHA-256 (``component_manifest.py``)."""
        super().to_disk(path, exclude=exclude)
        write_component_manifest(path)

    def from_disk(self, path, *, exclude: Iterable[str] = ()) -> ContextualPipe:
        verify_component_manifest(path, exclude)
        super().from_disk(path, exclude=exclude)
        self.check_settings()
        if get_shim(self.model).loaded:
            self.check_vector_layer()
        return self


def make_factory(pipe_class: type[ContextualPipe]) -> Callable[..., ContextualPipe]:
    """The spaCy factory of an ``elmo``-like component (the settings are the same for every kind)."""

    def make(
        nlp: Language,
        name: str,
        model: DocsToLayers,
        frozen: bool,
        learn_rate_scale: float,
        store: str,
        set_doc_tensor: bool,
        vector_hooks: bool,
        vector_layer: int | None,
    ) -> ContextualPipe:
        """``frozen``: the encoder never changes (listeners still learn their mixes); ``learn_rate_scale``:
        with ``frozen = false``, the encoder's learning rate relative to the optimizer's; ``store``: "all"
        layers, the "mixed" vector, or "none" on ``doc._.<kind>_data``; ``set_doc_tensor``: the mixed vector
        in ``doc.tensor``; ``vector_hooks``: contextual token/span/doc vectors and similarity;
        ``vector_layer``: the layer those use (null = mean of all layers)."""
        return pipe_class(
            nlp.vocab, model, name,
            frozen=frozen, learn_rate_scale=learn_rate_scale, store=store, set_doc_tensor=set_doc_tensor,
            vector_hooks=vector_hooks, vector_layer=vector_layer,
        )  # fmt: skip

    return make


def _no_backprop(d_outputs: list[Floats3d]) -> list[Doc]:
    return []
