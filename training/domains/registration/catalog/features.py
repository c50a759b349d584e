"""Every feature of every registration tier, each a function of the desk
(:class:`~.desk.RegistrationDesk`), registered once under each name a tier shows it by.

- what was read (every tier): the form, today's date, the search and its pages;
- conclusions: per search slot the rule file's comparisons and its verdict (``slot[i].match``),
  the candidates in total, and per registration item on the current record what is due;
- facts: observed facts and plain comparisons: per search slot the names, the date of birth and
  the identifier against the form's, per roster member its status and given name against the
  current record's, and the current record against the form;
- raw: per-slot observed values only: names, phones, address parts, member ids and contacts as
  episode symbols, dates as year / month / day, statuses one-hot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from backoffice.envs.registration.tables import (
    ADDRESS_FIELDS,
    age_on,
    digits,
    fold,
    identifier_valid,
    is_transposition,
    names_agree,
    parse_date,
    phone_key,
)
from backoffice.training.catalog.base import scale
from backoffice.training.catalog.features import Features
from backoffice.training.domains.registration.catalog.desk import (
    N_CONTACTS,
    N_COVERAGES,
    N_GP,
    N_ROSTER,
    N_SLOTS,
    N_SYMBOLS,
    N_VARIANTS,
    RegistrationDesk,
    member,
    squash,
)

FEATURES: Features[RegistrationDesk] = Features()

VERIFY_REASONS = ("check_digit_failed", "wrong_format", "not_on_roster", "inactive")
#: raw: dates as ``(year - 1900) / 150``, ``month / 12``, ``day / 31``
YEAR_BASE, YEAR_SPAN = 1900, 150

R = RegistrationDesk


def _flag(name: str, doc: str, fn: Any) -> None:
    """Register ``fn(desk) -> bool`` as the 0/1 feature ``name`` (the vector builder stores the
    bool as 0.0 or 1.0)."""
    FEATURES.feature(name, doc)(fn)


# -- what was read (every tier) -------------------------------------------------------------------
_flag("form_read", "1 once get_intake_form returned the form", lambda d: d.form is not None)
_flag("today_known", "1 once today's date is known (from the brief or get_rules)", lambda d: d.today is not None)
_flag("searched", "1 once search_patients returned its results (every page)", R.searched)
_flag("search_next_page", "1 if the last search page returned a next_cursor (more pages to read)",
      lambda d: d.search_cursor is not None)


@FEATURES.feature("n_results", f"search results returned / {N_SLOTS}")
def n_results(desk: RegistrationDesk) -> float:
    return scale(len(desk.results or ()), N_SLOTS)


@FEATURES.feature("writes", "successful writes this episode / 10")
def writes(desk: RegistrationDesk) -> float:
    return scale(desk.writes, 10)


# -- conclusions ---------------------------------------------------------------------------------
_flag("variants_pending", "1 if a search result with the form's date of birth (or two swapped digits) differs from the "
                          "form only in the given name (or, written the other way round, the family name) and that "
                          "name's variants were not read", R.variants_pending)

_SLOT = (
    ("slot[{i}].names_agree", "1 if the {i}-th search result's names agree with the form's (same family name and the "
                              "same given name or one of its observed variants, either way round)"),
    ("slot[{i}].dob_same", "1 if the {i}-th result's date of birth is the form's"),
    ("slot[{i}].identifier_same", "1 if the form's identifier is valid (check digit) and equals the {i}-th result's"),
    ("slot[{i}].deceased", "1 if the {i}-th result's status (search summary) is not active"),
    ("slot[{i}].match", "1 if the {i}-th result is a candidate by the rule file's matching rule (names agree; same date "
                        "of birth, or swapped digits with the same valid identifier; several candidates narrowed to the "
                        "one holding the form's valid identifier, if exactly one does)"),
)


@FEATURES.block_family(_SLOT, N_SLOTS)
def slot_verdict(desk: RegistrationDesk, i: int) -> Sequence[float]:
    r = desk.slot(i)
    if r is None:
        return (0.0,) * len(_SLOT)
    f = desk.form_value
    ident = digits(f("identifier")) if identifier_valid(f("identifier")) else ""
    match_ids = desk.match_ids()
    form_dob = f("dob")
    return (float(names_agree(f("given_name"), f("family_name"), str(r.get("given_name", "")), str(r.get("family_name", "")),
                              desk.variants)),
            float(r.get("dob") == form_dob), float(bool(ident) and r.get("identifier") == ident), float(r.get("status") != "active"),
            float(str(r["id"]) in match_ids))


FEATURES.family("slot[{i}].dob_swapped", N_SLOTS, "1 if the {i}-th result's date of birth differs from the form's by "
                "two swapped adjacent digits")(
    lambda d, i: float((r := d.slot(i)) is not None and is_transposition(str(r.get("dob", "")), d.form_value("dob"))))

_flag("match_none", "1 if the search was read and no result is a candidate (slot match features)",
      lambda d: d.searched() and not d.matches)
_flag("match_one", "1 if exactly one result is a candidate", lambda d: len(d.matches) == 1)
_flag("match_many", "1 if more than one result is a candidate", lambda d: len(d.matches) > 1)
_flag("match_deceased", "1 if exactly one result is a candidate and it is not active",
      lambda d: len(d.matches) == 1 and d.matches[0].get("status") != "active")
_flag("identifier_conflict", "1 if the form's valid identifier is held by a search result that is not a candidate "
                             "(R-IDENTITY-CONFLICT)", lambda d: d.searched() and d.holder is not None)
_flag("patient_known", "1 if there is a current record (opened with get_patient or created)", lambda d: d.rec is not None)
_flag("current.known", "1 if there is a current record (opened with get_patient or created)", lambda d: d.rec is not None)
_flag("patient_created", "1 if create_patient succeeded this episode", lambda d: d.created)
_flag("current.created", "1 if create_patient succeeded this episode", lambda d: d.created)
_flag("create_rejected", "1 if a create_patient call returned an error (the next one omits the identifier)",
      lambda d: d.create_rejected)
_flag("current_is_match", "1 if the current record is one of the candidate search results",
      lambda d: d.rec is not None and str(d.rec.get("id")) in d.match_ids())
_flag("current_not_active", "1 if the current record's status is not active (every write is masked)",
      lambda d: d.rec is not None and d.rec.get("status") != "active")
_flag("minor", "1 if the current record's date of birth makes the patient under 16 on today's date", R.minor)
_flag("address_verified", "1 if 'address' is in the current record's verified list",
      lambda d: d.rec is not None and "address" in (d.rec.get("verified") or ()))
_flag("current.address_verified", "1 if 'address' is in the current record's verified list",
      lambda d: d.rec is not None and "address" in (d.rec.get("verified") or ()))
_flag("address_evidence", "1 if the form carries an evidence document for the address field", lambda d: bool(d.address_evidence()))
_flag("form.address_evidence", "1 if the form carries an evidence document for the address field",
      lambda d: bool(d.address_evidence()))
_flag("form.evidence[address]", "1 if the form carries an evidence document for the address field",
      lambda d: bool(d.address_evidence()))
_flag("form_has_payer", "1 if the form names a payer (and a member id)", lambda d: bool(d.form_value("payer_id")))
_flag("form.payer_given", "1 if the form names a payer", lambda d: bool(d.form_value("payer_id")))
_flag("card_checked", "1 once verify_member_id answered for the card's member id", lambda d: d.card is not None)
_flag("card.checked", "1 once verify_member_id answered for the card's member id", lambda d: d.card is not None)
_flag("card_ok", "1 if the payer accepted the card's id and its member's family name and date of birth are the current "
                 "record's", R.card_ok)
_flag("roster_checked", "1 once lookup_member answered for the current record's family name and date of birth",
      lambda d: d.roster() is not None)
_flag("roster.checked", "1 once lookup_member answered for the current record's family name and date of birth",
      lambda d: d.roster() is not None)
_flag("roster_ok", "1 if lookup_member found an active member whose given name agrees with the current record's "
                   "(observed variants allowed)", R.roster_ok)
_flag("coverage_missing", "1 if the form names a payer and the current record holds no active coverage of it with the "
                          "card's or the roster's member id (on file or added)", R.coverage_missing)


@FEATURES.feature("coverage_count", "active coverages of the form's payer on the current record / 2")
@FEATURES.feature("current.payer_coverages", "active coverages of the form's payer on the current record / 2")
def payer_coverages(desk: RegistrationDesk) -> float:
    return scale(len(desk.payer_coverages()), 2)


_flag("form_has_gp", "1 if the form names a GP practice", lambda d: bool(d.form_value("gp_practice_id")))
_flag("form.gp_given", "1 if the form names a GP practice", lambda d: bool(d.form_value("gp_practice_id")))
_flag("form_has_guardian", "1 if the form names a guardian", lambda d: bool(d.form_value("guardian_name")))
_flag("form.guardian_given", "1 if the form names a guardian", lambda d: bool(d.form_value("guardian_name")))
_flag("guardian_contact_known", "1 if the current record has a guardian contact to cite (added or on file)",
      lambda d: d.guardian_contact_id() is not None)
_flag("form_has_kin", "1 if the form names a next of kin", lambda d: bool(d.form_value("next_of_kin_name")))
_flag("form.kin_given", "1 if the form names a next of kin", lambda d: bool(d.form_value("next_of_kin_name")))
_flag("consent_recorded", "1 if a treatment consent was recorded for the current record this episode",
      lambda d: bool(d.rec and d.rec.get("consent_recorded")))


@FEATURES.feature("consent_count", "treatment consents recorded this episode (any record) / 2")
@FEATURES.feature("consents_written", "treatment consents recorded this episode (any record) / 2")
def consent_count(desk: RegistrationDesk) -> float:
    return scale(desk.consents, 2)


_OPEN = (
    ("phone_differs", "1 if the form gives a phone and the current record's phone differs (digits, +44 and 0 prefixes "
                      "equal)"),
    ("address_differs", "1 if the current record's address line, city or postcode differs from the form's (case and "
                        "spaces ignored)"),
    ("address_update_allowed", "1 if the address differs and R-VERIFIED-FIELD allows the change: the record's address is "
                               "unverified or the form carries address evidence"),
    ("gp_missing", "1 if the form names a GP practice the current record is not actively linked to"),
    ("guardian_missing", "1 if the form names a guardian the current record has no guardian contact of"),
    ("kin_missing", "1 if the form names a next of kin the current record has no next-of-kin contact of"),
    ("items_open", "items still open on the current record / 7: phone differs, address update allowed, coverage "
                   "missing, GP link missing, guardian missing, next of kin missing, no consent"),
    ("registration_complete", "1 if there is an active current record and no item is open on it"),
)


@FEATURES.block(_OPEN)
def open_items(desk: RegistrationDesk) -> Sequence[float]:
    """What is still due on the current record (the conclusions tier's registration set)."""
    rec, f = desk.rec, desk.form_value
    phone = rec is not None and bool(f("phone")) and phone_key(f("phone")) != phone_key(rec.get("phone"))
    address = desk.address_differs()
    verified = rec is not None and "address" in (rec.get("verified") or ())
    allowed = address and (not verified or bool(desk.address_evidence()))
    gp = rec is not None and bool(f("gp_practice_id")) and not desk.gp_linked()
    guardian = rec is not None and bool(f("guardian_name")) and desk.contact("guardian") is None
    kin = rec is not None and bool(f("next_of_kin_name")) and desk.contact("next_of_kin") is None
    consent = rec is not None and not bool(rec and rec.get("consent_recorded"))
    items = (phone, allowed, desk.coverage_missing(), gp, guardian, kin, consent)
    return (float(phone), float(address), float(allowed), float(gp), float(guardian), float(kin),
            scale(sum(map(bool, items)), 7), float(desk.active() and not any(items)))


# -- facts ----------------------------------------------------------------------------------------
_flag("form.identifier_given", "1 if the form gives an identifier", lambda d: bool(d.form_value("identifier")))
_flag("form.identifier_valid", "1 if the form's identifier is 10 digits whose mod-11 check digit holds",
      lambda d: identifier_valid(d.form_value("identifier")))
_flag("form.phone_given", "1 if the form gives a phone", lambda d: bool(d.form_value("phone")))
_flag("form.member_id_given", "1 if the form gives a member id (the card's)", lambda d: bool(d.form_value("member_id")))

_FACT_SLOT = (
    ("present", "1 if the search returned an {i}-th result"),
    ("family_equal", "1 if the {i}-th result's family name equals the form's (case and spaces ignored)"),
    ("given_equal", "1 if the {i}-th result's given name equals the form's"),
    ("given_variant", "1 if the {i}-th result's given name differs from the form's but is one of its observed variants "
                      "(get_name_variants)"),
    ("swapped_family_equal", "1 if the {i}-th result's family name equals the form's given name"),
    ("swapped_given_equal", "1 if the {i}-th result's given name equals the form's family name"),
    ("swapped_given_variant", "1 if the {i}-th result's given name differs from the form's family name but is one of "
                              "its observed variants"),
    ("dob_equal", "1 if the {i}-th result's date of birth equals the form's"),
)
_FACT_SLOT_TAIL = (
    ("identifier_equal", "1 if the form gives an identifier and its digits equal the {i}-th result's identifier"),
    ("active", "1 if the {i}-th result's status (search summary) is active"),
)


@FEATURES.block_family(tuple((f"slot[{{i}}].{n}", d) for n, d in _FACT_SLOT), N_SLOTS)
def slot_names(desk: RegistrationDesk, i: int) -> Sequence[float]:
    r = desk.slot(i)
    if r is None:
        return (0.0,) * len(_FACT_SLOT)
    f = desk.form_value
    form_given, form_family = f("given_name"), f("family_name")
    g, fam, dob = (str(r.get(k, "")) for k in ("given_name", "family_name", "dob"))
    return (1.0, float(fold(fam) == fold(form_family)), float(fold(g) == fold(form_given)),
            float(fold(g) != fold(form_given) and desk.names_equivalent(form_given, g)),
            float(fold(fam) == fold(form_given)), float(fold(g) == fold(form_family)),
            float(fold(g) != fold(form_family) and desk.names_equivalent(form_family, g)), float(dob == f("dob")))


@FEATURES.block_family(tuple((f"slot[{{i}}].{n}", d) for n, d in _FACT_SLOT_TAIL), N_SLOTS)
def slot_identity(desk: RegistrationDesk, i: int) -> Sequence[float]:
    r = desk.slot(i)
    return float(desk.identifier_same(r)), float(r is not None and r.get("status") == "active")


def _slot_flag(pattern: str, doc: str, fn: Any) -> None:
    FEATURES.family(pattern, N_SLOTS, doc)(lambda desk, i: float(fn(desk, desk.slot(i))))


_slot_flag("slot[{i}].opened", "1 if the {i}-th result was opened with get_patient this episode (a referral cites it)",
           lambda d, r: r is not None and str(r.get("id")) in d.opened)
_slot_flag("slot[{i}].current", "1 if the {i}-th result is the current record",
           lambda d, r: r is not None and str(r.get("id")) == d.current)
_slot_flag("slot[{i}].is_current", "1 if the {i}-th result is the current record (same entity)",
           lambda d, r: r is not None and str(r.get("id")) == d.current)
_flag("current.active", "1 if the current record's status is active", R.active)
_flag("current.status[active]", "1 if the current record's status is active", R.active)


@FEATURES.feature("current.age_years", "the current record's age in whole years on today's date / 100 (0 if unknown)")
def age_years(desk: RegistrationDesk) -> float:
    rec = desk.rec
    if rec is not None and desk.today and parse_date(str(rec.get("dob", ""))):
        return scale(age_on(str(rec["dob"]), desk.today), 100)
    return 0.0


_flag("current.phone_equal_form", "1 if the current record's phone equals the form's (digits; +44 and 0 prefixes equal)",
      lambda d: d.rec is not None and bool(d.form_value("phone")) and phone_key(d.form_value("phone")) == phone_key(d.rec.get("phone")))
_flag("current.address_equal_form", "1 if the current record's address line, city and postcode equal the form's (case "
                                    "and spaces ignored)", lambda d: d.rec is not None and d.form is not None and not d.address_differs())
_flag("current.coverage_card_id", "1 if the current record holds an active coverage of the form's payer with the card's "
                                  "member id (on file or added)", lambda d: d.covered_with(d.form_value("member_id")))
_flag("current.gp_linked_form_practice", "1 if the current record has an active link to the form's GP practice", R.gp_linked)
_flag("current.guardian_named_form", "1 if the current record has a guardian contact with the form's guardian name (on "
                                     "file or added)", lambda d: d.contact("guardian") is not None)
_flag("current.kin_named_form", "1 if the current record has a next-of-kin contact with the form's next of kin name",
      lambda d: d.contact("next_of_kin") is not None)
_flag("current.consent_written", "1 if a treatment consent was recorded for the current record this episode",
      lambda d: d.consents_written() > 0)
_flag("card.valid", "verify_member_id's 'valid' flag", lambda d: bool((d.card or {}).get("valid")))
_flag("card.family_equal_current", "1 if the card's member's family name equals the current record's",
      lambda d: d.rec is not None and bool((d.card or {}).get("family_name"))
      and fold((d.card or {}).get("family_name")) == fold(d.rec.get("family_name")))
_flag("card.dob_equal_current", "1 if the card's member's date of birth equals the current record's",
      lambda d: d.rec is not None and bool((d.card or {}).get("dob")) and (d.card or {}).get("dob") == d.rec.get("dob"))


def _roster_member(desk: RegistrationDesk, j: int) -> dict[str, Any] | None:
    roster = desk.roster() or []
    return roster[j] if j < len(roster) else None


FEATURES.family("current.coverage_roster_id[{i}]", N_ROSTER, "1 if the current record holds an active coverage of the "
                "form's payer with lookup_member's {i}-th member id")(
    lambda d, j: float((m := _roster_member(d, j)) is not None and d.covered_with(m.get("member_id"))))
FEATURES.family("roster[{i}].present", N_ROSTER, "1 if lookup_member returned a {i}-th member")(
    lambda d, j: float(_roster_member(d, j) is not None))
FEATURES.family("roster[{i}].active", N_ROSTER, "1 if lookup_member's {i}-th member is active")(
    lambda d, j: float((m := _roster_member(d, j)) is not None and m.get("status") == "active"))
FEATURES.family("roster[{i}].status[active]", N_ROSTER, "1 if lookup_member's {i}-th member is active")(
    lambda d, j: float((m := _roster_member(d, j)) is not None and m.get("status") == "active"))
FEATURES.family("roster[{i}].given_equivalent_current", N_ROSTER, "1 if lookup_member's {i}-th member's given name "
                "equals the current record's or is one of its observed variants")(
    lambda d, j: float((m := _roster_member(d, j)) is not None and d.rec is not None
                       and d.names_equivalent(m.get("given_name"), d.rec.get("given_name"))))


# -- raw --------------------------------------------------------------------------------------------
_SYM = f"(episode symbol: the k-th distinct {{kind}} seen this episode / {N_SYMBOLS}; 0 if none)"


def _sym_doc(text: str, kind: str) -> str:
    return f"{text} {_SYM.format(kind=kind)}"


def _symbol(name: str, doc: str, kind: str, value: Any) -> None:
    """Register the raw feature ``name``: the symbol of ``value(desk)`` among the ``kind`` values."""
    def fn(desk: RegistrationDesk) -> float:
        desk.named()
        return desk.sym(kind, value(desk))
    FEATURES.feature(name, doc)(fn)


def date_values(text: Any) -> tuple[float, float, float]:
    """A date as ``(year - 1900) / 150``, ``month / 12``, ``day / 31`` (zeros if none)."""
    d = parse_date(str(text or "")[:10])
    if d is None:
        return 0.0, 0.0, 0.0
    return (d.year - YEAR_BASE) / YEAR_SPAN, d.month / 12, d.day / 31


def _date(prefix: str, what: str, value: Any) -> None:
    named = ((f"{prefix}.year", f"{what}: (year - {YEAR_BASE}) / {YEAR_SPAN} (0 if none)"),
             (f"{prefix}.month", f"{what}: month / 12"), (f"{prefix}.day", f"{what}: day / 31"))
    FEATURES.block(named)(lambda desk: date_values(value(desk)))


_date("today", "today's date", lambda d: d.today)
_symbol("form.given", _sym_doc("the form's given name", "name"), "name", lambda d: fold(d.form_value("given_name")))
_symbol("form.family", _sym_doc("the form's family name", "name"), "name", lambda d: fold(d.form_value("family_name")))
_date("form.dob", "the form's date of birth", lambda d: d.form_value("dob"))
_symbol("form.phone", _sym_doc("the form's phone (digits; +44 and 0 prefixes equal)", "phone"), "phone",
        lambda d: phone_key(d.form_value("phone")))
for _k in ADDRESS_FIELDS:
    _symbol(f"form.{_k}", _sym_doc(f"the form's {_k} (case and spaces ignored)", "address part"), "address",
            lambda d, k=_k: squash(d.form_value(k)))
_symbol("form.member_id", _sym_doc("the card's member id", "member id"), "member", lambda d: member(d.form_value("member_id")))
_symbol("form.guardian", _sym_doc("the form's guardian's name", "contact name"), "contact",
        lambda d: fold(d.form_value("guardian_name")))
_symbol("form.next_of_kin", _sym_doc("the form's next of kin's name", "contact name"), "contact",
        lambda d: fold(d.form_value("next_of_kin_name")))


def _variant(which: str) -> Any:
    def fn(desk: RegistrationDesk, j: int) -> float:
        desk.named()
        seen = desk.variants.get(fold(desk.form_value(f"{which}_name")), ())
        return desk.sym("name", fold(seen[j])) if j < len(seen) else 0.0
    return fn


for _w in ("given", "family"):
    FEATURES.family(f"variants[{_w}][{{i}}]", N_VARIANTS,
                    _sym_doc(f"the {{i}}-th observed variant of the form's {_w} name", "name"))(_variant(_w))

_RAW_SLOT = (
    ("slot[{i}].given", _sym_doc("the {i}-th result's given name", "name")),
    ("slot[{i}].family", _sym_doc("the {i}-th result's family name", "name")),
    ("slot[{i}].dob.year", f"the {{i}}-th result's date of birth: (year - {YEAR_BASE}) / {YEAR_SPAN} (0 if none)"),
    ("slot[{i}].dob.month", "the {i}-th result's date of birth: month / 12"),
    ("slot[{i}].dob.day", "the {i}-th result's date of birth: day / 31"),
    ("slot[{i}].identifier_same_as_form", "1 if the {i}-th result's identifier is the one written on the form (same "
                                          "entity)"),
    ("slot[{i}].status[active]", "1 if the {i}-th result's status is active"),
    ("slot[{i}].status[deceased]", "1 if the {i}-th result's status is deceased"),
)


@FEATURES.block_family(_RAW_SLOT, N_SLOTS)
def raw_slot(desk: RegistrationDesk, i: int) -> Sequence[float]:
    desk.named()
    r = desk.slot(i)
    r0 = r or {}
    return (desk.sym("name", fold(r0.get("given_name"))), desk.sym("name", fold(r0.get("family_name"))),
            *date_values(r0.get("dob")), float(desk.identifier_same(r)),
            float(r is not None and r.get("status") == "active"), float(r is not None and r.get("status") == "deceased"))


def _current(desk: RegistrationDesk) -> Mapping[str, Any]:
    return desk.rec or {}


_symbol("current.given", _sym_doc("the current record's given name", "name"), "name",
        lambda d: fold(_current(d).get("given_name")))
_symbol("current.family", _sym_doc("the current record's family name", "name"), "name",
        lambda d: fold(_current(d).get("family_name")))
_date("current.dob", "the current record's date of birth", lambda d: _current(d).get("dob"))
_symbol("current.phone", _sym_doc("the current record's phone (digits; +44 and 0 prefixes equal)", "phone"), "phone",
        lambda d: phone_key(_current(d).get("phone")))
for _k in ADDRESS_FIELDS:
    _symbol(f"current.{_k}", _sym_doc(f"the current record's {_k} (case and spaces ignored)", "address part"), "address",
            lambda d, k=_k: squash(_current(d).get(k)))
_flag("current.verified[address]", "1 if 'address' is in the current record's verified list",
      lambda d: "address" in (_current(d).get("verified") or ()))


@FEATURES.feature("current.consents_written", "treatment consents recorded for the current record this episode / 2")
def current_consents(desk: RegistrationDesk) -> float:
    return scale(desk.consents_written(), 2)


def _nth(desk: RegistrationDesk, key: str, j: int) -> Mapping[str, Any]:
    rows = list(_current(desk).get(key) or ())
    return rows[j] if j < len(rows) else {}


@FEATURES.block_family((
    ("coverage[{i}].payer_is_form_payer", "1 if the current record's {i}-th coverage is with the form's payer (same "
                                          "entity)"),
    ("coverage[{i}].member_id", _sym_doc("the current record's {i}-th coverage's member id", "member id")),
    ("coverage[{i}].status[active]", "1 if the current record's {i}-th coverage is active"),
), N_COVERAGES)
def raw_coverage(desk: RegistrationDesk, j: int) -> Sequence[float]:
    desk.named()
    c, payer = _nth(desk, "coverages", j), desk.form_value("payer_id")
    return (float(bool(c) and bool(payer) and c.get("payer_id") == payer), desk.sym("member", member(c.get("member_id"))),
            float(bool(c) and c.get("status") == "active"))


@FEATURES.block_family((
    ("gp_link[{i}].present", "1 if the current record has a {i}-th GP link"),
    ("gp_link[{i}].practice_is_form_practice", "1 if the current record's {i}-th GP link is to the form's practice (same "
                                               "entity)"),
    ("gp_link[{i}].status[active]", "1 if the current record's {i}-th GP link is active"),
), N_GP)
def raw_gp_link(desk: RegistrationDesk, j: int) -> Sequence[float]:
    g, practice = _nth(desk, "gp_links", j), desk.form_value("gp_practice_id")
    return float(bool(g)), float(bool(g) and bool(practice) and g.get("practice_id") == practice), float(bool(g) and g.get("status") == "active")


@FEATURES.block_family((
    ("contact[{i}].role[guardian]", "1 if the current record's {i}-th contact is a guardian"),
    ("contact[{i}].role[next_of_kin]", "1 if the current record's {i}-th contact is a next of kin"),
    ("contact[{i}].name", _sym_doc("the current record's {i}-th contact's name", "contact name")),
    ("contact[{i}].added", "1 if the current record's {i}-th contact was added this episode"),
), N_CONTACTS)
def raw_contact(desk: RegistrationDesk, j: int) -> Sequence[float]:
    desk.named()
    c = _nth(desk, "contacts", j)
    return (float(c.get("role") == "guardian"), float(c.get("role") == "next_of_kin"), desk.sym("contact", fold(c.get("name"))),
            float(bool(c.get("added"))))


for _r in VERIFY_REASONS:
    _flag(f"card.reason[{_r}]", f"1 if verify_member_id's reason is {_r}", lambda d, r=_r: (d.card or {}).get("reason") == r)
_symbol("card.family", _sym_doc("the card's member's family name (verify_member_id)", "name"), "name",
        lambda d: fold((d.card or {}).get("family_name")))
_date("card.dob", "the card's member's date of birth (verify_member_id)", lambda d: (d.card or {}).get("dob"))


@FEATURES.block_family((
    ("roster[{i}].member_id", _sym_doc("lookup_member's {i}-th member id", "member id")),
    ("roster[{i}].given", _sym_doc("lookup_member's {i}-th member's given name", "name")),
), N_ROSTER)
def raw_roster(desk: RegistrationDesk, j: int) -> Sequence[float]:
    desk.named()
    m = _roster_member(desk, j) or {}
    return desk.sym("member", member(m.get("member_id"))), desk.sym("name", fold(m.get("given_name")))


__all__ = ["FEATURES", "VERIFY_REASONS", "YEAR_BASE", "YEAR_SPAN", "date_values"]
