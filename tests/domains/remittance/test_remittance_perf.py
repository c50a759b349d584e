"""Remittance's fast paths give what the plain reads give: ``live_rows_in`` the rows of
``store.rows``, the per-snapshot memos of ``get_policies`` and ``get_payment`` what ``page`` and a
sort of ``store.rows`` give (and the live rows once an episode wrote the table), the search's
query memo the reference scan's hits, and the grader the same grade from rows read in place."""

from __future__ import annotations

import random
from typing import Any

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.canonical import dumps, loads
from backoffice.envs.core.domain import Episode
from backoffice.envs.core.release import load_release
from backoffice.envs.core.store import Store
from backoffice.envs.remittance import search as search_module
from backoffice.envs.remittance.search import ItemSearch
from backoffice.envs.remittance.tables import live_rows_in
from backoffice.training.domains.remittance.policies import ReversingPolicy
from backoffice.training.eval.rollout import run_episode
from conftest import split_envs

DOMAIN = "remittance"


def _release_ids() -> tuple[str, ...]:
    rel = load_release(DOMAIN)
    return rel.split_ids["train"] + rel.split_ids["heldout"]


def _step(env: Any, tool: str, **args: Any) -> dict[str, Any]:
    obs, *_ = env.step({"tool": tool, "args": args})
    return loads(obs)


def _by_id(rows: Any) -> list[dict[str, Any]]:
    return sorted((dict(r) for r in rows), key=lambda r: r["id"])


def test_live_rows_in_equals_rows_on_stores_with_inserts_updates_deletes_and_rollbacks() -> None:
    rng = random.Random(15)
    env_for = split_envs(DOMAIN)
    tables = ("allocations", "cases", "adjustments", "open_items")
    for t in _release_ids()[::50]:
        env = env_for(t)
        run_episode(env, ReversingPolicy(), task_id=t)  # cases, adjustments, reversed allocations, patient items
        store: Store = env.state
        for step in range(40):
            table = rng.choice(tables)
            ids = store.ids(table)
            op = rng.random()
            store.begin()
            if ids and op < 0.35:  # an update, sometimes moving the row to another value of a field
                rid = rng.choice(ids)
                row, other = store.get(table, rid), store.get(table, rng.choice(ids))
                assert row is not None and other is not None
                field = rng.choice([f for f in row if f != "id"])
                store.update(table, rid, {field: other[field]})
            elif ids and op < 0.5:
                store.delete(table, rng.choice(ids))
            elif ids:
                template = store.get(table, rng.choice(ids))
                assert template is not None
                store.insert(table, {**template, "id": f"ZZ-{step:04d}"})
            if rng.random() < 0.2:
                store.rollback()
            else:
                store.commit()
            for name in tables:
                rows = list(store.iter_rows(name))
                if not rows:
                    continue
                fields = [f for f in rows[0] if f != "id"]
                for field in rng.sample(fields, min(3, len(fields))):
                    values = {r[field] for r in rng.sample(rows, min(3, len(rows)))} | {"nothing-has-this"}
                    want = _by_id(r for v in values for r in store.rows(name, **{field: v}))
                    assert _by_id(live_rows_in(store, name, field, values)) == want, (t, name, field)


def test_get_policies_is_the_whole_rule_document_of_the_policy_rows() -> None:
    """One rule document, never paged: an entry per policy row (id, title, text, value), in the
    order of the domain's rules, equal to what the store's rows say."""
    env_for = split_envs(DOMAIN)
    rules = get_domain(DOMAIN).rules
    for t in _release_ids()[::50]:
        env = env_for(t)
        env.reset(options={"task_id": t})
        got = _step(env, "get_policies")
        assert got["status"] == "ok" and got["result"]["tables"] == {}
        entries = got["result"]["rules"]
        assert [e["id"] for e in entries] == list(rules)
        for e in entries:
            row = env.state.get("policies", e["id"])
            assert e == loads(dumps({k: row[k] for k in ("id", "title", "text", "value")}))
        assert _step(env, "get_policies", limit=2)["code"] == "invalid_args"  # no paging arguments


def test_memoised_reads_follow_rows_the_episode_wrote() -> None:
    """No tool writes policies or remittance lines; were they written, the tools read them live."""
    env = make_native(DOMAIN)
    env.reset(options={"task_id": _release_ids()[3]})
    pid = env.task.params["payment_id"]
    before = _step(env, "get_payment", payment_id=pid)["result"]["lines"]
    store = env.state
    first = sorted(store.rows("remittance_lines", payment_id=pid), key=lambda r: r["line_no"])[0]
    store.update("remittance_lines", first["id"], {"line_no": 99, "patient_name": "Changed Name"})
    after = _step(env, "get_payment", payment_id=pid)["result"]["lines"]
    assert after[-1]["id"] == first["id"] and after[-1]["patient_name"] == "Changed Name"
    assert [ln["id"] for ln in after] == [ln["id"] for ln in before[1:]] + [first["id"]]
    pol = store.ids("policies")[0]
    store.update("policies", pol, {"text": "rewritten"})
    texts = [p["text"] for p in _step(env, "get_policies")["result"]["rules"]]
    assert "rewritten" in texts
    env.reset(options={"task_id": _release_ids()[3]})  # the snapshot's memos were not touched
    assert _step(env, "get_payment", payment_id=pid)["result"]["lines"] == before
    assert "rewritten" not in [p["text"] for p in _step(env, "get_policies")["result"]["rules"]]


@pytest.mark.parametrize("memo", [1, 2, 256])
def test_search_memo_answers_equal_fresh_answers(memo: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """However small the query memo, remembered answers (and evictions) change no hit."""
    monkeypatch.setattr(search_module, "QUERY_MEMO", memo)
    rng = random.Random(memo)
    env_for = split_envs(DOMAIN)
    for t in _release_ids()[::60]:
        env = env_for(t)
        env.reset(options={"task_id": t})
        items = list(env.state.iter_rows("open_items"))
        queries = [it[f] for it in items[:6] for f in ("claim_ref", "invoice", "patient_name")] + ["CLM", "clm-1", ""]
        memoised = ItemSearch(items)
        for q in [rng.choice(queries) for _ in range(60)]:
            fresh = ItemSearch(items).search(q, env.task.seed, "", 200)
            assert [h["id"] for h in memoised.search(q, env.task.seed, "", 200)] == [h["id"] for h in fresh], q


def test_grade_reads_in_place_and_leaves_the_store_as_it_was() -> None:
    """Grading twice gives the same grade and changes nothing (rows are read, never copied or
    mutated), with reversed allocations, transfers, cases and payer queries in the state."""
    env = make_native(DOMAIN, split="heldout")
    for t in env.release.split_ids["heldout"][::20]:
        run_episode(env, ReversingPolicy(), task_id=t)
        store = env.state
        before = store.content_hash(), store.to_json()
        episode = Episode(env.task, env.release.answer_key(t), store.snapshot, store, store.diff(), env.trace)
        first = env.domain.grade(episode)
        assert env.domain.grade(episode) == first
        assert (store.content_hash(), store.to_json()) == before
