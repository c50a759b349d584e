"""Registration at scale: index-backed search equal to the full scan, pagination, the scale tier."""

from __future__ import annotations

import json
import random
from functools import cache
from typing import Any

import pytest

from backoffice.envs import make_native
from backoffice.envs.core.build import make_task
from backoffice.envs.core.release import load_release
from backoffice.envs.core.store import Store
from backoffice.envs.core.tools import MAX_PAGE_SIZE, ToolContext
from backoffice.envs.registration import DOMAIN as REGISTRATION
from backoffice.envs.registration.generator import DEFECT_TAGS, generate
from backoffice.envs.registration.tables import name_variants
from backoffice.envs.registration.tools import search_hits, search_order, search_score, swapped_dates, toolkit
from backoffice.training.catalog.registration import SEARCH, RegistrationCatalog
from backoffice.training.policies import get_policy

DOMAIN = "registration"


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


def _call(store: Store, task: Any, tool: str, **args: Any) -> dict[str, Any]:
    result, _ = toolkit.call(ToolContext(store, task), tool, args, frozenset(toolkit.names))
    return result


def _all_pages(store: Store, task: Any, tool: str, key: str, limit: int, **args: Any) -> list[dict[str, Any]]:
    got = _call(store, task, tool, limit=limit, **args)
    assert got["status"] == "ok", got
    rows = list(got["result"][key])
    pages = 1
    while got["result"]["next_cursor"] is not None:
        assert len(got["result"][key]) == limit
        got = _call(store, task, tool, limit=limit, cursor=got["result"]["next_cursor"], **args)
        rows += got["result"][key]
        pages += 1
    assert pages == max(1, -(-len(rows) // limit))
    return rows


def test_pagination_returns_every_row_exactly_once() -> None:
    task, snap, _ = scaled(0, 10)
    store = Store(snap)
    # a common family name with the given names most often seen with it: a search with many hits
    family = max(sorted({r["family_name"] for r in store.iter_rows("patients")}), key=lambda f: store.count("patients", family_name=f))
    givens = sorted({r["given_name"] for r in store.rows("patients", family_name=family)},
                    key=lambda g: -store.count("patients", family_name=family, given_name=g))
    name = family
    for given in givens:
        if len(name) + len(given) < 119:
            name += f" {given}"
    whole = _call(store, task, "search_patients", name=name, limit=MAX_PAGE_SIZE)["result"]
    assert whole["next_cursor"] is None and whole["count"] == len(whole["results"]) > 7
    for limit in (1, 3, 5):
        paged = _all_pages(store, task, "search_patients", "results", limit, name=name)
        assert [r["id"] for r in paged] == [r["id"] for r in whole["results"]]
    rules = _call(store, task, "get_rules")["result"]
    assert rules["next_cursor"] is None and len(rules["rules"]) == 8
    assert _all_pages(store, task, "get_rules", "rules", 3) == rules["rules"]
    # a payer's members with one family name and date of birth: add three more to the roster
    m = next(iter(store.iter_rows("member_roster")))
    for i in range(3):
        store.insert("member_roster", {**m, "id": f"MBR-99{i:02d}", "member_id": f"{m['member_id'][:-1]}{i}"})
    args = {"payer_id": m["payer_id"], "family_name": m["family_name"].lower(), "dob": m["dob"]}
    whole = _call(store, task, "lookup_member", **args)["result"]
    assert whole["next_cursor"] is None and len(whole["members"]) >= 4
    assert _all_pages(store, task, "lookup_member", "members", 2, **args) == whole["members"]


@pytest.mark.parametrize("tool, extra", [("search_patients", {"name": "Smith"}), ("get_rules", {}),
                                         ("lookup_member", {"payer_id": "PAY-NWH", "family_name": "Smith", "dob": "1980-01-01"})])
def test_limit_and_cursor_errors_are_tool_errors(tool: str, extra: dict[str, Any]) -> None:
    env = make_native(DOMAIN)
    env.reset(options={"task_id": release().split_ids["train"][0]})
    before = env.state.content_hash()
    for bad in ({"limit": 0}, {"limit": MAX_PAGE_SIZE + 1}, {"limit": "ten"}, {"limit": 2.5}, {"cursor": 7},
                {"cursor": "x" * 500}, {"offset": 3}):
        obs, _, terminated, _, _ = env.step({"tool": tool, "args": {**extra, **bad}})
        out = json.loads(obs)
        assert out["status"] == "error" and out["code"] == "invalid_args" and not terminated, (tool, bad, out)
    # a cursor that names no row is a place in the order, not an error: the rows after it
    obs, *_ = env.step({"tool": tool, "args": {**extra, "cursor": "ZZZ-unknown"}})
    assert json.loads(obs)["status"] == "ok"
    assert env.state.content_hash() == before


# -- the scale tier ----------------------------------------------------------------------------------
def test_scale_one_is_the_released_generator() -> None:
    rel = release()
    for task_id in rel.split_ids["train"][:9]:
        task = rel.task(task_id)
        tag = DEFECT_TAGS[int(task_id[-4:]) % len(DEFECT_TAGS)]
        gen = generate(task.seed, tag, scale=1)
        assert {k: len(v) for k, v in gen.snapshot.items()} == rel.snapshot(task_id).row_count()
    with pytest.raises(ValueError):
        generate(1, DEFECT_TAGS[0], scale=0)


@pytest.mark.parametrize("index", range(3))
def test_scaled_world_is_the_same_task_with_distractors(index: int) -> None:
    """At scale 10 the task, its form, its search and its answer are the scale-1 ones; every
    table that grows with a desk holds several times the rows; no distractor is a hit."""
    task1, snap1, key1 = scaled(index, 1)
    task10, snap10, key10 = scaled(index, 10)
    assert task10.to_json() == task1.to_json()
    same = ("outcome_class", "decision", "referral_reason", "basis", "candidates", "patient_id", "expected_fields",
            "coverage", "practice_id", "contacts", "consent_by", "minor", "intake_form_id", "defect_tags")
    assert {k: key10[k] for k in same} == {k: key1[k] for k in same}
    n1, n10 = snap1.row_count(), snap10.row_count()
    for table in ("patients", "coverages", "gp_links", "consents", "member_roster", "intake_forms", "referrals",
                  "notifications", "task_timers"):
        assert n10[table] >= 5 * n1[table], (table, n1[table], n10[table])
    for table in ("practices", "payers", "rules", "clock"):
        assert n10[table] == n1[table]
    form_id = task1.params["intake_form_id"]
    assert snap10.table("intake_forms")[form_id] == snap1.table("intake_forms")[form_id]
    form = snap1.table("intake_forms")[form_id]
    query = {"name": f"{form['given_name']} {form['family_name']}", "dob": form["dob"],
             "identifier": form["identifier"] or None, "postcode": form["postcode"] or None}
    assert _scan(Store(snap10), task10.seed, **query) == _scan(Store(snap1), task1.seed, **query)
    ids = (snap10.ids("patients"), snap10.ids("member_roster"), snap10.ids("coverages"))
    assert all(len(set(x)) == len(x) for x in ids)
    idents = [r["identifier"] for r in snap10.table("patients").values() if r["identifier"]]
    assert len(set(idents)) == len(idents)


def test_scaled_generator_is_pure() -> None:
    a = generate(123, "ambiguous_match", scale=5)
    b = generate(123, "ambiguous_match", scale=5)
    assert json.dumps(a.snapshot, sort_keys=True) == json.dumps(b.snapshot, sort_keys=True) and a.key == b.key


def test_oracle_passes_at_scale_ten() -> None:
    env = make_native(DOMAIN)
    oracle = get_policy(DOMAIN, "oracle")
    failed = []
    for index in range(len(DEFECT_TAGS) + 1):
        obs, info = env.reset(options={"generate": index, "scale": 10})
        oracle.reset(obs, info)
        while True:
            obs, _, terminated, truncated, info = env.step(oracle.act(obs))
            if terminated or truncated:
                break
        if not info["grade"]["pass"]:
            failed.append((index, info["grade"]["failure_codes"]))
    assert not failed


def test_catalog_reads_every_search_page() -> None:
    """The catalog keeps the search unmasked while pages remain and sends their cursor."""
    agent = RegistrationCatalog()
    agent.reset({"params": {"intake_form_id": "INT-0001"}, "instructions": "Today is 2026-03-02."}, {})
    agent.observe(0, {}, {"status": "ok", "result": {"id": "INT-0001", "given_name": "Ann", "family_name": "Lee",
                                                       "dob": "1990-01-01", "identifier": "", "postcode": ""}})
    first = {"id": "PAT-0002", "given_name": "Ann", "family_name": "Lee", "dob": "1990-01-01", "identifier": "",
             "status": "active", "postcode": ""}
    agent.observe(SEARCH, {}, {"status": "ok", "result": {"count": 2, "results": [first], "next_cursor": "PAT-0002"}})
    assert agent.results is None and agent.mask()[SEARCH]
    call = agent.to_call(SEARCH)
    assert call is not None and call["args"]["cursor"] == "PAT-0002"
    second = {**first, "id": "PAT-0001"}
    agent.observe(SEARCH, call, {"status": "ok", "result": {"count": 2, "results": [second], "next_cursor": None}})
    assert [r["id"] for r in agent.results or ()] == ["PAT-0002", "PAT-0001"] and not agent.mask()[SEARCH]
    assert "cursor" not in (agent.to_call(SEARCH) or {})["args"]
