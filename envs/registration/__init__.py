"""The registration domain: an intake form must become a correct patient record set."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backoffice.envs.core import BackofficeEnv, Domain, lazy
from backoffice.envs.registration.generator import DEFECT_TAGS, generate
from backoffice.envs.registration.tables import RULES, TABLES
from backoffice.envs.registration.tools import toolkit

#: failure code of a write outside the answer key's targets (the guardrail)
GUARDRAIL_CODE = "forbidden_hit"
#: every failure code the grader emits (each proven by a wrong policy)
FAILURE_CODES = (
    "duplicate_created", "search_skipped", "missing_required", "field_mismatch", "invalid_coverage",
    "guardian_missing", "verified_overwritten", "wrong_patient_updated", "missed_referral",
    "unnecessary_referral", "wrong_referral_reason", "wrong_referral_basis", "duplicate_entry", GUARDRAIL_CODE,
)


def decision(key: Mapping[str, Any]) -> str:
    """The decision a task's right answer takes: create, update, or refer (every referral reason
    is one decision: hand the form over)."""
    outcome = str(key.get("outcome_class"))
    return "refer" if outcome.startswith("refer_") else outcome


def terminal_shaping(grade: Mapping[str, Any]) -> float:
    """Training-only: mostly the pass bonus, a little for the share of the work done. Never part
    of the pure grade."""
    return 0.1 * float(grade["score"]) + 0.9 * float(bool(grade["pass"]))


DOMAIN = Domain(
    name="registration",
    policies="backoffice.training.domains.registration.policies",
    catalog="backoffice.training.domains.registration.catalog:CATALOG",
    title="Registration",
    prefix="REG",
    toolkit=toolkit,
    generate=generate,
    grade=lazy("backoffice.graders.registration:grade"),
    defect_tags=DEFECT_TAGS,
    failure_codes=FAILURE_CODES,
    generator_version="3",
    sizes={"train": 400, "heldout": 180},
    default_max_steps=40,
    guardrail_code=GUARDRAIL_CODE,
    judge=lazy("backoffice.graders.registration_judge:judge"),
    terminal_shaping=terminal_shaping,
    rules=tuple(rule_id for rule_id, _, _ in RULES),
    rule_tools=("get_rules",),
    decision=decision,
    # the grade reads the calls that wrote (creates, updates, coverage, contacts, consent, links,
    # referrals) and, at a create, the searches before it: a step that changed no row changes none
    grade_reads=frozenset(),
    tables=TABLES,
)


class RegistrationEnv(BackofficeEnv):
    """Patient registration at a hospital desk: turn an intake form into a correct patient record set.

    ## Description
    The agent works the registration desk of a hospital. An intake form (``params.intake_form_id``)
    carries the mess real forms have: nicknames and name variants, given and family name swapped,
    two digits of the date of birth transposed, a new address while the record holds the old one,
    an identifier (10 digits, mod-11 check digit) or an insurer member id (Luhn check digit) with a
    typo, or the identifier of a family member. The patient index holds the same person, look-alikes
    who are not (twins, parents at the same address, namesakes born in another year), and sometimes
    a deceased record that matches, or the form carries a relative's identifier. The agent searches
    (``search_patients`` is fuzzy and its order is fixed by the task seed, not by match quality;
    every form's search shows look-alikes), decides whether the person already has a record,
    creates or updates it, and adds coverage, GP link, contacts and consent; an ambiguous or
    deceased match, or an identifier held by another record, must instead be handed over with
    ``refer_to_human(reason, basis, note)``, ``basis`` citing the blocking patient ids.

    ## Action Space
    A tool call ``{"tool": name, "args": {...}}`` (or that object as a JSON string), see Tools.

    ## Observation Space
    Canonical ASCII JSON text: the task brief after ``reset``; the tool result (``{"status": "ok",
    "result": ...}`` or ``{"status": "error", "code": ..., "message": ...}``) after each step.

    ## Rewards
    ``reward_mode="sparse"`` (default): the pure grade's ``score`` on the terminal step, 0 before.
    ``"shaped"``: -0.01 per call, -0.05 per rejected call, plus 0.1 * score + 0.9 * pass at the end.

    ## Starting State
    A released seed state (``split="train"`` or ``"heldout"``) or a generated one: 15-25 patient
    records with coverages, contacts, consents and GP links, payers with their member rosters,
    GP practices, earlier intake forms, open referrals with running timers and queued letters, the
    rule file and the clock. Reset restores it exactly, clearing notifications and timers queued
    during the previous episode. ``reset(options={"generate": n, "scale": k})`` builds generated
    task ``n`` in a world about ``k`` times larger (the same task and answer, more distractor
    patients and rows; see :mod:`backoffice.envs.registration.generator`).

    ## Episode End
    Terminates on ``submit`` or ``refer_to_human``; truncates at ``max_steps`` (default 40).

    ## Arguments
    ``split``, ``reward_mode`` (sparse / shaped / progress), ``call_cost``, ``gate_cap``,
    ``max_steps``, ``trace_path``, ``render_mode``, ``judge``, ``release``: as every backoffice
    env (:class:`~backoffice.envs.core.env.BackofficeEnv`).

    ## Tools
    get_intake_form, search_patients, get_patient, get_name_variants, get_rules, verify_member_id,
    lookup_member (the three list tools search_patients, get_rules and lookup_member return one
    page: ``limit`` rows, default 50, at most 200, and ``next_cursor`` to pass as ``cursor`` for
    the next page, ``null`` on the last), create_patient (also queues the welcome letter), update_patient (cite
    ``evidence_ids`` for verified fields; a value equal to the stored one up to formatting, such
    as a phone in another format or a name in another case, is kept as stored and writes
    nothing), add_coverage, add_contact, record_consent, link_gp (ends the previous active link),
    refer_to_human(reason, basis, note) (terminal: opens a referral citing the blocking patient
    ids, queues a worklist message, starts a 4-hour timer), submit (terminal). Domain error codes:
    ``invalid_identifier``, ``patient_not_active``.

    ## Grade
    ``pass`` (every check), ``score`` (share of the work checks passed, capped at 0.25 when a gate
    fails: see :mod:`backoffice.graders.registration`), ``checks``, ``failure_codes``,
    ``required_ok``, ``forbidden_hit``, ``forbidden_writes``, ``rule_violations`` (rule ids:
    R-SEARCH-FIRST, R-NO-DUPLICATE, R-MINOR-GUARDIAN, R-COVERAGE-ID, R-VERIFIED-FIELD,
    R-REFER-MATCH, R-IDENTITY-CONFLICT, R-REGISTRATION-SET), ``referral_correct``, ``patient_id``,
    ``action``, ``process_metrics``. The whole trail is graded: a second patient, a coverage,
    contact or consent entered twice, a write on another record, each fails. The hand-over note is
    scored by a separate judge in ``info["judge"]`` (a deterministic rubric by default), never
    part of ``pass``.

    ## Failure codes
    duplicate_created, search_skipped, missing_required, field_mismatch, invalid_coverage,
    guardian_missing, verified_overwritten, wrong_patient_updated, missed_referral,
    unnecessary_referral, wrong_referral_reason, wrong_referral_basis, duplicate_entry, forbidden_hit.

    ## Version History
    * v0: initial release (generator 1.0.0).
    * v0, seeds v1 (generator 2.0.0): referrals cite their basis (graded); identity conflicts
      (R-IDENTITY-CONFLICT); outcome classes create / update / refer_ambiguous / refer_deceased /
      refer_conflict, none above 35 % of a split; look-alikes in every search; duplicate entries
      graded; formatting-only and value-preserving updates write nothing; work checks and gates.
    * seeds v1.2 (generator 2.1.0): the brief names refer_to_human's arguments as the tool does
      (reason, basis, note) and the identity-conflict case beside the ambiguous and deceased
      ones; tags dealt along a seeded shuffle.
    * seeds v2 (generator 3): ``get_rules`` returns the one rule document, whole (today's date is
      in the brief and ``params.today``); ``search_patients`` and ``lookup_member`` return
      ``total``. What the form shows is drawn apart from the outcome (a minor, a coverage, a
      mistyped member id, a nickname, a recent move with its note, previous address and address
      document; the identifier is always written, sometimes with a mistyped digit); creates stay
      under a tenth (an oracle that always creates passes exactly them), so the referrals hold
      about two thirds. Every evidence list and contact list the oracle picks from has a decoy, in
      random order.
    """

    domain = DOMAIN
