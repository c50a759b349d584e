"""Domain discovery: every domain registers itself, no central list.

A domain is a package that defines ``DOMAIN`` (a :class:`~backoffice.envs.core.domain.Domain`)
and ``<Title>Env`` (its :class:`~backoffice.envs.core.env.BackofficeEnv` subclass). Domains are
found without importing them:

- this distribution's own: every sub-package of ``backoffice.envs`` except ``core``;
- third-party ones: the entry-point group ``backoffice.domains``, each entry naming a domain and
  its package, e.g. in the other package's ``pyproject.toml``::

      [project.entry-points."backoffice.domains"]
      refunds = "refunds_domain"

Their release (``seeds/<name>/``) is looked up beside the package as ``<package>/seeds`` for a
third-party domain (``backoffice.seeds`` for this distribution's own).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

#: the entry-point group through which other distributions add domains
ENTRY_POINT_GROUP = "backoffice.domains"
_BUILTIN_PACKAGE = "backoffice.envs"


@dataclass(frozen=True)
class DomainRef:
    """Where a discovered domain lives (nothing imported yet)."""

    name: str
    module: str
    builtin: bool

    @property
    def title(self) -> str:
        """The env-id part: ``approvals`` -> ``Approvals``, ``credit_notes`` -> ``CreditNotes``."""
        return title_of(self.name)

    @property
    def env_id(self) -> str:
        return f"backoffice/{self.title}-v0"

    @property
    def catalog_env_id(self) -> str:
        return f"backoffice/{self.title}-Catalog-v0"

    @property
    def entry_point(self) -> str:
        return f"{self.module}:{self.title}Env"


def title_of(name: str) -> str:
    """The title of a domain name (``snake_case`` -> ``CamelCase``)."""
    return "".join(part.capitalize() for part in name.split("_"))


@lru_cache(maxsize=1)
def discover() -> dict[str, DomainRef]:
    """Every domain of this installation, by name (sorted), without importing any of them."""
    found: dict[str, DomainRef] = {}
    package = importlib.import_module(_BUILTIN_PACKAGE)
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg and info.name != "core" and not info.name.startswith("_"):
            found[info.name] = DomainRef(info.name, f"{_BUILTIN_PACKAGE}.{info.name}", True)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        module = ep.value.split(":", 1)[0]
        if ep.name in found and found[ep.name].module != module:
            raise RuntimeError(f"two packages declare the backoffice domain {ep.name!r}: {found[ep.name].module} and {module}")
        found.setdefault(ep.name, DomainRef(ep.name, module, False))
    return dict(sorted(found.items()))


def domain_ref(name: str) -> DomainRef:
    refs = discover()
    if name not in refs:
        raise KeyError(f"unknown domain {name!r}; choose from {', '.join(refs)}")
    return refs[name]


@cache
def load_domain(name: str) -> Any:
    """The ``DOMAIN`` of ``name`` (imports its package), checked against its discovery name."""
    ref = domain_ref(name)
    domain = importlib.import_module(ref.module).DOMAIN
    if domain.name != ref.name or domain.title != ref.title:
        raise RuntimeError(f"{ref.module}.DOMAIN is named {domain.name!r}/{domain.title!r}; "
                           f"it is registered as {ref.name!r}/{ref.title!r}")
    return domain


def env_class(name: str) -> Any:
    """The :class:`BackofficeEnv` subclass of domain ``name`` (``<Title>Env`` in its package)."""
    ref = domain_ref(name)
    load_domain(name)
    return getattr(importlib.import_module(ref.module), f"{ref.title}Env")


def seeds_folder(name: str) -> Path:
    """The folder holding ``<name>/manifest.json`` and the rest of the domain's release."""
    ref = domain_ref(name)
    if ref.builtin:
        from backoffice.envs.core.release import seeds_root

        return seeds_root()
    spec = importlib.util.find_spec(ref.module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"cannot locate the package {ref.module} of domain {name!r}")
    return Path(list(spec.submodule_search_locations)[0]) / "seeds"
