"""ContextualData holds numpy data on the CPU and CuPy data on the GPU; a Doc read back from bytes or a
DocBin has numpy data. Equality and serialization work across the two.

Without a GPU, ``DeviceArray`` stands in for a CuPy array: like CuPy it refuses the implicit conversion
to numpy and comparisons with numpy arrays, and copies to the host with ``.get()``. The last test uses
CuPy itself where there is a GPU."""

import numpy as np
import pytest
import torch
from spacy.tokens import Doc
from spacy.vocab import Vocab

from spacy_contextual.pipeline.doc_data import ContextualData


class DeviceArray:
    def __init__(self, values):
        self._values = np.array(values)
        self.shape, self.ndim = self._values.shape, self._values.ndim

    def get(self) -> np.ndarray:
        return self._values.copy()

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()`")

    def __eq__(self, other):
        if not isinstance(other, DeviceArray):
            raise TypeError(f"Unsupported type {type(other)}")
        return DeviceArray(self._values == other._values)

    def all(self):
        return DeviceArray(self._values.all())

    def __bool__(self) -> bool:
        return bool(self._values)


NAMES, WIDTHS = ["glove", "cove1"], [2, 3]


def layers(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(2, 4, 3)).astype(np.float32)


def test_device_data_equals_the_same_values_on_the_host():
    on_device = ContextualData(DeviceArray(layers()), NAMES, WIDTHS)
    assert on_device == ContextualData(layers(), NAMES, WIDTHS)
    assert ContextualData(layers(), NAMES, WIDTHS) == on_device
    assert on_device == ContextualData(DeviceArray(layers()), NAMES, WIDTHS)
    assert on_device != ContextualData(layers(seed=1), NAMES, WIDTHS)
    assert on_device != ContextualData(layers(), NAMES, [3, 3])


def test_device_data_is_stored_as_numpy():
    doc = Doc(Vocab(), words=["a", "man", "rides", "horses"])
    doc._.cove_data = ContextualData(DeviceArray(layers()), NAMES, WIDTHS)
    stored = Doc(Vocab()).from_bytes(doc.to_bytes())._.cove_data
    assert isinstance(stored.layers, np.ndarray) and stored == doc._.cove_data
    np.testing.assert_array_equal(stored.layers, layers())


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy if torch.cuda.is_available() else None


@pytest.mark.gpu
@pytest.mark.skipif(_cupy() is None, reason="needs CUDA and CuPy")
def test_cupy_data_equals_numpy_data():
    cupy = _cupy()
    on_gpu = ContextualData(cupy.asarray(layers()), NAMES, WIDTHS)
    assert on_gpu == ContextualData(layers(), NAMES, WIDTHS) and ContextualData(layers(), NAMES, WIDTHS) == on_gpu
    assert on_gpu != ContextualData(layers(seed=1), NAMES, WIDTHS)
    np.testing.assert_array_equal(on_gpu.to_dict()["layers"], layers())
