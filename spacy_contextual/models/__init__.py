"""Pure PyTorch models (no spaCy import): ELMo biLM, char CNN, projected LSTM, ScalarMix, CoVe."""
