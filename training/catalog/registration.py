"""Catalog of the registration desk (``backoffice/Registration-Catalog-v0``).

One intake form per task. The agent reads the form, the variants of the form's given and family
names and one search of the patient index (the form's name, date of birth, identifier and
postcode); ``today`` comes from the brief ("Today is ...") or ``get_rules``.

**The mask expresses legality only.** An action is masked when its call cannot be formed from
what was read (an empty search slot, no record to write to, a form field the call needs is
blank, no guardian contact to cite), when it repeats a read whose answer is known (the form, the
rules once today's date is known, a search, a name's variants, a record already opened, a card
already checked, a roster already looked up), or when the tool is certain to reject it (a write
to a record whose status is not active; a GP link the record already holds). Every judgement is
the agent's, made from the features: which search result is the form's person
(``get_patient[i]`` opens the i-th result; per-slot features compare it with the form), create
vs open vs refer and the referral's reason, whether to search before creating, which fields to
update (phone, address: the features say whether each differs, is verified, is evidenced),
which member id to add (the card's or the roster's), whether to add the GP link and contacts,
who consents (the patient or the guardian contact), and when to stop. Repeating a write is never
masked either: the features say what is on file. Features also carry the clerk's derived
comparisons (the matching rule per slot and in total, ``address_update_allowed`` by
R-VERIFIED-FIELD, ``items_open`` and ``registration_complete``), so each decision is a function
of one or two features; the agent still has to learn to act on them.

Writes act on the *current record*: the one last opened with ``get_patient[i]`` or created.
Their arguments are filled from observations: the form's values, the address evidence on the
form (cited whenever present), the card's member id, the roster's member id, the guardian
contact added or on file. A referral's note is a fixed template naming the reason and the
candidate records the matching rule accepts (its judge score never enters ``pass``); its ``basis`` cites
those records, plus, for an identity conflict, the result holding the form's identifier.

Paged reads: ``search_patients`` returns one page at a time; the search action fetches the next
page (the ``next_cursor`` of the last one) until the last page has come back, and only then are
the results known (``searched``, the slots); until then the action stays legal. A form's search
shows 3-6 records, so at every world size it is one page.

The matching rule the features use is the rule file's
(:func:`backoffice.envs.registration.tables.match_candidates`, the clerk's computation), fed only
the observed form, the observed name variants and the search summaries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from backoffice.envs.registration.tables import (
    ADDRESS_FIELDS,
    MINOR_AGE,
    age_on,
    digits,
    fold,
    given_equivalent,
    identifier_holder,
    identifier_valid,
    is_transposition,
    match_candidates,
    names_agree,
    parse_date,
    phone_key,
)
from backoffice.training.catalog.base import ActionDef, CatalogAgent, CatalogSpec, FeatureDef, scale, slots

#: search results the catalog can open (the generator keeps a form's search at 3-6 hits)
N_SLOTS = 6

#: the tools writing on the current record (masked when there is none, or it is not active: the
#: tool rejects every write to a locked record with ``patient_not_active``)
RECORD_TOOLS = frozenset({"update_patient", "add_coverage", "link_gp", "add_contact", "record_consent"})
#: what ``create_patient`` copies from the form
CREATE_FIELDS = ("given_name", "family_name", "dob", "sex", "address_line", "city", "postcode", "phone")
_TODAY = re.compile(r"Today is (\d{4}-\d{2}-\d{2})")
_SLOT_FEATURES = (
    ("names_agree", "1 if the i-th search result's names agree with the form's (same family name and the same "
                    "given name or one of its observed variants, either way round)"),
    ("dob_same", "1 if the i-th result's date of birth is the form's"),
    ("dob_swapped", "1 if the i-th result's date of birth differs from the form's by two swapped adjacent digits"),
    ("identifier_same", "1 if the form's identifier is valid (check digit) and equals the i-th result's"),
    ("deceased", "1 if the i-th result's status (search summary) is not active"),
    ("match", "1 if the i-th result is a candidate by the rule file's matching rule (names agree; same date of "
              "birth, or swapped digits with the same valid identifier; several candidates narrowed to the one "
              "holding the form's valid identifier, if exactly one does)"),
)


#: the catalog's feature tiers (``backoffice.training.catalog.TIERS``): this module's catalog is the
#: ``conclusions`` tier; ``facts`` and ``raw`` are in :mod:`.registration_tiers`
TIERS = {
    "conclusions": "RegistrationCatalog",
    "facts": "backoffice.training.catalog.registration_tiers:RegistrationFacts",
    "raw": "backoffice.training.catalog.registration_tiers:RegistrationRaw",
}


def _member(text: Any) -> str:
    return str(text or "").strip().upper()


def _squash(text: Any) -> str:
    return fold(text).replace(" ", "")


def _slot_of(name: str, prefix: str) -> int | None:
    """``j`` of the action ``prefix[j]`` (``None`` for ``prefix`` itself)."""
    return int(name[len(prefix) + 1:-1]) if len(name) > len(prefix) else None


class RegistrationCatalog(CatalogSpec):
    """Registration as 27 catalog actions over 76 domain features (see the module docstring)."""

    domain = "registration"
    max_steps = 18
    #: the progress reward with free successful calls, long rollouts and horizon. With the
    #: per-call cost it learned to refer every task that is not a referral (21.7 % heldout on
    #: the shaped reward on v0; 63 % on the progress reward with a prior of -4 against the ending
    #: actions, 68 % without the prior, at 120k steps); free calls: 92-98 % over three seeds at 200k
    hyperparams = {"finish_bias": 0.0, "n_steps": 256, "gamma": 0.995, "ent_coef": 0.02, "reward_mode": "progress",
                   "call_cost": 0.0}
    actions = (
        ActionDef("get_intake_form", "get_intake_form", "Read the task's intake form (with its evidence documents)."),
        ActionDef("get_rules", "get_rules",
                  "Read the rule file and today's date (masked as a known answer once the brief gave the date)."),
        ActionDef("search_patients", "search_patients",
                  "Search the index with the form's name, date of birth, identifier (if any) and postcode; while the "
                  "last page returned a next_cursor, read the next page."),
        ActionDef("get_name_variants[given]", "get_name_variants", "Read the variants of the form's given name."),
        ActionDef("get_name_variants[family]", "get_name_variants",
                  "Read the variants of the form's family name (a given name when the form swapped them)."),
        *slots("get_patient", "get_patient", N_SLOTS,
               "Open the {i}-th search result; it becomes the current record the writes act on."),
        ActionDef("create_patient", "create_patient",
                  "Create a record from the form (its identifier only if the check digit holds and no create was "
                  "rejected yet); it becomes the current record."),
        ActionDef("refer_to_human[ambiguous_match]", "refer_to_human",
                  "Hand the form over as an ambiguous match (basis and template note: the matching records)."),
        ActionDef("refer_to_human[deceased_match]", "refer_to_human",
                  "Hand the form over as a deceased match (basis and template note: the matching records)."),
        ActionDef("refer_to_human[identity_conflict]", "refer_to_human",
                  "Hand the form over as an identity conflict (basis and template note: the record holding the "
                  "form's identifier and the matching records)."),
        ActionDef("update_patient[phone]", "update_patient", "Set the current record's phone to the form's."),
        ActionDef("update_patient[address]", "update_patient",
                  "Set the current record's address to the form's, citing the form's address evidence if any."),
        ActionDef("verify_member_id", "verify_member_id", "Check the card's member id with the form's payer."),
        ActionDef("lookup_member", "lookup_member",
                  "Find the form's payer's members with the current record's family name and date of birth."),
        ActionDef("add_coverage[card]", "add_coverage",
                  "Add the form's payer to the current record with the member id written on the card."),
        ActionDef("add_coverage[roster]", "add_coverage",
                  "Add the form's payer to the current record with the member id of the active member lookup_member "
                  "found whose given name agrees with the record's."),
        ActionDef("link_gp", "link_gp", "Link the current record to the form's GP practice."),
        ActionDef("add_contact[guardian]", "add_contact", "Add the form's guardian as a guardian contact."),
        ActionDef("add_contact[next_of_kin]", "add_contact", "Add the form's next of kin as a next-of-kin contact."),
        ActionDef("record_consent[self]", "record_consent", "Record the form's treatment consent as given by the patient."),
        ActionDef("record_consent[guardian]", "record_consent",
                  "Record the form's treatment consent as given by the current record's guardian contact (the one "
                  "added this episode, else the one on file with the form's guardian name)."),
        ActionDef("submit", "submit", "Finish: the registration is complete as it stands."),
    )
    features = (
        FeatureDef("form_read", "1 once get_intake_form returned the form"),
        FeatureDef("today_known", "1 once today's date is known (from the brief or get_rules)"),
        FeatureDef("searched", "1 once search_patients returned its results (every page)"),
        FeatureDef("n_results", f"search results returned / {N_SLOTS}"),
        FeatureDef("variants_pending", "1 if a search result with the form's date of birth (or two swapped digits) "
                                       "differs from the form only in the given name (or, written the other way "
                                       "round, the family name) and that name's variants were not read"),
        *(FeatureDef(f"slot[{i}].{name}", doc.replace("i-th", f"{i}-th")) for i in range(N_SLOTS)
          for name, doc in _SLOT_FEATURES),
        FeatureDef("match_none", "1 if the search was read and no result is a candidate (slot match features)"),
        FeatureDef("match_one", "1 if exactly one result is a candidate"),
        FeatureDef("match_many", "1 if more than one result is a candidate"),
        FeatureDef("match_deceased", "1 if exactly one result is a candidate and it is not active"),
        FeatureDef("identifier_conflict", "1 if the form's valid identifier is held by a search result that is not a "
                                          "candidate (R-IDENTITY-CONFLICT)"),
        FeatureDef("patient_known", "1 if there is a current record (opened with get_patient or created)"),
        FeatureDef("patient_created", "1 if create_patient succeeded this episode"),
        FeatureDef("create_rejected", "1 if a create_patient call returned an error (the next one omits the identifier)"),
        FeatureDef("current_is_match", "1 if the current record is one of the candidate search results"),
        FeatureDef("current_not_active", "1 if the current record's status is not active (every write is masked)"),
        FeatureDef("minor", "1 if the current record's date of birth makes the patient under 16 on today's date"),
        FeatureDef("phone_differs", "1 if the form gives a phone and the current record's phone differs (digits, "
                                    "+44 and 0 prefixes equal)"),
        FeatureDef("address_differs", "1 if the current record's address line, city or postcode differs from the "
                                      "form's (case and spaces ignored)"),
        FeatureDef("address_verified", "1 if 'address' is in the current record's verified list"),
        FeatureDef("address_evidence", "1 if the form carries an evidence document for the address field"),
        FeatureDef("address_update_allowed", "1 if the address differs and R-VERIFIED-FIELD allows the change: the "
                                             "record's address is unverified or the form carries address evidence"),
        FeatureDef("form_has_payer", "1 if the form names a payer (and a member id)"),
        FeatureDef("card_checked", "1 once verify_member_id answered for the card's member id"),
        FeatureDef("card_ok", "1 if the payer accepted the card's id and its member's family name and date of birth "
                              "are the current record's"),
        FeatureDef("roster_checked", "1 once lookup_member answered for the current record's family name and date "
                                     "of birth"),
        FeatureDef("roster_ok", "1 if lookup_member found an active member whose given name agrees with the "
                                "current record's (observed variants allowed)"),
        FeatureDef("coverage_missing", "1 if the form names a payer and the current record holds no active coverage "
                                       "of it with the card's or the roster's member id (on file or added)"),
        FeatureDef("coverage_count", "active coverages of the form's payer on the current record / 2"),
        FeatureDef("form_has_gp", "1 if the form names a GP practice"),
        FeatureDef("gp_missing", "1 if the form names a GP practice the current record is not actively linked to"),
        FeatureDef("form_has_guardian", "1 if the form names a guardian"),
        FeatureDef("guardian_missing", "1 if the form names a guardian the current record has no guardian contact of"),
        FeatureDef("guardian_contact_known", "1 if the current record has a guardian contact to cite (added or on "
                                             "file)"),
        FeatureDef("form_has_kin", "1 if the form names a next of kin"),
        FeatureDef("kin_missing", "1 if the form names a next of kin the current record has no next-of-kin contact of"),
        FeatureDef("consent_recorded", "1 if a treatment consent was recorded for the current record this episode"),
        FeatureDef("consent_count", "treatment consents recorded this episode (any record) / 2"),
        FeatureDef("writes", "successful writes this episode / 10"),
        FeatureDef("items_open", "items still open on the current record / 7: phone differs, address update allowed, "
                                 "coverage missing, GP link missing, guardian missing, next of kin missing, no consent"),
        FeatureDef("registration_complete", "1 if there is an active current record and no item is open on it"),
    )

    # -- episode state ----------------------------------------------------------------------
    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        self.form_id = str((brief.get("params") or {}).get("intake_form_id", ""))
        found = _TODAY.search(str(brief.get("instructions", "")))
        self.today: str | None = found.group(1) if found and parse_date(found.group(1)) else None
        self.rules_read = False
        self.form: dict[str, Any] | None = None
        self.variants: dict[str, tuple[str, ...]] = {}
        self.names_read = {"given": False, "family": False}  # get_name_variants answered, per form name
        self.results: list[dict[str, Any]] | None = None  # every search page, once the last one is read
        self.search_pages: list[dict[str, Any]] = []      # the pages read so far
        self.search_cursor: str | None = None             # the next page's cursor while pages remain
        self.matches: list[dict[str, Any]] = []
        self.holder: str | None = None  # a non-candidate result holding the form's valid identifier
        self.records: dict[str, dict[str, Any]] = {}  # patient id -> record as read, with this episode's writes
        self.opened: set[str] = set()
        self.current: str | None = None
        self.created = False
        self.create_rejected = False
        self.card: dict[str, Any] | None = None           # verify_member_id's answer
        self.rosters: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (family, dob) -> lookup_member's members
        self.consents = 0
        self.writes = 0

    # -- what was read, and what it implies --------------------------------------------------
    def _form(self, key: str) -> str:
        return str((self.form or {}).get(key) or "")

    @property
    def rec(self) -> dict[str, Any] | None:
        return self.records.get(self.current) if self.current else None

    def _active(self) -> bool:
        return self.rec is not None and self.rec.get("status") == "active"

    def _variants_pending(self) -> bool:
        if self.form is None or self.results is None:
            return False
        given, family, dob = fold(self._form("given_name")), fold(self._form("family_name")), self._form("dob")
        for r in self.results:
            if not (r.get("dob") == dob or is_transposition(str(r.get("dob", "")), dob)):
                continue
            r_given, r_family = fold(r.get("given_name")), fold(r.get("family_name"))
            if not self.names_read["given"] and r_family == family and r_given != given:
                return True
            if not self.names_read["family"] and r_family == given and r_given != family:
                return True
        return False

    def _recompute_matches(self) -> None:
        if self.form is not None and self.results is not None:
            self.matches = match_candidates(self.form, self.results, self.variants)
            holder = identifier_holder(self.form, self.results)
            match_ids = {str(m["id"]) for m in self.matches}
            self.holder = str(holder["id"]) if holder is not None and str(holder["id"]) not in match_ids else None

    def _minor(self) -> bool:
        rec = self.rec
        if not rec or not self.today or not parse_date(str(rec.get("dob", ""))):
            return False
        return age_on(rec["dob"], self.today) < MINOR_AGE

    def _card_ok(self) -> bool:
        c, rec = self.card, self.rec
        return bool(c and rec and c.get("valid") and fold(c.get("family_name")) == fold(rec.get("family_name"))
                    and c.get("dob") == rec.get("dob"))

    def _roster(self) -> list[dict[str, Any]] | None:
        rec = self.rec
        return self.rosters.get((fold(rec.get("family_name")), str(rec.get("dob")))) if rec else None

    def _roster_member(self) -> dict[str, Any] | None:
        """The member lookup_member found for the current record: the first active one whose
        given name agrees with the record's (observed variants allowed), else the first listed
        (which then fails :meth:`_roster_ok`). A look-alike (same family name and date of birth)
        may be listed before it."""
        roster, rec = self._roster(), self.rec
        if not roster:
            return None
        given = str((rec or {}).get("given_name", ""))
        return next((m for m in roster if m.get("status") == "active"
                     and given_equivalent(str(m.get("given_name", "")), given, self.variants)), roster[0])

    def _roster_ok(self) -> bool:
        m, rec = self._roster_member(), self.rec
        return bool(m and rec and m.get("status") == "active"
                    and given_equivalent(str(m.get("given_name", "")), str(rec.get("given_name", "")), self.variants))

    def _payer_coverages(self) -> list[dict[str, Any]]:
        payer = self._form("payer_id")
        return [c for c in (self.rec or {}).get("coverages", ()) if payer and c.get("payer_id") == payer
                and c.get("status") == "active"]

    def _coverage_missing(self) -> bool:
        if not self.rec or not self._form("payer_id"):
            return False
        m = self._roster_member()
        ids = {_member(self._form("member_id")), _member(m.get("member_id") if m else "")} - {""}
        return not any(_member(c.get("member_id")) in ids for c in self._payer_coverages())

    def _gp_linked(self) -> bool:
        practice = self._form("gp_practice_id")
        return bool(practice) and any(g.get("practice_id") == practice and g.get("status") == "active"
                                      for g in (self.rec or {}).get("gp_links", ()))

    def _contact(self, role: str) -> dict[str, Any] | None:
        name = self._form(f"{role}_name")
        return next((c for c in (self.rec or {}).get("contacts", ())
                     if c.get("role") == role and name and fold(c.get("name")) == fold(name)), None)

    def _contact_id(self, j: int) -> str | None:
        contacts = (self.rec or {}).get("contacts") or ()
        return str(contacts[j]["id"]) if j < len(contacts) and contacts[j].get("id") else None

    def _guardian_contact_id(self) -> str | None:
        rec = self.rec or {}
        added = [c for c in rec.get("contacts", ()) if c.get("role") == "guardian" and c.get("added")]
        on_file = self._contact("guardian")
        chosen = added[-1] if added else on_file
        return str(chosen["id"]) if chosen and chosen.get("id") else None

    def _address_differs(self) -> bool:
        rec = self.rec
        if not self.form or rec is None:
            return False
        return any(_squash(self._form(f)) != _squash(rec.get(f)) for f in ADDRESS_FIELDS)

    def _address_evidence(self) -> list[str]:
        return [str(e["id"]) for e in (self.form or {}).get("evidence", ()) if e.get("field") == "address" and e.get("id")]

    # -- grounding --------------------------------------------------------------------------
    def to_call(self, action: int) -> dict[str, Any] | None:  # noqa: C901 - one grounding per action
        """The call of an action, by its name (every tier's): a slot ``[j]`` after
        ``add_coverage[roster]`` / ``record_consent[guardian]`` cites the j-th roster member /
        contact, without one the member of :meth:`_roster_member` / the guardian contact
        (:meth:`_guardian_contact_id`)."""
        name = self.actions[action].name
        f = self._form
        if name == "get_intake_form":
            return {"tool": "get_intake_form", "args": {"intake_form_id": self.form_id}}
        if name == "get_rules":
            return {"tool": "get_rules", "args": {}}
        if name == "submit":
            return {"tool": "submit", "args": {}}
        if self.form is None:
            return None
        if name.startswith("get_name_variants["):
            which = f("given_name" if name.endswith("[given]") else "family_name")
            return {"tool": "get_name_variants", "args": {"name": which}} if which else None
        if name == "search_patients":
            args: dict[str, Any] = {"name": f"{f('given_name')} {f('family_name')}".strip(), "dob": f("dob"),
                                    "identifier": f("identifier"), "postcode": f("postcode"), "cursor": self.search_cursor}
            return {"tool": "search_patients", "args": {k: v for k, v in args.items() if v}}
        if name.startswith("get_patient["):
            i = _slot_of(name, "get_patient") or 0
            if self.results is None or i >= len(self.results):
                return None
            return {"tool": "get_patient", "args": {"patient_id": str(self.results[i]["id"])}}
        if name.startswith("create_patient"):
            create = self._create_args(name)
            return None if create is None else {"tool": "create_patient", "args": create}
        if name.startswith("refer_to_human["):
            reason = name[len("refer_to_human["):-1]
            basis = self._referral_basis(reason)
            return {"tool": "refer_to_human", "args": {"reason": reason, "basis": basis, "note": self._note(reason, basis)}}
        if name == "verify_member_id":
            if not (f("payer_id") and f("member_id")):
                return None
            return {"tool": "verify_member_id", "args": {"payer_id": f("payer_id"), "member_id": f("member_id")}}
        rec = self.rec
        if rec is None:
            return None
        pid = str(rec["id"])
        if name == "update_patient[phone]":
            return {"tool": "update_patient", "args": {"patient_id": pid, "phone": f("phone")}} if f("phone") else None
        if name == "update_patient[address]":
            if not all(f(k) for k in ADDRESS_FIELDS):
                return None
            args = {"patient_id": pid, **{k: f(k) for k in ADDRESS_FIELDS}}
            if self._address_evidence():
                args["evidence_ids"] = self._address_evidence()
            return {"tool": "update_patient", "args": args}
        if name == "lookup_member":
            if not f("payer_id") or not rec.get("family_name") or not parse_date(str(rec.get("dob", ""))):
                return None
            return {"tool": "lookup_member", "args": {"payer_id": f("payer_id"), "family_name": rec["family_name"],
                                                      "dob": rec["dob"]}}
        if name.startswith("add_coverage["):
            if name == "add_coverage[card]":
                member = _member(f("member_id"))
            else:
                j, roster = _slot_of(name, "add_coverage[roster]"), self._roster() or []
                if j is None:  # no slot: the member whose given name agrees (conclusions tier)
                    found = self._roster_member()
                    member = _member(found.get("member_id")) if found else ""
                else:
                    member = _member(roster[j].get("member_id")) if j < len(roster) else ""
            if not (f("payer_id") and member):
                return None
            return {"tool": "add_coverage", "args": {"patient_id": pid, "payer_id": f("payer_id"), "member_id": member}}
        if name == "link_gp":
            return {"tool": "link_gp", "args": {"patient_id": pid, "practice_id": f("gp_practice_id")}} if f("gp_practice_id") else None
        if name.startswith("add_contact["):
            role = name[len("add_contact["):-1]
            if not f(f"{role}_name"):
                return None
            return {"tool": "add_contact", "args": {"patient_id": pid, "role": role, "name": f(f"{role}_name"),
                                                    "relationship": f(f"{role}_relationship") or "unknown",
                                                    "phone": f(f"{role}_phone")}}
        if name == "record_consent[self]":
            return {"tool": "record_consent", "args": {"patient_id": pid, "given_by": "self"}}
        if name.startswith("record_consent[guardian]"):
            contact = _slot_of(name, "record_consent[guardian]")
            gid = self._guardian_contact_id() if contact is None else self._contact_id(contact)
            return {"tool": "record_consent", "args": {"patient_id": pid, "given_by": "guardian", "contact_id": gid}} if gid else None
        return None

    def _create_args(self, name: str) -> dict[str, Any] | None:
        """``create_patient``'s arguments (``None``: not groundable): the form's, with its
        identifier if the check digit holds and no create was rejected yet."""
        f = self._form
        args = {k: f(k) for k in CREATE_FIELDS}
        if identifier_valid(f("identifier")) and not self.create_rejected:
            args["identifier"] = f("identifier")
        return args

    def _referral_basis(self, reason: str) -> list[str]:
        """A referral's basis: the candidate records (and the identifier's holder for a conflict)."""
        ids = {str(m["id"]) for m in self.matches}
        if reason == "identity_conflict" and self.holder:
            ids.add(self.holder)
        return sorted(ids)

    def _note(self, reason: str, ids: list[str]) -> str:
        why = {"ambiguous_match": "the form matches more than one patient record and the identifier does not settle which",
               "deceased_match": "the only matching patient record is marked deceased",
               "identity_conflict": "the identifier on the form belongs to another patient record"}[reason]
        return (f"Intake form {self.form_id} handed over: {why} ({reason}). Candidate records: {', '.join(ids) or 'none'}. "
                "No records were created or changed; please confirm the patient's identity at the desk.")

    # -- observing --------------------------------------------------------------------------
    def observe(self, action: int, call: dict[str, Any], result: dict[str, Any]) -> None:  # noqa: C901
        tool = self.actions[action].tool
        ok = result.get("status") == "ok"
        got = result.get("result") if ok else None
        if tool == "create_patient" and not ok:
            self.create_rejected = True
        if not isinstance(got, dict):
            return
        args = call.get("args") or {}
        rec = self.rec
        if tool in RECORD_TOOLS or tool == "create_patient":
            self.writes += 1
        if tool == "get_intake_form":
            self.form = got
        elif tool == "get_rules":
            self.rules_read = True
        elif tool == "get_name_variants":
            self.variants[fold(str(got.get("name", "")))] = tuple(got.get("variants") or ())
            self.names_read["given" if self.actions[action].name.endswith("[given]") else "family"] = True
        elif tool == "search_patients":  # pages accumulate; the results are known once the last page is read
            self.search_pages += list(got.get("results") or ())
            self.search_cursor = got.get("next_cursor") or None
            if self.search_cursor is None:
                self.results = self.search_pages
        elif tool == "get_patient":
            pid = str(got.get("id", ""))
            self.records[pid] = {**got, "contacts": [dict(c) for c in got.get("contacts") or ()], "consents_written": 0}
            self.opened.add(pid)
            self.current = pid
        elif tool == "create_patient":
            pid = str(got.get("id", ""))
            self.records[pid] = {**got, "coverages": [], "contacts": [], "consents": [], "gp_links": [], "consents_written": 0}
            self.current = pid
            self.created = True
        elif tool == "verify_member_id":
            self.card = got
        elif rec is None:
            pass
        elif tool == "update_patient":
            rec.update({k: v for k, v in got.items() if k not in ("coverages", "contacts", "consents", "gp_links")})
        elif tool == "add_coverage":
            rec.setdefault("coverages", []).append(got)
        elif tool == "lookup_member":
            self.rosters[(fold(args.get("family_name")), str(args.get("dob")))] = list(got.get("members") or ())
        elif tool == "link_gp":
            links = [{**g, "status": "ended"} if g.get("status") == "active" else g for g in rec.get("gp_links", ())]
            rec["gp_links"] = [*links, got]
        elif tool == "add_contact":
            rec.setdefault("contacts", []).append({**got, "added": True})
        elif tool == "record_consent":
            rec["consent_recorded"] = True
            rec["consents_written"] = int(rec.get("consents_written", 0)) + 1
            self.consents += 1
        self._after_observe(tool)

    def _after_observe(self, tool: str) -> None:
        """Run after every successful observation: the candidates follow the form, the
        variants and the search."""
        if tool in ("get_intake_form", "search_patients", "get_name_variants"):
            self._recompute_matches()

    # -- mask and features ------------------------------------------------------------------
    def mask(self) -> np.ndarray:
        """Legality only (see the module docstring): a call that cannot be formed, a repeated
        read whose answer is known, or a write the tool is certain to reject (a locked record, a
        GP link it already holds, a guardian consent citing a contact that is not a guardian)."""
        m = np.zeros(len(self.actions), dtype=bool)
        form = self.form is not None
        active = self._active()
        contacts = (self.rec or {}).get("contacts") or ()
        for i, a in enumerate(self.actions):
            name = a.name
            if name == "get_intake_form":
                m[i] = not form
            elif name == "get_rules":
                # the rule file is the domain's fixed one (the features encode it): once today's
                # date is known (the brief gives it) the read's answer is known
                m[i] = not self.rules_read and self.today is None
            elif name == "search_patients":
                m[i] = form and self.results is None
            elif name.startswith("get_name_variants["):
                which = "given" if name.endswith("[given]") else "family"
                m[i] = form and not self.names_read[which] and self.to_call(i) is not None
            elif name.startswith("get_patient["):
                k = _slot_of(name, "get_patient") or 0
                m[i] = self.results is not None and k < len(self.results) and str(self.results[k]["id"]) not in self.opened
            elif a.tool in ("create_patient", "refer_to_human"):
                m[i] = form and self.to_call(i) is not None
            elif name == "verify_member_id":
                m[i] = form and self.card is None and self.to_call(i) is not None
            elif name == "lookup_member":
                m[i] = self.rec is not None and self._roster() is None and self.to_call(i) is not None
            elif a.tool in RECORD_TOOLS:
                m[i] = active and self.to_call(i) is not None
                if name == "link_gp":
                    m[i] = m[i] and not self._gp_linked()
                elif name.startswith("record_consent[guardian]["):
                    j = _slot_of(name, "record_consent[guardian]") or 0
                    m[i] = m[i] and j < len(contacts) and contacts[j].get("role") == "guardian"
            elif name == "submit":
                m[i] = True
        return m

    def feature_vector(self) -> np.ndarray:
        rec, n = self.rec, len(self.matches)
        searched = self.form is not None and self.results is not None
        form_given, form_family, form_dob = self._form("given_name"), self._form("family_name"), self._form("dob")
        ident = digits(self._form("identifier")) if identifier_valid(self._form("identifier")) else ""
        match_ids = {str(r["id"]) for r in self.matches}
        values: dict[str, float] = {
            "form_read": self.form is not None,
            "today_known": self.today is not None,
            "searched": searched,
            "n_results": scale(len(self.results or ()), N_SLOTS),
            "variants_pending": self._variants_pending(),
        }
        for i in range(N_SLOTS):
            r = (self.results or [])[i] if searched and i < len(self.results or ()) else None
            row = {
                "names_agree": r is not None and names_agree(form_given, form_family, str(r.get("given_name", "")),
                                                             str(r.get("family_name", "")), self.variants),
                "dob_same": r is not None and r.get("dob") == form_dob,
                "dob_swapped": r is not None and is_transposition(str(r.get("dob", "")), form_dob),
                "identifier_same": r is not None and bool(ident) and r.get("identifier") == ident,
                "deceased": r is not None and r.get("status") != "active",
                "match": r is not None and str(r["id"]) in match_ids,
            }
            values.update({f"slot[{i}].{k}": v for k, v in row.items()})
        values.update({
            "match_none": searched and n == 0,
            "match_one": n == 1,
            "match_many": n > 1,
            "match_deceased": n == 1 and self.matches[0].get("status") != "active",
            "identifier_conflict": searched and self.holder is not None,
            "patient_known": rec is not None,
            "patient_created": self.created,
            "create_rejected": self.create_rejected,
            "current_is_match": rec is not None and str(rec.get("id")) in match_ids,
            "current_not_active": rec is not None and rec.get("status") != "active",
            "minor": self._minor(),
            "phone_differs": rec is not None and bool(self._form("phone"))
                             and phone_key(self._form("phone")) != phone_key(rec.get("phone")),
            "address_differs": self._address_differs(),
            "address_verified": rec is not None and "address" in (rec.get("verified") or ()),
            "address_evidence": bool(self._address_evidence()),
            "form_has_payer": bool(self._form("payer_id")),
            "card_checked": self.card is not None,
            "card_ok": self._card_ok(),
            "roster_checked": self._roster() is not None,
            "roster_ok": self._roster_ok(),
            "coverage_missing": self._coverage_missing(),
            "coverage_count": scale(len(self._payer_coverages()), 2),
            "form_has_gp": bool(self._form("gp_practice_id")),
            "gp_missing": rec is not None and bool(self._form("gp_practice_id")) and not self._gp_linked(),
            "form_has_guardian": bool(self._form("guardian_name")),
            "guardian_missing": rec is not None and bool(self._form("guardian_name")) and self._contact("guardian") is None,
            "guardian_contact_known": self._guardian_contact_id() is not None,
            "form_has_kin": bool(self._form("next_of_kin_name")),
            "kin_missing": rec is not None and bool(self._form("next_of_kin_name")) and self._contact("next_of_kin") is None,
            "consent_recorded": bool(rec and rec.get("consent_recorded")),
            "consent_count": scale(self.consents, 2),
            "writes": scale(self.writes, 10),
        })
        values["address_update_allowed"] = values["address_differs"] and (
            not values["address_verified"] or values["address_evidence"])
        open_items = [values[k] for k in ("phone_differs", "address_update_allowed", "coverage_missing", "gp_missing",
                                          "guardian_missing", "kin_missing")] + [rec is not None and not values["consent_recorded"]]
        values["items_open"] = scale(sum(map(bool, open_items)), 7)
        values["registration_complete"] = self._active() and not any(open_items)
        return np.array([float(values[d.name]) for d in self.features], dtype=np.float32)


def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
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
