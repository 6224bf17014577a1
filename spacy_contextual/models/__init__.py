"""Pure PyTorch models (no spaCy import): ELMo biLM, char CNN, projected LSTM, ScalarMix, CoVe;
the char-CNN token-vector cache shared by ElmoEmbedder and the elmo component.

Importing it makes forking safe for torch (``threads.py``): every path that runs these models
imports this package first."""

from ..threads import install_fork_hooks

install_fork_hooks()
