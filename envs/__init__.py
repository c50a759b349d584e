"""backoffice.envs: importing this registers every environment id with Gymnasium.

Domains register themselves (see :mod:`backoffice.envs.core.registry`): each sub-package of
``backoffice.envs`` (but ``core``) and each entry of the ``backoffice.domains`` entry-point group
is a domain. For each, ``backoffice/<Title>-v0`` (the native env) and
``backoffice/<Title>-Catalog-v0`` (its stable-baselines3 catalog wrapper) are registered. Domain
packages are imported lazily by ``gym.make``, so importing this module is cheap.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from backoffice.envs.core.registry import discover, domain_ref, env_class as _env_class, load_domain, seeds_folder

#: domain name -> env title (``backoffice/<title>-v0``), for every discovered domain
DOMAINS: dict[str, str] = {name: ref.title for name, ref in discover().items()}


def get_domain(name: str) -> Any:
    """The :class:`~backoffice.envs.core.domain.Domain` of ``name``."""
    return load_domain(name)


def env_class(name: str) -> Any:
    """The :class:`~backoffice.envs.core.env.BackofficeEnv` subclass of ``name``."""
    return _env_class(name)


def make_native(name: str, **kwargs: Any) -> Any:
    """The unwrapped native env of a domain (no Gymnasium wrappers), e.g. for replay."""
    return env_class(name)(**kwargs)


def available_domains() -> list[str]:
    """Domains whose package and release are installed."""
    from backoffice.envs.core.release import load_release

    out = []
    for name in DOMAINS:
        try:
            get_domain(name)
            load_release(name)
        except (ImportError, FileNotFoundError, AttributeError):
            continue
        out.append(name)
    return out


# outside gym.make's TimeLimit: episodes cut by max_episode_steps=n end with their grade (see MatchTimeLimit)
_WRAPPERS = (gym.envs.registration.WrapperSpec("MatchTimeLimit", "backoffice.envs.core.env:MatchTimeLimit", {}),)
# the catalog entry point returns this wrapper already applied; gym.make checks it is named first
_CATALOG = gym.envs.registration.WrapperSpec("CatalogEnv", "backoffice.training.catalog.wrapper:CatalogEnv", None)


def register_envs() -> None:
    """Register the native and catalog env ids of every discovered domain (idempotent)."""
    for name, ref in discover().items():
        if ref.env_id not in gym.registry:
            gym.register(id=ref.env_id, entry_point=ref.entry_point, additional_wrappers=_WRAPPERS)
        # the catalog env (Discrete actions, Box features) for stable-baselines3; see backoffice.training.catalog
        if ref.catalog_env_id not in gym.registry:
            gym.register(id=ref.catalog_env_id, entry_point="backoffice.training.catalog:make_catalog_env",
                         kwargs={"domain": name}, additional_wrappers=(_CATALOG, *_WRAPPERS))


register_envs()

__all__ = ["DOMAINS", "available_domains", "domain_ref", "env_class", "get_domain", "make_native", "register_envs", "seeds_folder"]
