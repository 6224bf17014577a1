from spacy_contextual.dashboard import layer_weights
from spacy_contextual.dashboard.page_setup import configure_page

configure_page("Layer weights")
layer_weights.render()
