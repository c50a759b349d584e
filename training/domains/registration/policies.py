"""Registration policies: the oracle (tool results only) and one wrong policy per failure code.

The oracle follows the rule file: read the form and the rules, search, judge the candidates with
the matching rule (names agree allowing variants and swapped order; same date of birth, or two
swapped digits when the valid identifier agrees), refer an identity conflict (the form's valid
identifier held by another record), an ambiguous or a deceased match citing the blocking records
in ``basis``, otherwise create or update the record and add what the form calls for. Each wrong
policy overrides one decision of the oracle; ``BLIND_POLICIES`` decide without judging the
search; ``RULE_POLICIES`` are the oracle ignoring one rule of the rule file; ``EXPLOITS`` inject
one call into the oracle's run (see :mod:`backoffice.training.integrity.exploits`).

Rule sharing: the oracle and the catalog may share the domain's public rule helpers
(:mod:`backoffice.envs.registration.tables`: ``decide``, ``match_candidates``, the identifier and
name checks), which compute what the rule file says from observed rows. The oracle never imports
the grader (:mod:`backoffice.graders.registration`), and the grader never imports this module or
the catalog, so the oracle passing every task still checks the grader independently.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

from backoffice.envs.registration.tables import (
    ADDRESS_FIELDS,
    MINOR_AGE,
    PAYERS,
    REFER_CLASSES,
    age_on,
    decide,
    fold,
    given_equivalent,
    identifier_valid,
    match_candidates,
    phone_key,
)
from backoffice.training.integrity import exploits as ex
from backoffice.training.integrity.scale import Paged, Scaled
from backoffice.training.policies.base import Action, Plan, ScriptedPolicy, call, every_page

Decision = tuple[str, Any]  # ("create", None) | ("update", patient_id) | ("refer", (reason, ids)) | ("stop", None)


def first_read(brief: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's first read (the intake form): what the integrity probes give an attacker besides the
    brief (``tree_probe.visible_probe``)."""
    return [call("get_intake_form", intake_form_id=brief["params"]["intake_form_id"])]


class Oracle(ScriptedPolicy):
    """Registers the intake form correctly, reading only tool results."""

    name = "oracle"
    search_first = True

    # -- decisions a wrong policy may override -------------------------------------------------
    def decide(self, form: dict[str, Any], results: list[dict[str, Any]], variants: dict[str, tuple[str, ...]]) -> Decision:
        """Create, update or refer, by the rule file (:func:`~backoffice.envs.registration.tables.decide`)."""
        outcome, basis = decide(form, results, variants)
        if outcome in REFER_CLASSES:
            return "refer", (REFER_CLASSES[outcome], basis)
        if outcome == "update":
            return "update", basis[0]
        return "create", None

    def referral_note(self, form_id: str, reason: str, ids: list[str]) -> str:
        why = {
            "ambiguous_match": "the form matches more than one patient record and the identifier does not settle which",
            "deceased_match": "the only matching patient record is marked deceased",
            "identity_conflict": "the identifier on the form belongs to another patient record",
        }.get(reason, "the registration needs a person to decide")
        return (f"Intake form {form_id} handed over: {why} ({reason}). Candidate records: {', '.join(ids) or 'none'}. "
                "No records were created or changed; please confirm the patient's identity at the desk.")

    def patient_changes(self, form: dict[str, Any], rec: dict[str, Any]) -> dict[str, Any]:
        """Fields to bring an existing record up to date (never names, date of birth or identifier)."""
        changes: dict[str, Any] = {}
        if any(fold(form[f]).replace(" ", "") != fold(rec[f]).replace(" ", "") for f in ADDRESS_FIELDS):
            evidence = [e["id"] for e in form["evidence"] if e["field"] == "address"]
            if "address" not in rec["verified"] or evidence:
                changes.update({f: form[f] for f in ADDRESS_FIELDS})
                if "address" in rec["verified"]:
                    changes["evidence_ids"] = evidence
        if form["phone"] and phone_key(form["phone"]) != phone_key(rec["phone"]):
            changes["phone"] = form["phone"]
        return changes

    def new_patient_args(self, form: dict[str, Any]) -> dict[str, Any]:
        ident = form["identifier"] if identifier_valid(form["identifier"]) else None
        return {"given_name": form["given_name"], "family_name": form["family_name"], "dob": form["dob"], "sex": form["sex"],
                "address_line": form["address_line"], "city": form["city"], "postcode": form["postcode"],
                "phone": form["phone"], "identifier": ident}

    def member_id(self, form: dict[str, Any], rec: dict[str, Any]) -> Generator[Action, dict[str, Any], str | None]:
        """The member id to add: the form's if the payer accepts it for this patient, else the roster's."""
        check = (yield call("verify_member_id", payer_id=form["payer_id"], member_id=form["member_id"]))["result"]
        if check["valid"] and fold(check["family_name"]) == fold(rec["family_name"]) and check["dob"] == rec["dob"]:
            return check["member_id"]
        found = yield from every_page("lookup_member", "members", payer_id=form["payer_id"], family_name=rec["family_name"], dob=rec["dob"])
        members = [m for m in found if m["status"] == "active" and given_equivalent(m["given_name"], rec["given_name"])]
        return members[0]["member_id"] if len(members) == 1 else None

    def consent(self, pid: str, minor: bool, guardian_id: str | None) -> dict[str, Any]:
        if minor:
            return call("record_consent", patient_id=pid, given_by="guardian", contact_id=guardian_id)
        return call("record_consent", patient_id=pid, given_by="self")

    def add_guardian(self, minor: bool) -> bool:
        return True

    def link_practice(self) -> bool:
        return True

    def extra_writes(self, pid: str, form: dict[str, Any], member: str | None) -> list[dict[str, Any]]:
        return []

    def registration_set(self) -> bool:
        """Whether to add what the form calls for beyond the record (R-REGISTRATION-SET)."""
        return True

    # -- the plan ------------------------------------------------------------------------------
    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:  # noqa: C901 - one registration, start to end
        form_id = brief["params"]["intake_form_id"]
        form = (yield call("get_intake_form", intake_form_id=form_id))["result"]
        today = brief["params"]["today"]
        yield call("get_rules")
        variants: dict[str, tuple[str, ...]] = {}
        for name in (form["given_name"], form["family_name"]):
            got = (yield call("get_name_variants", name=name))["result"]
            variants[fold(name)] = tuple(got["variants"])
        results: list[dict[str, Any]] = []
        if self.search_first:
            results = yield from every_page("search_patients", "results", name=f"{form['given_name']} {form['family_name']}",
                                           dob=form["dob"], identifier=form["identifier"] or None, postcode=form["postcode"] or None)
        kind, detail = self.decide(form, results, variants)
        if kind == "stop":
            return
        if kind == "refer":
            reason, ids = detail
            yield call("refer_to_human", reason=reason, basis=list(ids), note=self.referral_note(form_id, reason, ids))
            return
        if kind == "update":
            pid = detail
            rec = (yield call("get_patient", patient_id=pid))["result"]
            changes = self.patient_changes(form, rec)
            if changes:
                yield call("update_patient", patient_id=pid, **changes)
        else:
            args = self.new_patient_args(form)
            made = yield call("create_patient", **args)
            if made["status"] != "ok" and args.get("identifier"):
                made = yield call("create_patient", **{**args, "identifier": None})
            rec = {**made["result"], "coverages": [], "contacts": [], "consents": [], "gp_links": []}
            pid = rec["id"]
        member = None
        if not self.registration_set():
            return
        if form["payer_id"]:
            member = yield from self.member_id(form, rec)
            on_file = any(c["payer_id"] == form["payer_id"] and c["member_id"] == member and c["status"] == "active" for c in rec["coverages"])
            if member and not on_file:
                yield call("add_coverage", patient_id=pid, payer_id=form["payer_id"], member_id=member)
        if form["gp_practice_id"] and self.link_practice():
            if not any(g["practice_id"] == form["gp_practice_id"] and g["status"] == "active" for g in rec["gp_links"]):
                yield call("link_gp", patient_id=pid, practice_id=form["gp_practice_id"])
        minor = age_on(rec["dob"], today) < MINOR_AGE
        guardian_id = None
        if form["guardian_name"] and self.add_guardian(minor):
            guardians = [c for c in rec["contacts"] if c["role"] == "guardian" and fold(c["name"]) == fold(form["guardian_name"])]
            if guardians:
                guardian_id = guardians[0]["id"]
            else:
                added = yield call("add_contact", patient_id=pid, role="guardian", name=form["guardian_name"],
                                   relationship=form["guardian_relationship"], phone=form["guardian_phone"])
                if added.get("status") != "ok":  # refused (a wrong policy's record that is not active): stop here
                    return
                guardian_id = added["result"]["id"]
        if form["next_of_kin_name"]:
            if not any(c["role"] == "next_of_kin" and fold(c["name"]) == fold(form["next_of_kin_name"]) for c in rec["contacts"]):
                yield call("add_contact", patient_id=pid, role="next_of_kin", name=form["next_of_kin_name"],
                           relationship=form["next_of_kin_relationship"], phone=form["next_of_kin_phone"])
        yield self.consent(pid, minor and guardian_id is not None, guardian_id)
        for action in self.extra_writes(pid, form, member):
            yield action


# -- one wrong policy per failure code ----------------------------------------------------------
class CreatesDuplicate(Oracle):
    """duplicate_created: registers every form as a new patient, even when a record matches."""

    def decide(self, form, results, variants):
        kind, detail = super().decide(form, results, variants)
        return ("create", None) if kind in ("update", "refer") else (kind, detail)


class SkipsSearch(Oracle):
    """search_skipped: creates the record straight from the form without searching first."""

    search_first = False


class SkipsGpLink(Oracle):
    """missing_required: never links the GP practice."""

    def link_practice(self) -> bool:
        return False


class LeavesOldDetails(Oracle):
    """field_mismatch: matches the right record but leaves its old address and phone."""

    def patient_changes(self, form, rec):
        return {}


class TrustsMemberIdOnCard(Oracle):
    """invalid_coverage: adds the member id exactly as written on the card, unchecked."""

    def member_id(self, form, rec):
        return form["member_id"]
        yield  # pragma: no cover - keeps this a generator


class NoGuardian(Oracle):
    """guardian_missing: registers a minor without a guardian; the child 'consents' alone."""

    def add_guardian(self, minor: bool) -> bool:
        return not minor


class CopiesFormOverRecord(Oracle):
    """verified_overwritten: copies the form's names, date of birth and address over the record,
    verified or not, without citing evidence."""

    def patient_changes(self, form, rec):
        changes = {f: form[f] for f in ("given_name", "family_name", "dob", *ADDRESS_FIELDS) if fold(form[f]) != fold(rec[f])}
        if form["phone"] and phone_key(form["phone"]) != phone_key(rec["phone"]):
            changes["phone"] = form["phone"]
        return changes


class TrustsFirstResult(Oracle):
    """wrong_patient_updated: takes the first active search result as the patient (the order is not
    a ranking)."""

    def decide(self, form, results, variants):
        active = [r for r in results if r["status"] == "active"]
        return ("update", active[0]["id"]) if active else ("create", None)


class NeverRefers(Oracle):
    """missed_referral: stops without a hand-over when the match is ambiguous or deceased."""

    def decide(self, form, results, variants):
        kind, detail = super().decide(form, results, variants)
        return ("stop", None) if kind == "refer" else (kind, detail)


class RefersLookAlikes(Oracle):
    """unnecessary_referral: hands the form over whenever the search shows look-alikes."""

    def decide(self, form, results, variants):
        kind, detail = super().decide(form, results, variants)
        if kind != "refer" and len(results) >= 2:
            return "refer", ("ambiguous_match", sorted(r["id"] for r in results))
        return kind, detail


class RefersForOtherReason(Oracle):
    """wrong_referral_reason: refers when it should, citing the right records, but names the wrong reason."""

    def decide(self, form, results, variants):
        kind, detail = super().decide(form, results, variants)
        return ("refer", ("other", detail[1])) if kind == "refer" else (kind, detail)


class CitesEveryHit(Oracle):
    """wrong_referral_basis: refers for the right reason but cites every search hit as the basis."""

    def decide(self, form, results, variants):
        kind, detail = super().decide(form, results, variants)
        return ("refer", (detail[0], sorted(r["id"] for r in results))) if kind == "refer" else (kind, detail)


class RecordsConsentTwice(Oracle):
    """duplicate_entry: records the patient's own treatment consent a second time."""

    def extra_writes(self, pid, form, member):
        return [] if form["guardian_name"] else [call("record_consent", patient_id=pid, given_by="self")]


class AddsDeskContact(Oracle):
    """forbidden_hit: adds a next-of-kin contact nobody asked for (a write outside the allowed set)."""

    def extra_writes(self, pid, form, member):
        return [call("add_contact", patient_id=pid, role="next_of_kin", name="Front Desk", relationship="friend")]


WRONG_POLICIES: dict[str, type[Oracle]] = {
    "duplicate_created": CreatesDuplicate,
    "search_skipped": SkipsSearch,
    "missing_required": SkipsGpLink,
    "field_mismatch": LeavesOldDetails,
    "invalid_coverage": TrustsMemberIdOnCard,
    "guardian_missing": NoGuardian,
    "verified_overwritten": CopiesFormOverRecord,
    "wrong_patient_updated": TrustsFirstResult,
    "missed_referral": NeverRefers,
    "unnecessary_referral": RefersLookAlikes,
    "wrong_referral_reason": RefersForOtherReason,
    "wrong_referral_basis": CitesEveryHit,
    "duplicate_entry": RecordsConsentTwice,
    "forbidden_hit": AddsDeskContact,
}


# -- blind policies: decide without judging the search ---------------------------------------------
class AlwaysCreate(Oracle):
    """Searches, then registers every form as a new patient."""

    def decide(self, form, results, variants):
        return "create", None


class UpdateTopHit(Oracle):
    """Takes the first active search hit as the patient (create when there is none)."""

    pick = 0

    def decide(self, form, results, variants):
        active = [r for r in results if r["status"] == "active"]
        return ("update", active[self.pick]["id"]) if active else ("create", None)


class UpdateLastHit(UpdateTopHit):
    """Takes the last active search hit as the patient."""

    pick = -1


class ReferWhenSeveralHits(Oracle):
    """Several hits: refer as ambiguous citing them all; one: update it; none: create."""

    def decide(self, form, results, variants):
        if len(results) > 1:
            return "refer", ("ambiguous_match", sorted(r["id"] for r in results))
        return ("update", results[0]["id"]) if results else ("create", None)


class ReferAlways(Oracle):
    """Refers every form for a fixed reason, citing every search hit."""

    reason = "ambiguous_match"

    def decide(self, form, results, variants):
        return "refer", (self.reason, sorted(r["id"] for r in results))


class ReferConflictAlways(ReferAlways):
    """Refers every form as an identity conflict, citing every search hit."""

    reason = "identity_conflict"


class ReferDeceasedHits(Oracle):
    """Refers as deceased whenever a hit is not active (citing those), else updates the top hit."""

    def decide(self, form, results, variants):
        dead = sorted(r["id"] for r in results if r["status"] != "active")
        if dead:
            return "refer", ("deceased_match", dead)
        return ("update", results[0]["id"]) if results else ("create", None)


class ReferWithoutReading(ScriptedPolicy):
    """Acts without reading the form: hands it over at once, citing nothing."""

    name = "blind:act-without-reading"

    def plan(self, brief, info):
        yield call("refer_to_human", reason="ambiguous_match", basis=[], note="Handed over unread.")


BLIND_POLICIES: dict[str, type] = {
    "always_create": AlwaysCreate,
    "update_top_hit": UpdateTopHit,
    "update_last_hit": UpdateLastHit,
    "refer_when_several_hits": ReferWhenSeveralHits,
    "refer_always": ReferAlways,
    "refer_conflict_always": ReferConflictAlways,
    "refer_deceased_hits": ReferDeceasedHits,
    "act_without_reading": ReferWithoutReading,
}


# -- the oracle ignoring one rule of the rule file -------------------------------------------------
class IgnoresSearchFirst(Oracle):
    """Creates straight from the form, without a search."""

    search_first = False


class IgnoresNoDuplicate(Oracle):
    """Registers an existing patient as a new one."""

    def decide(self, form, results, variants):
        kind, detail = super().decide(form, results, variants)
        return ("create", None) if kind == "update" else (kind, detail)


class IgnoresReferMatch(Oracle):
    """Works an ambiguous match on its first candidate; treats a deceased match as no match."""

    def decide(self, form, results, variants):
        kind, detail = super().decide(form, results, variants)
        if kind == "refer" and detail[0] == "ambiguous_match":
            return "update", detail[1][0]
        if kind == "refer" and detail[0] == "deceased_match":
            return "create", None
        return kind, detail


class IgnoresIdentityConflict(Oracle):
    """Judges by names and date of birth only, as if the identifier's holder did not matter."""

    def decide(self, form, results, variants):
        cands = match_candidates(form, results, variants)
        if len(cands) > 1:
            return "refer", ("ambiguous_match", sorted(c["id"] for c in cands))
        if len(cands) == 1:
            if cands[0]["status"] != "active":
                return "refer", ("deceased_match", [cands[0]["id"]])
            return "update", cands[0]["id"]
        return "create", None


class IgnoresVerifiedField(Oracle):
    """Copies the form's names, date of birth, address and phone over the record, citing nothing."""

    def patient_changes(self, form, rec):
        changes = {f: form[f] for f in ("given_name", "family_name", "dob", *ADDRESS_FIELDS) if fold(form[f]) != fold(rec[f])}
        if form["phone"] and phone_key(form["phone"]) != phone_key(rec["phone"]):
            changes["phone"] = form["phone"]
        return changes


class IgnoresRegistrationSet(Oracle):
    """Creates or updates the record and stops there."""

    def registration_set(self) -> bool:
        return False


RULE_POLICIES: dict[str, type] = {
    "R-SEARCH-FIRST": IgnoresSearchFirst,
    "R-NO-DUPLICATE": IgnoresNoDuplicate,
    "R-MINOR-GUARDIAN": NoGuardian,
    "R-COVERAGE-ID": TrustsMemberIdOnCard,
    "R-VERIFIED-FIELD": IgnoresVerifiedField,
    "R-REFER-MATCH": IgnoresReferMatch,
    "R-IDENTITY-CONFLICT": IgnoresIdentityConflict,
    "R-REGISTRATION-SET": IgnoresRegistrationSet,
}


# -- exploits: the oracle plus one injected call ----------------------------------------------------
def _form(trace: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    return next((r["result"] for r in trace if r["tool"] == "get_intake_form" and r["result_status"] == "ok"), None)


def _patient_state(trace: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The registration's record as last returned (create, get_patient or update_patient)."""
    rec = None
    for r in trace:
        if r["result_status"] == "ok" and r["tool"] in ("create_patient", "get_patient", "update_patient"):
            rec = r["result"]
    return rec


_WRITES = {"create_patient", "update_patient", "add_coverage", "link_gp", "add_contact", "record_consent",
           "refer_to_human", "submit"}


def second_decision(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """extra_decision: before the oracle's first write or ending, register the form's person as a
    new patient too (a second create on a new patient, a duplicate on an existing one, a write
    where the form must be handed over)."""
    form = _form(trace)
    if action.get("tool") not in _WRITES or form is None:
        return []
    fields = ("given_name", "family_name", "dob", "sex", "address_line", "city", "postcode", "phone")
    return [call("create_patient", **{k: form[k] for k in fields})]


def repeat_request(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """extra_request: before submit, send the last contact or consent request again."""
    if action.get("tool") != "submit":
        return []
    last = next((r for r in reversed(trace) if r["result_status"] == "ok" and r["tool"] in ("add_contact", "record_consent")), None)
    return [{"tool": last["tool"], "args": dict(last["args"])}] if last else []


def zero_member_coverage(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """boundary_values: before submit, a coverage with the all-zero member id (its format and
    check digit hold; it is on no roster)."""
    rec = _patient_state(trace)
    if action.get("tool") != "submit" or rec is None:
        return []
    payer = (_form(trace) or {}).get("payer_id") or PAYERS[0][0]
    prefix = next(p[2] for p in PAYERS if p[0] == payer)
    return [call("add_coverage", patient_id=rec["id"], payer_id=payer, member_id=f"{prefix}00000000")]


def same_value_update(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """value_preserving_update: before submit, write the record's phone and address as they stand."""
    rec = _patient_state(trace)
    if action.get("tool") != "submit" or rec is None:
        return []
    return [call("update_patient", patient_id=rec["id"], phone=rec["phone"] or None, **{f: rec[f] for f in ADDRESS_FIELDS})]


def _reformat_phone(phone: str) -> str:
    d = "".join(ch for ch in phone if ch.isdigit())
    if d.startswith("0") and len(d) == 11:
        return f"+44 {d[1:5]} {d[5:]}"
    return f"{d[:5]} {d[5:]}" if d else phone


def reformat_update(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """formatting_only: before submit, re-type the record's phone in another format, its given
    name in capitals with spaces around, its family name in lower case, its postcode unspaced."""
    rec = _patient_state(trace)
    if action.get("tool") != "submit" or rec is None:
        return []
    return [call("update_patient", patient_id=rec["id"], phone=_reformat_phone(rec["phone"]) if rec["phone"] else None,
                 given_name=f"  {rec['given_name'].upper()} ", family_name=rec["family_name"].lower(),
                 postcode=rec["postcode"].replace(" ", ""))]


EXPLOITS: dict[str, ex.Hook | None] = {
    "extra_decision": second_decision,
    "extra_request": repeat_request,
    "repeated_write": ex.repeat_last_write,
    "boundary_values": zero_member_coverage,
    "value_preserving_update": same_value_update,
    "formatting_only": reformat_update,
}


# -- scale (tests/integrity/test_scale.py): the paginated tools, read in a world ten times the size ---------
def _common_name(env: Any) -> dict[str, Any]:
    """A common family name with the given names most often seen with it: many hits."""
    store = env.state
    family = max(sorted({r["family_name"] for r in store.iter_rows("patients")}), key=lambda f: store.count("patients", family_name=f))
    givens = sorted({r["given_name"] for r in store.rows("patients", family_name=family)},
                    key=lambda g: -store.count("patients", family_name=family, given_name=g))
    name = family
    for given in givens:
        if len(name) + len(given) < 119:
            name += f" {given}"
    return {"name": name}


def _search_hits(env: Any, args: dict[str, Any]) -> list[Any]:
    from backoffice.envs.registration.tools import search_hits

    return [r["id"] for r in search_hits(env.state, env.task.seed, **args)]


def _first_member(env: Any) -> dict[str, Any]:
    m = next(iter(env.state.iter_rows("member_roster")))
    return {"payer_id": m["payer_id"], "family_name": m["family_name"].lower(), "dob": m["dob"]}


def _members(env: Any, args: dict[str, Any]) -> list[Any]:
    return [r["member_id"] for r in env.state.rows("member_roster", payer_id=args["payer_id"], dob=args["dob"])
            if fold(r["family_name"]) == fold(args["family_name"])]


def _three_more_members(env: Any) -> None:
    """A payer's members with one family name and date of birth: three more on the roster."""
    m = next(iter(env.state.iter_rows("member_roster")))
    for i in range(3):
        env.state.insert("member_roster", {**m, "id": f"MBR-99{i:02d}", "member_id": f"{m['member_id'][:-1]}{i}"})


SCALE = Scaled(
    world={"generate": 0, "scale": 10},
    prepare=_three_more_members,
    paged=(
        Paged("search_patients", "results", _search_hits, _common_name, by_id=False, min_rows=8),
        Paged("lookup_member", "members", _members, _first_member, field="member_id", cursor="hidden", min_rows=4),
    ),
    wrong=("duplicate_created", "wrong_patient_updated"),
    renumbered=("targets", "patient_id"),
)

#: why registration's referrals hold more than a third of a split (``tests/integrity/test_leakage.py`` keeps
#: this exception honest: it fails once the bound holds again)
DECISION_BALANCE_EXCEPTION = (
    "A create needs no judgement beyond the match: the oracle that always creates passes exactly the "
    "create share, so creates stay under the 10 % blind bound. Update and refer (its three reasons) then "
    "share the other 90 %, and both cannot stay under 35 %. Every referral needs its reason and its basis "
    "judged (constant referrals pass 0 %), so the referrals take the rest."
)
