"""Weight and vector file formats: bilm-tf HDF5, CoVe .pth, text vectors, our safetensors dirs."""
