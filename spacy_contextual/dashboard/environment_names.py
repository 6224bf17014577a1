"""Environment variables that choose the dashboard's default models and data (no streamlit import,
so the command line can set them); each is declared, with its type, in ``spacy_contextual/environment.py``."""

from .. import environment

ELMO_MODEL_ENV = environment.ELMO_MODEL.name
COVE_MODEL_ENV = environment.COVE_MODEL.name
PIPELINE_ENV = environment.PIPELINE.name
SENSE_DATA_ENV = environment.SENSE_DATA.name
