"""Pure PyTorch models (no spaCy import): ELMo biLM, char CNN, projected LSTM, ScalarMix, CoVe;
the char-CNN token-vector cache shared by ElmoEmbedder and the elmo component."""
