from spacy_contextual.dashboard import compare_models
from spacy_contextual.dashboard.page_setup import configure_page

configure_page("Compare models")
compare_models.render()
