"""Names for the thinc signatures the layers share."""

from __future__ import annotations

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Floats3d

#: Docs -> per-doc layers (n_layers, len(doc), width): the encoder layer, a listener
DocsToLayers = Model[list[Doc], list[Floats3d]]
#: per-doc layers -> per-doc vectors (len(doc), width): a layer mix
LayersToVectors = Model[list[Floats3d], list[Floats2d]]
#: Docs -> per-doc vectors: a tok2vec (embed, listener + mix, ...)
DocsToVectors = Model[list[Doc], list[Floats2d]]
#: per-doc vectors -> per-doc vectors: a contextual encoder on top (e.g. MaxoutWindowEncoder)
VectorsToVectors = Model[list[Floats2d], list[Floats2d]]
