"""Tables, reference data and identity helpers of the registration domain.

Tables of a registration snapshot (every row has a string ``id``):

``patients``
    ``identifier`` (10 digits, the last a mod-11 check digit; ``""`` if unknown), ``given_name``,
    ``family_name``, ``dob`` (ISO date), ``sex`` (``F``/``M``/``X``), ``address_line``, ``city``,
    ``postcode``, ``phone``, ``status`` (``active`` / ``deceased``), ``date_of_death``,
    ``verified`` (field names checked against a document: ``identifier``, ``given_name``,
    ``family_name``, ``dob``, ``address``), ``registered_at``, ``updated_at``.
``coverages``
    ``patient_id``, ``payer_id``, ``member_id``, ``status`` (``active`` / ``ended``), ``start_date``.
``contacts``
    ``patient_id``, ``role`` (``guardian`` / ``next_of_kin``), ``name``, ``relationship``, ``phone``.
``consents``
    ``patient_id``, ``intake_form_id``, ``kind`` (``treatment``), ``given_by`` (``self`` /
    ``guardian``), ``contact_id`` (the guardian contact, or ``""``), ``recorded_at``.
``gp_links``
    ``patient_id``, ``practice_id``, ``status`` (``active`` / ``ended``), ``linked_at``, ``ended_at``.
``practices``
    GP practices: ``name``, ``city``.
``payers``
    Insurers: ``name``, ``member_prefix`` (member ids are the prefix + 8 digits, the last a Luhn
    check digit).
``member_roster``
    The payers' eligibility lists (consulted by ``verify_member_id`` / ``lookup_member``, never
    returned whole): ``payer_id``, ``member_id``, ``given_name``, ``family_name``, ``dob``, ``status``.
``intake_forms``
    What the patient wrote at the desk (see :data:`FORM_FIELDS`), ``received_at``, ``status``.
``evidence``
    Documents seen at the desk: ``intake_form_id``, ``field`` (which verified field it supports,
    e.g. ``address``), ``kind``, ``detail``.
``referrals``
    Hand-overs to a human: ``intake_form_id``, ``reason``, ``note``, ``status``, ``created_at``.
``notifications``
    Queued letters and worklist messages: ``kind``, ``ref_id``, ``channel``, ``status``, ``created_at``.
``task_timers``
    Running timers (e.g. a referral's pick-up deadline): ``kind``, ``ref_id``, ``due_at``, ``status``.
``rules``
    The registration rule file: ``title``, ``text`` (rule ids are the row ids, see :data:`RULES`).
``clock``
    One row ``{"id": "clock", "now": ISO datetime}``.
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache

#: the tables of a registration world (every snapshot also has the engine's ``clock``); the
#: ``Domain`` declaration names them
TABLES = (
    "patients", "coverages", "contacts", "consents", "gp_links", "practices", "payers",
    "member_roster", "intake_forms", "evidence", "referrals", "notifications", "task_timers",
    "rules",
)

#: Id prefixes of rows created by tools (``Store.next_id``) and by the generator.
PREFIX = {
    "patients": "PAT", "coverages": "COV", "contacts": "CON", "consents": "CNS", "gp_links": "GPL",
    "intake_forms": "INT", "evidence": "EVD", "referrals": "REF", "notifications": "NTF",
    "task_timers": "TMR", "member_roster": "MBR",
}

ADDRESS_FIELDS = ("address_line", "city", "postcode")
DEMOGRAPHIC_FIELDS = ("identifier", "given_name", "family_name", "dob", "sex", *ADDRESS_FIELDS, "phone")
FORM_FIELDS = (
    *DEMOGRAPHIC_FIELDS, "previous_address", "payer_id", "member_id", "gp_practice_id",
    "guardian_name", "guardian_relationship", "guardian_phone",
    "next_of_kin_name", "next_of_kin_relationship", "next_of_kin_phone", "consent_signed_by", "notes",
)

MINOR_AGE = 16

REFERRAL_REASONS = ("ambiguous_match", "deceased_match", "identity_conflict", "other")
#: outcome class of a task -> the referral reason it needs (classes not listed need no referral)
REFER_CLASSES = {"refer_ambiguous": "ambiguous_match", "refer_deceased": "deceased_match", "refer_conflict": "identity_conflict"}

#: The rule file. Row ids are the rule ids that grades report in ``rule_violations``.
RULES = (
    ("R-SEARCH-FIRST", "Search before create",
     "Call search_patients for the person on the form before create_patient. Creating a record without a search breaks this rule."),
    ("R-NO-DUPLICATE", "No duplicate patient",
     "Never create a record for a person who already has one. The form's person is the same as a record when "
     "the names agree (the same given and family name, allowing a listed name variant of the given name, see "
     "get_name_variants, and allowing given and family name written the wrong way round) and the date of birth "
     "is the same. A date of birth that differs only by two swapped digits also agrees when the form's identifier "
     "is valid and equals the record's identifier. Look-alikes who differ in given name or date of birth "
     "(siblings, twins, parents at the same address) are different people."),
    ("R-MINOR-GUARDIAN", "Minors need a guardian",
     f"A patient under {MINOR_AGE} on today's date needs a guardian contact (add_contact role=guardian) and the "
     "treatment consent must be given by that guardian (record_consent given_by=guardian with its contact_id)."),
    ("R-COVERAGE-ID", "Coverage needs a valid member id",
     "Add a coverage only with a member id that verify_member_id accepts for this patient. A member id that fails "
     "its check digit is a typo: find the patient's real member id with lookup_member and use that one."),
    ("R-VERIFIED-FIELD", "Never overwrite a verified field without evidence",
     "Fields listed in a record's 'verified' were checked against a document. Change one only when the intake form "
     "carries evidence for it, and cite that evidence in update_patient's evidence_ids. Identifier, names and date "
     "of birth of an existing record are never changed from a form at the desk."),
    ("R-REFER-MATCH", "Refer an ambiguous or deceased match",
     "If more than one record matches the form and the identifier does not settle it (reason ambiguous_match), or "
     "the matching record is deceased (reason deceased_match), change nothing and hand the form over with "
     "refer_to_human(reason, basis, note): basis lists exactly the candidate records (patient ids) that block the "
     "registration; the note names the reason, the candidate records and what was (not) done."),
    ("R-IDENTITY-CONFLICT", "Refer an identifier held by another record",
     "A valid identifier on the form that belongs to a record other than the form's person (a record the names and "
     "date of birth do not match) is an identity conflict, whether or not the form's person has a record: change "
     "nothing and refer (reason identity_conflict) with basis listing the record holding the identifier and the "
     "record(s) the form matches, if any. An identifier that fails its check digit is a typo: ignore it."),
    ("R-REGISTRATION-SET", "A complete registration",
     "A registered patient ends with: the record (created or brought up to date: current address and phone), the "
     "form's coverage, an active link to the form's GP practice, the contacts the form lists (one each, no "
     "repeats of contacts already on file) and one treatment consent for this intake form."),
)

#: Name variants: each group is a formal name with its common short forms.
NAME_GROUPS = (
    ("William", "Bill", "Will", "Billy", "Liam"), ("Robert", "Bob", "Rob", "Bobby"),
    ("Elizabeth", "Liz", "Beth", "Betty", "Eliza"), ("Margaret", "Maggie", "Peggy", "Meg"),
    ("Katherine", "Kate", "Katie", "Kathy"), ("James", "Jim", "Jimmy", "Jamie"),
    ("Michael", "Mike", "Mick"), ("Richard", "Rick", "Dick", "Rich"), ("Thomas", "Tom", "Tommy"),
    ("Joseph", "Joe", "Joey"), ("Jennifer", "Jen", "Jenny"), ("Alexander", "Alex", "Sandy"),
    ("Christopher", "Chris", "Kit"), ("Daniel", "Dan", "Danny"), ("Edward", "Ed", "Eddie", "Ted"),
    ("Patricia", "Pat", "Trish", "Patty"), ("Susan", "Sue", "Susie"), ("Rebecca", "Becky", "Becca"),
    ("Anthony", "Tony"), ("Matthew", "Matt"), ("Nicholas", "Nick", "Nicky"), ("Samuel", "Sam", "Sammy"),
    ("Samantha", "Sam", "Sammy"), ("Benjamin", "Ben", "Benny"), ("Victoria", "Vicky", "Tori"),
    ("Deborah", "Debbie", "Deb"), ("Abigail", "Abby", "Gail"), ("Jonathan", "Jon", "Jonny"),
    ("Andrew", "Andy", "Drew"), ("Charlotte", "Lottie", "Charlie"), ("Henry", "Harry", "Hal"),
    ("Frederick", "Fred", "Freddie"), ("Isabella", "Izzy", "Bella"), ("Eleanor", "Ellie", "Nora"),
    ("Stephen", "Steve"), ("Timothy", "Tim"), ("Gregory", "Greg"), ("Dorothy", "Dot", "Dottie"),
)

#: Given names without a listed variant.
PLAIN_GIVEN = (
    "Priya", "Amara", "Tariq", "Sofia", "Lucas", "Mei", "Omar", "Zara", "Ines", "Kofi", "Noah",
    "Leila", "Ravi", "Yusuf", "Freya", "Anika", "Mateo", "Hana", "Ivan", "Chloe", "Aiden", "Nadia",
)
FEMALE = {
    "Elizabeth", "Margaret", "Katherine", "Jennifer", "Patricia", "Susan", "Rebecca", "Samantha",
    "Victoria", "Deborah", "Abigail", "Charlotte", "Isabella", "Eleanor", "Dorothy", "Priya", "Amara",
    "Sofia", "Mei", "Zara", "Ines", "Leila", "Freya", "Anika", "Hana", "Chloe", "Nadia",
}
FAMILY_NAMES = (
    "Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Johnson", "Davies", "Patel", "Khan",
    "Robinson", "Wright", "Thompson", "Evans", "Walker", "White", "Roberts", "Green", "Hall", "Wood",
    "Jackson", "Clarke", "Lopez", "Nguyen", "Okafor", "Kowalski", "Murphy", "Singh", "Ahmed", "Fischer",
    "Moreau", "Rossi", "Novak", "Haddad", "Mensah", "Larsen", "Costa", "Byrne", "Ali", "Chen",
)
STREETS = (
    "Mill Lane", "Church Street", "Station Road", "Victoria Road", "Park Avenue", "Queens Road",
    "Grange Close", "Orchard Way", "Kingsway", "Alder Grove", "Riverside Walk", "Elm Terrace",
    "Harbour View", "Castle Street", "Willow Crescent", "Beacon Hill",
)
CITIES = (("Northfield", "NF"), ("Easton", "ES"), ("Westbury", "WB"), ("Southam", "SM"))
PRACTICES = (
    ("GPP-101", "Riverside Surgery", "Northfield"), ("GPP-102", "Castle Medical Centre", "Northfield"),
    ("GPP-201", "Easton Health Centre", "Easton"), ("GPP-202", "Orchard Family Practice", "Easton"),
    ("GPP-301", "Westbury Group Practice", "Westbury"), ("GPP-401", "Southam Green Surgery", "Southam"),
)
PAYERS = (
    ("PAY-NWH", "Northwind Health", "NW"), ("PAY-BLC", "Bluecross Mutual", "BC"),
    ("PAY-CIV", "Civic Health Fund", "CV"), ("PAY-MER", "Meridian Assurance", "MR"),
)
RELATIONSHIPS_GUARDIAN = ("mother", "father", "grandmother", "grandfather", "legal guardian", "aunt", "uncle")
RELATIONSHIPS_KIN = ("spouse", "partner", "daughter", "son", "sister", "brother", "friend")
#: relationship terms that name the contact's sex (the contact's given name must agree)
FEMALE_TERMS = frozenset({"mother", "grandmother", "aunt", "daughter", "sister", "wife"})
MALE_TERMS = frozenset({"father", "grandfather", "uncle", "son", "brother", "husband"})
#: kin terms for a contact of the given sex ("F" / "M")
KIN_TERMS = {"F": ("spouse", "partner", "daughter", "sister", "friend"), "M": ("spouse", "partner", "son", "brother", "friend")}
GUARDIAN_TERMS = {"F": ("mother", "grandmother", "aunt", "legal guardian"), "M": ("father", "grandfather", "uncle", "legal guardian")}


def sex_of_given(name: str) -> str:
    """The sex the name lists put a given name under (``F`` / ``M``)."""
    first = str(name or "").split(" ")[0]
    return "F" if first in FEMALE else "M"


def relationship_consistent(relationship: str, contact_name: str) -> bool:
    """Whether a relationship term agrees with the contact's given name (a son is not Leila)."""
    sex = sex_of_given(contact_name)
    rel = fold(relationship)
    return not ((rel in FEMALE_TERMS and sex != "F") or (rel in MALE_TERMS and sex != "M"))


# -- name variants ---------------------------------------------------------------------------
def _variant_index() -> dict[str, tuple[str, ...]]:
    index: dict[str, set[str]] = {}
    for group in NAME_GROUPS:
        for name in group:
            index.setdefault(name.casefold(), set()).update(n for n in group if n != name)
    return {k: tuple(sorted(v)) for k, v in sorted(index.items())}


VARIANTS: dict[str, tuple[str, ...]] = _variant_index()


def name_variants(name: str) -> tuple[str, ...]:
    """The listed variants of a given name (empty when it has none)."""
    return VARIANTS.get(fold(name), ())


# -- normalisation ---------------------------------------------------------------------------
@lru_cache(maxsize=1 << 16)
def _fold_str(text: str) -> str:
    return " ".join(text.split()).casefold()


def fold(text: str | None) -> str:
    """Case- and space-insensitive form of a name or address part (cached for strings: tools
    and the grader fold the same few names over and over)."""
    if type(text) is str:
        return _fold_str(text)
    return " ".join(str(text or "").split()).casefold()


_NON_DIGIT = re.compile(r"\D")


@lru_cache(maxsize=1 << 16)
def _digits_str(text: str) -> str:
    return _NON_DIGIT.sub("", text)


def digits(text: str | None) -> str:
    """Only the digits of ``text`` (identifiers and phone numbers are compared this way)."""
    if type(text) is str:
        return _digits_str(text)
    return _NON_DIGIT.sub("", str(text or ""))


def given_equivalent(a: str, b: str, variants: dict[str, tuple[str, ...]] | None = None) -> bool:
    """Whether two given names are the same or listed variants of each other."""
    table = VARIANTS if variants is None else variants
    fa, fb = fold(a), fold(b)
    if not fa or not fb:
        return False
    return fa == fb or fb in {fold(v) for v in table.get(fa, ())} or fa in {fold(v) for v in table.get(fb, ())}


# -- check digits ----------------------------------------------------------------------------
def identifier_check_digit(first9: str) -> int | None:
    """Mod-11 check digit of nine digits (weights 10..2); ``None`` when the number is unusable."""
    total = sum(int(d) * w for d, w in zip(first9, range(10, 1, -1)))
    check = 11 - total % 11
    if check == 11:
        return 0
    return None if check == 10 else check


def identifier_valid(text: str | None) -> bool:
    """Whether ``text`` (spaces allowed) is a 10-digit identifier (ASCII digits) with a correct
    check digit."""
    if type(text) is str:
        return _identifier_valid_str(text)
    return _identifier_valid(text)


@lru_cache(maxsize=1 << 14)
def _identifier_valid_str(text: str) -> bool:
    return _identifier_valid(text)


def _identifier_valid(text: str | None) -> bool:
    d = digits(text)
    if len(d) != 10 or not d.isascii() or len(d) != len(str(text or "").replace(" ", "")):
        return False  # ``digits`` keeps every script's decimal digits; an identifier has ASCII ones
    return identifier_check_digit(d[:9]) == int(d[9])


def is_ascii_digits(text: str) -> bool:
    """Whether ``text`` is one or more ASCII digits 0-9 (``str.isdigit`` alone also passes other
    scripts' digits and superscripts such as ``"³"``, which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def luhn_digit(body: str) -> int:
    """The Luhn check digit of a string of digits."""
    total = 0
    for i, ch in enumerate(reversed(body)):
        n = int(ch)
        if i % 2 == 0:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return (10 - total % 10) % 10


def member_id_valid(member_id: str | None, prefix: str) -> bool:
    """Whether ``member_id`` is ``prefix`` + 8 ASCII digits with a correct Luhn check digit."""
    if type(member_id) is str and type(prefix) is str:
        return _member_id_valid_str(member_id, prefix)
    return _member_id_valid(member_id, prefix)


@lru_cache(maxsize=1 << 14)
def _member_id_valid_str(member_id: str, prefix: str) -> bool:
    return _member_id_valid(member_id, prefix)


def _member_id_valid(member_id: str | None, prefix: str) -> bool:
    text = str(member_id or "").strip().upper()
    if not text.startswith(prefix) or len(text) != len(prefix) + 8 or not is_ascii_digits(text[len(prefix):]):
        return False
    body = text[len(prefix):]
    return luhn_digit(body[:7]) == int(body[7])


# -- dates -----------------------------------------------------------------------------------
def parse_date(text: str) -> date | None:
    """An ISO date, or ``None`` when ``text`` is not one."""
    try:
        return date.fromisoformat(text) if isinstance(text, str) and len(text) == 10 else None
    except ValueError:
        return None


def age_on(dob: str, today: str) -> int:
    """Whole years between ``dob`` and ``today`` (both ISO; ``today`` may carry a time)."""
    b, t = date.fromisoformat(dob), date.fromisoformat(today[:10])
    return t.year - b.year - ((t.month, t.day) < (b.month, b.day))


def is_transposition(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ only by two swapped adjacent digits."""
    if len(a) != len(b) or a == b:
        return False
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


# -- the matching rule (R-NO-DUPLICATE / R-REFER-MATCH) --------------------------------------
def names_agree(form_given: str, form_family: str, given: str, family: str,
                variants: dict[str, tuple[str, ...]] | None = None) -> bool:
    """Whether a form's names agree with a record's: same family name and an equivalent given
    name, either the right way round or with given and family name swapped."""
    straight = fold(form_family) == fold(family) and given_equivalent(form_given, given, variants)
    swapped = fold(form_given) == fold(family) and given_equivalent(form_family, given, variants)
    return straight or swapped


def match_candidates(form: dict, records: list[dict], variants: dict[str, tuple[str, ...]] | None = None) -> list[dict]:
    """The records the rule file counts as the form's person, narrowed by a valid identifier.

    A record is a candidate when the names agree and the date of birth is the same, or differs by
    two swapped digits while the form's valid identifier equals the record's. When several are
    candidates, a valid identifier equal to exactly one of them settles it; otherwise all stay
    (an ambiguous match)."""
    ident = digits(form.get("identifier")) if identifier_valid(form.get("identifier")) else ""
    out = []
    for r in records:
        if not names_agree(form["given_name"], form["family_name"], r["given_name"], r["family_name"], variants):
            continue
        same_id = bool(ident) and r["identifier"] == ident
        if r["dob"] == form["dob"] or (same_id and is_transposition(r["dob"], form["dob"])):
            out.append(r)
    if len(out) > 1 and ident:
        narrowed = [r for r in out if r["identifier"] == ident]
        if len(narrowed) == 1:
            return narrowed
    return out


def phone_key(text: str | None) -> str:
    """A phone number's digits in national form (+44 7700 ... and 07700 ... compare equal)."""
    d = digits(text)
    return "0" + d[2:] if d.startswith("44") and len(d) == 12 else d


def identifier_holder(form: dict, records: list[dict]) -> dict | None:
    """The record holding the form's identifier, when the identifier is valid (else ``None``)."""
    if not identifier_valid(form.get("identifier")):
        return None
    ident = digits(form.get("identifier"))
    return next((r for r in records if r.get("identifier") == ident), None)


def decide(form: dict, records: list[dict], variants: dict[str, tuple[str, ...]] | None = None) -> tuple[str, list[str]]:
    """The rule file's decision for a form against the records seen (search results or the index).

    Returns ``(outcome_class, basis)``: ``create`` / ``update`` (basis: the record to update) /
    ``refer_conflict`` (R-IDENTITY-CONFLICT: the identifier's holder is not the form's person;
    basis: the holder and the matching records) / ``refer_ambiguous`` (several candidates) /
    ``refer_deceased`` (the one candidate is deceased)."""
    cands = match_candidates(form, records, variants)
    ids = sorted(str(c["id"]) for c in cands)
    holder = identifier_holder(form, records)
    if holder is not None and str(holder["id"]) not in ids:
        return "refer_conflict", sorted({*ids, str(holder["id"])})
    if len(cands) > 1:
        return "refer_ambiguous", ids
    if len(cands) == 1:
        return ("update" if cands[0]["status"] == "active" else "refer_deceased"), ids
    return "create", []
