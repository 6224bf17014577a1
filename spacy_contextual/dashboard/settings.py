"""Environment variables that choose the dashboard's default models and data (no streamlit import,
so the command line can set them)."""

ELMO_MODEL_ENV = "SPACY_CONTEXTUAL_ELMO_MODEL"
COVE_MODEL_ENV = "SPACY_CONTEXTUAL_COVE_MODEL"
PIPELINE_ENV = "SPACY_CONTEXTUAL_PIPELINE"
SENSE_DATA_ENV = "SPACY_CONTEXTUAL_SENSE_DATA"
