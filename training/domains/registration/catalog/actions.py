"""Every action of every registration tier: how it grounds one native call from the desk and when
it is legal.

**The mask expresses legality only.** An action is masked when its call cannot be formed from
what was read (an empty search slot, no record to write to, a form field the call needs is
blank, no guardian contact to cite), when it repeats a read whose answer is known (the form, the
rules once today's date is known, a search, a name's variants, a record already opened, a card
already checked, a roster already looked up), or when the tool is certain to reject it (a write
to a record whose status is not active; a GP link the record already holds; a guardian consent
citing a contact that is not a guardian). Every judgement is the agent's: which search result is
the form's person, create vs open vs refer and the referral's reason, which fields to update,
which member id to add, which contacts, who consents, and when to stop. Repeating a write is
never masked.

Writes act on the current record. Their arguments are filled from observations: the form's
values, the address evidence on the form (cited whenever present), the card's member id, the
roster's member id, the guardian contact added or on file. A referral's note is a fixed template
naming the reason and the records its ``basis`` cites: in the conclusions tier the candidates the
matching rule accepts (plus, for an identity conflict, the result holding the form's
identifier), in the other tiers the search results opened this episode.
"""

from __future__ import annotations

from typing import Any

from backoffice.envs.registration.tables import ADDRESS_FIELDS, identifier_valid, parse_date
from backoffice.training.catalog.features import Actions
from backoffice.training.domains.registration.catalog.desk import (
    CREATE_FIELDS,
    N_CONTACTS,
    N_ROSTER,
    N_SLOTS,
    REFER_REASONS,
    RegistrationDesk,
    member,
)

ACTIONS: Actions[RegistrationDesk] = Actions()

Call = dict[str, Any] | None


def _formed(ground: Any) -> Any:
    """The legality of an action that needs the form read and its call formed."""
    return lambda d, *a: d.form is not None and ground(d, *a) is not None


# -- reads --------------------------------------------------------------------------------------------
@ACTIONS.action("get_intake_form", "get_intake_form", "Read the task's intake form (with its evidence documents).",
                legal=lambda d: d.form is None)
def get_intake_form(desk: RegistrationDesk) -> Call:
    return {"tool": "get_intake_form", "args": {"intake_form_id": desk.form_id}}


# the rule file is the domain's fixed one (the features encode it): once today's date is known
# (the brief gives it) the read's answer is known
@ACTIONS.action("get_rules", "get_rules",
                "Read the rule file and today's date (masked as a known answer once the brief gave the date).",
                legal=lambda d: not d.rules_read and d.today is None)
def get_rules(desk: RegistrationDesk) -> Call:
    return {"tool": "get_rules", "args": {}}


@ACTIONS.action("search_patients", "search_patients",
                "Search the index with the form's name, date of birth, identifier (if any) and postcode; while the last "
                "page returned a next_cursor, read the next page.", legal=lambda d: d.form is not None and d.results is None)
def search_patients(desk: RegistrationDesk) -> Call:
    if desk.form is None:
        return None
    f = desk.form_value
    args: dict[str, Any] = {"name": f"{f('given_name')} {f('family_name')}".strip(), "dob": f("dob"),
                            "identifier": f("identifier"), "postcode": f("postcode"), "cursor": desk.search_cursor}
    return {"tool": "search_patients", "args": {k: v for k, v in args.items() if v}}


def _variants(which: str) -> tuple[Any, Any]:
    field = "given_name" if which == "given" else "family_name"

    def ground(desk: RegistrationDesk) -> Call:
        if desk.form is None:
            return None
        name = desk.form_value(field)
        return {"tool": "get_name_variants", "args": {"name": name}} if name else None

    return ground, lambda d: d.form is not None and not d.names_read[which] and ground(d) is not None


_g, _l = _variants("given")
ACTIONS.action("get_name_variants[given]", "get_name_variants", "Read the variants of the form's given name.", legal=_l)(_g)
_g, _l = _variants("family")
ACTIONS.action("get_name_variants[family]", "get_name_variants", "Read the variants of the form's family name (a given "
               "name when the form swapped them).", legal=_l)(_g)


def _open_legal(desk: RegistrationDesk, i: int) -> bool:
    results = desk.results
    return results is not None and i < len(results) and str(results[i]["id"]) not in desk.opened


@ACTIONS.family("get_patient[{i}]", N_SLOTS, "get_patient",
                "Open the {i}-th search result; it becomes the current record the writes act on.", legal=_open_legal)
def get_patient(desk: RegistrationDesk, i: int) -> Call:
    if desk.form is None or desk.results is None or i >= len(desk.results):
        return None
    return {"tool": "get_patient", "args": {"patient_id": str(desk.results[i]["id"])}}


# -- create and refer ------------------------------------------------------------------------------
def _create(identifier: str) -> Any:
    """``create_patient`` with the form's fields; ``identifier``: ``"checked"`` (the form's if its
    check digit holds and no create was rejected yet), ``"with"`` (as written; not groundable
    without one) or ``"without"``."""
    def ground(desk: RegistrationDesk) -> Call:
        if desk.form is None:
            return None
        f = desk.form_value
        args = {k: f(k) for k in CREATE_FIELDS}
        if identifier == "checked":
            if identifier_valid(f("identifier")) and not desk.create_rejected:
                args["identifier"] = f("identifier")
        elif identifier == "with":
            if not f("identifier"):
                return None
            args["identifier"] = f("identifier")
        return {"tool": "create_patient", "args": args}
    return ground


for _name, _how, _doc in (
        ("create_patient", "checked", "Create a record from the form (its identifier only if the check digit holds and no "
                                      "create was rejected yet); it becomes the current record."),
        ("create_patient[with_identifier]", "with", "Create a record from the form, with the form's identifier as "
                                                    "written; it becomes the current record."),
        ("create_patient[without_identifier]", "without", "Create a record from the form, leaving the identifier out; it "
                                                          "becomes the current record.")):
    _g = _create(_how)
    ACTIONS.action(_name, "create_patient", _doc, legal=_formed(_g))(_g)

_WHY = {"ambiguous_match": "the form matches more than one patient record and the identifier does not settle which",
        "deceased_match": "the only matching patient record is marked deceased",
        "identity_conflict": "the identifier on the form belongs to another patient record"}


def _refer(reason: str, cites: str) -> Any:
    """A referral for ``reason`` whose basis is the candidates (``cites="candidates"``: and the
    identifier's holder for a conflict) or the results opened this episode (``"opened"``)."""
    def ground(desk: RegistrationDesk) -> Call:
        if desk.form is None:
            return None
        if cites == "candidates":
            ids = {str(m["id"]) for m in desk.matches}
            if reason == "identity_conflict" and desk.holder:
                ids.add(desk.holder)
        else:
            ids = desk.opened & {str(r["id"]) for r in desk.results or ()}
        basis = sorted(ids)
        note = (f"Intake form {desk.form_id} handed over: {_WHY[reason]} ({reason}). Candidate records: "
                f"{', '.join(basis) or 'none'}. No records were created or changed; please confirm the patient's "
                "identity at the desk.")
        return {"tool": "refer_to_human", "args": {"reason": reason, "basis": basis, "note": note}}
    return ground


for _r in REFER_REASONS:
    _g = _refer(_r, "candidates")
    ACTIONS.action(f"refer_to_human[{_r}]", "refer_to_human",
                   f"Hand the form over as {_r.replace('_', ' ').replace('match', 'match')} (basis and template note: "
                   f"{'the record holding the form identifier and ' if _r == 'identity_conflict' else ''}the matching "
                   "records).", legal=_formed(_g))(_g)
    _g = _refer(_r, "opened")
    ACTIONS.action(f"opened:refer_to_human[{_r}]", "refer_to_human",
                   f"Hand the form over ({_r}); basis: the search results opened this episode; template note.",
                   legal=_formed(_g))(_g)


# -- writes on the current record --------------------------------------------------------------------
def _writable(ground: Any) -> Any:
    """A write's legality: an active current record and a formed call."""
    return lambda d, *a: d.active() and ground(d, *a) is not None


def _on_record(fn: Any) -> Any:
    """A write's grounding: ``fn(desk, patient_id, *args)`` once the form is read and there is a
    current record."""
    def ground(desk: RegistrationDesk, *args: Any) -> Call:
        rec = desk.rec
        if desk.form is None or rec is None:
            return None
        return fn(desk, str(rec["id"]), *args)
    return ground


def _phone(desk: RegistrationDesk, pid: str) -> Call:
    phone = desk.form_value("phone")
    return {"tool": "update_patient", "args": {"patient_id": pid, "phone": phone}} if phone else None


def _address(desk: RegistrationDesk, pid: str) -> Call:
    f = desk.form_value
    if not all(f(k) for k in ADDRESS_FIELDS):
        return None
    args: dict[str, Any] = {"patient_id": pid, **{k: f(k) for k in ADDRESS_FIELDS}}
    if desk.address_evidence():
        args["evidence_ids"] = desk.address_evidence()
    return {"tool": "update_patient", "args": args}


def _verify(desk: RegistrationDesk) -> Call:
    f = desk.form_value
    if desk.form is None or not (f("payer_id") and f("member_id")):
        return None
    return {"tool": "verify_member_id", "args": {"payer_id": f("payer_id"), "member_id": f("member_id")}}


def _lookup(desk: RegistrationDesk, pid: str) -> Call:
    rec, payer = desk.rec or {}, desk.form_value("payer_id")
    if not payer or not rec.get("family_name") or not parse_date(str(rec.get("dob", ""))):
        return None
    return {"tool": "lookup_member", "args": {"payer_id": payer, "family_name": rec["family_name"], "dob": rec["dob"]}}


def _coverage(desk: RegistrationDesk, pid: str, member_id: str) -> Call:
    payer = desk.form_value("payer_id")
    if not (payer and member_id):
        return None
    return {"tool": "add_coverage", "args": {"patient_id": pid, "payer_id": payer, "member_id": member_id}}


def _cover_card(desk: RegistrationDesk, pid: str) -> Call:
    return _coverage(desk, pid, member(desk.form_value("member_id")))


def _cover_roster_member(desk: RegistrationDesk, pid: str) -> Call:
    found = desk.roster_member()
    return _coverage(desk, pid, member(found.get("member_id")) if found else "")


def _cover_roster_slot(desk: RegistrationDesk, pid: str, j: int) -> Call:
    roster = desk.roster() or []
    return _coverage(desk, pid, member(roster[j].get("member_id")) if j < len(roster) else "")


def _link_gp(desk: RegistrationDesk, pid: str) -> Call:
    practice = desk.form_value("gp_practice_id")
    return {"tool": "link_gp", "args": {"patient_id": pid, "practice_id": practice}} if practice else None


def _add_contact(role: str) -> Any:
    def fn(desk: RegistrationDesk, pid: str) -> Call:
        f = desk.form_value
        if not f(f"{role}_name"):
            return None
        return {"tool": "add_contact", "args": {"patient_id": pid, "role": role, "name": f(f"{role}_name"),
                                                "relationship": f(f"{role}_relationship") or "unknown",
                                                "phone": f(f"{role}_phone")}}
    return fn


def _consent_self(desk: RegistrationDesk, pid: str) -> Call:
    return {"tool": "record_consent", "args": {"patient_id": pid, "given_by": "self"}}


def _consent_guardian(desk: RegistrationDesk, pid: str, *slot: int) -> Call:
    gid = desk.guardian_contact_id() if not slot else desk.contact_id(slot[0])
    return {"tool": "record_consent", "args": {"patient_id": pid, "given_by": "guardian", "contact_id": gid}} if gid else None


_WRITES: tuple[tuple[str, str, Any, str], ...] = (
    ("update_patient[phone]", "update_patient", _phone, "Set the current record's phone to the form's."),
    ("update_patient[address]", "update_patient", _address,
     "Set the current record's address to the form's, citing the form's address evidence if any."),
)
for _name, _tool, _fn, _doc in _WRITES:
    _g = _on_record(_fn)
    ACTIONS.action(_name, _tool, _doc, legal=_writable(_g))(_g)

ACTIONS.action("verify_member_id", "verify_member_id", "Check the card's member id with the form's payer.",
               legal=lambda d: d.form is not None and d.card is None and _verify(d) is not None)(_verify)
_lookup_call = _on_record(_lookup)


def _lookup_legal(desk: RegistrationDesk) -> bool:
    return desk.rec is not None and desk.roster() is None and _lookup_call(desk) is not None


ACTIONS.action("lookup_member", "lookup_member",
               "Find the form's payer's members with the current record's family name and date of birth.",
               legal=_lookup_legal)(_lookup_call)
_g = _on_record(_cover_card)
ACTIONS.action("add_coverage[card]", "add_coverage",
               "Add the form's payer to the current record with the member id written on the card.", legal=_writable(_g))(_g)
_g = _on_record(_cover_roster_member)
ACTIONS.action("add_coverage[roster]", "add_coverage",
               "Add the form's payer to the current record with the member id of the active member lookup_member found "
               "whose given name agrees with the record's.", legal=_writable(_g))(_g)
_g = _on_record(_cover_roster_slot)
ACTIONS.family("add_coverage[roster][{i}]", N_ROSTER, "add_coverage",
               "Add the form's payer to the current record with the member id of lookup_member's {i}-th member.",
               legal=_writable(_g))(_g)
_link_call = _on_record(_link_gp)


def _link_legal(desk: RegistrationDesk) -> bool:
    return desk.active() and _link_call(desk) is not None and not desk.gp_linked()


ACTIONS.action("link_gp", "link_gp", "Link the current record to the form's GP practice.", legal=_link_legal)(_link_call)
for _role, _doc in (("guardian", "Add the form's guardian as a guardian contact."),
                    ("next_of_kin", "Add the form's next of kin as a next-of-kin contact.")):
    _g = _on_record(_add_contact(_role))
    ACTIONS.action(f"add_contact[{_role}]", "add_contact", _doc, legal=_writable(_g))(_g)
_g = _on_record(_consent_self)
ACTIONS.action("record_consent[self]", "record_consent", "Record the form's treatment consent as given by the patient.",
               legal=_writable(_g))(_g)
_g = _on_record(_consent_guardian)
ACTIONS.action("record_consent[guardian]", "record_consent",
               "Record the form's treatment consent as given by the current record's guardian contact (the one added "
               "this episode, else the one on file with the form's guardian name).", legal=_writable(_g))(_g)


def _consent_slot_legal(desk: RegistrationDesk, j: int, ground: Any = _g) -> bool:
    contacts = (desk.rec or {}).get("contacts") or ()
    return desk.active() and ground(desk, j) is not None and j < len(contacts) and contacts[j].get("role") == "guardian"


ACTIONS.family("record_consent[guardian][{i}]", N_CONTACTS, "record_consent",
               "Record the form's treatment consent as given by the current record's {i}-th contact (masked unless it is "
               "a guardian contact).", legal=_consent_slot_legal)(_g)


@ACTIONS.action("submit", "submit", "Finish: the registration is complete as it stands.")
def submit(desk: RegistrationDesk) -> Call:
    return {"tool": "submit", "args": {}}



__all__ = ["ACTIONS"]
