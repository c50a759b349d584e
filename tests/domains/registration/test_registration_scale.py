"""Registration at scale: index-backed search equal to the full scan, the scale tier (the
release at scale 1, several times the rows and the same search at scale 10), and the catalog
reading every search page. (Pagination, the scale option, no scans and the policies at scale,
for every domain: ``test_scale.py``.)"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import pytest

from backoffice.envs.core.build import make_task, task_tag
from backoffice.envs.core.release import load_release
from backoffice.envs.core.store import Store
from backoffice.envs.registration import DOMAIN as REGISTRATION
from backoffice.envs.registration.generator import generate
from backoffice.envs.registration.tables import name_variants
from backoffice.envs.registration.tools import search_hits, search_order, search_score, swapped_dates
from backoffice.training.catalog import spec_class, tier_specs

DOMAIN = "registration"

#: the catalog action that reads search_patients' pages
RegistrationCatalog = spec_class("registration", tier_specs("registration")["conclusions"])
SEARCH = next(i for i, a in enumerate(RegistrationCatalog.actions) if a.name == "search_patients")


@cache
def release():
    return load_release(DOMAIN)


@cache
def scaled(index: int, scale: int):
    """A generated task at ``scale`` (task, snapshot, key)."""
    return make_task(REGISTRATION, "generated", index, scale)


def _scan(store: Store, seed: int | None, **query: Any) -> list[str]:
    """Today's reference: every patient scored, hits in the seeded order."""
    hits = [r for r in store.iter_rows("patients") if search_score(r, **query) >= 3]
    return [r["id"] for r in sorted(hits, key=lambda r: search_order(seed, r["id"]))]


def _queries(rng: random.Random, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Queries a desk would type for a few patients: exact, variants, swapped names, swapped
    dates, partial, wrong case, stray words, identifiers with and without typos, postcodes."""
    out: list[dict[str, Any]] = []
    for r in rng.sample(rows, k=min(8, len(rows))):
        given = rng.choice([r["given_name"], *name_variants(r["given_name"])])
        name = rng.choice([f"{given} {r['family_name']}", f"{r['family_name']}, {given}", r["family_name"].upper(),
                           f"  {given.lower()}  ", f"{given} Zzz {r['family_name']}"])
        dob = rng.choice([r["dob"], *(d for d in swapped_dates(r["dob"]) if d[4] == "-" and d[7] == "-")])
        ident = rng.choice([r["identifier"], f"{r['identifier'][:3]} {r['identifier'][3:]}", r["identifier"][:-1] + "0", ""])
        out.append({"name": name if rng.random() < 0.8 else None, "dob": dob if rng.random() < 0.6 else None,
                    "identifier": (ident or None) if rng.random() < 0.4 else None,
                    "postcode": r["postcode"].replace(" ", "").lower() if rng.random() < 0.5 else None})
    return out


def _writes(store: Store, rng: random.Random) -> None:
    """Episode writes the indexes must see: a new patient with a family name in capitals, a
    record renamed, a record deleted."""
    rows = list(store.iter_rows("patients"))
    a, b, c = rng.sample(rows, 3)
    store.insert("patients", {**a, "id": "PAT-9990", "family_name": a["family_name"].upper(), "identifier": ""})
    store.update("patients", b["id"], {"family_name": f"{a['family_name'].lower()}", "dob": c["dob"]})
    store.delete("patients", c["id"])


def test_index_backed_search_equals_the_full_scan() -> None:
    """search_hits (identifier, dates and family names by index, plus this episode's writes)
    returns exactly the hits, in exactly the order, of scoring every patient."""
    rng = random.Random(15)
    rel = release()
    ids = rng.sample(rel.split_ids["train"] + rel.split_ids["heldout"], 40)
    worlds = [(rel.task(t).seed, rel.snapshot(t)) for t in ids]
    worlds += [(task.seed, snap) for task, snap, _ in (scaled(i, 10) for i in range(3))]
    compared = 0
    for seed, snap in worlds:
        for written in (False, True):
            store = Store(snap)
            if written:
                _writes(store, rng)
            for query in _queries(rng, list(store.iter_rows("patients"))):
                if not any(query.values()):
                    continue
                assert [r["id"] for r in search_hits(store, seed, **query)] == _scan(store, seed, **query), query
                compared += 1
    assert compared > 500


# -- the scale tier ----------------------------------------------------------------------------------
def test_scale_one_is_the_released_generator() -> None:
    rel = release()
    for task_id in rel.split_ids["train"][:9]:
        task = rel.task(task_id)
        tag = task_tag(REGISTRATION, "train", int(task_id[-4:]))
        gen = generate(task.seed, tag, scale=1)
        assert {k: len(v) for k, v in gen.snapshot.items()} == rel.snapshot(task_id).row_count()


@pytest.mark.parametrize("index", range(3))
def test_scaled_world_has_several_times_the_rows_and_the_same_search(index: int) -> None:
    """At scale 10 every table that grows with a desk holds several times the rows, the desk's
    own tables (eight rules) do not; the form's search has the scale-1 hits (no distractor is a
    hit); identifiers stay unique. (The same task and answer but the targets' new ids, every
    scale-1 row unchanged, unique ids: ``test_scale.py``.)"""
    task1, snap1, _ = scaled(index, 1)
    task10, snap10, _ = scaled(index, 10)
    n1, n10 = snap1.row_count(), snap10.row_count()
    for table in ("patients", "coverages", "gp_links", "consents", "member_roster", "intake_forms", "referrals",
                  "notifications", "task_timers"):
        assert n10[table] >= 5 * n1[table], (table, n1[table], n10[table])
    for table in ("practices", "payers", "rules", "clock"):
        assert n10[table] == n1[table]
    assert n10["rules"] == 8
    form = snap1.table("intake_forms")[task1.params["intake_form_id"]]
    query = {"name": f"{form['given_name']} {form['family_name']}", "dob": form["dob"],
             "identifier": form["identifier"] or None, "postcode": form["postcode"] or None}
    assert _scan(Store(snap10), task10.seed, **query) == _scan(Store(snap1), task1.seed, **query)
    idents = [r["identifier"] for r in snap10.table("patients").values() if r["identifier"]]
    assert len(set(idents)) == len(idents)


def test_catalog_reads_every_search_page() -> None:
    """The catalog keeps the search unmasked while pages remain and sends their cursor."""
    agent = RegistrationCatalog()
    agent.reset({"params": {"intake_form_id": "INT-0001"}, "instructions": "Today is 2026-03-02."}, {})
    agent.observe(0, agent.to_call(0), {"status": "ok", "result": {"id": "INT-0001", "given_name": "Ann", "family_name": "Lee",
                                                       "dob": "1990-01-01", "identifier": "", "postcode": ""}})
    first = {"id": "PAT-0002", "given_name": "Ann", "family_name": "Lee", "dob": "1990-01-01", "identifier": "",
             "status": "active", "postcode": ""}
    agent.observe(SEARCH, agent.to_call(SEARCH), {"status": "ok", "result": {"count": 2, "results": [first], "next_cursor": "PAT-0002"}})
    assert agent.desk.results is None and agent.mask()[SEARCH]
    call = agent.to_call(SEARCH)
    assert call is not None and call["args"]["cursor"] == "PAT-0002"
    second = {**first, "id": "PAT-0001"}
    agent.observe(SEARCH, call, {"status": "ok", "result": {"count": 2, "results": [second], "next_cursor": None}})
    assert [r["id"] for r in agent.desk.results or ()] == ["PAT-0002", "PAT-0001"] and not agent.mask()[SEARCH]
    assert "cursor" not in (agent.to_call(SEARCH) or {})["args"]
