"""Registration worlds: a hospital's patient index, an intake form with a trap, and its answer key.

``generate(seed, tag)`` is pure in its arguments. The world holds 12-18 background patients with
coverages, contacts, consents and GP links, old referrals with their timers and queued letters,
and the form's person planted per tag with look-alikes (household members at the same address,
twins, namesakes born in another year or with two date-of-birth digits swapped, a deceased
relative): the form's search always shows 3-6 hits, at least one of them a look-alike. The
outcome class (create, update, or a referral: ambiguous, deceased, identity conflict) is drawn
per tag (:data:`OUTCOME_DRAWS`) so no class dominates a split. Every generated world is checked
against the rule file's decision (:func:`~backoffice.envs.registration.tables.decide`) over the
whole index and over the search hits, and redrawn if an accidental look-alike changes it.

How one attempt reads (:func:`_attempt`; every draw comes from the attempt's one stream, in this
order, which the released seeds depend on):

1. :func:`build_world` -> :class:`Desk`: the form's person, the background patients, the
   look-alikes, the person's coverage and GP, their record; the outcome classes' traps in the
   world (:func:`_plant_refer_deceased`, :func:`_plant_refer_ambiguous_record`).
2. :func:`draw_form` -> :class:`FormDraft`: what the patient writes, with the defect tag's trap
   (:data:`PLANTERS`, one ``_plant_<tag>`` per tag) and the outcome class's trap on the form
   (:data:`FORM_OUTCOME_PLANTERS`).
3. :func:`write_tables`: the snapshot's rows.
4. :func:`_consistent` (the rule file's decision agrees with the outcome class, else redraw),
   then :func:`_key`, the answer key, and the instructions.

:func:`generate` is the engine's retry loop (:func:`~backoffice.envs.core.retrying`, 50 tries).

The scale tier: ``generate(seed, tag, scale=k)`` builds the same task (instructions, form,
search results, answer) in a world about ``k`` times the released size. Once an attempt's world
is consistent, :func:`_add_distractors` grows it with blocks of background patients and what
they have on file, drawn by the same functions from a stream of their own, none of them shown
by the form's search; only the answer key's ``targets`` (the ids new rows will get) change.
Scale 1 is the released generator, byte for byte. Building is linear in the rows (about 2-4 s
for 1000x, ~76k rows, on one core).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from functools import partial
from typing import Any

from backoffice.envs.core import retrying
from backoffice.envs.core.canonical import derive_seed
from backoffice.envs.core.domain import Generated
from backoffice.envs.registration.tables import (
    CITIES,
    FAMILY_NAMES,
    FEMALE,
    KIN_TERMS,
    MINOR_AGE,
    NAME_GROUPS,
    PAYERS,
    PLAIN_GIVEN,
    PRACTICES,
    PREFIX,
    REFER_CLASSES,
    RULES,
    STREETS,
    age_on,
    decide,
    digits,
    fold,
    given_equivalent,
    identifier_check_digit,
    identifier_valid,
    is_transposition,
    luhn_digit,
    name_variants,
    parse_date,
    phone_key,
)
from backoffice.envs.registration.tools import ALL_TOOLS, search_score, swapped_dates

DEFECT_TAGS = (
    "new_patient", "existing_patient_exact", "existing_patient_name_variant", "transposed_dob_digits",
    "minor_needs_guardian", "invalid_member_id", "ambiguous_match", "deceased_match", "conflicting_identifier",
)
EXISTING_TAGS = ("existing_patient_exact", "existing_patient_name_variant", "transposed_dob_digits", "conflicting_identifier")
FORMAL_NAMES = tuple(g[0] for g in NAME_GROUPS)
#: city -> its GP practices' ids, in the order of :data:`PRACTICES`
PRACTICES_IN: dict[str, tuple[str, ...]] = {city: tuple(p[0] for p in PRACTICES if p[2] == city) for city in sorted({p[2] for p in PRACTICES})}
#: (formal only, sex or None) -> the given names :meth:`World.given` draws from, in draw order
GIVEN_POOLS: dict[tuple[bool, str | None], tuple[str, ...]] = {
    (formal, sex): tuple(n for n in (FORMAL_NAMES if formal else FORMAL_NAMES + PLAIN_GIVEN)
                         if sex is None or (n in FEMALE) == (sex == "F"))
    for formal in (False, True) for sex in (None, "F", "M")
}


@dataclass
class Person:
    """One real person of the world (a record, a form's subject or both)."""

    given: str
    family: str
    sex: str
    dob: str
    address_line: str
    city: str
    postcode: str
    phone: str
    identifier: str
    status: str = "active"
    date_of_death: str = ""
    verified: list[str] = field(default_factory=lambda: ["identifier", "given_name", "family_name", "dob"])
    payer: str = ""
    member_id: str = ""
    practice: str = ""


DIGITS = "0123456789"


def below(rng: random.Random, n: int) -> int:
    """``rng.randrange(n)`` (so ``rng.randint(a, a + n - 1) - a``), drawn exactly as CPython's
    ``Random`` draws it: rejection sampling over ``getrandbits(n.bit_length())``. The same
    draws from the same stream (the released seeds depend on them) without randint's and
    randrange's argument handling, which was most of the generator's time."""
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


def digit_string(rng: random.Random, n: int) -> str:
    """``n`` decimal digits, each ``rng.randint(0, 9)`` (see :func:`below`)."""
    getrandbits = rng.getrandbits
    out = []
    for _ in range(n):
        r = getrandbits(4)
        while r >= 10:
            r = getrandbits(4)
        out.append(DIGITS[r])
    return "".join(out)


class World:
    """Random draws for one task, with uniqueness bookkeeping."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.today = date(2026, 3, 2) + timedelta(days=self.rng.randint(0, 59))
        self.now = f"{self.today.isoformat()}T{self.rng.randint(8, 16):02d}:{self.rng.choice((0, 15, 30, 45)):02d}:00"
        self.identifiers: set[str] = set()
        self.members: set[str] = set()
        self.phones: set[str] = set()

    def identifier(self) -> str:
        while True:
            body = str(1 + below(self.rng, 9)) + digit_string(self.rng, 8)
            check = identifier_check_digit(body)
            if check is not None and body + str(check) not in self.identifiers:
                self.identifiers.add(body + str(check))
                return body + str(check)

    def member_id(self, payer_id: str) -> str:
        prefix = next(p[2] for p in PAYERS if p[0] == payer_id)
        while True:
            body = digit_string(self.rng, 7)
            mid = f"{prefix}{body}{luhn_digit(body)}"
            if mid not in self.members:
                self.members.add(mid)
                return mid

    def phone(self) -> str:
        while True:
            p = "07" + digit_string(self.rng, 9)
            if p not in self.phones:
                self.phones.add(p)
                return p

    def address(self, city: tuple[str, str] | None = None) -> tuple[str, str, str]:
        name, code = city or self.rng.choice(CITIES)
        line = f"{self.rng.randint(1, 140)} {self.rng.choice(STREETS)}"
        post = f"{code}{self.rng.randint(1, 9)} {self.rng.randint(1, 9)}{self.rng.choice('ABDEFGHJLNPQRSTUWXYZ')}{self.rng.choice('ABDEFGHJLNPQRSTUWXYZ')}"
        return line, name, post

    def dob(self, minor: bool = False) -> str:
        years = self.rng.randint(1, MINOR_AGE - 1) if minor else self.rng.randint(19, 88)
        d = self.today - timedelta(days=years * 365 + self.rng.randint(20, 340))
        return d.isoformat()

    def given(self, sex: str | None = None, formal: bool = False) -> tuple[str, str]:
        g = self.rng.choice(GIVEN_POOLS[formal, sex])
        return g, ("F" if g in FEMALE else "M")

    def person(self, family: str, minor: bool = False, address: tuple[str, str, str] | None = None,
               formal: bool = False, sex: str | None = None) -> Person:
        g, s = self.given(sex, formal)
        line, city, post = address or self.address()
        return Person(g, family, s, self.dob(minor), line, city, post, self.phone(), self.identifier())


# -- form mess -------------------------------------------------------------------------------
def spaced_identifier(ident: str) -> str:
    return f"{ident[:3]} {ident[3:6]} {ident[6:]}"


def mistype_digit(rng: random.Random, text: str, start: int) -> str:
    """``text`` with one digit at or after ``start`` replaced by another digit."""
    i = rng.randrange(start, len(text))
    new = rng.choice([d for d in "0123456789" if d != text[i]])
    return text[:i] + new + text[i + 1:]


def transposed_dob(rng: random.Random, dob: str, today: str) -> str | None:
    """A valid date that is ``dob`` with two adjacent digits swapped, on the same side of 16."""
    options = []
    for i in (2, 5, 8):
        cand = dob[:i] + dob[i + 1] + dob[i] + dob[i + 2:]
        d = parse_date(cand)
        if cand != dob and d is not None and cand <= today[:10] and (age_on(cand, today) < MINOR_AGE) == (age_on(dob, today) < MINOR_AGE) \
                and 0 <= age_on(cand, today) <= 100:
            options.append(cand)
    return rng.choice(options) if options else None


def pretty_phone(rng: random.Random, phone: str) -> str:
    return rng.choice((phone, f"{phone[:5]} {phone[5:]}", f"+44 {phone[1:5]} {phone[5:]}", f"{phone[:5]}-{phone[5:8]}-{phone[8:]}"))


def different_given(w: World, avoid: list[str], sex: str | None = None) -> str:
    """A given name not equivalent to any name in ``avoid``."""
    while True:
        g, _ = w.given(sex)
        if not any(given_equivalent(g, a) or g == a for a in avoid):
            return g


def other_dob(w: World, dob: str, minor: bool) -> str:
    """A date of birth at least two years from ``dob`` and not a transposition of it."""
    while True:
        d = w.dob(minor)
        if abs(int(d[:4]) - int(dob[:4])) >= 2 and not is_transposition(d, dob):
            return d


# -- generation ------------------------------------------------------------------------------
#: outcome class draws per defect tag (the tag is the trap on the form). A constant policy that
#: always creates (the oracle skipping only the match) passes every create task, so creates stay
#: under a tenth of a split; update and each referral reason stay under a third.
OUTCOME_DRAWS: dict[str, tuple[tuple[str, float], ...]] = {
    "new_patient": (("create", 0.7), ("refer_conflict", 0.3)),
    "minor_needs_guardian": (("update", 0.5), ("refer_ambiguous", 0.2), ("refer_deceased", 0.1), ("refer_conflict", 0.2)),
    "invalid_member_id": (("update", 0.5), ("refer_ambiguous", 0.2), ("refer_deceased", 0.1), ("refer_conflict", 0.2)),
    "existing_patient_exact": (("update", 0.3), ("refer_ambiguous", 0.25), ("refer_deceased", 0.25), ("refer_conflict", 0.2)),
    "existing_patient_name_variant": (("update", 0.3), ("refer_ambiguous", 0.25), ("refer_deceased", 0.25), ("refer_conflict", 0.2)),
    "transposed_dob_digits": (("update", 0.5), ("refer_deceased", 0.25), ("refer_conflict", 0.25)),
    "ambiguous_match": (("refer_ambiguous", 1.0),),
    "deceased_match": (("refer_deceased", 1.0),),
    "conflicting_identifier": (("refer_conflict", 1.0),),
}
#: how often a form shows each cue, whatever the outcome: a minor (with a guardian and the
#: guardian's consent), a coverage, a mistyped member id, a nickname note, a recent move (a note,
#: a previous address, an address document). A tag that plants a cue itself (the minor, the
#: member id typo and its coverage, the nickname) raises it in the outcomes that tag draws, so
#: the other tasks of those outcomes draw it less often (:func:`cue_rate`): the form alone does
#: not tell the outcome.
FORM_RATES = {"minor": 0.4, "coverage": 0.8, "member_typo": 0.5, "nickname": 0.3, "moved": 0.6}
#: the tag that plants each cue, and how often it does
CUE_TAGS = {"minor": ("minor_needs_guardian", 1.0), "coverage": ("invalid_member_id", 1.0),
            "member_typo": ("invalid_member_id", 1.0), "nickname": ("existing_patient_name_variant", 0.3)}


def _outcome_mass() -> dict[str, float]:
    """Each outcome's share of a split, in tags (every tag is dealt equally often)."""
    mass: dict[str, float] = {}
    for draws in OUTCOME_DRAWS.values():
        for outcome, p in draws:
            mass[outcome] = mass.get(outcome, 0.0) + p
    return mass


def cue_rate(cue: str, outcome: str) -> float:
    """How often a task of ``outcome`` whose tag does not plant ``cue`` draws it, so that every
    outcome shows it at ``FORM_RATES[cue]``: the planting tag's tasks of that outcome count as
    showing it."""
    tag, planted = CUE_TAGS[cue]
    mass = _outcome_mass()[outcome]
    mine = dict(OUTCOME_DRAWS[tag]).get(outcome, 0.0)
    return max(0.0, min(1.0, (FORM_RATES[cue] * mass - mine * planted) / (mass - mine)))


#: most search hits a form's search returns (the catalog has a slot for each)
MAX_HITS = 6


def draw_outcome(seed: int, tag: str) -> str:
    """The task's outcome class, from its own stream (stable across redraws of the world)."""
    r = random.Random(seed * 7919 + 17).random()
    acc = 0.0
    for outcome, p in OUTCOME_DRAWS[tag]:
        acc += p
        if r < acc:
            return outcome
    return OUTCOME_DRAWS[tag][-1][0]


def _kin(w: World, subject: Person) -> tuple[str, str, str]:
    """A next of kin whose relationship agrees with their name and age."""
    rng = w.rng
    sex = rng.choice("FM")
    adult_child_ok = age_on(subject.dob, w.now) >= 40
    terms = [t for t in KIN_TERMS[sex] if adult_child_ok or t not in ("son", "daughter")]
    rel = rng.choice(terms)
    given = different_given(w, [subject.given], sex)
    family = subject.family if rel in ("son", "daughter", "sister", "brother") or rng.random() < 0.5 else rng.choice(FAMILY_NAMES)
    return f"{given} {family}", rel, w.phone()


# -- the world: the form's person, the index around them, their record -----------------------
@dataclass
class Desk:
    """Everything drawn for one task before the tables are written: the form's person
    (``subject``), every patient record of the index (``records``), the household look-alikes,
    the person's own record if they have one, and what it holds."""

    w: World
    tag: str
    outcome: str
    minor: bool
    subject: Person
    records: list[Person] = field(default_factory=list)
    household: list[Person] = field(default_factory=list)
    has_cov: bool = False
    record: Person | None = None
    other: Person | None = None      # refer_ambiguous: the second candidate
    moved: bool = False              # the record holds the old address
    evidence: bool = False           # an address document was seen at the desk
    member_typo: bool = False        # the form's member id has a mistyped digit
    old_address: str = ""            # the address before the move, as a form writes it (no record)
    record_cov: str = ""             # member id already on the record
    record_gp: str = ""              # practice the record is linked to

    @property
    def rng(self) -> random.Random:
        return self.w.rng

    @property
    def today(self) -> str:
        return self.w.now

    @property
    def family(self) -> str:
        return self.subject.family


def build_world(seed: int, tag: str, attempt: int) -> Desk:
    """Draw the form's person, the background patients, the look-alikes, the person's coverage
    and GP, and their record (with the outcome class's trap on it)."""
    w = World(seed * 64 + attempt)
    desk = _draw_subject(w, tag, draw_outcome(seed, tag))
    _add_background(desk)
    _add_look_alikes(desk)
    _draw_cover(desk)
    if has_record(desk.tag, desk.outcome):
        _add_subject_record(desk)
    else:
        _draw_move(desk)
    if desk.outcome == "refer_ambiguous":
        _plant_refer_ambiguous_record(desk)
    return desk


def has_record(tag: str, outcome: str) -> bool:
    """Whether the form's person already has a record in the index."""
    return not (outcome == "create" or (outcome == "refer_conflict" and tag == "new_patient"))


def _draw_subject(w: World, tag: str, outcome: str) -> Desk:
    rng = w.rng
    minor = tag == "minor_needs_guardian" or rng.random() < cue_rate("minor", outcome)
    family = rng.choice(FAMILY_NAMES)
    formal = rng.random() < 0.5  # a given name with short forms, as often for every tag
    subject = w.person(family, minor=minor, formal=formal)
    if tag == "transposed_dob_digits":  # a date of birth with two digits that can be swapped
        while transposed_dob(rng, subject.dob, w.now) is None:
            subject.dob = w.dob(minor)
    return Desk(w, tag, outcome, minor, subject)


def _add_background(desk: Desk) -> None:
    """Background patients (12-18), none sharing the subject's family name; sometimes the first
    of them deceased. Called once per world, and once more per distractor block of a scaled
    world (:func:`_add_distractors`)."""
    w, rng, records = desk.w, desk.rng, desk.records
    families = [f for f in FAMILY_NAMES if f != desk.family]
    first = len(records)
    for _ in range(rng.randint(12, 18)):
        records.append(w.person(rng.choice(families), minor=rng.random() < 0.15))
    if rng.random() < 0.3:
        dead = records[first]
        dead.status = "deceased"
        dod = w.today - timedelta(days=rng.randint(100, 2000))
        dead.date_of_death = max(dod, date.fromisoformat(dead.dob) + timedelta(days=400)).isoformat()


def _add_look_alikes(desk: Desk) -> None:
    """Look-alikes, present in every task: household members (same family name and address,
    another given name), a namesake born in another year, a twin, a deceased relative, a
    namesake whose date of birth is the form's with two digits swapped."""
    _add_household(desk)
    w, rng, subject, family = desk.w, desk.rng, desk.subject, desk.family
    others = [subject.given, *(h.given for h in desk.household)]
    if rng.random() < 0.85:
        ns = w.person(family, minor=False)
        ns.given, ns.sex = subject.given, subject.sex
        ns.dob = other_dob(w, subject.dob, False)
        desk.records.append(ns)
    if rng.random() < 0.45:
        tw = replace(subject, given=different_given(w, others), identifier=w.identifier(), phone=w.phone(),
                     verified=list(subject.verified))
        tw.sex = "F" if tw.given in FEMALE else "M"
        desk.records.append(tw)
    if rng.random() < (0.85 if desk.outcome == "refer_deceased" else 0.35):
        desk.records.append(_deceased_relative(desk, others))
    if desk.tag != "transposed_dob_digits" and rng.random() < 0.2:
        swapped = transposed_dob(rng, subject.dob, desk.today)
        if swapped:
            ts = w.person(family, minor=age_on(swapped, desk.today) < MINOR_AGE)
            ts.given, ts.sex, ts.dob = subject.given, subject.sex, swapped
            desk.records.append(ts)


def _add_household(desk: Desk) -> None:
    """One or two household members; a minor's first one is a parent (20-40 years older)."""
    w, rng, subject = desk.w, desk.rng, desk.subject
    n_house = 2 if rng.random() < 0.4 else 1
    for k in range(n_house):
        sex = "F" if rng.random() < 0.55 else "M"
        g = different_given(w, [subject.given, *(h.given for h in desk.household)], sex)
        p = Person(g, subject.family, sex, other_dob(w, subject.dob, False), subject.address_line, subject.city,
                   subject.postcode, w.phone(), w.identifier())
        if desk.minor and k == 0:
            p.dob = (date.fromisoformat(subject.dob) - timedelta(days=365 * rng.randint(20, 40) + rng.randint(0, 300))).isoformat()
        desk.household.append(p)
        desk.records.append(p)


def _deceased_relative(desk: Desk, others: list[str]) -> Person:
    w, rng, subject = desk.w, desk.rng, desk.subject
    sex = rng.choice("FM")
    old = Person(different_given(w, others, sex), subject.family, sex,
                 (date.fromisoformat(subject.dob) - timedelta(days=365 * rng.randint(42, 60))).isoformat(),
                 subject.address_line, subject.city, subject.postcode, w.phone(), w.identifier(), status="deceased")
    if age_on(old.dob, desk.today) > 104:
        old.dob = (w.today - timedelta(days=365 * 98)).isoformat()
    old.date_of_death = (w.today - timedelta(days=rng.randint(60, 3000))).isoformat()
    return old


def _draw_cover(desk: Desk) -> None:
    """The subject's insurer and GP practice (always a coverage for ``invalid_member_id``)."""
    w, rng, subject = desk.w, desk.rng, desk.subject
    desk.has_cov = desk.tag == "invalid_member_id" or rng.random() < cue_rate("coverage", desk.outcome)
    # a member id typo as often for every outcome (the invalid_member_id tag always has one)
    desk.member_typo = desk.tag == "invalid_member_id" or (
        desk.has_cov and rng.random() < cue_rate("member_typo", desk.outcome) / cue_rate("coverage", desk.outcome))
    if desk.has_cov:
        subject.payer = rng.choice(PAYERS)[0]
        subject.member_id = w.member_id(subject.payer)
    subject.practice = rng.choice([p[0] for p in PRACTICES if p[2] == subject.city] or [PRACTICES[0][0]]) if rng.random() < 0.9 else ""


def _add_subject_record(desk: Desk) -> None:
    """The subject's own record: maybe the old address (verified, with a document at the desk or
    not) and phone, deceased for ``refer_deceased``, maybe their coverage and a GP link."""
    w, rng, subject = desk.w, desk.rng, desk.subject
    record = replace(subject, verified=list(subject.verified))
    if rng.random() < 0.6:  # the record holds the old address
        desk.moved = True
        record.address_line, record.city, record.postcode = w.address()
        if rng.random() < 0.7:
            record.verified.append("address")
            desk.evidence = rng.random() < 0.5
    if rng.random() < 0.5:
        record.phone = w.phone()
    for hm in desk.household:  # the household lived at the record's address
        if desk.moved and rng.random() < 0.5:
            hm.address_line, hm.city, hm.postcode = record.address_line, record.city, record.postcode
    if desk.outcome == "refer_deceased":
        _plant_refer_deceased(desk, record)
    desk.records.append(record)
    desk.record = record
    if desk.has_cov and not desk.member_typo and rng.random() < 0.4:
        desk.record_cov = subject.member_id
    gp_roll = rng.random()
    if subject.practice and gp_roll < 0.4:
        desk.record_gp = subject.practice
    elif gp_roll < 0.7:
        desk.record_gp = rng.choice([p[0] for p in PRACTICES if p[0] != subject.practice])


def _draw_move(desk: Desk) -> None:
    """A person without a record may have moved too, with the same odds and the same signs on
    the form (a note, the previous address, an address document) as one with a record: the
    form alone does not tell whether a record exists."""
    rng = desk.rng
    if rng.random() < FORM_RATES["moved"]:
        desk.moved = True
        line, city, postcode = desk.w.address()
        desk.old_address = f"{line}, {city} {postcode}"
        desk.evidence = rng.random() < 0.35  # a verified address (0.7) with a document seen (0.5)


# -- outcome classes: the referral traps in the world ------------------------------------------
def _plant_refer_deceased(desk: Desk, record: Person) -> None:
    """The only matching record is marked deceased."""
    record.status = "deceased"
    dod = desk.w.today - timedelta(days=desk.rng.randint(60, 1500))
    born = date.fromisoformat(record.dob) + timedelta(days=30)  # a child's record dies after birth too
    record.date_of_death = max(dod, min(born, desk.w.today - timedelta(days=1))).isoformat()


def _plant_refer_ambiguous_record(desk: Desk) -> None:
    """A second candidate: same family name, sex and date of birth, the same given name or a variant."""
    w, rng, subject = desk.w, desk.rng, desk.subject
    other = w.person(desk.family)
    other.given = subject.given if rng.random() < 0.5 else rng.choice(name_variants(subject.given) or (subject.given,))
    other.sex, other.dob = subject.sex, subject.dob
    desk.records.append(other)
    desk.other = other


# -- the intake form ---------------------------------------------------------------------------
@dataclass
class FormDraft:
    """What the patient writes on the form, before it becomes a row."""

    given: str
    family: str
    dob: str
    ident: str
    member: str
    notes: list[str] = field(default_factory=list)
    member_typo: bool = False
    guardian: tuple[str, str, str] | None = None
    kin: tuple[str, str, str] | None = None


def draw_form(desk: Desk) -> FormDraft:
    """The form: the identifier written spaced, left out or mistyped, then the defect tag's trap
    (:data:`PLANTERS`), the outcome class's trap (:data:`FORM_OUTCOME_PLANTERS`), then the card
    and the contacts."""
    rng, subject = desk.rng, desk.subject
    form = FormDraft(subject.given, subject.family, subject.dob, subject.identifier, subject.member_id)
    # the identifier is always written (an identity conflict needs one, so a form that left it out
    # would say "no conflict"): plain or spaced, and in three forms in ten with a mistyped digit,
    # which looks like any other number until its check digit is computed
    if desk.tag == "transposed_dob_digits" or desk.outcome == "refer_conflict" or rng.random() < 0.7:
        form.ident = subject.identifier
    else:
        form.ident = mistype_digit(rng, subject.identifier, 0)
    if rng.random() < 0.5:
        form.ident = spaced_identifier(form.ident)
    if desk.tag != "existing_patient_name_variant" and name_variants(subject.given) and rng.random() < cue_rate("nickname", desk.outcome):
        form.given = rng.choice([v for v in name_variants(subject.given) if v != subject.given])
        form.notes.append(f"Goes by {form.given}.")
    PLANTERS[desk.tag](desk, form)
    form.member_typo = desk.member_typo
    planter = FORM_OUTCOME_PLANTERS.get(desk.outcome)
    if planter:
        planter(desk, form)
    if desk.moved and rng.random() < 0.5:
        form.notes.append("Moved house recently.")
    if form.member_typo:
        form.member = mistype_digit(rng, subject.member_id, 2)
    if desk.minor:
        parent = desk.household[0]
        form.guardian = (f"{parent.given} {parent.family}", "mother" if parent.sex == "F" else "father", parent.phone)
    elif rng.random() < 0.5:
        form.kin = _kin(desk.w, subject)
    return form


# -- defect tags: one trap each on the form (drawn in this order: see draw_form) -------------------
def _plant_new_patient(desk: Desk, form: FormDraft) -> None:
    """No record (``create``), or the form carries a relative's identifier (``refer_conflict``):
    the world already says which (:func:`has_record`); the form is written as is."""


def _plant_existing_patient_exact(desk: Desk, form: FormDraft) -> None:
    """The record matches the form exactly up to formatting; the look-alikes make it a trap."""


#: the name-variant tag's forms that give a nickname (the others swap given and family name)
VARIANT_NICKNAME = CUE_TAGS["nickname"][1]


def _plant_existing_patient_name_variant(desk: Desk, form: FormDraft) -> None:
    """A nickname (noted on the form), or given and family name swapped."""
    subject = desk.subject
    if desk.rng.random() < VARIANT_NICKNAME and name_variants(subject.given):
        form.given = desk.rng.choice([v for v in name_variants(subject.given) if v != subject.given])
        form.notes.append(f"Goes by {form.given}.")
    else:
        form.given, form.family = subject.family, subject.given


def _plant_transposed_dob_digits(desk: Desk, form: FormDraft) -> None:
    """Two adjacent digits of the date of birth swapped (the identifier is always written)."""
    form.dob = transposed_dob(desk.rng, desk.subject.dob, desk.today) or desk.subject.dob


def _plant_minor_needs_guardian(desk: Desk, form: FormDraft) -> None:
    """The subject is a minor (drawn with the subject): the form names the parent as guardian."""


def _plant_invalid_member_id(desk: Desk, form: FormDraft) -> None:
    """One digit of the member id mistyped (decided with the cover, :func:`_draw_cover`; written
    after the notes, see :func:`draw_form`)."""


def _plant_ambiguous_match(desk: Desk, form: FormDraft) -> None:
    """Always ``refer_ambiguous``: see :func:`_plant_refer_ambiguous_form`."""


def _plant_deceased_match(desk: Desk, form: FormDraft) -> None:
    """Always ``refer_deceased``: see :func:`_plant_refer_deceased`."""


def _plant_conflicting_identifier(desk: Desk, form: FormDraft) -> None:
    """Always ``refer_conflict``: see :func:`_plant_refer_conflict`."""


PLANTERS: dict[str, Callable[[Desk, FormDraft], None]] = {
    "new_patient": _plant_new_patient,
    "existing_patient_exact": _plant_existing_patient_exact,
    "existing_patient_name_variant": _plant_existing_patient_name_variant,
    "transposed_dob_digits": _plant_transposed_dob_digits,
    "minor_needs_guardian": _plant_minor_needs_guardian,
    "invalid_member_id": _plant_invalid_member_id,
    "ambiguous_match": _plant_ambiguous_match,
    "deceased_match": _plant_deceased_match,
    "conflicting_identifier": _plant_conflicting_identifier,
}


def _plant_refer_ambiguous_form(desk: Desk, form: FormDraft) -> None:
    """No identifier that settles which candidate (none, a mistyped one, or a valid one that
    neither candidate's record holds: a new number), sometimes a name variant."""
    rng, subject = desk.rng, desk.subject
    if identifier_valid(form.ident):  # a new number neither candidate's record holds, or a typo
        spaced = " " in form.ident
        form.ident = desk.w.identifier() if rng.random() < 0.5 else mistype_digit(rng, subject.identifier, 0)
        form.ident = spaced_identifier(form.ident) if spaced else form.ident
    if name_variants(subject.given) and rng.random() < 0.3:
        form.given = rng.choice(name_variants(subject.given))


def _plant_refer_conflict(desk: Desk, form: FormDraft) -> None:
    """A relative's identifier on the form."""
    rng = desk.rng
    holder = desk.household[rng.randrange(len(desk.household))]
    form.ident = spaced_identifier(holder.identifier) if rng.random() < 0.4 else holder.identifier


FORM_OUTCOME_PLANTERS: dict[str, Callable[[Desk, FormDraft], None]] = {
    "refer_ambiguous": _plant_refer_ambiguous_form,
    "refer_conflict": _plant_refer_conflict,
}


# -- the tables --------------------------------------------------------------------------------
@dataclass
class Tables:
    """The snapshot's rows, with what the answer key needs to know about them."""

    patients: list[dict[str, Any]]
    pid_of: dict[int, str]
    coverages: list[dict[str, Any]] = field(default_factory=list)
    roster: list[tuple[str, str, Person]] = field(default_factory=list)
    gp_links: list[dict[str, Any]] = field(default_factory=list)
    contacts: list[dict[str, Any]] = field(default_factory=list)
    consents: list[dict[str, Any]] = field(default_factory=list)
    kin_on_file: dict[str, Any] | None = None
    guardian_on_file: dict[str, Any] | None = None

    def add_cov(self, rng: random.Random, pid: str, payer: str, mid: str, status: str = "active") -> None:
        self.coverages.append({"id": f"{PREFIX['coverages']}-{len(self.coverages) + 1:04d}", "patient_id": pid, "payer_id": payer,
                               "member_id": mid, "status": status, "start_date": f"{2026 - rng.randint(1, 8)}-01-01"})

    def add_gp(self, rng: random.Random, pid: str, practice: str) -> None:
        self.gp_links.append({"id": f"{PREFIX['gp_links']}-{len(self.gp_links) + 1:04d}", "patient_id": pid, "practice_id": practice,
                              "status": "active", "linked_at": f"{2026 - rng.randint(1, 10)}-{rng.randint(1, 12):02d}-01", "ended_at": ""})


def _patient_rows(desk: Desk, t: Tables | None = None) -> tuple[list[Person], Tables]:
    """The records in a shuffled order, as patient rows with registration dates (appended to
    ``t``, ids continuing, when given: a distractor block)."""
    w, rng = desk.w, desk.rng
    order = list(desk.records)
    rng.shuffle(order)
    t = Tables([], {}) if t is None else t
    patients, pid_of = t.patients, t.pid_of
    for i, p in enumerate(order, len(patients) + 1):
        pid = f"{PREFIX['patients']}-{i:04d}"
        pid_of[id(p)] = pid
        reg_year = max(int(p.dob[:4]) + 1, 2024 - rng.randint(0, 14))
        registered = f"{reg_year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00"
        updated = f"{reg_year + rng.randint(0, max(0, 2025 - reg_year))}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00"
        if p.date_of_death:
            updated = p.date_of_death + "T10:00:00"
        registered = min(registered, updated, w.now)
        patients.append({
            "id": pid, "identifier": p.identifier, "given_name": p.given, "family_name": p.family, "dob": p.dob,
            "sex": p.sex, "address_line": p.address_line, "city": p.city, "postcode": p.postcode, "phone": p.phone,
            "status": p.status, "date_of_death": p.date_of_death, "verified": sorted(p.verified),
            "registered_at": registered, "updated_at": min(max(registered, updated), w.now),
        })
    return order, t


def _on_file(desk: Desk, order: list[Person], t: Tables) -> None:
    """Coverages, GP links and contacts of every record; the subject's record keeps only its own."""
    w, rng, subject = desk.w, desk.rng, desk.subject
    for p in order:
        pid = t.pid_of[id(p)]
        if p is desk.record:
            if desk.record_cov:
                t.add_cov(rng, pid, subject.payer, desk.record_cov)
                t.roster.append((subject.payer, desk.record_cov, subject))
            elif rng.random() < 0.3:
                payer = rng.choice([x[0] for x in PAYERS if x[0] != subject.payer])
                t.add_cov(rng, pid, payer, w.member_id(payer), "ended")
            if desk.record_gp:
                t.add_gp(rng, pid, desk.record_gp)
            continue
        if rng.random() < 0.6:
            payer = rng.choice(PAYERS)[0]
            mid = w.member_id(payer)
            t.add_cov(rng, pid, payer, mid)
            t.roster.append((payer, mid, p))
        if rng.random() < 0.7:
            t.add_gp(rng, pid, rng.choice(PRACTICES_IN.get(p.city) or (PRACTICES[0][0],)))
        minor = age_on(p.dob, desk.today) < MINOR_AGE
        if minor or rng.random() < 0.2:
            role = "guardian" if minor else "next_of_kin"
            t.contacts.append({"id": f"{PREFIX['contacts']}-{len(t.contacts) + 1:04d}", "patient_id": pid, "role": role,
                               "name": f"{different_given(w, [p.given], 'F' if role == 'guardian' else None)} {p.family}",
                               "relationship": "mother" if role == "guardian" else "spouse",
                               "phone": w.phone()})


def _form_contacts_on_file(desk: Desk, form: FormDraft, t: Tables) -> None:
    """The roster entries of the subject and their household; the form's contacts, sometimes
    already on the record."""
    rng, subject = desk.rng, desk.subject
    if desk.has_cov and not desk.record_cov:
        t.roster.append((subject.payer, subject.member_id, subject))
    for hm in desk.household:  # family members often share the payer
        if desk.has_cov and rng.random() < 0.5:
            t.roster.append((subject.payer, desk.w.member_id(subject.payer), hm))
    record_pid = t.pid_of.get(id(desk.record)) if desk.record is not None else None
    on_file: list[dict[str, Any]] = []
    if record_pid and form.kin and rng.random() < 0.4:
        kin = form.kin
        t.kin_on_file = {"patient_id": record_pid, "role": "next_of_kin", "name": kin[0], "relationship": kin[1], "phone": kin[2]}
        on_file.append(t.kin_on_file)
    if record_pid and form.guardian and rng.random() < 0.4:
        guardian = form.guardian
        t.guardian_on_file = {"patient_id": record_pid, "role": "guardian", "name": guardian[0], "relationship": guardian[1],
                              "phone": guardian[2]}
        on_file.append(t.guardian_on_file)
        if t.kin_on_file is None:  # another contact beside the guardian the consent cites
            sex = rng.choice("FM")
            on_file.append({"patient_id": record_pid, "role": "next_of_kin",
                            "name": f"{different_given(desk.w, [subject.given], sex)} {subject.family}",
                            "relationship": rng.choice(("grandmother", "aunt") if sex == "F" else ("grandfather", "uncle")),
                            "phone": desk.w.phone()})
    rng.shuffle(on_file)
    for contact in on_file:
        contact["id"] = f"{PREFIX['contacts']}-{len(t.contacts) + 1:04d}"
        t.contacts.append(contact)


def _roster_and_consents(rng: random.Random, t: Tables, first_member: int = 0, first_patient: int = 0) -> list[dict[str, Any]]:
    """The payers' member roster rows of ``t.roster[first_member:]`` (shuffled) and earlier
    treatment consents of five of ``t.patients[first_patient:]`` (a distractor block's slices
    start past the world's)."""
    entries = t.roster[first_member:]
    rng.shuffle(entries)
    t.roster[first_member:] = entries
    member_roster = [{"id": f"{PREFIX['member_roster']}-{i:04d}", "payer_id": payer, "member_id": mid, "given_name": p.given,
                      "family_name": p.family, "dob": p.dob, "status": "active"}
                     for i, (payer, mid, p) in enumerate(entries, first_member + 1)]
    patients = t.patients[first_patient:]
    for i, c in enumerate(rng.sample(patients, k=min(5, len(patients))), len(t.consents) + 1):
        t.consents.append({"id": f"{PREFIX['consents']}-{i:04d}", "patient_id": c["id"], "intake_form_id": f"{PREFIX['intake_forms']}-8{i:03d}",
                           "kind": "treatment", "given_by": "self", "contact_id": "", "recorded_at": "2025-11-03T10:00:00"})
    return member_roster


def _form_rows(desk: Desk, draft: FormDraft, patients: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Earlier (processed) forms and the pending form of the task, last."""
    w, rng, subject, record = desk.w, desk.rng, desk.subject, desk.record
    n_forms = rng.randint(2, 6)
    form_id = f"{PREFIX['intake_forms']}-{n_forms:04d}"
    forms = _earlier_forms(n_forms, patients)
    form = {
        **_blank_form(form_id, w.now, "pending"),
        "given_name": draft.given if rng.random() < 0.85 else draft.given.upper(),
        "family_name": draft.family if rng.random() < 0.8 else draft.family.upper(),
        "dob": draft.dob, "sex": subject.sex, "address_line": subject.address_line, "city": subject.city,
        "postcode": subject.postcode, "phone": pretty_phone(rng, subject.phone), "identifier": draft.ident,
        "previous_address": (f"{record.address_line}, {record.city} {record.postcode}" if record else desk.old_address)
                            if (desk.moved and rng.random() < 0.5) else "",
        "payer_id": subject.payer, "member_id": draft.member, "gp_practice_id": subject.practice,
        "consent_signed_by": "guardian" if desk.minor else "self", "notes": " ".join(draft.notes),
    }
    if draft.guardian:
        g = draft.guardian
        form.update(guardian_name=g[0], guardian_relationship=g[1], guardian_phone=pretty_phone(rng, g[2]))
    if draft.kin:
        k = draft.kin
        form.update(next_of_kin_name=k[0], next_of_kin_relationship=k[1], next_of_kin_phone=pretty_phone(rng, k[2]))
    forms.append(form)
    return forms, form


def _earlier_forms(n_forms: int, patients: list[dict[str, Any]], forms: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """``n_forms - 1`` earlier (processed) forms of ``patients``, appended to ``forms`` (ids
    continuing) when given."""
    forms = [] if forms is None else forms
    first = len(forms)
    for k in range(1, n_forms):
        i, src = first + k, patients[(k * 7) % len(patients)]
        forms.append({**_blank_form(f"{PREFIX['intake_forms']}-{i:04d}", f"2026-02-1{i % 10}T09:30:00", "processed"),
                      "given_name": src["given_name"], "family_name": src["family_name"], "dob": src["dob"], "sex": src["sex"],
                      "address_line": src["address_line"], "city": src["city"], "postcode": src["postcode"], "phone": src["phone"],
                      "identifier": src["identifier"], "consent_signed_by": "self"})
    return forms


def _evidence_rows(desk: Desk, form_id: str) -> list[dict[str, Any]]:
    """The address document (when the record's verified address may change) and an unrelated letter."""
    w, rng, subject = desk.w, desk.rng, desk.subject
    docs = []
    if desk.evidence:
        kind = rng.choice(("utility_bill", "bank_statement", "council_tax_bill", "tenancy_agreement"))
        docs.append({"field": "address", "kind": kind,
                     "detail": f"{kind.replace('_', ' ')} dated {(w.today - timedelta(days=rng.randint(5, 60))).isoformat()} showing {subject.address_line}, {subject.city} {subject.postcode}"})
    # an unrelated letter beside it (always beside an address document: which one supports the
    # address is read from the documents, never from where they are listed)
    if desk.evidence or rng.random() < 0.4:
        docs.append({"field": "none", "kind": "appointment_letter", "detail": "hospital appointment letter brought by the patient"})
    rng.shuffle(docs)
    return [{"id": f"{PREFIX['evidence']}-{i:04d}", "intake_form_id": form_id, **d} for i, d in enumerate(docs, 1)]


def _queues(w: World, patients: list[dict[str, Any]], queues: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Old referrals with their timers; queued letters (appended to ``queues``, ids continuing,
    when given: a distractor block)."""
    rng = w.rng
    if queues is None:
        queues = {"referrals": [], "notifications": [], "task_timers": []}
    referrals, timers, notifications = queues["referrals"], queues["task_timers"], queues["notifications"]
    first = len(referrals)
    for i in range(first + 1, first + rng.randint(1, 3) + 1):
        rid = f"{PREFIX['referrals']}-{i:04d}"
        referrals.append({"id": rid, "intake_form_id": f"INT-9{i:03d}", "reason": rng.choice(("ambiguous_match", "other")), "basis": [],
                          "note": "Two possible records, sent to the supervisor.", "status": "open", "created_at": f"{w.today - timedelta(days=1)}T15:00:00"})
        timers.append({"id": f"{PREFIX['task_timers']}-{i:04d}", "kind": "referral_pickup", "ref_id": rid,
                       "due_at": f"{w.today}T{rng.randint(9, 12):02d}:00:00", "status": "running"})
    first = len(notifications)
    for i in range(first + 1, first + rng.randint(2, 4) + 1):
        notifications.append({"id": f"{PREFIX['notifications']}-{i:04d}", "kind": rng.choice(("welcome_pack", "appointment_reminder")),
                              "ref_id": rng.choice(patients)["id"], "channel": rng.choice(("post", "sms")), "status": "queued",
                              "created_at": f"{w.today - timedelta(days=1)}T17:00:00"})
    return queues


def write_tables(desk: Desk, draft: FormDraft) -> tuple[dict[str, list[dict[str, Any]]], Tables, dict[str, Any]]:
    """The snapshot (every table, in the order of the rows' draws), the bookkeeping the key
    needs, and the task's form row."""
    order, t = _patient_rows(desk)
    _on_file(desk, order, t)
    _form_contacts_on_file(desk, draft, t)
    member_roster = _roster_and_consents(desk.rng, t)
    forms, form = _form_rows(desk, draft, t.patients)
    evidence_rows = _evidence_rows(desk, form["id"])
    queues = _queues(desk.w, t.patients)
    snapshot = {
        "patients": t.patients, "coverages": t.coverages, "contacts": t.contacts, "consents": t.consents, "gp_links": t.gp_links,
        "practices": [{"id": p[0], "name": p[1], "city": p[2]} for p in PRACTICES],
        "payers": [{"id": p[0], "name": p[1], "member_prefix": p[2]} for p in PAYERS],
        "member_roster": member_roster, "intake_forms": forms, "evidence": evidence_rows, "referrals": queues["referrals"],
        "notifications": queues["notifications"], "task_timers": queues["task_timers"],
        "rules": [{"id": r[0], "title": r[1], "text": r[2]} for r in RULES],
        "clock": [{"id": "clock", "now": desk.w.now}],
    }
    return snapshot, t, form


def form_query(form: dict[str, Any]) -> dict[str, Any]:
    """The search of the form's person (name, date of birth, identifier, postcode) as
    :func:`~backoffice.envs.registration.tools.search_score` takes it."""
    return {"name": f"{form['given_name']} {form['family_name']}", "dob": form["dob"],
            "identifier": form["identifier"] or None, "postcode": form["postcode"] or None}


def form_search(form: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """Whether the search of the form's person (:func:`form_query`) shows a patient row.

    Only a row born on the form's date (or a swap of it), holding its identifier or whose family
    name is one of its words can score 3 (as in
    :func:`~backoffice.envs.registration.tools.search_candidates`): only those are scored."""
    query = form_query(form)
    dobs = {form["dob"], *swapped_dates(form["dob"])}
    words = set(fold(query["name"]).replace(",", " ").split())
    ident = digits(query["identifier"])

    def shows(row: dict[str, Any]) -> bool:
        if row["dob"] not in dobs and fold(row["family_name"]) not in words and (len(ident) != 10 or row["identifier"] != ident):
            return False
        return search_score(row, **query) >= 3

    return shows


# -- the scale tier ----------------------------------------------------------------------------
def _add_distractors(seed: int, attempt: int, desk: Desk, snapshot: dict[str, list[dict[str, Any]]], t: Tables,
                     form: dict[str, Any], scale: int) -> None:
    """Grow a consistent world to about ``scale`` times its size: blocks of background patients
    (:func:`_add_background`) until the index holds ``scale`` times the world's patients, each
    block with what a world's background has on file (:func:`_on_file`: coverages, GP links,
    contacts; roster entries and earlier consents: :func:`_roster_and_consents`), earlier forms
    (:func:`_earlier_forms`) and queues (:func:`_queues`), written by the same functions with
    ids continuing after the world's.

    The blocks draw from their own stream (derived from ``seed`` and ``attempt``) after the
    world is complete, and share its uniqueness bookkeeping, so the task, its form and its
    search are the scale-1 ones: identifiers, phones and member ids stay unique, and a drawn
    patient the form's search would show is dropped, so no distractor becomes a hit, a
    candidate or the holder of the form's identifier (the answer cannot change). Linear in the
    rows drawn."""
    dw = World(derive_seed("registration-scale", seed, attempt))
    dw.today, dw.now = desk.w.today, desk.w.now
    dw.identifiers, dw.members, dw.phones = desk.w.identifiers, desk.w.members, desk.w.phones
    shows = form_search(form)

    def shown(p: Person) -> bool:
        return shows({"identifier": p.identifier, "given_name": p.given, "family_name": p.family, "dob": p.dob,
                      "postcode": p.postcode})

    queues = {k: snapshot[k] for k in ("referrals", "notifications", "task_timers")}
    target = scale * len(t.patients)
    while len(t.patients) < target:
        block = Desk(dw, desk.tag, desk.outcome, False, desk.subject)
        _add_background(block)
        block.records = [p for p in block.records if not shown(p)]
        if not block.records:
            continue
        first_patient, first_member = len(t.patients), len(t.roster)
        order, _ = _patient_rows(block, t)
        _on_file(block, order, t)
        snapshot["member_roster"] += _roster_and_consents(dw.rng, t, first_member, first_patient)
        _earlier_forms(dw.rng.randint(2, 6), t.patients[first_patient:], snapshot["intake_forms"])
        _queues(dw, t.patients[first_patient:], queues)


# -- the answer key ----------------------------------------------------------------------------
def _consistent(desk: Desk, form: dict[str, Any], t: Tables, record_pid: str | None) -> list[str] | None:
    """The blocking record ids when the world says what the outcome class says, else ``None``.

    The search shows every blocking record and at least one look-alike beside them; the
    decision read from the hits is the one read from the whole index."""
    outcome, patients = desk.outcome, t.patients
    shows = form_search(form)
    hits = [r for r in patients if shows(r)]
    if not 3 <= len(hits) <= MAX_HITS:
        return None
    got, basis = decide(form, patients)
    if got != outcome:
        return None
    if outcome == "refer_ambiguous":
        assert record_pid is not None  # the ambiguous outcome always plants the record
        if basis != sorted([record_pid, t.pid_of[id(desk.other)]]):
            return None
    if decide(form, hits) != (got, basis) or len(hits) <= len(basis) + (outcome == "update"):
        return None
    if desk.record is not None and record_pid not in basis and outcome != "refer_conflict":
        return None
    return basis


def _expected_fields(desk: Desk, form: dict[str, Any], t: Tables, record_pid: str | None, targets: list[str],
                     nxt: Callable[..., str]) -> dict[str, Any]:
    """The demographics the registered record must hold (and the targets writing them)."""
    if desk.outcome == "create":
        targets += [nxt("patients"), nxt("notifications")]
        exp = {k: form[k] for k in ("given_name", "family_name", "dob", "sex", "address_line", "city", "postcode", "phone")}
        exp["identifier"] = form["identifier"] if identifier_valid(form["identifier"]) else ""
        return exp
    assert desk.record is not None and record_pid is not None
    row = next(p for p in t.patients if p["id"] == record_pid)
    exp = {k: row[k] for k in ("identifier", "given_name", "family_name", "dob", "sex", "address_line", "city", "postcode")}
    exp["phone"] = form["phone"]
    if desk.moved and ("address" not in desk.record.verified or desk.evidence):
        exp.update(address_line=form["address_line"], city=form["city"], postcode=form["postcode"])
    if exp["address_line"] != row["address_line"] or phone_key(exp["phone"]) != phone_key(row["phone"]):
        targets.append(f"patients:{record_pid}")
    return exp


def _registration_set(desk: Desk, draft: FormDraft, t: Tables, record_pid: str | None, key: dict[str, Any],
                      targets: list[str], nxt: Callable[..., str]) -> None:
    """Coverage, GP link, contacts and consent the registration needs (and their targets)."""
    subject = desk.subject
    if desk.has_cov:
        key["coverage"] = {"payer_id": subject.payer, "member_id": subject.member_id}
        if not desk.record_cov:
            targets.append(nxt("coverages"))
    if subject.practice:
        key["practice_id"] = subject.practice
        if desk.record_gp != subject.practice:
            targets.append(nxt("gp_links"))
            if desk.record_gp:
                targets += [f"gp_links:{g['id']}" for g in t.gp_links if g["patient_id"] == record_pid]
    new_contacts = 0
    if draft.guardian:
        key["contacts"].append({"role": "guardian", "name": draft.guardian[0]})
        new_contacts += t.guardian_on_file is None
    if draft.kin:
        key["contacts"].append({"role": "next_of_kin", "name": draft.kin[0]})
        new_contacts += t.kin_on_file is None
    targets += [nxt("contacts", k) for k in range(1, new_contacts + 1)]
    key["consent_by"] = "guardian" if desk.minor else "self"
    targets.append(nxt("consents"))


def _defect_tags(desk: Desk, draft: FormDraft) -> list[str]:
    """The drawn tag plus every other trap the task turned out to carry."""
    tag, outcome = desk.tag, desk.outcome
    tags = [tag]
    if desk.minor and tag != "minor_needs_guardian":
        tags.append("minor_needs_guardian")
    if draft.member_typo and tag != "invalid_member_id" and outcome in ("create", "update"):
        tags.append("invalid_member_id")
    if outcome == "update" and fold(draft.given) != fold(desk.subject.given) and tag != "existing_patient_name_variant":
        tags.append("existing_patient_name_variant")
    extra = {"refer_ambiguous": "ambiguous_match", "refer_deceased": "deceased_match", "refer_conflict": "conflicting_identifier"}
    if outcome in extra and extra[outcome] not in tags:
        tags.append(extra[outcome])
    return tags


def _key(desk: Desk, draft: FormDraft, snapshot: dict[str, list[dict[str, Any]]], t: Tables, form: dict[str, Any],
         basis: list[str], record_pid: str | None) -> dict[str, Any]:
    """The answer key: the decision, the referral and its basis, or the registration set, and
    the rows the task may write (``targets``)."""
    outcome = desk.outcome
    registers = outcome in ("create", "update")
    reason = REFER_CLASSES.get(outcome)
    decision = "refer" if reason else outcome
    counts = {table: len(rows) for table, rows in snapshot.items()}

    def nxt(table: str, k: int = 1) -> str:
        return f"{table}:{PREFIX[table]}-{counts[table] + k:04d}"

    targets: list[str] = []
    key: dict[str, Any] = {
        "defect_tags": [desk.tag], "outcome_class": outcome, "decision": decision, "needs_action": True,
        "intake_form_id": form["id"], "referral_reason": reason, "basis": basis if reason else [],
        "candidates": basis, "minor": desk.minor and registers, "patient_id": None,
        "expected_fields": {}, "coverage": None, "practice_id": None, "contacts": [], "consent_by": None,
    }
    if decision == "refer":
        targets = [nxt("referrals"), nxt("notifications"), nxt("task_timers")]
    else:
        if outcome != "create":
            key["patient_id"] = record_pid
        key["expected_fields"] = _expected_fields(desk, form, t, record_pid, targets, nxt)
        _registration_set(desk, draft, t, record_pid, key, targets, nxt)
    key["defect_tags"] = _defect_tags(desk, draft)
    key["targets"] = sorted(targets)
    return key


def _attempt(seed: int, tag: str, attempt: int, scale: int = 1) -> Generated | None:
    """One registration task whose trap is ``tag`` (see :data:`DEFECT_TAGS`), or ``None`` when
    the world drawn from ``attempt``'s stream is inconsistent with its outcome class; in a
    world about ``scale`` times the released size (:func:`_add_distractors`)."""
    desk = build_world(seed, tag, attempt)
    draft = draw_form(desk)
    snapshot, t, form = write_tables(desk, draft)
    record_pid = t.pid_of.get(id(desk.record)) if desk.record is not None else None
    basis = _consistent(desk, form, t, record_pid)
    if basis is None:
        return None
    if scale > 1:
        _add_distractors(seed, attempt, desk, snapshot, t, form, scale)
    key = _key(desk, draft, snapshot, t, form, basis, record_pid)
    instructions = _instructions(desk.rng, form["id"], desk.w.now[:10])
    return Generated(
        task={"instructions": instructions, "allowed_tools": list(ALL_TOOLS), "params": {"intake_form_id": form["id"], "today": desk.today}, "max_steps": 40},
        snapshot=snapshot,
        key=key,
    )


_generate = retrying(_attempt, DEFECT_TAGS, tries=50)


def generate(seed: int, defect_tag: str, scale: int = 1) -> Generated:
    """One registration task whose trap is ``defect_tag`` (pure in its arguments): the engine's
    retry loop over :func:`_attempt`. ``scale`` > 1 builds the same task (form, search, answer)
    in a world about ``scale`` times the released size (:func:`_add_distractors`); scale 1 is
    the released generator, byte for byte. Raises ``ValueError`` for an unknown tag or a scale
    below 1."""
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an integer >= 1, got {scale!r}")
    if scale == 1:
        return _generate(seed, defect_tag)
    return retrying(partial(_attempt, scale=scale), DEFECT_TAGS, tries=50)(seed, defect_tag)


def _blank_form(form_id: str, received_at: str, status: str) -> dict[str, Any]:
    return {
        "id": form_id, "received_at": received_at, "status": status, "identifier": "", "given_name": "", "family_name": "",
        "dob": "", "sex": "", "address_line": "", "city": "", "postcode": "", "phone": "", "previous_address": "",
        "payer_id": "", "member_id": "", "gp_practice_id": "", "guardian_name": "", "guardian_relationship": "",
        "guardian_phone": "", "next_of_kin_name": "", "next_of_kin_relationship": "", "next_of_kin_phone": "",
        "consent_signed_by": "", "notes": "",
    }


_OPENERS = (
    "Intake form {form} has just come in from the front desk.",
    "There's a new registration form waiting for you: {form}.",
    "Could you process intake form {form}? The patient is in the waiting area.",
)


def _instructions(rng: random.Random, form_id: str, today: str) -> str:
    opener = rng.choice(_OPENERS).format(form=form_id)
    return (
        f"{opener} Today is {today}. Register the patient: search the patient index first and work out whether "
        "they already have a record (never create a duplicate), then create or bring the record up to date and add "
        "the coverage, GP link, contacts and treatment consent the form calls for. Follow the rule file (get_rules). "
        "If the form matches more than one record or a deceased patient, or its identifier belongs to another "
        "person's record, change nothing and hand it over with refer_to_human(reason, basis, note). Call submit "
        "when the registration is complete."
    )
