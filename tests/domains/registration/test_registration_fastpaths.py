"""Registration's per-step fast paths give exactly what the plain definitions give.

The tools and the grader read through caches and set lookups instead of the engine's generic
helpers (issue 15, per-step cost); these tests pin each shortcut to the definition it replaces,
on random inputs, so a change on either side shows up here rather than as a drifting grade.
"""

from __future__ import annotations

import random
import re
from types import SimpleNamespace
from typing import Any

from backoffice.envs.registration.tables import digits, fold, identifier_valid, is_transposition, luhn_digit, member_id_valid
from backoffice.envs.registration.tools import swapped_dates
from backoffice.graders.grade import forbidden_writes
from backoffice.graders.registration import _writes


def test_date_swaps_are_exactly_the_transpositions() -> None:
    """The search scores a date of birth by membership in ``swapped_dates(dob)``: the same
    relation as ``is_transposition``."""
    rng = random.Random(11)
    for _ in range(5000):
        b = "".join(rng.choice("0112-") for _ in range(rng.randint(0, 7)))
        if rng.random() < 0.4 and len(b) > 1:
            i = rng.randrange(len(b) - 1)
            a = b[:i] + b[i + 1] + b[i] + b[i + 2:]
        else:
            a = "".join(rng.choice("0112-") for _ in range(rng.randint(0, 7)))
        assert (a in set(swapped_dates(b))) == is_transposition(a, b), (a, b)


def test_cached_normalisation_equals_the_definitions() -> None:
    """fold, digits, identifier_valid and member_id_valid cache string inputs: same answers as
    the uncached definitions, for strings and for the other values callers pass."""
    rng = random.Random(5)
    alphabet = "aAbB 1234567890-+\t\u00df\u0130,"
    values: list[Any] = [None, "", 0, 7, 12345678901]
    values += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(400)]
    for v in values:
        assert fold(v) == " ".join(str(v or "").split()).casefold()
        assert digits(v) == re.sub(r"\D", "", str(v or ""))
        d = re.sub(r"\D", "", str(v or ""))
        plain = len(d) == 10 and len(d) == len(str(v or "").replace(" ", ""))
        if plain:
            total = sum(int(c) * w for c, w in zip(d[:9], range(10, 1, -1)))
            check = 11 - total % 11
            plain = (0 if check == 11 else None if check == 10 else check) == int(d[9])
        assert identifier_valid(v) == identifier_valid(v) == plain  # the second call answers from the cache
        for m in (v, f"NW{d[:8]}", f" nw{d[:8]} "):
            text = str(m or "").strip().upper()
            body = text[2:]
            member = text.startswith("NW") and len(text) == 10 and body.isdigit() and luhn_digit(body[:7]) == int(body[7])
            assert member_id_valid(m, "NW") == member_id_valid(m, "NW") == member, m


def test_forbidden_writes_by_set_equal_the_engine_matcher() -> None:
    """The grader's ``_writes`` compares changed ids with plain ``table:id`` targets as sets
    (patterns go through the engine): the same forbidden keys as ``forbidden_writes``, and the
    number of records written."""
    rng = random.Random(7)
    tables = ["patients", "coverages", "notifications", "a", "b:c"]
    ids = ["PAT-0001", "PAT-0002", "X", "", "a:b", "COV-1"]
    targets_pool = [f"{t}:{i}" for t in tables for i in ids] + ["patients", "patients:*", "coverages:COV-?", "x[ab]", "b:c:X"]
    for _ in range(3000):
        diff: dict[str, Any] = {}
        for table in rng.sample(tables, rng.randint(0, 3)):
            pool = rng.sample(ids, rng.randint(1, 4))
            lo, hi = sorted((rng.randint(0, len(pool)), rng.randint(0, len(pool))))
            diff[table] = {"created": sorted(pool[:lo]), "updated": {i: {} for i in sorted(pool[lo:hi])}, "deleted": sorted(pool[hi:])}
        targets = rng.sample(targets_pool, rng.randint(0, 6))
        ep: Any = SimpleNamespace(diff=diff, key={"targets": targets})
        bad, written = _writes(ep, targets)
        assert bad == forbidden_writes(ep, targets), (diff, targets)
        assert written == sum(len(d["created"]) + len(d["updated"]) + len(d["deleted"]) for d in diff.values())
