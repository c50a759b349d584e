"""Package discovery for setuptools: every folder with an ``__init__.py`` under the top-level
folders below ships in the wheel, so adding a domain (``envs/<name>/``) needs no edit here or in
``pyproject.toml`` (which holds everything else). ``tests/project/test_packaging.py`` builds the wheel
and checks that every domain package is in it."""

from pathlib import Path

from setuptools import setup

#: import namespace -> folder (the same mapping as ``package-dir`` in pyproject.toml)
ROOTS = {"backoffice.envs": "envs", "backoffice.graders": "graders", "backoffice.seeds": "seeds", "backoffice.training": "training"}


def packages() -> list[str]:
    here = Path(__file__).parent
    found = []
    for namespace, folder in ROOTS.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(here / folder).parts
            found.append(".".join((namespace, *parts)))
    return found


setup(packages=packages())
