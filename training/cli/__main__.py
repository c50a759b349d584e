"""``python -m backoffice.training.cli``: the `backoffice` command."""

from backoffice.training.cli.main import app

app()
