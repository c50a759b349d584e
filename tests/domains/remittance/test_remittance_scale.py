"""Remittance at scale: the indexed search returns exactly what the old scan returned (the old
functions are kept here verbatim as the reference), every list fits in one page at released size
and the policies and the catalog read every page, the scale option grows every desk table, the
reversing policy passes at scale 10, and no tool or grader reads a table that grows with the
world by scanning it. (Pagination, the scale option, no scans and the policies at scale, for
every domain: ``test_scale.py``.)"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import given, settings, strategies as st

from backoffice.envs import make_native
from backoffice.envs.core.canonical import derive_seed
from backoffice.envs.core.release import load_release
from backoffice.envs.remittance.generator import DEFECT_TAGS, generate
from backoffice.envs.remittance.search import ItemSearch, NearIndex, SearchIndex, search_store
from backoffice.envs.remittance.tables import osa_distance
from backoffice.training.catalog import spec_class, tier_specs
from backoffice.training.domains.remittance.policies import Oracle, ReversingPolicy
from backoffice.training.policies.base import call
from conftest import split_envs
from paging import no_scans, play, step

DOMAIN = "remittance"


# -- the pre-index search, verbatim: the reference ---------------------------------------------------
def ref_norm(text: str) -> str:
    """Upper-case alphanumerics only: ``clm-20 4518`` -> ``CLM204518``."""
    return "".join(ch for ch in text.upper() if ch.isalnum())


def ref_osa_distance(a: str, b: str, cap: int = 3) -> int:
    """Optimal-string-alignment distance (edits incl. adjacent transpositions), capped at ``cap``."""
    if abs(len(a) - len(b)) >= cap:
        return cap
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        # Every later cell derives from the last two rows plus non-negative costs: once both
        # are at the cap everywhere, the distance is at least the cap.
        if min(cur) >= cap and min(prev) >= cap:
            return cap
        prev2, prev = prev, cur
    return min(prev[len(b)], cap)


def ref_item_matches(query: str, item: Mapping[str, Any]) -> bool:
    """Does a normalised search query hit an item (claim ref within 2 edits, invoice, or name)?"""
    if len(query) < 3:
        return False
    ref = ref_norm(item["claim_ref"])
    if query == ref or (len(query) >= 4 and query in ref) or ref_osa_distance(query, ref) <= 2:
        return True
    if query == ref_norm(item["invoice"]):
        return True
    return len(query) >= 4 and query in ref_norm(item["patient_name"])


def ref_search_order_key(task_seed: int, item_id: str) -> int:
    """Where an item ranks in search results: fixed by the task's seed, not by quality."""
    return derive_seed("remittance-search", task_seed, item_id)


def ref_search_items(items: Iterable[Mapping[str, Any]], query: str, task_seed: int, payer_id: str = "",
                     limit: int = 10) -> list[Mapping[str, Any]]:
    """Items hit by ``query`` in the seeded order (at most ``limit``; the old SEARCH_LIMIT was 10)."""
    q = ref_norm(query)
    hits = [it for it in items if (not payer_id or it["payer_id"] == payer_id) and ref_item_matches(q, it)]
    hits.sort(key=lambda it: (ref_search_order_key(task_seed, it["id"]), it["id"]))
    return hits[:limit]


# -- random worlds and queries: refs with typing errors, case, spacing, unicode, empty strings -------
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_NAMES = ("Maria Lopez", "James Okafor", "Aisha Nguyen", "Zoë Ñúñez", "Li", "Anne-Marie O'Neil", "", "ß Straße")


def _typo(rng: random.Random, s: str) -> str:
    chars = list(s)
    for _ in range(rng.randint(0, 3)):
        op, i = rng.randint(0, 5), rng.randrange(len(chars) + 1)
        if op == 0:
            chars.insert(i, rng.choice("0123456789-. é"))
        elif chars and i < len(chars):
            if op == 1:
                del chars[i]
            elif op == 2:
                chars[i] = rng.choice("0123456789abcXYZ")
            elif op == 3 and i + 1 < len(chars):
                chars[i], chars[i + 1] = chars[i + 1], chars[i]
            elif op == 4:
                chars[i] = chars[i].lower()
            else:
                chars.insert(i, " ")
    return "".join(chars)


def _ref(rng: random.Random) -> str:
    k = rng.random()
    if k < 0.55:
        return f"CLM-{rng.randint(100000, 999999)}"
    if k < 0.65:
        return f"ICN-{rng.randint(10**10, 10**11 - 1)}"
    if k < 0.75:
        return "".join(rng.choice(_ALNUM[: rng.randint(2, 36)]) for _ in range(rng.randint(0, 14)))
    if k < 0.85:
        return rng.choice(("", "é", "ß-12", "Ω123", "١٢٣٤", "cl m 12", "CLM", "clm-1234567890123"))
    return _typo(rng, f"CLM-{rng.randint(100000, 999999)}")


def _item(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": f"OI-{rng.randint(1000, 99999)}-{i}", "claim_ref": _ref(rng),
        "invoice": rng.choice((f"INV-{rng.randint(100000, 999999)}", "", "inv 1")),
        "patient_name": rng.choice(_NAMES) if rng.random() < 0.5 else _typo(rng, rng.choice(_NAMES)),
        "payer_id": rng.choice(("AC-1", "AC-2", "")),
    }


def _world(rng: random.Random) -> list[dict[str, Any]]:
    items = [_item(rng, i) for i in range(rng.randint(0, 16))]
    if items and rng.random() < 0.6:  # a cluster of look-alike refs
        base = rng.choice(items)
        items += [dict(_item(rng, 100 + j), claim_ref=_typo(rng, base["claim_ref"])) for j in range(rng.randint(1, 6))]
    return items


def _query(rng: random.Random, items: list[dict[str, Any]]) -> str:
    k = rng.random()
    if k < 0.55 and items:
        field = rng.choice(("claim_ref", "claim_ref", "invoice", "patient_name"))
        value = rng.choice(items)[field]
        return _typo(rng, value) if rng.random() < 0.7 else value
    if k < 0.75:
        return _ref(rng)
    if k < 0.85:
        return _typo(rng, rng.choice(_NAMES))[: rng.randint(0, 12)]
    return "".join(rng.choice(_ALNUM + " -éß") for _ in range(rng.randint(0, 16)))


def test_indexed_search_equals_the_old_scan_on_20000_random_queries() -> None:
    rng = random.Random(20_000)
    queries = 0
    started = time.perf_counter()
    while queries < 20_000:
        items = _world(rng)
        search = ItemSearch(items)
        seed = rng.randint(0, 10**9)
        for _ in range(40):
            q, payer, limit = _query(rng, items), rng.choice(("", "", "AC-1")), rng.choice((10, 10, 1, 3, 200))
            want = [it["id"] for it in ref_search_items(items, q, seed, payer, limit)]
            assert [it["id"] for it in search.search(q, seed, payer, limit)] == want, (q, payer, items)
            queries += 1
    assert time.perf_counter() - started < 60


@settings(max_examples=300, deadline=None)
@given(refs=st.lists(st.text(alphabet="0123456789ACLM-é ", max_size=12), max_size=8),
       names=st.lists(st.text(max_size=10), max_size=8), query=st.text(alphabet="0123456789ACLM-é aXß", max_size=14))
def test_indexed_search_equals_the_old_scan_on_drawn_strings(refs: list[str], names: list[str], query: str) -> None:
    items = [{"id": f"OI-{i}", "claim_ref": r, "invoice": f"INV-{i}", "patient_name": names[i % len(names)] if names else "",
              "payer_id": ""} for i, r in enumerate(refs)]
    got = [it["id"] for it in ItemSearch(items).search(query, 7)]
    assert got == [it["id"] for it in ref_search_items(items, query, 7)]


def test_osa_distance_equals_the_reference() -> None:
    for alphabet, longest in (("ab", 6), ("abc", 4)):
        words = ["".join(p) for n in range(longest + 1) for p in itertools.product(alphabet, repeat=n)]
        for a, b in itertools.product(words, repeat=2):
            for cap in (1, 2, 3):
                assert osa_distance(a, b, cap) == ref_osa_distance(a, b, cap), (a, b, cap)
    rng = random.Random(3)
    for _ in range(20_000):
        a = _typo(rng, _ref(rng))
        b = _typo(rng, a) if rng.random() < 0.7 else _ref(rng)
        cap = rng.randint(1, 5)
        assert osa_distance(a, b, cap) == ref_osa_distance(a, b, cap), (a, b, cap)


def test_near_index_finds_exactly_the_strings_within_two_edits() -> None:
    rng = random.Random(5)
    members = sorted({ref_norm(_ref(rng)) for _ in range(200)})
    index = NearIndex(members)
    for _ in range(150):
        s = ref_norm(_typo(rng, rng.choice(members))) if rng.random() < 0.7 else ref_norm(_ref(rng))
        want = sorted(m for m in members if ref_osa_distance(s, m) <= 2)
        assert index.near(s) == want, s
        assert index.any_near(s) == bool(want)


# -- the tool's search on live stores ----------------------------------------------------------------
def _release_ids() -> tuple[str, ...]:
    rel = load_release(DOMAIN)
    return rel.split_ids["train"] + rel.split_ids["heldout"]


def _queries(env: Any, rng: random.Random) -> list[str]:
    store = env.state
    pid = env.task.params["payment_id"]
    lines = store.rows("remittance_lines", payment_id=pid)
    items = [store.get("open_items", i) for i in sorted(store.snapshot.table("open_items"))[:8]]
    qs = [ln[f] for ln in lines for f in ("claim_ref", "patient_name")]
    qs += [it[f] for it in items for f in ("claim_ref", "invoice", "patient_name")]
    return qs + [_typo(rng, q) for q in qs] + ["clm", "CLM-1", "", "maria", "  CLM 12 "]


def test_search_tool_equals_the_old_scan_on_live_stores_with_patient_items() -> None:
    env_for = split_envs(DOMAIN)
    rng = random.Random(11)
    checked = 0
    for t in _release_ids()[::40]:
        env = env_for(t)
        env.reset(options={"task_id": t})
        # move part of a claim to the patient: a patient item joins the searched rows
        line = env.state.rows("remittance_lines", payment_id=env.task.params["payment_id"])[0]
        if line["claim_ref"].startswith("CLM-"):
            hits = step(env, "search_open_items", query=line["claim_ref"])["result"]["items"]
            open_ = [h for h in hits if h["balance"] > 1 and h["responsibility"] == "payer"]
            if open_:
                assert step(env, "transfer_to_patient", item_id=open_[0]["id"], amount=1, code="PR-1")["status"] == "ok"
        live = list(env.state.iter_rows("open_items"))
        for q in _queries(env, rng):
            for payer in ("", env.task.params["payer_id"]):
                for limit in (10, 2):
                    want = [it["id"] for it in ref_search_items(live, q, env.task.seed, payer, limit)]
                    got = [it["id"] for it in search_store(env.state, q, env.task.seed, payer, limit)]
                    assert got == want, (t, q, payer)
                    checked += 1
    assert checked > 1000


# -- pagination (every list tool of every domain: test_scale.py) ------------------------------------
def test_at_released_size_every_list_fits_in_one_page() -> None:
    env_for = split_envs(DOMAIN)
    for t in _release_ids()[::25]:
        env = env_for(t)
        env.reset(options={"task_id": t})
        for tool in ("list_payments", "list_cases"):
            assert step(env, tool)["result"]["next_cursor"] is None


def test_bad_search_limits_are_tool_errors() -> None:
    env = make_native(DOMAIN)
    env.reset(options={"task_id": _release_ids()[0]})
    before = env.state.content_hash()
    for bad in ({"limit": 0}, {"limit": 201}, {"limit": "x"}):
        res = step(env, "search_open_items", query="CLM-1", **bad)
        assert res["status"] == "error" and res["code"] == "invalid_args", res
    assert env.state.content_hash() == before


def test_catalog_reads_every_page() -> None:
    """A paged read stays legal (and fetches the next page) until its last page came back."""
    cat = spec_class("remittance", tier_specs("remittance")["conclusions"])()
    cat.reset({"params": {"payment_id": "PMT-1", "payer_id": "AC-1"}}, {})
    act = {a.name: i for i, a in enumerate(cat.actions)}
    pay = {"id": "PMT-1", "payer_id": "AC-1", "reference": "EFT-1", "amount": 100, "unapplied": 100, "status": "unposted"}
    cat.observe(act["get_payment"], call("get_payment", payment_id="PMT-1"), {"status": "ok", "result": {"payment": pay, "lines": [], "allocations": []}})
    first = cat.to_call(act["list_payments"])
    assert first == call("list_payments", payer_id="AC-1", reference="EFT-1")
    cat.observe(act["list_payments"], first, {"status": "ok", "result": {"payments": [pay], "next_cursor": "PMT-1"}})
    assert cat.desk.others is None and cat.mask()[act["list_payments"]]
    second = cat.to_call(act["list_payments"])
    assert second == call("list_payments", payer_id="AC-1", reference="EFT-1", cursor="PMT-1")
    dup = dict(pay, id="PMT-2", status="posted")
    cat.observe(act["list_payments"], second, {"status": "ok", "result": {"payments": [dup], "next_cursor": None}})
    assert cat.desk.others == [pay, dup] and cat.desk.dup() and not cat.mask()[act["list_payments"]]
    doc = {"rules": [{"id": f"k{i}", "title": "t", "text": "x", "value": i} for i in range(3)], "tables": {}}
    assert cat.to_call(act["get_policies"]) == call("get_policies")  # one rule document, never paged
    cat.observe(act["get_policies"], call("get_policies"), {"status": "ok", "result": doc})
    assert cat.desk.pol == {"k0": 0, "k1": 1, "k2": 2} and not cat.mask()[act["get_policies"]]


# -- the scale tier ------------------------------------------------------------------------------------
GROWING = ("accounts", "open_items", "payments", "remittance_lines", "allocations")


def test_bigger_worlds_grow_every_desk_table() -> None:
    """At scale 10 every desk table holds 3 to 40 times the rows, the others the same rows, and
    no payment of the history repeats a reference. (The same task, every scale-1 row, unique
    ids, scale 1 as the default, bad scales refused: ``test_scale.py``.)"""
    for i, tag in enumerate(DEFECT_TAGS):
        one, ten = generate(1000 + i, tag), generate(1000 + i, tag, scale=10)
        for table, rows in one.snapshot.items():
            big = ten.snapshot[table]
            if table in GROWING:
                assert 3 * len(rows) <= len(big) <= 40 * len(rows), (tag, table, len(rows), len(big))
            else:
                assert big == rows, table
        base_refs = {r["reference"] for r in one.snapshot["payments"]}
        extra = [r["reference"] for r in ten.snapshot["payments"][len(one.snapshot["payments"]):]]
        assert len(extra) == len(set(extra)) and not base_refs & set(extra)  # no payment of the history is a duplicate


def test_the_reversing_policy_passes_generated_tasks_at_scale_10() -> None:
    env = make_native(DOMAIN, split="generated")
    for i in range(12):
        info = play(env, ReversingPolicy(), generate=i, scale=10)
        assert info["grade"]["pass"], (i, info["grade"]["failure_codes"])


def test_no_tool_or_grade_scans_a_table_that_grows_with_the_world() -> None:
    """Oracle and reversing episodes (every tool but list_cases, which is called here too, with
    get_open_item and list_payments) and their grades on worlds 10x the released size, with
    every full read of a growing table recorded. (Every domain's policies at scale 3:
    ``test_scale.py``.)"""
    env = make_native(DOMAIN, split="generated")
    for i in range(3):  # build the worlds first: building may read whole tables
        env.reset(options={"generate": i, "scale": 10})
    for i in range(3):
        for policy in (Oracle(), ReversingPolicy()):
            with no_scans(GROWING) as scans:
                obs, info = env.reset(options={"generate": i, "scale": 10})
                policy.reset(obs, info)
                while True:
                    action = policy.act(obs)
                    if action["tool"] == "submit":
                        for tool, args in (("list_cases", {"payment_id": env.task.params["payment_id"]}),
                                           ("get_open_item", {"item_id": sorted(env.state.snapshot.table("open_items"))[0]}),
                                           ("list_payments", {"payer_id": env.task.params["payer_id"]})):
                            assert step(env, tool, **args)["status"] == "ok", tool
                    obs, _, term, trunc, info = env.step(action)
                    assert info["error_code"] != "internal_error", (action, obs)
                    if term or trunc:
                        break
            assert info["grade"]["pass"] and scans == [], (i, policy.name, scans)


def test_search_index_is_built_once_per_snapshot() -> None:
    env = make_native(DOMAIN, split="generated")
    env.reset(options={"generate": 3, "scale": 10})
    built = []
    original = SearchIndex.__init__

    def counting(self: SearchIndex, items: Any) -> None:
        built.append(len(items))
        original(self, items)

    SearchIndex.__init__ = counting  # type: ignore[method-assign]
    try:
        for _ in range(3):
            env.reset(options={"generate": 3, "scale": 10})
            for q in ("CLM-123456", "Maria Lopez"):
                assert step(env, "search_open_items", query=q)["status"] == "ok"
    finally:
        SearchIndex.__init__ = original  # type: ignore[method-assign]
    assert len(built) <= 1
