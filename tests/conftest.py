"""Shared fixtures: the domains whose package and release are installed."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from backoffice.envs import available_domains  # noqa: E402

DOMAINS = available_domains()


def domain_params() -> list:
    return [pytest.param(d, id=d, marks=pytest.mark.xdist_group(d)) for d in DOMAINS]


@lru_cache(maxsize=None)
def release_ids(domain: str) -> tuple[str, ...]:
    from backoffice.envs.core.release import load_release

    rel = load_release(domain)
    return rel.split_ids["train"] + rel.split_ids["heldout"]
