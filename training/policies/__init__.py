"""Policies by name: ``oracle``, ``random``, ``noop``, ``wrong:<failure_code>`` and
``openai:<model>`` (an LLM behind an OpenAI-compatible endpoint, see ``chat_openai``) and
``sb3:<path/to/model.zip>`` (a model saved by ``backoffice train``, see ``sb3_policy``);
``catalog-random``, ``catalog-mask-only`` and ``catalog-features`` act through the domain's catalog (see
``backoffice.training.catalog.policy``).

Each domain's policies module (named by its ``Domain.policies``) defines ``Oracle`` (a policy that
uses only tool results and passes every released task) and ``WRONG_POLICIES`` (failure code ->
policy class that commits exactly that failure).
"""

from __future__ import annotations

import importlib
from typing import Any

from backoffice.training.policies.base import NoopPolicy, Policy, RandomPolicy, ScriptedPolicy, call


def domain_module(domain: str) -> Any:
    """The policies module a domain's declaration names (``Domain.policies``)."""
    from backoffice.envs import get_domain

    target = get_domain(domain).policies
    if target is None:
        raise KeyError(f"domain {domain!r} declares no policies module (Domain.policies)")
    return importlib.import_module(target)


#: policies acting through the domain's catalog env (see ``backoffice.training.catalog.policy``)
CATALOG_POLICIES = ("catalog-random", "catalog-mask-only", "catalog-features")


def get_policy(domain: str, name: str, seed: int = 0) -> Policy:
    """Build a policy by name for ``domain``."""
    if name == "noop":
        return NoopPolicy()
    if name == "random":
        return RandomPolicy(seed=seed)
    if name.startswith("openai:"):
        from backoffice.training.agents.openai_chat import openai_policy

        return openai_policy(name.split(":", 1)[1], seed=seed)
    base, _, tier = name.partition("@")
    if base in CATALOG_POLICIES:  # ``catalog-features@facts``: the same policy on a feature tier
        from backoffice.training.catalog import policy as catalog_policy

        policy: Policy
        if base == "catalog-features":
            policy = catalog_policy.FeaturePolicy(domain, tier=tier or None)
        else:
            cls = catalog_policy.MaskedRandomPolicy if base == "catalog-random" else catalog_policy.MaskOnlyPolicy
            policy = cls(domain, seed=seed, tier=tier or None)
        if tier:
            policy.name = name
        return policy
    if name.startswith("sb3:"):
        from backoffice.training.rl.sb3_policy import SB3Policy

        return SB3Policy(domain, name.split(":", 1)[1])
    module = domain_module(domain)
    if name == "oracle":
        return module.Oracle()
    if name.startswith("wrong:"):
        code = name.split(":", 1)[1]
        wrong = module.WRONG_POLICIES
        if code not in wrong:
            raise KeyError(f"{domain} has no wrong policy for {code!r}; known: {sorted(wrong)}")
        policy = wrong[code]()
        policy.name = name
        return policy
    raise KeyError(f"unknown policy {name!r}: use oracle, random, noop, wrong:<failure_code>, openai:<model>, sb3:<model.zip> or one of {CATALOG_POLICIES}")


def policy_names(domain: str) -> list[str]:
    """Every built-in policy name of a domain."""
    return ["oracle", "random", "noop", *(f"wrong:{c}" for c in sorted(domain_module(domain).WRONG_POLICIES))]


__all__ = ["NoopPolicy", "Policy", "RandomPolicy", "ScriptedPolicy", "call", "get_policy", "policy_names"]
