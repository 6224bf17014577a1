"""One registry truth: every ``spacy-contextual.*`` name registered in spaCy's registries is an entry
point of the package (so spaCy finds it without ``--code``), every entry point names a registered
function, and each resolves through ``spacy.registry`` from a config that gives only its required
settings (``REQUIRED``), as spacy-curated-transformers' registry test does."""

from __future__ import annotations

import inspect
from importlib.metadata import entry_points

import pytest
import spacy
from thinc.api import Config, Model

import spacy_contextual.layers  # noqa: F401  (registers the architectures and loaders, as the entry points do)

PREFIX = "spacy-contextual."
GROUPS = {"architectures": "spacy_architectures", "misc": "spacy_misc"}
# the settings without a default, by name: what a config must give
REQUIRED = {
    "width": 64,
    "encoder": {"@architectures": "spacy-contextual.ElmoEncoder.v3", "name": "default"},
    "options_file": "options.json",
    "weight_file": "weights.hdf5",
    "pth_path": "wmtlstm.pth",
    "glove_path": "glove.840B.300d.txt",
}


def registered() -> list[tuple[str, str]]:
    return sorted(
        (registry, name)
        for registry in GROUPS
        for name in getattr(spacy.registry, registry).get_all()
        if name.startswith(PREFIX)
    )


def test_every_registered_name_is_an_entry_point_and_every_entry_point_is_registered():
    declared = {(registry, e.name) for registry, group in GROUPS.items() for e in entry_points(group=group)}
    declared = {(registry, name) for registry, name in declared if name.startswith(PREFIX)}
    assert set(registered()) == declared
    factories = {e.name for e in entry_points(group="spacy_factories") if e.value.startswith("spacy_contextual.")}
    assert factories == {"elmo", "cove"}


@pytest.mark.parametrize("registry, name", registered())
def test_every_registered_name_resolves_through_spacy_registry(registry, name):
    function = getattr(spacy.registry, registry).get(name)
    required = [p.name for p in inspect.signature(function).parameters.values() if p.default is p.empty]
    config = Config({"thing": {f"@{registry}": name, **{key: REQUIRED[key] for key in required}}})
    resolved = spacy.registry.resolve(config)["thing"]
    if registry == "architectures":  # a thinc Model, built without loading weights
        assert isinstance(resolved, Model)
    else:  # a weight loader: a function that loads when called (here with files that do not exist)
        assert callable(resolved) and not isinstance(resolved, Model)
