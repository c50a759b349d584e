"""Helpers of the catalog tier tests (``tests/catalog/test_catalog_tiers.py`` and each domain's
``tests/domains/<d>/test_catalog_<d>_tiers.py``): the heldout ids, one shared heldout catalog env
per tier, a tier's spec class and an action's index."""

from __future__ import annotations

from functools import cache

from backoffice.envs import make_native
from backoffice.training.catalog import CatalogEnv, CatalogSpec, make_catalog_env, spec_class, tier_specs


@cache
def heldout_ids(domain: str) -> tuple[str, ...]:
    return tuple(make_native(domain, split="heldout").unwrapped.release.split_ids["heldout"])


@cache
def heldout_env(domain: str, tier: str) -> CatalogEnv:
    """A catalog env on the heldout split, shared by the tests (each resets it to its task)."""
    return make_catalog_env(domain, split="heldout", tier=tier)


def tier_class(domain: str, tier: str) -> type[CatalogSpec]:
    return spec_class(domain, tier_specs(domain)[tier])


def action_index(domain: str, tier: str, name: str) -> int:
    return next(i for i, a in enumerate(tier_class(domain, tier).actions) if a.name == name)
