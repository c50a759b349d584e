"""The `backoffice` command line (entry point `backoffice.training.cli:app`; `python -m
backoffice.training.cli` runs it too): `main` holds the commands, `llm` and `view` the commands
of agents and the viewer, `scaffold` the domain scaffold behind `backoffice new-domain`."""

from backoffice.training.cli.main import app

__all__ = ["app"]
