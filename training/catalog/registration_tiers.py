"""The ``facts`` and ``raw`` feature tiers of the registration catalog (issue 14).

The ``conclusions`` tier (:class:`~backoffice.training.catalog.registration.RegistrationCatalog`)
hands the agent the rule file's conclusions: which search result is a candidate (``slot[i].match``,
``match_one``, ``match_many``, ``identifier_conflict``), what is still due (``coverage_missing``,
``gp_missing``, ``items_open``, ``registration_complete``), and actions that pick the referral's
basis and the roster member for it. The two tiers here keep the same desk, the same tools and
the catalog rules (features from observations only, a mask that expresses legality only, one
action = one native call, ``submit`` always valid), and take those away.

**What both tiers change in the actions.**

- A referral cites, as its ``basis``, the search results the agent *opened* this episode with
  ``get_patient[i]`` (sorted ids), never a set the catalog computed: choosing the blocking
  records (the ambiguous candidates, the deceased match, the identifier's holder and the
  matching record) is the agent's, one ``get_patient`` read per record it cites.
- ``create_patient[with_identifier]`` / ``create_patient[without_identifier]``: whether the
  form's identifier goes on the new record is the agent's (the tool rejects one that fails its
  check digit with ``invalid_identifier``; the step is charged and nothing changes).
- ``add_coverage[roster][j]``: the ``j``-th member ``lookup_member`` returned (the agent picks
  the member; the conclusions tier always took the first).

**facts** (:class:`RegistrationFacts`, 29 actions, 120 own features; 151 with the generic and
``taken`` ones): observed facts and plain comparisons between observed values, per search
result: does its family name equal the form's, its given name equal the form's or one of its
*observed* variants (and the same with given and family written the other way round), its date
of birth equal the form's or differ by two swapped digits, its identifier equal the form's, is
it active, opened, the current record; the form's identifier's check digit; on the current
record: its age in years, whether its phone and address equal the form's, whether its address
is verified, whether it holds an active coverage of the form's payer with the card's (or a
roster member's) id, an active link to the form's practice, a contact named as the form's
guardian / next of kin, a consent written this episode; the card check's flags and the roster
members' flags. There is no candidate flag, no "this is due" flag and no count of open items:
the matching rule (which results agree, the narrowing by the identifier, the holder that is not
a candidate), the verified-field rule, the minor's age limit and the registration set are the
agent's to apply. *What the tier makes easy:* every comparison a clerk makes between two values
is already made, so each per-slot judgement is a short boolean formula over a few features of
that slot (names agree AND (dates equal OR (swapped AND identifier equal))), and each item of the
registration set is one or two flags (phone equal, coverage with the card's id); what remains is
combining them across slots (how many candidates, is the holder one of them), the thresholds
(age under 16) and the rules' order.

**raw** (:class:`RegistrationRaw`, 31 actions, 162 own features; 195 in all): per-slot observed
values only: names, phones, address parts, member ids and contact names as *episode symbols*
(the k-th distinct value of its kind the episode has seen, / 32; two values are the same exactly
when their symbols are equal: the agent compares them), dates as year / month / day numbers,
statuses, roles and verify reasons one-hot; equalities of ids only as "same entity" facts (a
result's identifier is the form's, a coverage's payer is the form's payer, a GP link's practice
is the form's practice, a result is the current record). Actions are primitive:
``record_consent[guardian][j]`` cites the current record's ``j``-th contact (the agent picks the
guardian contact), the coverage's member id is the card's or the ``j``-th roster member's (read
values, never computed), and there is no check-digit feature: an invalid identifier is learnt
from ``create_patient``'s error. The agent must match names through the variant symbols, detect
swapped date digits from the numbers, compute the patient's age from two dates, pick the
guardian contact and the roster member by comparing symbols, and count candidates itself.
*What the tier makes easy:* values are normalised before they are named (case and spaces of
names and addresses, phone prefixes, member-id case), the form is read first so its given and
family names are the symbols 1/32 and 2/32 (unless they are the same name) (a "same name as the form" test is a test for
one value), the identifier's match is a same-entity flag, and the mask removes malformed calls,
repeated reads and writes to a locked record. Episodes stay short (the feature policy needs at
most 14 calls).

Each tier's hand-written :meth:`feature_policy` (a staticmethod, found on the class by
``catalog-features@<tier>``) reads only the feature vector and the mask and passes every released
task: the tier suffices. In ``raw`` it decodes dates and compares symbols itself (the policy, not
the catalog, computes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import numpy as np

from backoffice.envs.registration.tables import (
    ADDRESS_FIELDS,
    age_on,
    digits,
    fold,
    given_equivalent,
    identifier_valid,
    is_transposition,
    parse_date,
    phone_key,
)
from backoffice.training.catalog.base import ActionDef, CatalogAgent, FeatureDef, FeatureReader, scale, slots
from backoffice.training.catalog.registration import CREATE_FIELDS, N_SLOTS, RegistrationCatalog, _member, _squash

Policy = Callable[[np.ndarray, np.ndarray], int]

#: roster members a catalog action can add (``lookup_member`` answers 1-2 at every world size)
N_ROSTER = 2
#: the current record's coverages, GP links and contacts shown per slot (on file plus added)
N_COVERAGES = N_GP = N_CONTACTS = 3
#: observed variants of one name shown (``get_name_variants`` lists at most 4)
N_VARIANTS = 4
#: raw: symbols are ``k / N_SYMBOLS`` (the k-th distinct value of its kind seen this episode)
N_SYMBOLS = 32
#: raw: dates as ``(year - 1900) / 150``, ``month / 12``, ``day / 31``
YEAR_BASE, YEAR_SPAN = 1900, 150
VERIFY_REASONS = ("check_digit_failed", "wrong_format", "not_on_roster", "inactive")
REFER_REASONS = ("ambiguous_match", "deceased_match", "identity_conflict")


def _conclusions(*names: str) -> tuple[ActionDef, ...]:
    """The conclusions tier's own actions of these names (the tiers take them as they are)."""
    by_name = {a.name: a for a in RegistrationCatalog.actions}
    return tuple(by_name[n] for n in names)


def _actions(consents: tuple[ActionDef, ...]) -> tuple[ActionDef, ...]:
    """The tiers' catalog: reads, opens, creates, referrals, record writes, then ``consents``."""
    return (
        *_conclusions("get_intake_form", "get_rules", "search_patients", "get_name_variants[given]"),
        ActionDef("get_name_variants[family]", "get_name_variants", "Read the variants of the form's family name."),
        *slots("get_patient", "get_patient", N_SLOTS,
               "Open the {i}-th search result; it becomes the current record the writes act on, and a referral "
               "cites it."),
        ActionDef("create_patient[with_identifier]", "create_patient",
                  "Create a record from the form, with the form's identifier as written; it becomes the current record."),
        ActionDef("create_patient[without_identifier]", "create_patient",
                  "Create a record from the form, leaving the identifier out; it becomes the current record."),
        *(ActionDef(f"refer_to_human[{r}]", "refer_to_human",
                    f"Hand the form over ({r}); basis: the search results opened this episode; template note.")
          for r in REFER_REASONS),
        *_conclusions("update_patient[phone]", "update_patient[address]", "verify_member_id", "lookup_member",
                      "add_coverage[card]"),
        *(ActionDef(f"add_coverage[roster][{j}]", "add_coverage",
                    f"Add the form's payer to the current record with the member id of lookup_member's {j}-th member.")
          for j in range(N_ROSTER)),
        *_conclusions("link_gp", "add_contact[guardian]", "add_contact[next_of_kin]", "record_consent[self]"),
        *consents,
        *_conclusions("submit"),
    )


class _TieredRegistration(RegistrationCatalog):
    """What the ``facts`` and ``raw`` tiers share: the conclusions tier's episode state and
    helpers (reset, the current record, rosters, contacts), its grounding by action name, its
    observation bookkeeping by tool and its legality mask; a referral cites the opened results,
    ``create_patient`` gives the identifier or not as the agent chooses, and no candidates are
    drawn."""

    domain = "registration"
    #: the conclusions tier's step limit (18): the feature policies' longest episode is 14 calls
    max_steps = RegistrationCatalog.max_steps
    actions: ClassVar[tuple[ActionDef, ...]] = ()

    # -- grounding ------------------------------------------------------------------------------
    def _referral_basis(self, reason: str) -> list[str]:
        """A referral's basis: the search results opened this episode."""
        shown = {str(r["id"]) for r in self.results or ()}
        return sorted(self.opened & shown)

    def _create_args(self, name: str) -> dict[str, Any] | None:
        """The form's fields, with the identifier as written (``[with_identifier]``, not
        groundable without one) or without it."""
        f = self._form
        args = {k: f(k) for k in CREATE_FIELDS}
        if name == "create_patient[with_identifier]":
            if not f("identifier"):
                return None
            args["identifier"] = f("identifier")
        return args

    def _after_observe(self, tool: str) -> None:
        """Run after every successful observation (the tiers draw no candidates; ``raw`` names
        its new symbols here)."""

    # -- shared observed values -----------------------------------------------------------------
    def _searched(self) -> bool:
        return self.form is not None and self.results is not None

    def _slot(self, i: int) -> dict[str, Any] | None:
        return self.results[i] if self._searched() and self.results is not None and i < len(self.results) else None

    def _identifier_same(self, r: Mapping[str, Any] | None) -> bool:
        """A result's identifier is the one written on the form (digits compared)."""
        ident = digits(self._form("identifier"))
        return r is not None and bool(ident) and str(r.get("identifier", "")) == ident

    def _consents_written(self) -> int:
        return int((self.rec or {}).get("consents_written", 0))

    def _read_values(self) -> dict[str, float]:
        """The values of ``_READ_FEATURES``."""
        return {
            "form_read": self.form is not None,
            "today_known": self.today is not None,
            "searched": self._searched(),
            "search_next_page": self.search_cursor is not None,
            "n_results": scale(len(self.results or ()), N_SLOTS),
        }


#: what both tiers' features start with: what was read
_READ_FEATURES = (
    FeatureDef("form_read", "1 once get_intake_form returned the form"),
    FeatureDef("today_known", "1 once today's date is known (from the brief or get_rules)"),
    FeatureDef("searched", "1 once search_patients returned its results (every page)"),
    FeatureDef("search_next_page", "1 if the last search page returned a next_cursor (more pages to read)"),
    FeatureDef("n_results", f"search results returned / {N_SLOTS}"),
)


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


# ======================================================================================
# facts
# ======================================================================================
_FACT_SLOT = (
    ("present", "1 if the search returned an i-th result"),
    ("family_equal", "1 if the i-th result's family name equals the form's (case and spaces ignored)"),
    ("given_equal", "1 if the i-th result's given name equals the form's"),
    ("given_variant", "1 if the i-th result's given name differs from the form's but is one of its observed variants "
                      "(get_name_variants)"),
    ("swapped_family_equal", "1 if the i-th result's family name equals the form's given name"),
    ("swapped_given_equal", "1 if the i-th result's given name equals the form's family name"),
    ("swapped_given_variant", "1 if the i-th result's given name differs from the form's family name but is one of "
                              "its observed variants"),
    ("dob_equal", "1 if the i-th result's date of birth equals the form's"),
    ("dob_swapped", "1 if the i-th result's date of birth is the form's with two adjacent digits swapped"),
    ("identifier_equal", "1 if the form gives an identifier and its digits equal the i-th result's identifier"),
    ("active", "1 if the i-th result's status (search summary) is active"),
    ("opened", "1 if the i-th result was opened with get_patient this episode (a referral cites it)"),
    ("current", "1 if the i-th result is the current record"),
)


class RegistrationFacts(_TieredRegistration):
    """Registration, ``facts`` tier: observed facts and plain comparisons, no conclusions (see
    the module docstring)."""

    tier = "facts"
    #: the slot-factored policy (one scorer for the search results, one for the roster members):
    #: 98.9 % heldout at 550k steps (seed 0, 6.2 CPU-min) where the flat MLP reached 59-70 % at
    #: 600k (8.3-10.4 CPU-min); its behaviour-cloning ceiling is 98.3 % (flat: 75 %)
    hyperparams = {**_TieredRegistration.hyperparams, "timesteps": 600_000, "policy": "slots"}
    slot_actions = {"get_patient": "slot", "add_coverage[roster]": "roster"}
    actions = _actions((ActionDef(
        "record_consent[guardian]", "record_consent",
        "Record the form's treatment consent as given by the current record's contact named as the form's guardian "
        "(the one added this episode, else the one on file)."),))
    features = (
        *_READ_FEATURES,
        FeatureDef("form.identifier_given", "1 if the form gives an identifier"),
        FeatureDef("form.identifier_valid", "1 if the form's identifier is 10 digits whose mod-11 check digit holds"),
        FeatureDef("form.phone_given", "1 if the form gives a phone"),
        FeatureDef("form.payer_given", "1 if the form names a payer"),
        FeatureDef("form.member_id_given", "1 if the form gives a member id (the card's)"),
        FeatureDef("form.gp_given", "1 if the form names a GP practice"),
        FeatureDef("form.guardian_given", "1 if the form names a guardian"),
        FeatureDef("form.kin_given", "1 if the form names a next of kin"),
        FeatureDef("form.address_evidence", "1 if the form carries an evidence document for the address field"),
        *(FeatureDef(f"slot[{i}].{n}", d.replace("i-th", f"{i}-th")) for i in range(N_SLOTS) for n, d in _FACT_SLOT),
        FeatureDef("current.known", "1 if there is a current record (opened with get_patient or created)"),
        FeatureDef("current.created", "1 if create_patient succeeded this episode"),
        FeatureDef("current.active", "1 if the current record's status is active"),
        FeatureDef("current.age_years", "the current record's age in whole years on today's date / 100 (0 if unknown)"),
        FeatureDef("current.phone_equal_form", "1 if the current record's phone equals the form's (digits; +44 and 0 "
                                               "prefixes equal)"),
        FeatureDef("current.address_equal_form", "1 if the current record's address line, city and postcode equal the "
                                                 "form's (case and spaces ignored)"),
        FeatureDef("current.address_verified", "1 if 'address' is in the current record's verified list"),
        FeatureDef("current.coverage_card_id", "1 if the current record holds an active coverage of the form's payer "
                                               "with the card's member id (on file or added)"),
        *(FeatureDef(f"current.coverage_roster_id[{j}]", f"1 if the current record holds an active coverage of the "
                                                         f"form's payer with lookup_member's {j}-th member id")
          for j in range(N_ROSTER)),
        FeatureDef("current.payer_coverages", "active coverages of the form's payer on the current record / 2"),
        FeatureDef("current.gp_linked_form_practice", "1 if the current record has an active link to the form's GP "
                                                      "practice"),
        FeatureDef("current.guardian_named_form", "1 if the current record has a guardian contact with the form's "
                                                  "guardian name (on file or added)"),
        FeatureDef("current.kin_named_form", "1 if the current record has a next-of-kin contact with the form's next "
                                             "of kin name"),
        FeatureDef("current.consent_written", "1 if a treatment consent was recorded for the current record this "
                                              "episode"),
        FeatureDef("card.checked", "1 once verify_member_id answered for the card's member id"),
        FeatureDef("card.valid", "verify_member_id's 'valid' flag"),
        FeatureDef("card.family_equal_current", "1 if the card's member's family name equals the current record's"),
        FeatureDef("card.dob_equal_current", "1 if the card's member's date of birth equals the current record's"),
        FeatureDef("roster.checked", "1 once lookup_member answered for the current record's family name and date "
                                     "of birth"),
        *(FeatureDef(f"roster[{j}].{n}", d.format(j=j)) for j in range(N_ROSTER) for n, d in (
            ("present", "1 if lookup_member returned a {j}-th member"),
            ("active", "1 if lookup_member's {j}-th member is active"),
            ("given_equivalent_current", "1 if lookup_member's {j}-th member's given name equals the current "
                                         "record's or is one of its observed variants"),
        )),
        FeatureDef("consents_written", "treatment consents recorded this episode (any record) / 2"),
        FeatureDef("writes", "successful writes this episode / 10"),
    )

    def _names_equivalent(self, a: Any, b: Any) -> bool:
        return given_equivalent(str(a or ""), str(b or ""), self.variants)  # observed variants only (never None)

    def _covered_with(self, member: Any) -> bool:
        m = _member(member)
        return bool(m) and any(_member(c.get("member_id")) == m for c in self._payer_coverages())

    def feature_vector(self) -> np.ndarray:
        f, rec, roster = self._form, self.rec, self._roster() or []
        form_given, form_family, form_dob = f("given_name"), f("family_name"), f("dob")
        values: dict[str, float] = {
            **self._read_values(),
            "form.identifier_given": bool(f("identifier")),
            "form.identifier_valid": identifier_valid(f("identifier")),
            "form.phone_given": bool(f("phone")),
            "form.payer_given": bool(f("payer_id")),
            "form.member_id_given": bool(f("member_id")),
            "form.gp_given": bool(f("gp_practice_id")),
            "form.guardian_given": bool(f("guardian_name")),
            "form.kin_given": bool(f("next_of_kin_name")),
            "form.address_evidence": bool(self._address_evidence()),
        }
        for i in range(N_SLOTS):
            r = self._slot(i)
            g, fam, dob = (str(r.get(k, "")) for k in ("given_name", "family_name", "dob")) if r else ("", "", "")
            row = {
                "present": r is not None,
                "family_equal": r is not None and fold(fam) == fold(form_family),
                "given_equal": r is not None and fold(g) == fold(form_given),
                "given_variant": r is not None and fold(g) != fold(form_given) and self._names_equivalent(form_given, g),
                "swapped_family_equal": r is not None and fold(fam) == fold(form_given),
                "swapped_given_equal": r is not None and fold(g) == fold(form_family),
                "swapped_given_variant": r is not None and fold(g) != fold(form_family)
                                         and self._names_equivalent(form_family, g),
                "dob_equal": r is not None and dob == form_dob,
                "dob_swapped": r is not None and is_transposition(dob, form_dob),
                "identifier_equal": self._identifier_same(r),
                "active": r is not None and r.get("status") == "active",
                "opened": r is not None and str(r.get("id")) in self.opened,
                "current": r is not None and str(r.get("id")) == self.current,
            }
            values.update({f"slot[{i}].{k}": v for k, v in row.items()})
        age = 0.0
        if rec is not None and self.today and parse_date(str(rec.get("dob", ""))):
            age = scale(age_on(str(rec["dob"]), self.today), 100)
        card = self.card or {}
        values.update({
            "current.known": rec is not None,
            "current.created": self.created,
            "current.active": self._active(),
            "current.age_years": age,
            "current.phone_equal_form": rec is not None and bool(f("phone")) and phone_key(f("phone")) == phone_key(rec.get("phone")),
            "current.address_equal_form": rec is not None and self.form is not None and not self._address_differs(),
            "current.address_verified": rec is not None and "address" in (rec.get("verified") or ()),
            "current.coverage_card_id": self._covered_with(f("member_id")),
            "current.payer_coverages": scale(len(self._payer_coverages()), 2),
            "current.gp_linked_form_practice": self._gp_linked(),
            "current.guardian_named_form": self._contact("guardian") is not None,
            "current.kin_named_form": self._contact("next_of_kin") is not None,
            "current.consent_written": self._consents_written() > 0,
            "card.checked": self.card is not None,
            "card.valid": bool(card.get("valid")),
            "card.family_equal_current": rec is not None and bool(card.get("family_name"))
                                         and fold(card.get("family_name")) == fold(rec.get("family_name")),
            "card.dob_equal_current": rec is not None and bool(card.get("dob")) and card.get("dob") == rec.get("dob"),
            "roster.checked": self._roster() is not None,
            "consents_written": scale(self.consents, 2),
            "writes": scale(self.writes, 10),
        })
        for j in range(N_ROSTER):
            m = roster[j] if j < len(roster) else None
            values[f"current.coverage_roster_id[{j}]"] = m is not None and self._covered_with(m.get("member_id"))
            values[f"roster[{j}].present"] = m is not None
            values[f"roster[{j}].active"] = m is not None and m.get("status") == "active"
            values[f"roster[{j}].given_equivalent_current"] = m is not None and rec is not None and self._names_equivalent(
                m.get("given_name"), rec.get("given_name"))
        return np.array([float(values[d.name]) for d in self.features], dtype=np.float32)

    @staticmethod
    def feature_policy(agent: CatalogAgent) -> Policy:
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


# ======================================================================================
# raw
# ======================================================================================
def _date_features(prefix: str, what: str) -> tuple[FeatureDef, ...]:
    return (FeatureDef(f"{prefix}.year", f"{what}: (year - {YEAR_BASE}) / {YEAR_SPAN} (0 if none)"),
            FeatureDef(f"{prefix}.month", f"{what}: month / 12"),
            FeatureDef(f"{prefix}.day", f"{what}: day / 31"))


def _date_values(prefix: str, text: Any) -> dict[str, float]:
    d = parse_date(str(text or "")[:10])
    if d is None:
        return {f"{prefix}.year": 0.0, f"{prefix}.month": 0.0, f"{prefix}.day": 0.0}
    return {f"{prefix}.year": (d.year - YEAR_BASE) / YEAR_SPAN, f"{prefix}.month": d.month / 12, f"{prefix}.day": d.day / 31}


_SYM = f"(episode symbol: the k-th distinct {{kind}} seen this episode / {N_SYMBOLS}; 0 if none)"


def _sym_doc(text: str, kind: str) -> str:
    return f"{text} {_SYM.format(kind=kind)}"


class RegistrationRaw(_TieredRegistration):
    """Registration, ``raw`` tier: per-slot observed values and primitive actions (see the module
    docstring)."""

    tier = "raw"
    #: the 2 envs this tier's runs were made on, with the rollout size of the other tiers (2 x 1024)
    hyperparams = {**_TieredRegistration.hyperparams, "n_envs": 2, "n_steps": 1024}
    actions = _actions(tuple(ActionDef(
        f"record_consent[guardian][{j}]", "record_consent",
        f"Record the form's treatment consent as given by the current record's {j}-th contact (masked unless it is "
        "a guardian contact).") for j in range(N_CONTACTS)))
    features = (
        *_READ_FEATURES,
        *_date_features("today", "today's date"),
        FeatureDef("form.given", _sym_doc("the form's given name", "name")),
        FeatureDef("form.family", _sym_doc("the form's family name", "name")),
        *_date_features("form.dob", "the form's date of birth"),
        FeatureDef("form.identifier_given", "1 if the form gives an identifier"),
        FeatureDef("form.phone", _sym_doc("the form's phone (digits; +44 and 0 prefixes equal)", "phone")),
        *(FeatureDef(f"form.{k}", _sym_doc(f"the form's {k} (case and spaces ignored)", "address part"))
          for k in ADDRESS_FIELDS),
        FeatureDef("form.evidence[address]", "1 if the form carries an evidence document for the address field"),
        FeatureDef("form.payer_given", "1 if the form names a payer"),
        FeatureDef("form.member_id", _sym_doc("the card's member id", "member id")),
        FeatureDef("form.gp_given", "1 if the form names a GP practice"),
        FeatureDef("form.guardian", _sym_doc("the form's guardian's name", "contact name")),
        FeatureDef("form.next_of_kin", _sym_doc("the form's next of kin's name", "contact name")),
        *(FeatureDef(f"variants[{w}][{j}]", _sym_doc(f"the {j}-th observed variant of the form's {w} name", "name"))
          for w in ("given", "family") for j in range(N_VARIANTS)),
        *(fd for i in range(N_SLOTS) for fd in (
            FeatureDef(f"slot[{i}].present", f"1 if the search returned a {i}-th result"),
            FeatureDef(f"slot[{i}].given", _sym_doc(f"the {i}-th result's given name", "name")),
            FeatureDef(f"slot[{i}].family", _sym_doc(f"the {i}-th result's family name", "name")),
            *_date_features(f"slot[{i}].dob", f"the {i}-th result's date of birth"),
            FeatureDef(f"slot[{i}].identifier_same_as_form", f"1 if the {i}-th result's identifier is the one written on "
                                                         "the form (same entity)"),
            FeatureDef(f"slot[{i}].status[active]", f"1 if the {i}-th result's status is active"),
            FeatureDef(f"slot[{i}].status[deceased]", f"1 if the {i}-th result's status is deceased"),
            FeatureDef(f"slot[{i}].opened", f"1 if the {i}-th result was opened with get_patient (a referral cites it)"),
            FeatureDef(f"slot[{i}].is_current", f"1 if the {i}-th result is the current record (same entity)"),
        )),
        FeatureDef("current.known", "1 if there is a current record (opened with get_patient or created)"),
        FeatureDef("current.created", "1 if create_patient succeeded this episode"),
        FeatureDef("current.status[active]", "1 if the current record's status is active"),
        FeatureDef("current.given", _sym_doc("the current record's given name", "name")),
        FeatureDef("current.family", _sym_doc("the current record's family name", "name")),
        *_date_features("current.dob", "the current record's date of birth"),
        FeatureDef("current.phone", _sym_doc("the current record's phone (digits; +44 and 0 prefixes equal)", "phone")),
        *(FeatureDef(f"current.{k}", _sym_doc(f"the current record's {k} (case and spaces ignored)", "address part"))
          for k in ADDRESS_FIELDS),
        FeatureDef("current.verified[address]", "1 if 'address' is in the current record's verified list"),
        FeatureDef("current.consents_written", "treatment consents recorded for the current record this episode / 2"),
        *(fd for j in range(N_COVERAGES) for fd in (
            FeatureDef(f"coverage[{j}].payer_is_form_payer", f"1 if the current record's {j}-th coverage is with the "
                                                         "form's payer (same entity)"),
            FeatureDef(f"coverage[{j}].member_id", _sym_doc(f"the current record's {j}-th coverage's member id",
                                                            "member id")),
            FeatureDef(f"coverage[{j}].status[active]", f"1 if the current record's {j}-th coverage is active"),
        )),
        *(fd for j in range(N_GP) for fd in (
            FeatureDef(f"gp_link[{j}].present", f"1 if the current record has a {j}-th GP link"),
            FeatureDef(f"gp_link[{j}].practice_is_form_practice", f"1 if the current record's {j}-th GP link is to the form's "
                                                           "practice (same entity)"),
            FeatureDef(f"gp_link[{j}].status[active]", f"1 if the current record's {j}-th GP link is active"),
        )),
        *(fd for j in range(N_CONTACTS) for fd in (
            FeatureDef(f"contact[{j}].role[guardian]", f"1 if the current record's {j}-th contact is a guardian"),
            FeatureDef(f"contact[{j}].role[next_of_kin]", f"1 if the current record's {j}-th contact is a next of kin"),
            FeatureDef(f"contact[{j}].name", _sym_doc(f"the current record's {j}-th contact's name", "contact name")),
            FeatureDef(f"contact[{j}].added", f"1 if the current record's {j}-th contact was added this episode"),
        )),
        FeatureDef("card.checked", "1 once verify_member_id answered for the card's member id"),
        FeatureDef("card.valid", "verify_member_id's 'valid' flag"),
        *(FeatureDef(f"card.reason[{r}]", f"1 if verify_member_id's reason is {r}") for r in VERIFY_REASONS),
        FeatureDef("card.family", _sym_doc("the card's member's family name (verify_member_id)", "name")),
        *_date_features("card.dob", "the card's member's date of birth (verify_member_id)"),
        FeatureDef("roster.checked", "1 once lookup_member answered for the current record's family name and date of "
                                     "birth"),
        *(fd for j in range(N_ROSTER) for fd in (
            FeatureDef(f"roster[{j}].present", f"1 if lookup_member returned a {j}-th member"),
            FeatureDef(f"roster[{j}].member_id", _sym_doc(f"lookup_member's {j}-th member id", "member id")),
            FeatureDef(f"roster[{j}].given", _sym_doc(f"lookup_member's {j}-th member's given name", "name")),
            FeatureDef(f"roster[{j}].status[active]", f"1 if lookup_member's {j}-th member is active"),
        )),
        FeatureDef("writes", "successful writes this episode / 10"),
    )

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        super().reset(brief, info)
        self.symbols: dict[str, dict[str, int]] = {}

    # -- symbols ------------------------------------------------------------------------------
    def _symbol_values(self) -> Iterator[tuple[str, str]]:
        """Every ``(kind, normalised value)`` the features show, in feature order."""
        f, rec = self._form, self.rec or {}
        yield from (("name", fold(f("given_name"))), ("name", fold(f("family_name"))), ("phone", phone_key(f("phone"))))
        yield from (("address", _squash(f(k))) for k in ADDRESS_FIELDS)
        yield from (("member", _member(f("member_id"))), ("contact", fold(f("guardian_name"))),
                    ("contact", fold(f("next_of_kin_name"))))
        for w in ("given_name", "family_name"):
            yield from (("name", fold(v)) for v in self.variants.get(fold(f(w)), ())[:N_VARIANTS])
        for i in range(N_SLOTS):
            r = self._slot(i) or {}
            yield from (("name", fold(r.get("given_name"))), ("name", fold(r.get("family_name"))))
        yield from (("name", fold(rec.get("given_name"))), ("name", fold(rec.get("family_name"))),
                    ("phone", phone_key(rec.get("phone"))))
        yield from (("address", _squash(rec.get(k))) for k in ADDRESS_FIELDS)
        yield from (("member", _member(c.get("member_id"))) for c in (rec.get("coverages") or ())[:N_COVERAGES])
        yield from (("contact", fold(c.get("name"))) for c in (rec.get("contacts") or ())[:N_CONTACTS])
        yield "name", fold((self.card or {}).get("family_name"))
        for m in (self._roster() or [])[:N_ROSTER]:
            yield from (("member", _member(m.get("member_id"))), ("name", fold(m.get("given_name"))))

    def _after_observe(self, tool: str) -> None:
        """Name every new value as it is observed (so a symbol depends on the history only)."""
        for kind, text in self._symbol_values():
            self._sym(kind, text)

    def _sym(self, kind: str, text: str) -> float:
        if not text:
            return 0.0
        table = self.symbols.setdefault(kind, {})
        code = table.setdefault(text, len(table) + 1)
        return min(1.0, code / N_SYMBOLS)

    def feature_vector(self) -> np.ndarray:  # noqa: C901 - one value per feature
        f, rec = self._form, self.rec
        r0: Mapping[str, Any] = rec or {}
        card = self.card or {}
        roster = self._roster() or []
        values: dict[str, float] = {
            **self._read_values(),
            **_date_values("today", self.today),
            "form.given": self._sym("name", fold(f("given_name"))),
            "form.family": self._sym("name", fold(f("family_name"))),
            **_date_values("form.dob", f("dob")),
            "form.identifier_given": bool(f("identifier")),
            "form.phone": self._sym("phone", phone_key(f("phone"))),
            **{f"form.{k}": self._sym("address", _squash(f(k))) for k in ADDRESS_FIELDS},
            "form.evidence[address]": bool(self._address_evidence()),
            "form.payer_given": bool(f("payer_id")),
            "form.member_id": self._sym("member", _member(f("member_id"))),
            "form.gp_given": bool(f("gp_practice_id")),
            "form.guardian": self._sym("contact", fold(f("guardian_name"))),
            "form.next_of_kin": self._sym("contact", fold(f("next_of_kin_name"))),
        }
        for w in ("given", "family"):
            seen = self.variants.get(fold(f(f"{w}_name")), ())
            for j in range(N_VARIANTS):
                values[f"variants[{w}][{j}]"] = self._sym("name", fold(seen[j])) if j < len(seen) else 0.0
        for i in range(N_SLOTS):
            r = self._slot(i)
            p = f"slot[{i}]"
            values.update({
                f"{p}.present": r is not None,
                f"{p}.given": self._sym("name", fold((r or {}).get("given_name"))),
                f"{p}.family": self._sym("name", fold((r or {}).get("family_name"))),
                **_date_values(f"{p}.dob", (r or {}).get("dob")),
                f"{p}.identifier_same_as_form": self._identifier_same(r),
                f"{p}.status[active]": r is not None and r.get("status") == "active",
                f"{p}.status[deceased]": r is not None and r.get("status") == "deceased",
                f"{p}.opened": r is not None and str(r.get("id")) in self.opened,
                f"{p}.is_current": r is not None and str(r.get("id")) == self.current,
            })
        values.update({
            "current.known": rec is not None,
            "current.created": self.created,
            "current.status[active]": self._active(),
            "current.given": self._sym("name", fold(r0.get("given_name"))),
            "current.family": self._sym("name", fold(r0.get("family_name"))),
            **_date_values("current.dob", r0.get("dob")),
            "current.phone": self._sym("phone", phone_key(r0.get("phone"))),
            **{f"current.{k}": self._sym("address", _squash(r0.get(k))) for k in ADDRESS_FIELDS},
            "current.verified[address]": "address" in (r0.get("verified") or ()),
            "current.consents_written": scale(self._consents_written(), 2),
        })
        payer, practice = f("payer_id"), f("gp_practice_id")
        coverages, links, contacts = (list(r0.get(k) or ()) for k in ("coverages", "gp_links", "contacts"))
        for j in range(N_COVERAGES):
            c = coverages[j] if j < len(coverages) else {}
            values[f"coverage[{j}].payer_is_form_payer"] = bool(c) and bool(payer) and c.get("payer_id") == payer
            values[f"coverage[{j}].member_id"] = self._sym("member", _member(c.get("member_id")))
            values[f"coverage[{j}].status[active]"] = bool(c) and c.get("status") == "active"
        for j in range(N_GP):
            g = links[j] if j < len(links) else {}
            values[f"gp_link[{j}].present"] = bool(g)
            values[f"gp_link[{j}].practice_is_form_practice"] = bool(g) and bool(practice) and g.get("practice_id") == practice
            values[f"gp_link[{j}].status[active]"] = bool(g) and g.get("status") == "active"
        for j in range(N_CONTACTS):
            c = contacts[j] if j < len(contacts) else {}
            values[f"contact[{j}].role[guardian]"] = c.get("role") == "guardian"
            values[f"contact[{j}].role[next_of_kin]"] = c.get("role") == "next_of_kin"
            values[f"contact[{j}].name"] = self._sym("contact", fold(c.get("name")))
            values[f"contact[{j}].added"] = bool(c.get("added"))
        values.update({
            "card.checked": self.card is not None,
            "card.valid": bool(card.get("valid")),
            **{f"card.reason[{r}]": card.get("reason") == r for r in VERIFY_REASONS},
            "card.family": self._sym("name", fold(card.get("family_name"))),
            **_date_values("card.dob", card.get("dob")),
            "roster.checked": self._roster() is not None,
            "writes": scale(self.writes, 10),
        })
        for j in range(N_ROSTER):
            m = roster[j] if j < len(roster) else {}
            values[f"roster[{j}].present"] = bool(m)
            values[f"roster[{j}].member_id"] = self._sym("member", _member(m.get("member_id")))
            values[f"roster[{j}].given"] = self._sym("name", fold(m.get("given_name")))
            values[f"roster[{j}].status[active]"] = m.get("status") == "active"
        return np.array([float(values[d.name]) for d in self.features], dtype=np.float32)

    @staticmethod
    def feature_policy(agent: CatalogAgent) -> Policy:
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


__all__ = ["RegistrationFacts", "RegistrationRaw"]
