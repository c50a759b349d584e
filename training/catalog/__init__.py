"""Catalog envs (``backoffice/<Title>-Catalog-v0``): every domain as ``Discrete(K)`` actions and
float32 features, for stable-baselines3 / sb3-contrib. See :mod:`.base` for the spec a domain
writes and :mod:`.wrapper` for the env.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import overload

from backoffice.training.catalog.base import ActionDef, CatalogAgent, CatalogSpec, FeatureDef, check_spec
from backoffice.training.catalog.tier import DomainCatalog, Hyper, Tier, domain_catalog, load_attribute, tier_spec
from backoffice.training.catalog.wrapper import CatalogEnv


def catalog_target(domain: str) -> str | None:
    """``"module:Class"`` of ``domain``'s catalog spec, as its ``Domain`` declares it (``None``:
    the domain has no catalog env)."""
    from backoffice.envs import get_domain

    return get_domain(domain).catalog


#: feature tiers of a catalog, from most to least given: ``conclusions`` (the procedure's
#: conclusions and "this is due" flags as features, actions that do the arithmetic and the
#: matching), ``facts`` (observed facts and comparisons only) and ``raw`` (per-slot observed
#: values and primitive actions: arithmetic, matching and selection are the agent's)
TIERS = ("conclusions", "facts", "raw")


def tier_specs(domain: str) -> dict[str, str]:
    """``tier -> "module:NAME"`` of ``domain``'s catalog tiers. A domain whose catalog is a
    :class:`~backoffice.training.catalog.tier.DomainCatalog` names each tier by the module-level
    name it has in that module; a catalog written as spec classes names them in its module's
    ``TIERS`` mapping (tier to ``"module:Class"`` or a class name of the same module), or has
    only ``conclusions``."""
    target = catalog_target(domain)
    if target is None:
        spec_class(domain)  # raises the helpful KeyError
        raise AssertionError("unreachable")
    module_name, _, name = target.partition(":")
    module = importlib.import_module(module_name)
    found = getattr(module, name)
    if isinstance(found, DomainCatalog):
        names = {id(v): k for k, v in vars(module).items() if isinstance(v, Tier)}
        missing = [t for t, tier in found.tiers.items() if id(tier) not in names]
        if missing:
            raise TypeError(f"{target}: tiers {missing} are not module-level names of {module_name}")
        return {t: f"{module_name}:{names[id(tier)]}" for t, tier in found.tiers.items()}
    named = getattr(module, "TIERS", {"conclusions": name})
    return {t: (c if ":" in c else f"{module_name}:{c}") for t, c in named.items()}


#: a catalog spec: ``"module:NAME"`` (a spec class, a :class:`Tier` or a :class:`DomainCatalog`),
#: a :class:`Tier` object, or ``None`` (the domain's own catalog)
SpecRef = str | Tier | None


@overload
def resolve_spec(domain: str, spec: str | None = None, tier: str | None = None) -> str | None: ...
@overload
def resolve_spec(domain: str, spec: SpecRef = None, tier: str | Tier | None = None) -> SpecRef: ...


def resolve_spec(domain: str, spec: SpecRef = None, tier: str | Tier | None = None) -> SpecRef:
    """The spec to use for ``tier``: a tier name of the domain's catalog (:data:`TIERS` or its own),
    a user's tier (a :class:`Tier`, or ``"module:NAME"`` naming one), or ``None`` (the domain's own
    catalog, its ``conclusions`` tier); ``spec`` and ``tier`` are exclusive."""
    if tier is None:
        return spec
    if spec is not None:
        raise ValueError("give a catalog spec or a tier, not both")
    if isinstance(tier, Tier) or ":" in tier:
        return tier
    specs = tier_specs(domain)
    if tier not in specs:
        raise KeyError(f"the {domain} catalog has no {tier!r} tier; it has {', '.join(specs)} (or name your own: 'module:NAME')")
    return specs[tier]


def spec_class(domain: str, spec: SpecRef = None) -> type[CatalogSpec]:
    """The :class:`CatalogSpec` subclass of ``domain``, or the one ``spec`` names: a spec class,
    a :class:`Tier` of the domain's catalog (or a user's, over the domain's desk and registries),
    or a :class:`DomainCatalog` (its ``conclusions`` tier)."""
    if spec is None:
        spec = catalog_target(domain)
        if spec is None:
            from backoffice.envs import DOMAINS

            with_catalog = [d for d in DOMAINS if catalog_target(d)]
            raise KeyError(f"domain {domain!r} declares no catalog; these do: {', '.join(with_catalog)}")
    found = load_attribute(spec) if isinstance(spec, str) else spec
    if isinstance(found, DomainCatalog):
        if found.domain != domain:
            raise TypeError(f"{spec} is the catalog of {found.domain!r}, not {domain!r}")
        found = found.tiers["conclusions"]
    if isinstance(found, Tier):
        cls = tier_spec(domain_catalog(domain), found)
    else:
        cls = found
        if not (isinstance(cls, type) and issubclass(cls, CatalogSpec)) or cls.domain != domain:
            raise TypeError(f"{spec} is not a CatalogSpec of domain {domain!r}")
    check_spec(cls)
    return cls


def make_catalog_env(
    domain: str,
    split: str = "train",
    reward_mode: str = "sparse",
    max_steps: int | None = None,
    trace_path: str | None = None,
    render_mode: str | None = None,
    task_ids: Sequence[str] | None = None,
    spec: SpecRef = None,
    tier: str | Tier | None = None,
    call_cost: float | None = None,
    gate_cap: bool = True,
    lean_info: bool = False,
) -> CatalogEnv:
    """The catalog env of ``domain`` (what ``gym.make("backoffice/<Title>-Catalog-v0")`` builds).

    ``split``, ``reward_mode``, ``call_cost``, ``gate_cap``, ``lean_info``, ``trace_path`` and
    ``render_mode`` go to the native env;
    ``max_steps`` defaults to the catalog's own limit; ``task_ids`` restricts the tasks drawn
    by seed; ``tier`` picks a feature tier (:data:`TIERS`, default ``conclusions``), or is a user's
    own (a :class:`Tier`, or ``"package.module:NAME"`` naming one); ``spec`` replaces the domain's
    catalog (``"package.module:Class"``).
    """
    from backoffice.envs import make_native

    cls = spec_class(domain, resolve_spec(domain, spec, tier))
    native = make_native(domain, split=split, reward_mode=reward_mode, call_cost=call_cost,
                         gate_cap=gate_cap, lean_info=lean_info, max_steps=max_steps or cls.max_steps,
                         trace_path=trace_path, render_mode=render_mode)
    return CatalogEnv(native, cls(), task_ids=task_ids)


def catalog_agent(domain: str, spec: SpecRef = None, tier: str | Tier | None = None) -> CatalogAgent:
    """A fresh :class:`CatalogAgent` of ``domain`` (for policies that drive a native env)."""
    from backoffice.envs import get_domain

    cls = spec_class(domain, resolve_spec(domain, spec, tier))
    return CatalogAgent(cls(), max_steps=cls.max_steps or get_domain(domain).default_max_steps)


def catalog_env_id(domain: str) -> str:
    from backoffice.envs import domain_ref

    return domain_ref(domain).catalog_env_id


__all__ = [
    "TIERS", "ActionDef", "CatalogAgent", "CatalogEnv", "CatalogSpec", "DomainCatalog", "FeatureDef", "Hyper", "SpecRef",
    "Tier", "catalog_target", "domain_catalog",
    "catalog_agent", "catalog_env_id", "make_catalog_env", "resolve_spec", "spec_class", "tier_specs",
]
