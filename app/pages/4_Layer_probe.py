from spacy_contextual.dashboard import layer_probe
from spacy_contextual.dashboard.page_setup import configure_page

configure_page("Layer probe")
layer_probe.render()
