"""The sufficiency domain: is a case's document file sufficient to release it for decision?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backoffice.envs.core import BackofficeEnv, Domain, lazy
from backoffice.envs.sufficiency.generator import DEFECT_TAGS, generate
from backoffice.envs.sufficiency.tables import RULES, TABLES
from backoffice.envs.sufficiency.tools import toolkit

#: the grader's failure codes: per review round, then the end state, the trail and the guardrail
FAILURE_CODES = (
    "premature_release", "over_request", "under_request", "ignored_held_record", "duplicate_request",
    "irrelevant_attachment", "end_status_wrong", "clock_state_wrong", "wrong_queue", "event_not_processed",
    "duplicate_decision", "forbidden_write",
)


def report_fields(key: Mapping[str, Any], grade: Mapping[str, Any]) -> dict[str, Any]:
    """What an evaluation line carries beyond the generic fields: the case, its defect tags,
    outcome class and requirement types (for aggregation), the per-failure scorer values, the
    failure tags and the per-round scores."""
    return {
        "case_id": key["case_id"],
        "defect_tags": list(key["defect_tags"]),
        "outcome_class": key["outcome_class"],
        "requirement_types": list(key["requirement_types"]),
        "scores": dict(grade.get("scores", {})),
        "failure_tags": list(grade["failure_codes"]),
        "round_scores": list(grade.get("round_scores", [])),
    }


def terminal_shaping(grade: Mapping[str, Any]) -> float:
    """Training-only: partial credit for the share of gaps covered (requested or attached)
    across the review rounds, plus the end-state score and a pass bonus. Never part of the
    pure grade."""
    return 0.25 * float(grade.get("gap_coverage", 0.0)) + 0.25 * float(grade["score"]) + 0.5 * float(bool(grade["pass"]))


DOMAIN = Domain(
    name="sufficiency",
    policies="backoffice.training.domains.sufficiency.policies",
    catalog="backoffice.training.domains.sufficiency.catalog:CATALOG",
    title="Sufficiency",
    prefix="SUF",
    toolkit=toolkit,
    generate=generate,
    grade=lazy("backoffice.graders.sufficiency:grade"),
    defect_tags=DEFECT_TAGS,
    failure_codes=FAILURE_CODES,
    generator_version="3",
    task_aliases=("case_id",),
    # requesting items pauses the clock and puts the case under request until the reply, and
    # the right procedure goes through several such rounds: progress is not measured on the
    # clock, the request round or the case status, which it passes through
    progress_exclude=("clock_state", "under_request", "end_status"),
    shaping_fields=("gap_coverage",),
    sizes={"train": 480, "heldout": 20 * len(DEFECT_TAGS)},
    default_max_steps=60,
    report_fields=report_fields,
    terminal_shaping=terminal_shaping,
    tables=TABLES,
    rules=RULES,
    rule_tools=("get_requirements",),
    # the grade reads the calls that wrote (attachments, requests, waits, releases, routes)
    grade_reads=frozenset(),
)


class SufficiencyEnv(BackofficeEnv):
    """Document sufficiency review of one case, with scripted applicant replies.

    ## Description
    A case (income support claim, housing application, disability claim) sits in the intake
    queue among other cases. Its case type requires a set of items (identity document, proof of
    address, signed declaration, ...), each with validity conditions: maximum age on the review
    date, signature, name match with the applicant, legibility, and whether a record the
    organisation already holds may cover it. The agent reviews the documents, attaches valid held
    records, requests only what is still missing or invalid (which pauses the SLA clock), waits
    for the applicant's scripted reply (some items may be absent or invalid again), restarts the
    clock and reviews again on the new date, until the case is sufficient (release it and route
    it once to its decision queue) or no further reply is expected (leave the request
    outstanding). Outcome classes: release_now, release_after_reply,
    release_after_two_replies, release_after_three_replies, awaiting_applicant.

    ## Action Space
    A tool call ``{"tool": name, "args": {...}}`` (or the same as JSON text); see Tools.

    ## Observation Space
    Canonical ASCII JSON text: the task brief after ``reset`` (instructions, ``params.case_id``),
    then each tool's result ``{"status": "ok", "result": ...}`` or a structured error
    ``{"status": "error", "code": ..., "message": ...}``.

    ## Rewards
    ``reward_mode="sparse"``: the pure grade's score on the terminal step, 0 before.
    ``reward_mode="shaped"`` (training only): -0.01 per call, -0.05 per rejected call, and at the
    end 0.25 x share of gaps covered + 0.25 x score + 0.5 x pass.

    ## Starting State
    A snapshot of the case, its documents, the applicant's held records, neighbouring cases and
    the scripted reply schedule (``_events``/``_uploads``, never returned whole), restored
    exactly by ``reset(seed=..., options={"task_id": ...})``.

    ## Episode End
    Terminates on ``submit``; truncates at ``max_steps`` (default 60).

    ## Arguments
    ``split``, ``reward_mode`` (sparse / shaped / progress), ``call_cost``, ``gate_cap``,
    ``max_steps``, ``trace_path``, ``render_mode``, ``judge``, ``release``: as every backoffice
    env (:class:`~backoffice.envs.core.env.BackofficeEnv`).
    ``reset(options=...)`` takes ``task_id`` or ``case_id`` (the case the task is about) to start
    a named task.

    ## Tools
    get_case, list_cases, get_requirements, list_documents, search_held_records,
    attach_held_record, request_items (pauses the SLA clock), wait (next scripted reply),
    resume_clock, release_case, route_case, add_note, submit. The list tools (list_cases,
    list_documents, search_held_records) return one page: ``limit`` rows (default 50, at most
    200) after ``cursor``, and ``next_cursor`` (``None`` on the last page).

    ## Scale
    ``generate(seed, tag, scale=k)`` (``reset(options={"generate": n, "scale": k})``) builds the
    same task in a world about k times the released size: more neighbouring cases with their
    documents, held records, requests, notes and scripted replies, none of them the task's case or
    applicant, so the answer key is that of scale 1 (released tasks are scale 1).

    ## Rules (``DOMAIN.rules``; each changes the right answer in >= 20 tasks per split)
    presence, legibility, signature, name_match, age (the validity conditions);
    held_record_acceptance (a held record covers only an item that accepts held records),
    held_record_validity (a held record meets the same conditions), use_held_records (attach a
    valid held record rather than asking the applicant), request_only_uncovered, wait_for_replies
    (every scripted reply is waited for and reviewed), review_each_reply (a reply is reviewed, not
    trusted), review_on_new_date (each review is on the date of its reply: documents age),
    sla_pause_resume (a request pauses the SLA clock, resume_clock restarts it after the reply and
    moves the due date by the days paused), routing_threshold (senior queue at or above the
    threshold).

    ## Grade
    The whole trail is graded. Per review round (each reply opens a round judged on that round's
    documents and date): ``premature_release``, ``over_request``, ``under_request``,
    ``ignored_held_record``, ``duplicate_request`` (one request per review),
    ``irrelevant_attachment`` (a held record that covers no gap of the round); ``rounds`` and
    ``round_scores`` list them. Every scripted reply of the answer key's rounds must be delivered
    (``event_not_processed``); the case is routed at most once (``duplicate_decision``). End
    state against the key: ``end_status``, ``clock_state`` and the SLA dates ``sla_due_on`` /
    ``paused_at``, ``queue``. ``score`` = passed work checks / work checks, capped at 0.25 when a
    gate (a prohibition: premature release, over, duplicate or ignored-record requests,
    irrelevant attachments, duplicate decisions, a field the task must leave unchanged, writes
    outside the case) fails. Also ``scores`` (1/0 per scorer), ``gap_coverage``, ``end_state``,
    ``case_id``.

    ## Failure codes
    premature_release, over_request, under_request, ignored_held_record, duplicate_request,
    irrelevant_attachment, end_status_wrong, clock_state_wrong (clock state or SLA dates),
    wrong_queue, event_not_processed, duplicate_decision, forbidden_write.

    ## Version History
    * v0: initial release (generator 1.0.0).
    * v1: seeds v1 (generator 2.0.0): the whole trail graded (duplicate requests and decisions,
      irrelevant attachments, unprocessed replies, SLA dates), work and gate checks, outcome
      classes by replies needed and balanced, documents never issued after they were received.
      Generator 2.1.0: the task's case id is unique in the release, so
      ``reset(options={"case_id": ...})`` names a task (seed 004's ``reset(case_id, seed)``).
    * Issue 15 (same generator output at scale 1): list_cases, list_documents and
      search_held_records are paginated (``limit``/``cursor``, ``next_cursor``; list_cases no
      longer counts the whole queue in ``total``); every tool and the grader read through indexes;
      ``generate(..., scale=k)`` builds worlds k times larger.
    * v0, seeds v2 (generator 3): ``get_requirements`` returns the one rule document (18 rules,
      each binding in >= 20 tasks per split; the case type's items and routing under
      ``tables``); a document dated after the review date is its own rule
      (``not_after_review_date``) and post-dated papers appear; amounts exactly at the senior
      threshold appear (``threshold_inclusive``); every held record that covers an item has a
      decoy of the same item beside it, listed in an order of its own; list tools return
      ``total``.
    """

    domain = DOMAIN
