"""Sufficiency at scale (issue 15): what the scale tier of the generator adds (only the desk's
growing tables grow, the cases exactly SCALE times; no distractor is the task's applicant or a
row of its case), no scan in the calls the oracle skips, and the oracle reading every held
record and document one row a page. (The scale option, pagination, no scans and the policies
at scale, for every domain: ``test_scale.py``.)"""

from __future__ import annotations

import pytest

from backoffice.envs import make_native
from backoffice.envs.core.build import task_seed
from backoffice.envs.sufficiency.generator import DEFECT_TAGS, generate
from paging import no_scans, oracle_on_one_row_pages, step

pytestmark = pytest.mark.xdist_group("sufficiency")

DOMAIN = "sufficiency"
#: the tables that grow with the desk (every other table is the same in every snapshot)
GROWING = ("cases", "documents", "held_records", "item_requests", "notes", "_events", "_uploads")
SCALE = 10


def _seed(i: int) -> int:
    return task_seed(DOMAIN, "generated", i)


# -- the scale tier of the generator ---------------------------------------------------------------
@pytest.mark.parametrize("tag", DEFECT_TAGS[:4])
def test_a_scaled_world_grows_the_desk_and_not_the_task(tag: str) -> None:
    """Only the desk's growing tables grow (the cases exactly SCALE times), and no distractor is
    the task's applicant or a row of its case. (The same task and answer, every scale-1 row
    unchanged, unique ids, a pure generator: ``test_scale.py``.)"""
    base = generate(_seed(7), tag)
    big = generate(_seed(7), tag, scale=SCALE)
    for table in set(base.snapshot) - set(GROWING):
        assert len(big.snapshot[table]) == len(base.snapshot[table]), table
    # about SCALE times the cases (exactly: the scale-1 world's cases times SCALE), more of the rest
    assert len(big.snapshot["cases"]) == SCALE * len(base.snapshot["cases"])
    for table in GROWING:
        assert len(big.snapshot[table]) >= 2 * len(base.snapshot[table]), table
    # no distractor is the task's applicant, or a row of the task's case
    applicant = next(c for c in base.snapshot["cases"] if c["id"] == base.key["case_id"])["applicant_id"]
    new_held = [h for h in big.snapshot["held_records"] if h not in base.snapshot["held_records"]]
    assert all(h["applicant_id"] != applicant for h in new_held)
    number = base.key["case_id"].split("-", 1)[1]
    for table in ("documents", "item_requests", "notes", "_events"):
        mine = [r["id"] for r in big.snapshot[table] if r["case_id"] == base.key["case_id"]]
        assert mine == [r["id"] for r in base.snapshot[table] if r["case_id"] == base.key["case_id"]]
        assert all(f"-{number}-" in rid for rid in mine)


# -- no scans on the tools' and the grader's path (every domain's policies: test_scale.py) ---------
def test_the_calls_the_oracle_skips_never_scan_a_growing_table() -> None:
    """list_cases, add_note and a filtered held-record search read growing tables through an
    index only."""
    env = make_native(DOMAIN, split="train")
    for index in (2, 6, 8, 10):  # expired_document, held_record_available, reply_incomplete, awaiting_applicant
        env.reset(seed=0, options={"generate": index, "scale": 3})
        cid = env.task.params["case_id"]
        with no_scans(GROWING) as scans:
            step(env, "list_cases", queue="intake")
            step(env, "add_note", case_id=cid, text="Reviewed.")
            step(env, "search_held_records", case_id=cid, item_type="identity_document")
        assert scans == [], (index, scans)


# -- policies at scale (every domain: test_scale.py) ----------------------------------------------------
def test_one_row_pages_read_every_held_record_and_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one row a page, the oracle searches the applicant's held records once per record and
    lists the case's documents over several pages."""
    # complete_on_arrival, held_record_available, stale_held_record
    for env in oracle_on_one_row_pages(monkeypatch, DOMAIN, (0, 6, 7)):
        case = env.state.get("cases", env.task.params["case_id"])
        held = env.state.count("held_records", applicant_id=case["applicant_id"])
        assert sum(1 for rec in env.trace if rec["tool"] == "search_held_records") == max(held, 1)
        assert sum(1 for rec in env.trace if rec["tool"] == "list_documents") > 1
