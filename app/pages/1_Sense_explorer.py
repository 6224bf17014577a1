from spacy_contextual.dashboard import sense_explorer
from spacy_contextual.dashboard.page_setup import configure_page

configure_page("Sense explorer")
sense_explorer.render()
