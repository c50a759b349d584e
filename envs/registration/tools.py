"""The registration desk's tools.

Domain error codes beyond the engine's: ``invalid_identifier`` (an identifier that fails its
check digit), ``patient_not_active`` (a write to a deceased record). Writes the rules forbid but
the system accepts (a coverage with an unchecked member id, a verified field overwritten without
evidence) are allowed here and caught by the grader, as at a real desk.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from itertools import repeat
from operator import itemgetter
from typing import Any, Literal, NamedTuple

from pydantic import Field, field_validator

from backoffice.envs.core.canonical import derive_seed
from backoffice.envs.core.store import Snapshot, Store
from backoffice.envs.core.tools import (
    NoArgs,
    PageArgs,
    ToolArgs,
    ToolContext,
    ToolError,
    Toolkit,
    check_cursor,
    live_row,
    page_result,
    require_row,
    rule_document,
)
from backoffice.envs.registration.tables import (
    PREFIX,
    REFERRAL_REASONS,
    digits,
    fold,
    identifier_valid,
    is_ascii_digits,
    is_transposition,
    member_id_valid,
    name_variants,
    parse_date,
    phone_key,
)

toolkit = Toolkit()

PATIENT_SUMMARY = ("id", "identifier", "given_name", "family_name", "dob", "postcode", "status")
_summary = itemgetter(*PATIENT_SUMMARY)  # a row's PATIENT_SUMMARY values, in that order


def _check_date(value: str | None) -> str | None:
    if value is not None and parse_date(value) is None:
        raise ValueError("must be an ISO date YYYY-MM-DD")
    return value


def _now(ctx: ToolContext) -> str:
    """``ctx.now`` without copying the clock row."""
    row = ctx.store.peek("clock", "clock")
    return row["now"] if row else ""


def _patient(ctx: ToolContext, patient_id: str, active: bool = False) -> Mapping[str, Any]:
    """The live patient row (read-only), or ``not_found``; with ``active``, ``patient_not_active``
    unless the record is active."""
    row = live_row(ctx.store, "patients", patient_id, f"no patient {patient_id[:40]!r}")
    if active and row["status"] != "active":
        raise ToolError("patient_not_active", f"{patient_id} is {row['status']}: its record is locked")
    return row


def _form_id(ctx: ToolContext) -> str:
    return str(ctx.task.params.get("intake_form_id", ""))


# -- reading ---------------------------------------------------------------------------------
class IntakeFormArgs(ToolArgs):
    intake_form_id: str = Field(description="Id of the intake form, e.g. INT-0001.", max_length=40)


@toolkit.tool(writes=False)
def get_intake_form(ctx: ToolContext, args: IntakeFormArgs) -> dict:
    """Return an intake form as the patient filled it in, with the evidence documents seen at the desk."""
    form = require_row(ctx.store, "intake_forms", args.intake_form_id, f"no intake form {args.intake_form_id!r}")
    form["evidence"] = ctx.store.rows("evidence", intake_form_id=args.intake_form_id)
    return form


class SearchArgs(PageArgs):
    name: str | None = Field(None, description="Any part of the name, in any order (e.g. 'Bill Smith').", max_length=120)
    dob: str | None = Field(None, description="Date of birth YYYY-MM-DD.")
    identifier: str | None = Field(None, description="Patient identifier (10 digits, spaces allowed).", max_length=20)
    postcode: str | None = Field(None, description="Postcode.", max_length=12)

    check_dob = field_validator("dob")(_check_date)


class _Query(NamedTuple):
    """A search's parts, normalised once per search (not once per scored row)."""

    tokens: frozenset[str]  # the folded words of the name
    ident: str  # the identifier's digits when there are 10 of them, else ""
    dob: str | None
    near: frozenset[str]  # the dates two swapped adjacent digits away from ``dob``
    postcode: str | None  # folded, without spaces


def _query(name: str | None, dob: str | None, identifier: str | None, postcode: str | None) -> _Query:
    tokens = frozenset(fold(name).replace(",", " ").split()) if name else frozenset()
    ident = digits(identifier) if identifier else ""
    return _Query(tokens, ident if len(ident) == 10 else "", dob or None, _swaps(dob) if dob else frozenset(),
                  fold(postcode).replace(" ", "") if postcode else None)


@lru_cache(maxsize=1 << 14)
def _given_keys(given: str) -> frozenset[str]:
    """A folded given name and the folds of its listed variants: the name words that score it."""
    return frozenset((given, *(fold(v) for v in name_variants(given))))


@lru_cache(maxsize=1 << 16)
def _row_keys(family: Any, given: Any, postcode: Any) -> tuple[str, frozenset[str], str]:
    """What a patient row's names and postcode score against (cached: rows repeat across
    searches and episodes): the folded family name, :func:`_given_keys` of the folded given
    name, and the postcode folded without spaces."""
    return fold(family), _given_keys(fold(given)), fold(postcode).replace(" ", "")


def _score(row: Mapping[str, Any], q: _Query) -> int:
    score = 0
    if q.ident and row["identifier"] == q.ident:
        score += 3
    if q.tokens or q.postcode is not None:
        family, given_keys, postcode = _row_keys(row["family_name"], row["given_name"], row["postcode"])
        if q.tokens:
            if family in q.tokens:
                score += 2
            if not q.tokens.isdisjoint(given_keys):
                score += 1
        if q.postcode is not None and postcode == q.postcode:
            score += 1
    if q.dob:
        born = row["dob"]
        # ``born in q.near`` is is_transposition(born, dob) (see swapped_dates), for text
        if born == q.dob or (born in q.near if type(born) is str else is_transposition(born, q.dob)):
            score += 2
    return score


def search_score(row: Mapping[str, Any], name: str | None = None, dob: str | None = None, identifier: str | None = None,
                 postcode: str | None = None) -> int:
    """How well a record answers a search (3 or more: it is a hit). Identifier 3, family name 2,
    given name or a listed variant 1, date of birth (or two swapped digits) 2, postcode 1."""
    return _score(row, _query(name, dob, identifier, postcode))


def swapped_dates(dob: str) -> list[str]:
    """Every string that is ``dob`` with two different adjacent characters swapped (the dates
    :func:`~backoffice.envs.registration.tables.is_transposition` pairs with ``dob``)."""
    return [dob[:i] + dob[i + 1] + dob[i] + dob[i + 2:] for i in range(len(dob) - 1) if dob[i] != dob[i + 1]]


@lru_cache(maxsize=1 << 14)
def _dates_near(dob: str) -> tuple[str, ...]:
    """``dob`` and :func:`swapped_dates` of it (cached)."""
    return (dob, *swapped_dates(dob))


@lru_cache(maxsize=1 << 14)
def _swaps(dob: str) -> frozenset[str]:
    """:func:`swapped_dates` of ``dob`` as a set (cached)."""
    return frozenset(swapped_dates(dob))


_FAMILY_FOLDS = ("registration", "patients.family_name.fold")


def _family_folds(snap: Snapshot) -> dict[str, tuple[str, ...]]:
    """Folded family name -> the ids of the snapshot's patients with that family name (kept per
    snapshot with :meth:`~backoffice.envs.core.store.Snapshot.memo`)."""
    out: dict[str, list[str]] = {}
    for family, ids in snap.index("patients", "family_name").items():
        out.setdefault(fold(family), []).extend(ids)
    return {k: tuple(v) for k, v in out.items()}


def _candidates(store: Store, q: _Query) -> list[dict[str, Any]]:
    """The live patient rows (read-only: never mutate) among which every hit of ``q`` is.

    A hit needs the identifier (3), or the family name among the name's words (2), or the date
    of birth, equal or with two swapped digits (2): the other parts score 1 each. So the hits
    are among the snapshot's rows holding the identifier, born on the date or a swap of it, or
    whose family name folds to one of the words (read from the snapshot's indexes and a folded
    family-name index kept per snapshot), plus every patient this episode wrote (checked on
    its current content). O(candidates + rows written), never O(patients)."""
    snap = store.snapshot
    ids: dict[str, None] = {}  # insertion-ordered set: every id once
    if q.ident:
        ids.update(dict.fromkeys(snap.index("patients", "identifier").get(q.ident, ())))
    if q.dob:
        by_dob = snap.index("patients", "dob")
        for day in _dates_near(q.dob):
            bucket = by_dob.get(day)
            if bucket:
                ids.update(dict.fromkeys(bucket))
    if q.tokens:
        families = snap.memo(_FAMILY_FOLDS, _family_folds)
        for token in sorted(q.tokens):
            bucket = families.get(token)
            if bucket:
                ids.update(dict.fromkeys(bucket))
    written = store.written_ids("patients")
    if not written:  # the common case (a search before any write): every candidate is the snapshot's row
        base = snap.table("patients")
        return [base[i] for i in ids]
    ids.update(dict.fromkeys(written))
    current = store.peek
    return [row for row in map(current, repeat("patients"), ids) if row is not None]


def search_candidates(store: Store, name: str | None = None, dob: str | None = None,
                      identifier: str | None = None) -> dict[str, dict[str, Any]]:
    """Patient rows by id, among which is every row that can score 3 in :func:`search_score`
    (the live rows: read-only), read through indexes in O(candidates + rows written), never
    O(patients); see :func:`_candidates`."""
    return {row["id"]: row for row in _candidates(store, _query(name, dob, identifier, None))}


@lru_cache(maxsize=1 << 16)
def search_order(seed: int | None, patient_id: str) -> tuple[int, str]:
    """Where a patient comes in a task's search results: a hash of the task seed and the id
    (ties by id), so the order is fixed per task and says nothing about match quality."""
    return derive_seed("search-order", str(seed), patient_id), patient_id  # str(): the parts are joined as text


def search_hits(store: Store, seed: int | None, name: str | None = None, dob: str | None = None,
                identifier: str | None = None, postcode: str | None = None) -> list[dict[str, Any]]:
    """The rows :func:`search_score` counts as hits (3 or more), in :func:`search_order`: the
    store's live rows, read-only (never mutate them)."""
    q = _query(name, dob, identifier, postcode)
    hits = [row for row in _candidates(store, q) if _score(row, q) >= 3]
    hits.sort(key=lambda r: search_order(seed, r["id"]))
    return hits


@toolkit.tool(writes=False)
def search_patients(ctx: ToolContext, args: SearchArgs) -> dict:
    """Fuzzy search of patient records by name, date of birth, identifier and postcode.

    Matches tolerate name order, listed name variants and swapped date-of-birth digits, so results
    include look-alikes. Results come in no particular order (not ranked by quality): judge each
    candidate yourself. Returns ``total`` (all hits) and one page of summaries: ``limit`` per
    page (default 50, at most 200); when more remain, ``next_cursor`` is set: pass it as
    ``cursor`` for the next page (``null`` on the last page)."""
    if not any((args.name, args.dob, args.identifier, args.postcode)):
        raise ToolError("invalid_args", "give at least one of name, dob, identifier, postcode")
    check_cursor(ctx.store, "patients", args.cursor)
    seed = ctx.task.seed
    hits = search_hits(ctx.store, seed, args.name, args.dob, args.identifier, args.postcode)
    start = 0
    if args.cursor is not None:  # the page after the cursor's place in the order
        start = bisect_right([search_order(seed, r["id"]) for r in hits], search_order(seed, args.cursor))
    shown = hits[start:start + args.limit]
    more = start + args.limit < len(hits)
    return {"results": [dict(zip(PATIENT_SUMMARY, _summary(r))) for r in shown],
            "next_cursor": shown[-1]["id"] if more and shown else None, "total": len(hits)}


class PatientArgs(ToolArgs):
    patient_id: str = Field(description="Patient id, e.g. PAT-0001.", max_length=40)


@toolkit.tool(writes=False)
def get_patient(ctx: ToolContext, args: PatientArgs) -> dict:
    """Return one patient record with its coverages, contacts, consents and GP links."""
    row = dict(_patient(ctx, args.patient_id))
    pid = args.patient_id
    row["coverages"] = ctx.store.rows("coverages", patient_id=pid)
    row["contacts"] = ctx.store.rows("contacts", patient_id=pid)
    row["consents"] = ctx.store.rows("consents", patient_id=pid)
    row["gp_links"] = ctx.store.rows("gp_links", patient_id=pid)
    return row


class NameArgs(ToolArgs):
    name: str = Field(description="A given name, e.g. Bill.", max_length=60)


@toolkit.tool(writes=False)
def get_name_variants(ctx: ToolContext, args: NameArgs) -> dict:
    """Return the listed variants of a given name (Bill -> William, Will, ...); empty if none."""
    return {"name": args.name, "variants": list(name_variants(args.name))}


@toolkit.tool(writes=False)
def get_rules(ctx: ToolContext, args: NoArgs) -> dict:
    """The registration rule file, whole (one rule document: each rule's id, title and text, in
    rule id order); grades report breaches by these ids."""
    store = ctx.store
    if not store.written_ids("rules"):  # no tool writes the rule file: built once per snapshot
        return store.snapshot.memo(_RULES_DOC, lambda snap: rule_document(Store(snap).rows("rules")))
    return rule_document(store.rows("rules"))


_RULES_DOC = "registration.rules.document"


class MemberArgs(ToolArgs):
    payer_id: str = Field(description="Payer id, e.g. PAY-NWH.", max_length=40)
    member_id: str = Field(description="Member id as written on the card.", max_length=40)


def _payer(ctx: ToolContext, payer_id: str) -> Mapping[str, Any]:
    """The live payer row (read-only), or ``not_found``."""
    return live_row(ctx.store, "payers", payer_id, f"no payer {payer_id!r}")


@toolkit.tool(writes=False)
def verify_member_id(ctx: ToolContext, args: MemberArgs) -> dict:
    """Check a member id with the payer: format and check digit, then the payer's eligibility list.

    Returns valid, reason (check_digit_failed, wrong_format, not_on_roster, inactive) and the
    member's name and date of birth when the payer knows the id."""
    payer = _payer(ctx, args.payer_id)
    mid = args.member_id.strip().upper()
    if not member_id_valid(mid, payer["member_prefix"]):
        body = mid[len(payer["member_prefix"]):]
        shape_ok = mid.startswith(payer["member_prefix"]) and len(body) == 8 and is_ascii_digits(body)
        return {"member_id": mid, "valid": False, "reason": "check_digit_failed" if shape_ok else "wrong_format"}
    found = ctx.store.rows("member_roster", payer_id=args.payer_id, member_id=mid)
    if not found:
        return {"member_id": mid, "valid": False, "reason": "not_on_roster"}
    m = found[0]
    ok = m["status"] == "active"
    return {"member_id": mid, "valid": ok, "reason": None if ok else "inactive",
            "given_name": m["given_name"], "family_name": m["family_name"], "dob": m["dob"]}


class LookupArgs(PageArgs):
    payer_id: str = Field(description="Payer id, e.g. PAY-NWH.", max_length=40)
    family_name: str = Field(description="Member's family name.", max_length=60)
    dob: str = Field(description="Member's date of birth YYYY-MM-DD.")

    check_dob = field_validator("dob")(_check_date)


@toolkit.tool(writes=False)
def lookup_member(ctx: ToolContext, args: LookupArgs) -> dict:
    """Find a payer's members by family name and date of birth (to recover a mistyped member id),
    in roster order, ``limit`` per page (default 50, at most 200); ``next_cursor`` is set when
    more remain: pass it as ``cursor`` for the next page (``null`` on the last page); ``total``
    counts them all."""
    _payer(ctx, args.payer_id)
    family = fold(args.family_name)
    out = page_result(ctx.store, "member_roster", args, "members", lambda r: fold(r["family_name"]) == family,
                      payer_id=args.payer_id, dob=args.dob)
    out["members"] = [{k: r[k] for k in ("member_id", "given_name", "family_name", "dob", "status")} for r in out["members"]]
    return out


# -- writing ---------------------------------------------------------------------------------
class CreatePatientArgs(ToolArgs):
    given_name: str = Field(description="Legal given name.", min_length=1, max_length=60)
    family_name: str = Field(description="Legal family name.", min_length=1, max_length=60)
    dob: str = Field(description="Date of birth YYYY-MM-DD.")
    sex: Literal["F", "M", "X"] = Field(description="Sex as recorded: F, M or X.")
    address_line: str = Field(description="House number and street.", max_length=120)
    city: str = Field(description="City.", max_length=60)
    postcode: str = Field(description="Postcode.", max_length=12)
    phone: str = Field("", description="Phone number.", max_length=30)
    identifier: str | None = Field(None, description="Patient identifier (10 digits with check digit); omit if unknown.", max_length=20)

    check_dob = field_validator("dob")(_check_date)


@toolkit.tool(writes=True)
def create_patient(ctx: ToolContext, args: CreatePatientArgs) -> dict:
    """Create a patient record (and queue the welcome pack letter). Rejects an identifier that fails
    its check digit (invalid_identifier) or already belongs to a record (conflict)."""
    ident = ""
    if args.identifier:
        if not identifier_valid(args.identifier):
            raise ToolError("invalid_identifier", "the identifier fails its check digit")
        ident = digits(args.identifier)
        if ctx.store.count("patients", identifier=ident):
            raise ToolError("conflict", "a record with this identifier already exists")
    now = _now(ctx)
    pid = ctx.store.next_id("patients", PREFIX["patients"])
    row = ctx.store.insert("patients", {
        "id": pid, "identifier": ident, "given_name": args.given_name.strip(), "family_name": args.family_name.strip(),
        "dob": args.dob, "sex": args.sex, "address_line": args.address_line.strip(), "city": args.city.strip(),
        "postcode": args.postcode.strip(), "phone": args.phone.strip(), "status": "active", "date_of_death": "",
        "verified": [], "registered_at": now, "updated_at": now,
    })
    ctx.store.insert("notifications", {
        "id": ctx.store.next_id("notifications", PREFIX["notifications"]), "kind": "welcome_pack", "ref_id": pid,
        "channel": "post", "status": "queued", "created_at": now,
    })
    return row


class UpdatePatientArgs(ToolArgs):
    patient_id: str = Field(description="Patient id.", max_length=40)
    given_name: str | None = Field(None, min_length=1, max_length=60)
    family_name: str | None = Field(None, min_length=1, max_length=60)
    dob: str | None = Field(None, description="YYYY-MM-DD.")
    sex: Literal["F", "M", "X"] | None = None
    address_line: str | None = Field(None, max_length=120)
    city: str | None = Field(None, max_length=60)
    postcode: str | None = Field(None, max_length=12)
    phone: str | None = Field(None, max_length=30)
    identifier: str | None = Field(None, max_length=20)
    evidence_ids: list[str] = Field(default_factory=list, description="Evidence rows (EVD-...) supporting a change of a verified field.", max_length=10)

    check_dob = field_validator("dob")(_check_date)


#: the record fields update_patient may change, in the argument model's order
_UPDATE_FIELDS = tuple(f for f in UpdatePatientArgs.model_fields if f not in ("patient_id", "evidence_ids"))


def same_value(field: str, stored: Any, given: Any) -> bool:
    """Whether a value given to update_patient equals the stored one once normalised: phones by
    their digits (+44 and 0 prefixes equal), postcodes without spaces, other text by case and
    whitespace. Such a value is formatting only: the stored one is kept (no write)."""
    if field == "phone":
        return phone_key(stored) == phone_key(given)
    if field == "identifier":
        return digits(stored) == digits(given)
    if field == "postcode":
        return fold(stored).replace(" ", "") == fold(given).replace(" ", "")
    return fold(stored) == fold(given)


@toolkit.tool(writes=True)
def update_patient(ctx: ToolContext, args: UpdatePatientArgs) -> dict:
    """Change fields of an active patient record (only the fields given). Cite evidence_ids when a
    field in the record's 'verified' list changes (rule R-VERIFIED-FIELD). A value equal to the
    stored one up to formatting (phone format, name case, spaces) keeps the stored value: it is
    no change, and a call that changes nothing writes nothing (the result lists ``changed``)."""
    row = _patient(ctx, args.patient_id, active=True)
    given = {k: v.strip() if isinstance(v, str) else v for k in _UPDATE_FIELDS if (v := getattr(args, k)) is not None}
    if not given:
        raise ToolError("invalid_args", "no field to change")
    form_id = _form_id(ctx) if args.evidence_ids else ""
    for eid in args.evidence_ids:
        ev = ctx.store.peek("evidence", eid)
        if ev is None or ev["intake_form_id"] != form_id:
            raise ToolError("not_found", f"no evidence {eid[:40]!r} on this intake form")
    if "identifier" in given:
        if not identifier_valid(given["identifier"]):
            raise ToolError("invalid_identifier", "the identifier fails its check digit")
        given["identifier"] = digits(given["identifier"])
        if ctx.store.rows("patients", lambda r: r["id"] != args.patient_id, identifier=given["identifier"]):
            raise ToolError("conflict", "another record holds this identifier")
    changes = {k: v for k, v in given.items() if not same_value(k, row.get(k), v)}
    if not changes:
        return {**row, "changed": []}
    changes["updated_at"] = _now(ctx)
    out = ctx.store.update("patients", args.patient_id, changes)
    return {**out, "changed": sorted(k for k in changes if k != "updated_at")}


class CoverageArgs(ToolArgs):
    patient_id: str = Field(description="Patient id.", max_length=40)
    payer_id: str = Field(description="Payer id, e.g. PAY-NWH.", max_length=40)
    member_id: str = Field(description="Member id.", min_length=1, max_length=40)


@toolkit.tool(writes=True)
def add_coverage(ctx: ToolContext, args: CoverageArgs) -> dict:
    """Add an active insurance coverage to a patient (the member id is stored as given)."""
    _patient(ctx, args.patient_id, active=True)
    _payer(ctx, args.payer_id)
    return ctx.store.insert("coverages", {
        "id": ctx.store.next_id("coverages", PREFIX["coverages"]), "patient_id": args.patient_id,
        "payer_id": args.payer_id, "member_id": args.member_id.strip().upper(), "status": "active",
        "start_date": _now(ctx)[:10],
    })


class ContactArgs(ToolArgs):
    patient_id: str = Field(description="Patient id.", max_length=40)
    role: Literal["guardian", "next_of_kin"] = Field(description="guardian (for a minor) or next_of_kin.")
    name: str = Field(description="Contact's full name.", min_length=1, max_length=120)
    relationship: str = Field(description="e.g. mother, spouse.", min_length=1, max_length=40)
    phone: str = Field("", max_length=30)


@toolkit.tool(writes=True)
def add_contact(ctx: ToolContext, args: ContactArgs) -> dict:
    """Add a guardian or next-of-kin contact to a patient."""
    _patient(ctx, args.patient_id, active=True)
    return ctx.store.insert("contacts", {
        "id": ctx.store.next_id("contacts", PREFIX["contacts"]), "patient_id": args.patient_id, "role": args.role,
        "name": args.name.strip(), "relationship": args.relationship.strip(), "phone": args.phone.strip(),
    })


class ConsentArgs(ToolArgs):
    patient_id: str = Field(description="Patient id.", max_length=40)
    given_by: Literal["self", "guardian"] = Field(description="Who consents: the patient (self) or their guardian.")
    contact_id: str | None = Field(None, description="The guardian contact (CON-...) when given_by is guardian.", max_length=40)


@toolkit.tool(writes=True)
def record_consent(ctx: ToolContext, args: ConsentArgs) -> dict:
    """Record the treatment consent of this intake form for a patient."""
    _patient(ctx, args.patient_id, active=True)
    contact_id = ""
    if args.given_by == "guardian":
        contact = ctx.store.peek("contacts", args.contact_id or "")
        if contact is None or contact["patient_id"] != args.patient_id or contact["role"] != "guardian":
            raise ToolError("precondition_failed", "given_by=guardian needs contact_id of a guardian contact of this patient")
        contact_id = contact["id"]
    return ctx.store.insert("consents", {
        "id": ctx.store.next_id("consents", PREFIX["consents"]), "patient_id": args.patient_id,
        "intake_form_id": _form_id(ctx), "kind": "treatment", "given_by": args.given_by,
        "contact_id": contact_id, "recorded_at": _now(ctx),
    })


class LinkGpArgs(ToolArgs):
    patient_id: str = Field(description="Patient id.", max_length=40)
    practice_id: str = Field(description="GP practice id, e.g. GPP-101.", max_length=40)


@toolkit.tool(writes=True)
def link_gp(ctx: ToolContext, args: LinkGpArgs) -> dict:
    """Link a patient to a GP practice; an active link to another practice is ended."""
    _patient(ctx, args.patient_id, active=True)
    live_row(ctx.store, "practices", args.practice_id, f"no practice {args.practice_id!r}")
    active = ctx.store.rows("gp_links", patient_id=args.patient_id, status="active")
    if any(link["practice_id"] == args.practice_id for link in active):
        raise ToolError("conflict", "the patient is already linked to this practice")
    today = _now(ctx)[:10]
    for link in active:
        ctx.store.update("gp_links", link["id"], {"status": "ended", "ended_at": today})
    return ctx.store.insert("gp_links", {
        "id": ctx.store.next_id("gp_links", PREFIX["gp_links"]), "patient_id": args.patient_id,
        "practice_id": args.practice_id, "status": "active", "linked_at": today, "ended_at": "",
    })


# -- finishing -------------------------------------------------------------------------------
class ReferArgs(ToolArgs):
    reason: Literal[REFERRAL_REASONS] = Field(description="Why a human must take over.")  # type: ignore[valid-type]
    basis: list[str] = Field(description="The patient ids (PAT-...) of the records that block the registration: the "
                                         "ambiguous candidates, the deceased match, or the record holding the form's "
                                         "identifier and the record(s) the form matches.", max_length=10)
    note: str = Field(description="Hand-over note: the reason, the candidate records, what was and was not done.", min_length=1, max_length=2000)


@lru_cache(maxsize=1 << 12)
def _pickup_due(now: str) -> str:
    """When a referral opened at ``now`` must be picked up (4 hours later, ISO)."""
    return (datetime.fromisoformat(now) + timedelta(hours=4)).isoformat()


@toolkit.tool(terminal=True, writes=True)
def refer_to_human(ctx: ToolContext, args: ReferArgs) -> dict:
    """Hand this intake form over to a registration supervisor and end the episode.

    ``basis`` cites the blocking records by patient id (each must exist). Opens a referral,
    queues a worklist message and starts the pick-up timer (4 hours)."""
    basis = sorted({str(b).strip() for b in args.basis})
    for pid in basis:
        _patient(ctx, pid)
    now = _now(ctx)
    rid = ctx.store.next_id("referrals", PREFIX["referrals"])
    ctx.store.insert("referrals", {
        "id": rid, "intake_form_id": _form_id(ctx), "reason": args.reason, "basis": basis, "note": args.note,
        "status": "open", "created_at": now,
    })
    ctx.store.insert("notifications", {
        "id": ctx.store.next_id("notifications", PREFIX["notifications"]), "kind": "referral_opened",
        "ref_id": rid, "channel": "worklist", "status": "queued", "created_at": now,
    })
    ctx.store.insert("task_timers", {
        "id": ctx.store.next_id("task_timers", PREFIX["task_timers"]), "kind": "referral_pickup", "ref_id": rid,
        "due_at": _pickup_due(now), "status": "running",
    })
    return {"referral_id": rid, "status": "open"}


@toolkit.tool(terminal=True, writes=False)
def submit(ctx: ToolContext, args: NoArgs) -> dict:
    """Finish: the registration is complete as it stands."""
    return {"submitted": True}


ALL_TOOLS = tuple(toolkit.names)
