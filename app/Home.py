"""Entry point: ``streamlit run app/Home.py``. The pages live in ``spacy_contextual.dashboard``."""

from spacy_contextual.dashboard import home
from spacy_contextual.dashboard.page_setup import configure_page

configure_page("spacy-contextual")
home.render()
