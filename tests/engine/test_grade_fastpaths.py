"""The guardrail's fast matching equals fnmatch over every target, on random keys and patterns."""

from __future__ import annotations

import random
from types import SimpleNamespace

from backoffice.graders.diff import changed_keys
from backoffice.graders.grade import forbidden_writes, target_matches

PATTERNS = ["a:X-1", "a:X-*", "b:*", "a:?-2", "b:Y-[12]", "a:*-1*", "b:Z", "*", "a:X-1*"]


def test_forbidden_writes_equals_fnmatch_over_every_target() -> None:
    rng = random.Random(0)
    memo: dict = {}
    for _ in range(3000):
        diff: dict = {}
        for _ in range(rng.randint(0, 6)):
            table, rid = rng.choice("ab"), rng.choice(["X-1", "X-12", "Y-2", "Z", "Y-1"])
            kind = rng.choice(["created", "deleted"])
            diff.setdefault(table, {"created": [], "updated": {}, "deleted": []})[kind].append(rid)
        targets = rng.sample(PATTERNS, rng.randint(0, 4))
        expected = [k for k in changed_keys(diff) if not any(target_matches(k, t) for t in targets)]
        assert forbidden_writes(SimpleNamespace(diff=diff, memo=None), targets) == expected, (diff, targets)  # type: ignore[arg-type]
        # an episode's memo keeps a table's part while its diff is the same object: the second
        # call reads it back, a later diff (new objects) never does
        ep = SimpleNamespace(diff=diff, memo=memo)
        assert forbidden_writes(ep, targets) == expected == forbidden_writes(ep, targets), (diff, targets)  # type: ignore[arg-type]
