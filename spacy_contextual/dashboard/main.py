"""The dashboard as one Streamlit script (what ``spacy-contextual app`` runs): the same pages as
``app/``, registered with ``st.navigation`` (and in ``page_links.PAGES``, so that one page can open another)."""

import streamlit as st

from spacy_contextual.dashboard import (
    compare_models,
    cove_attention,
    home,
    layer_probe,
    layer_weights,
    page_links,
    sense_explorer,
)
from spacy_contextual.dashboard.page_setup import configure_page

configure_page("spacy-contextual")
page_links.PAGES.update(
    home=st.Page(home.render, title="Home", url_path="home", default=True),
    sense_explorer=st.Page(sense_explorer.render, title="Sense explorer", url_path="Sense_explorer"),
    layer_weights=st.Page(layer_weights.render, title="Layer weights", url_path="Layer_weights"),
    cove_attention=st.Page(cove_attention.render, title="CoVe attention", url_path="CoVe_attention"),
    layer_probe=st.Page(layer_probe.render, title="Layer probe", url_path="Layer_probe"),
    compare_models=st.Page(compare_models.render, title="Compare models", url_path="Compare_models"),
)
st.navigation(list(page_links.PAGES.values())).run()
