"""Environment variables that choose the dashboard's default models and data (no streamlit import,
so the command line can set them); each is declared, with its type, in ``spacy_contextual/settings.py``."""

from .. import settings

ELMO_MODEL_ENV = settings.ELMO_MODEL.name
COVE_MODEL_ENV = settings.COVE_MODEL.name
PIPELINE_ENV = settings.PIPELINE.name
SENSE_DATA_ENV = settings.SENSE_DATA.name
