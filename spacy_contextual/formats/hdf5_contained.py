"""An HDF5 file we read must hold its own data: nothing in it may send the reader to another file.

HDF5 can make a dataset's bytes come from elsewhere: external storage (``Dataset.external``: raw
files named in the dataset), external links (``h5py.ExternalLink``: an object of another HDF5
file), virtual datasets (``Dataset.is_virtual``: a mapping onto other datasets, or zeros where a
source is missing) and user-defined links. A weight file using any of them would load another
file's data, or zeros, as the model's weights; ``check_self_contained`` refuses it, naming the file
and the object. Soft links stay inside the file and are allowed.
"""

from __future__ import annotations

import os
from pathlib import Path

import h5py

from ..errors import ContextualError


class NotSelfContainedError(ContextualError):
    """An HDF5 file whose data (or part of it) lives in another file."""


def check_self_contained(hdf5: h5py.File, path: Path) -> None:
    """Refuse external links, user-defined links, external storage and virtual datasets anywhere in ``hdf5``."""
    # h5py stops a visit at the first callback that returns something: the problem, as words
    problem = hdf5.visititems_links(_link_problem) or hdf5.visititems(_dataset_problem)
    if problem:  # links are visited first, so no dataset behind an external link is ever opened
        raise NotSelfContainedError(
            f"{path}: {problem}; its data must be stored in the file itself (this is not a file that "
            "spacy-contextual or bilm-tf writes)"
        )


def _link_problem(name: str, link) -> str | None:
    if isinstance(link, h5py.ExternalLink):
        return f"{name!r} is an external link to {link.filename}:{link.path}"
    if not isinstance(link, (h5py.HardLink, h5py.SoftLink)):
        return f"{name!r} is a {type(link).__name__}"
    return None


def _dataset_problem(name: str, item) -> str | None:
    if isinstance(item, h5py.Dataset) and item.is_virtual:
        return f"dataset {name!r} is a virtual dataset (a view of data elsewhere)"
    if isinstance(item, h5py.Dataset) and item.external:
        return f"dataset {name!r} keeps its data in the external file {os.fsdecode(item.external[0][0])!r}"
    return None
