"""The hand-written policy of each registration tier: it reads only the tier's features and mask
and passes every released task (``catalog-features@<tier>``), proving the tier suffices. The
facts and raw policies share one clerk (:class:`_Clerk`); in ``raw`` the policy makes every
comparison itself from the values (the policy, not the catalog, computes)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from backoffice.envs.registration.tables import ADDRESS_FIELDS, age_on, is_transposition
from backoffice.training.catalog.base import CatalogAgent, FeatureReader
from backoffice.training.domains.registration.catalog.desk import N_CONTACTS, N_COVERAGES, N_GP, N_ROSTER, N_SLOTS, N_VARIANTS
from backoffice.training.domains.registration.catalog.features import YEAR_BASE, YEAR_SPAN

Policy = Callable[[np.ndarray, np.ndarray], int]


def conclusions_policy(agent: CatalogAgent) -> Policy:
    """The registration clerk as a decision list over features (first rule that applies wins).

    Read the form, both names' variants and the search. With no current record: the form's
    identifier held by a non-candidate: refer (identity conflict); several candidates: refer
    (ambiguous); one deceased: refer (deceased); one: open its slot; none:
    create. On the record: update the phone if it differs; the address if it differs and is
    unverified or evidenced; for a payer not yet covered: check the card, add it if the payer
    accepts it for this patient, else look the patient up on the roster and add the roster's id if
    it agrees; link the GP, add the guardian and next of kin the record lacks; record the consent
    (the guardian's for a minor, the patient's otherwise); submit."""
    idx = {d.name: i for i, d in enumerate(agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(agent.spec.actions)}

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        def on(name: str) -> bool:
            return bool(obs[idx[name]] > 0.5)

        def step(name: str) -> int | None:
            return act[name] if mask[act[name]] else None

        if not on("form_read"):
            return act["get_intake_form"]
        for read in ("get_name_variants[given]", "get_name_variants[family]", "search_patients"):
            # the search stays unmasked while pages remain (next_cursor): read them all
            if mask[act[read]] and (not on(f"taken[{read}]") or read == "search_patients"):
                return act[read]
        if not on("patient_known"):
            if on("identifier_conflict"):
                return act["refer_to_human[identity_conflict]"]
            if on("match_many"):
                return act["refer_to_human[ambiguous_match]"]
            if on("match_deceased"):
                return act["refer_to_human[deceased_match]"]
            if on("match_one"):
                return next(act[f"get_patient[{i}]"] for i in range(N_SLOTS) if on(f"slot[{i}].match"))
            return act["create_patient"]
        todo: list[tuple[bool, str]] = [
            (on("phone_differs"), "update_patient[phone]"),
            (on("address_update_allowed"), "update_patient[address]"),
            (on("coverage_missing") and not on("card_checked"), "verify_member_id"),
            (on("coverage_missing") and on("card_ok"), "add_coverage[card]"),
            (on("coverage_missing") and not on("roster_checked"), "lookup_member"),
            (on("coverage_missing") and on("roster_ok"), "add_coverage[roster]"),
            (on("gp_missing"), "link_gp"),
            (on("guardian_missing"), "add_contact[guardian]"),
            (on("kin_missing"), "add_contact[next_of_kin]"),
            (not on("consent_recorded") and on("minor"), "record_consent[guardian]"),
            (not on("consent_recorded") and not on("minor"), "record_consent[self]"),
        ]
        for due, name in todo:
            if due and (a := step(name)) is not None:
                return a
        return act["submit"]

    return policy


class _Clerk(FeatureReader):
    """The registration clerk over a tier's features and the mask (both tiers' feature
    policies, first rule that applies wins): read the form, both names' variants and the
    search; draw the candidates from the results, narrowed to the one holding the form's
    identifier when several are; a holder that is not a candidate: refer as an identity
    conflict; several candidates: ambiguous; one that is not active: deceased (opening every
    record the referral cites first); one: open it; none: create; then the first due item of
    the tier's registration set (:meth:`todo`) whose action is valid; submit. A tier says how
    its features give each comparison (the methods below)."""

    def _read(self) -> None:
        """Read what the hooks share from ``self.obs`` (once the reads are done)."""

    def same_id(self, i: int) -> bool:
        """Result ``i`` holds the form's (valid) identifier."""
        raise NotImplementedError

    def candidate(self, i: int) -> bool:
        """Result ``i``'s names agree and its date of birth is the form's (or two swapped digits
        with the same identifier)."""
        raise NotImplementedError

    def active(self, i: int) -> bool:
        raise NotImplementedError

    def is_current(self, i: int) -> bool:
        raise NotImplementedError

    def create(self) -> str:
        """The ``create_patient`` action to take."""
        raise NotImplementedError

    def todo(self) -> list[tuple[bool, str]]:
        """The registration set on the current record: ``(due, action)`` in order."""
        raise NotImplementedError

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> int:
        self.read(obs, mask)
        on, act = self.on, self.act
        if not on("form_read"):
            return act["get_intake_form"]
        for read in ("get_name_variants[given]", "get_name_variants[family]", "search_patients"):
            if mask[act[read]]:
                return act[read]
        self._read()
        present = [i for i in range(N_SLOTS) if on(f"slot[{i}].present")]
        cands = [i for i in present if self.candidate(i)]
        if len(cands) > 1:
            narrowed = [i for i in cands if self.same_id(i)]
            cands = narrowed if len(narrowed) == 1 else cands
        holder = next((i for i in present if self.same_id(i)), None)
        reason, blocking = None, cands
        if holder is not None and holder not in cands:
            reason, blocking = "identity_conflict", [*cands, holder]
        elif len(cands) > 1:
            reason = "ambiguous_match"
        elif len(cands) == 1 and not self.active(cands[0]):
            reason = "deceased_match"
        if reason is not None:
            for i in blocking:
                if not on(f"slot[{i}].opened") and mask[act[f"get_patient[{i}]"]]:
                    return act[f"get_patient[{i}]"]
            return act[f"refer_to_human[{reason}]"]
        if cands and not self.is_current(cands[0]):
            return act[f"get_patient[{cands[0]}]"]
        if not cands and not on("current.known"):
            return act[self.create()]
        for due, name in self.todo():
            if due and mask[act[name]]:
                return act[name]
        return act["submit"]


def facts_policy(agent: CatalogAgent) -> Policy:
    """The registration clerk over the facts tier (first rule that applies wins).

    Read the form, both names' variants and the search. From each result's facts compute the
    candidates (names agree straight or swapped, allowing observed variants; the same date of
    birth, or two swapped digits with the same valid identifier), narrowed to the one holding
    the form's valid identifier when several are; the holder is the result with that
    identifier. A holder that is not a candidate: open it and the candidates, refer as an
    identity conflict; several candidates: open them, refer as ambiguous; one that is not
    active: open it, refer as deceased; one: open it; none: create (with the identifier
    only if its check digit holds). On the record: the phone if it differs; the address if it
    differs and is unverified or evidenced; for a payer not yet covered with the card's or a
    roster id: check the card, add it if valid with the record's family name and date of
    birth, else look the patient up and add the first active member whose given name agrees;
    link the GP, add the guardian and next of kin the record lacks; record the consent (the
    guardian's under 16, the patient's otherwise); submit."""
    return _FactsClerk(agent)


class _FactsClerk(_Clerk):
    """The clerk reading the facts tier's comparisons."""

    def _read(self) -> None:
        self.valid = self.on("form.identifier_valid")

    def same_id(self, i: int) -> bool:
        return self.valid and self.on(f"slot[{i}].identifier_equal")

    def candidate(self, i: int) -> bool:
        def s(name: str) -> bool:
            return self.on(f"slot[{i}].{name}")

        straight = s("family_equal") and (s("given_equal") or s("given_variant"))
        swapped = s("swapped_family_equal") and (s("swapped_given_equal") or s("swapped_given_variant"))
        return (straight or swapped) and (s("dob_equal") or (s("dob_swapped") and self.same_id(i)))

    def active(self, i: int) -> bool:
        return self.on(f"slot[{i}].active")

    def is_current(self, i: int) -> bool:
        return self.on(f"slot[{i}].current")

    def create(self) -> str:
        return "create_patient[with_identifier]" if self.valid else "create_patient[without_identifier]"

    def todo(self) -> list[tuple[bool, str]]:
        on = self.on
        covered = on("current.coverage_card_id") or any(on(f"current.coverage_roster_id[{j}]") for j in range(N_ROSTER))
        cover = on("form.payer_given") and not covered
        card_ok = on("card.valid") and on("card.family_equal_current") and on("card.dob_equal_current")
        member = next((j for j in range(N_ROSTER) if on(f"roster[{j}].present") and on(f"roster[{j}].active")
                       and on(f"roster[{j}].given_equivalent_current")), None)
        minor = self.obs[self.idx["current.age_years"]] < 0.155  # under 16
        return [
            (on("form.phone_given") and not on("current.phone_equal_form"), "update_patient[phone]"),
            (not on("current.address_equal_form") and (not on("current.address_verified") or on("form.address_evidence")),
             "update_patient[address]"),
            (cover and not on("card.checked"), "verify_member_id"),
            (cover and card_ok, "add_coverage[card]"),
            (cover and not on("roster.checked"), "lookup_member"),
            (cover and member is not None, f"add_coverage[roster][{member}]"),
            (on("form.gp_given") and not on("current.gp_linked_form_practice"), "link_gp"),
            (on("form.guardian_given") and not on("current.guardian_named_form"), "add_contact[guardian]"),
            (on("form.kin_given") and not on("current.kin_named_form"), "add_contact[next_of_kin]"),
            (not on("current.consent_written") and minor, "record_consent[guardian]"),
            (not on("current.consent_written") and not minor, "record_consent[self]"),
        ]


def raw_policy(agent: CatalogAgent) -> Policy:
    """The registration clerk over raw values: the same decision list as the facts tier's,
    with every comparison made here from the values: names by their symbols (a variant is a
    symbol among the observed variants' symbols), dates decoded from year / month / day (two
    swapped digits from the decoded text), the age from the record's and today's dates, the
    card's and the roster's members against the current record, the coverage on file by
    member-id symbols, the guardian contact to cite by its name's symbol. The form's
    identifier counts as valid when a result holds it (records hold valid identifiers); a
    new record is created with the identifier first and, if the tool rejects it, without."""
    return _RawClerk(agent)


class _RawClerk(_Clerk):
    """The clerk making the raw tier's comparisons itself."""

    def date(self, prefix: str) -> str:
        y, m, d = self.v(f"{prefix}.year"), self.v(f"{prefix}.month"), self.v(f"{prefix}.day")
        if y <= 0:
            return ""
        return f"{round(y * YEAR_SPAN) + YEAR_BASE:04d}-{round(m * 12):02d}-{round(d * 31):02d}"

    def sym(self, name: str) -> float:
        """A symbol: compared, never read as a quantity."""
        return self.v(name)

    def _read(self) -> None:
        sym = self.sym
        self.variants = {w: {sym(f"variants[{w}][{j}]") for j in range(N_VARIANTS)} - {0.0} for w in ("given", "family")}
        self.form_given, self.form_family = sym("form.given"), sym("form.family")
        self.form_dob = self.date("form.dob")

    def equivalent(self, a: float, b: float) -> bool:
        """Two given-name symbols are the same name or one is an observed variant of the other."""
        if a == 0.0 or b == 0.0:
            return False
        if a == b:
            return True
        for w, own in (("given", self.form_given), ("family", self.form_family)):
            if (a == own and b in self.variants[w]) or (b == own and a in self.variants[w]):
                return True
        return False

    def same_id(self, i: int) -> bool:
        return self.on(f"slot[{i}].identifier_same_as_form")

    def candidate(self, i: int) -> bool:
        g, fam = self.sym(f"slot[{i}].given"), self.sym(f"slot[{i}].family")
        agree = ((fam == self.form_family and self.equivalent(self.form_given, g))
                 or (fam == self.form_given and self.equivalent(self.form_family, g)))
        dob = self.date(f"slot[{i}].dob")
        return agree and (dob == self.form_dob or (self.same_id(i) and is_transposition(dob, self.form_dob)))

    def active(self, i: int) -> bool:
        return self.on(f"slot[{i}].status[active]")

    def is_current(self, i: int) -> bool:
        return self.on(f"slot[{i}].is_current")

    def create(self) -> str:
        first = self.on("form.identifier_given") and not self.on("taken[create_patient[with_identifier]]")
        return "create_patient[with_identifier]" if first else "create_patient[without_identifier]"

    def todo(self) -> list[tuple[bool, str]]:
        on, v, sym, date = self.on, self.v, self.sym, self.date
        cur_given, cur_family, cur_dob = sym("current.given"), sym("current.family"), date("current.dob")
        roster = [j for j in range(N_ROSTER) if on(f"roster[{j}].present")]
        ids = {sym("form.member_id"), *(sym(f"roster[{j}].member_id") for j in roster)} - {0.0}
        covered = any(on(f"coverage[{j}].payer_is_form_payer") and on(f"coverage[{j}].status[active]")
                      and sym(f"coverage[{j}].member_id") in ids for j in range(N_COVERAGES))
        cover = on("form.payer_given") and not covered
        card_ok = on("card.valid") and sym("card.family") == cur_family and date("card.dob") == cur_dob
        member = next((j for j in roster if on(f"roster[{j}].status[active]")
                       and self.equivalent(sym(f"roster[{j}].given"), cur_given)), None)
        today = date("today")
        minor = bool(today and cur_dob) and age_on(cur_dob, today) < 16
        address_same = all(sym(f"current.{k}") == sym(f"form.{k}") for k in ADDRESS_FIELDS)
        gp_linked = any(on(f"gp_link[{j}].practice_is_form_practice") and on(f"gp_link[{j}].status[active]") for j in range(N_GP))

        def contact(role: str, name: float) -> int | None:
            return next((j for j in range(N_CONTACTS) if on(f"contact[{j}].role[{role}]")
                         and sym(f"contact[{j}].name") == name), None)

        guardian = contact("guardian", sym("form.guardian"))
        consented = v("current.consents_written") > 0.25  # 0.5 per consent: one is enough
        return [
            (sym("form.phone") != 0.0 and sym("current.phone") != sym("form.phone"), "update_patient[phone]"),
            (not address_same and (not on("current.verified[address]") or on("form.evidence[address]")),
             "update_patient[address]"),
            (cover and not on("card.checked"), "verify_member_id"),
            (cover and card_ok, "add_coverage[card]"),
            (cover and not on("roster.checked"), "lookup_member"),
            (cover and member is not None, f"add_coverage[roster][{member}]"),
            (on("form.gp_given") and not gp_linked, "link_gp"),
            (sym("form.guardian") != 0.0 and guardian is None, "add_contact[guardian]"),
            (sym("form.next_of_kin") != 0.0 and contact("next_of_kin", sym("form.next_of_kin")) is None,
             "add_contact[next_of_kin]"),
            (not consented and minor and guardian is not None, f"record_consent[guardian][{guardian}]"),
            (not consented and not minor, "record_consent[self]"),
        ]
