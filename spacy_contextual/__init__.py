"""spacy-contextual: ELMo and CoVe contextual word vectors for spaCy 3 pipelines."""

__version__ = "0.1.0"
