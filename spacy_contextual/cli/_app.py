"""The one typer app behind the ``spacy-contextual`` command; each command module registers on it."""

import typer

app = typer.Typer(
    name="spacy-contextual",
    help="ELMo and CoVe contextual word vectors for spaCy: embed, train, translate, probe.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def main() -> None:
    """ELMo and CoVe contextual word vectors for spaCy."""
