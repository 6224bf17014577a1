"""The dashboard as one Streamlit script (what ``spacy-contextual app`` runs): the same pages as
``app/``, registered with ``st.navigation``."""

import streamlit as st

from spacy_contextual.dashboard import cove_attention, home, layer_probe, layer_weights, sense_explorer
from spacy_contextual.dashboard.common import configure_page

configure_page("spacy-contextual")
st.navigation(
    [
        st.Page(home.render, title="Home", url_path="home", default=True),
        st.Page(sense_explorer.render, title="Sense explorer", url_path="Sense_explorer"),
        st.Page(layer_weights.render, title="Layer weights", url_path="Layer_weights"),
        st.Page(cove_attention.render, title="CoVe attention", url_path="CoVe_attention"),
        st.Page(layer_probe.render, title="Layer probe", url_path="Layer_probe"),
    ]
).run()
