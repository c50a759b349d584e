"""Registration policies: the oracle (tool results only) and one wrong policy per failure code.

The oracle follows the rule file: read the form and the rules, search, judge the candidates with
the matching rule (names agree allowing variants and swapped order; same date of birth, or two
swapped digits when the valid identifier agrees), refer an ambiguous or deceased match, otherwise
create or update the record and add what the form calls for. Each wrong policy overrides one
decision of the oracle.
"""

from __future__ import annotations

from typing import Any

from backoffice.envs.registration.tables import (
    ADDRESS_FIELDS, MINOR_AGE, age_on, fold, given_equivalent, identifier_valid, match_candidates, phone_key,
)
from backoffice.training.policies.base import Plan, ScriptedPolicy, call

Decision = tuple[str, Any]  # ("create", None) | ("update", patient_id) | ("refer", (reason, ids)) | ("stop", None)


class Oracle(ScriptedPolicy):
    """Registers the intake form correctly, reading only tool results."""

    name = "oracle"
    search_first = True

    # -- decisions a wrong policy may override -------------------------------------------------
    def decide(self, form: dict[str, Any], results: list[dict[str, Any]], variants: dict[str, tuple[str, ...]]) -> Decision:
        """Create, update or refer, by the rule file's matching rule."""
        cands = match_candidates(form, results, variants)
        if len(cands) > 1:
            return "refer", ("ambiguous_match", sorted(c["id"] for c in cands))
        if len(cands) == 1:
            if cands[0]["status"] != "active":
                return "refer", ("deceased_match", [cands[0]["id"]])
            return "update", cands[0]["id"]
        return "create", None

    def referral_note(self, form_id: str, reason: str, ids: list[str]) -> str:
        why = {
            "ambiguous_match": "the form matches more than one patient record and the identifier does not settle which",
            "deceased_match": "the only matching patient record is marked deceased",
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

    def member_id(self, form: dict[str, Any], rec: dict[str, Any]) -> Plan:
        """The member id to add: the form's if the payer accepts it for this patient, else the roster's."""
        check = (yield call("verify_member_id", payer_id=form["payer_id"], member_id=form["member_id"]))["result"]
        if check["valid"] and fold(check["family_name"]) == fold(rec["family_name"]) and check["dob"] == rec["dob"]:
            return check["member_id"]
        found = (yield call("lookup_member", payer_id=form["payer_id"], family_name=rec["family_name"], dob=rec["dob"]))["result"]
        members = [m for m in found["members"] if m["status"] == "active" and given_equivalent(m["given_name"], rec["given_name"])]
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

    # -- the plan ------------------------------------------------------------------------------
    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:  # noqa: C901 - one registration, start to end
        form_id = brief["params"]["intake_form_id"]
        form = (yield call("get_intake_form", intake_form_id=form_id))["result"]
        today = (yield call("get_rules"))["result"]["today"]
        variants: dict[str, tuple[str, ...]] = {}
        for name in (form["given_name"], form["family_name"]):
            got = (yield call("get_name_variants", name=name))["result"]
            variants[fold(name)] = tuple(got["variants"])
        results: list[dict[str, Any]] = []
        if self.search_first:
            found = yield call("search_patients", name=f"{form['given_name']} {form['family_name']}", dob=form["dob"],
                               identifier=form["identifier"] or None, postcode=form["postcode"] or None)
            results = found["result"]["results"]
        kind, detail = self.decide(form, results, variants)
        if kind == "stop":
            return
        if kind == "refer":
            reason, ids = detail
            yield call("refer_to_human", reason=reason, note=self.referral_note(form_id, reason, ids))
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
            on_file = [c for c in rec["contacts"] if c["role"] == "guardian" and fold(c["name"]) == fold(form["guardian_name"])]
            if on_file:
                guardian_id = on_file[0]["id"]
            else:
                added = yield call("add_contact", patient_id=pid, role="guardian", name=form["guardian_name"],
                                   relationship=form["guardian_relationship"], phone=form["guardian_phone"])
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
    """wrong_referral_reason: refers when it should, but names the wrong reason."""

    def decide(self, form, results, variants):
        kind, detail = super().decide(form, results, variants)
        return ("refer", ("other", detail[1])) if kind == "refer" else (kind, detail)


class AddsCoverageTwice(Oracle):
    """forbidden_hit: adds the coverage a second time, a write outside the allowed set."""

    def extra_writes(self, pid, form, member):
        return [call("add_coverage", patient_id=pid, payer_id=form["payer_id"], member_id=member)] if member else []


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
    "forbidden_hit": AddsCoverageTwice,
}
