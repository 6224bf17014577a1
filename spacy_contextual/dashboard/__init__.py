"""The Streamlit dashboard: one ``render()`` per page; all data and figures come from
``spacy_contextual.analysis``. Run it with ``spacy-contextual app`` or ``streamlit run app/Home.py``."""
