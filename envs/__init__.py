"""backoffice.envs: importing this registers every environment id with Gymnasium.

``backoffice/<Title>-v0`` for the five domains and ``backoffice/<Title>-Catalog-v0`` for their
stable-baselines3 catalog wrappers; domain packages are imported lazily by
``gym.make``, so importing this module is cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym

#: domain name -> env title (``backoffice/<title>-v0``)
DOMAINS: dict[str, str] = {
    "approvals": "Approvals",
    "schedules": "Schedules",
    "remittance": "Remittance",
    "sufficiency": "Sufficiency",
    "registration": "Registration",
}


def get_domain(name: str) -> Any:
    """The :class:`~backoffice.envs.core.domain.Domain` of ``name``."""
    if name not in DOMAINS:
        raise KeyError(f"unknown domain {name!r}; choose from {', '.join(DOMAINS)}")
    return importlib.import_module(f"backoffice.envs.{name}").DOMAIN


def env_class(name: str) -> Any:
    get_domain(name)
    return getattr(importlib.import_module(f"backoffice.envs.{name}"), f"{DOMAINS[name]}Env")


def make_native(name: str, **kwargs: Any) -> Any:
    """The unwrapped native env of a domain (no Gymnasium wrappers), e.g. for replay."""
    return env_class(name)(**kwargs)


def available_domains() -> list[str]:
    """Domains whose package and release are installed."""
    out = []
    for name in DOMAINS:
        try:
            get_domain(name)
            from backoffice.envs.core.release import load_release

            load_release(name)
        except (ImportError, FileNotFoundError, AttributeError):
            continue
        out.append(name)
    return out


# outside gym.make's TimeLimit: episodes cut by max_episode_steps=n end with their grade (see MatchTimeLimit)
_WRAPPERS = (gym.envs.registration.WrapperSpec("MatchTimeLimit", "backoffice.envs.core.env:MatchTimeLimit", {}),)
# the catalog entry point returns this wrapper already applied; gym.make checks it is named first
_CATALOG = gym.envs.registration.WrapperSpec("CatalogEnv", "backoffice.training.catalog.wrapper:CatalogEnv", None)

for _name, _title in DOMAINS.items():
    _id = f"backoffice/{_title}-v0"
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=f"backoffice.envs.{_name}:{_title}Env", additional_wrappers=_WRAPPERS)
    # the catalog env (Discrete actions, Box features) for stable-baselines3; see backoffice.training.catalog
    _cid = f"backoffice/{_title}-Catalog-v0"
    if _cid not in gym.registry:
        gym.register(id=_cid, entry_point="backoffice.training.catalog:make_catalog_env", kwargs={"domain": _name},
                     additional_wrappers=(_CATALOG, *_WRAPPERS))
