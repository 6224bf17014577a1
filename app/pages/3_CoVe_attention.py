from spacy_contextual.dashboard import cove_attention
from spacy_contextual.dashboard.page_setup import configure_page

configure_page("CoVe attention")
cove_attention.render()
