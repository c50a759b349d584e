"""The registration catalog's one observation state: what the clerk has read of the intake form,
the patient index and the current record, and the helpers every tier grounds its calls, decides
legality and computes its features with.

One intake form per task. The agent reads the form, the variants of the form's given and family
names and one search of the patient index (the form's name, date of birth, identifier and
postcode); ``today`` comes from the brief ("Today is ...") or ``get_rules``. Writes act on the
*current record*: the one last opened with ``get_patient[i]`` or created; the desk keeps each
record as read with this episode's writes on it.

Paged reads: ``search_patients`` returns one page at a time; the results are known (``results``)
once the last page has come back.

The conclusions tier's matching rule is the rule file's
(:func:`backoffice.envs.registration.tables.match_candidates`, the clerk's computation), fed only
the observed form, the observed name variants and the search summaries (:attr:`RegistrationDesk.matches`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from backoffice.envs.registration.tables import (
    ADDRESS_FIELDS,
    MINOR_AGE,
    age_on,
    digits,
    fold,
    given_equivalent,
    identifier_holder,
    is_transposition,
    match_candidates,
    parse_date,
    phone_key,
)
from backoffice.training.catalog.features import Desk, derived

#: search results the catalog can open (the generator keeps a form's search at 3-6 hits)
N_SLOTS = 6
#: roster members a catalog action can add (``lookup_member`` answers 1-2 at every world size)
N_ROSTER = 2
#: the current record's coverages, GP links and contacts shown per slot (on file plus added)
N_COVERAGES = N_GP = N_CONTACTS = 3
#: observed variants of one name shown (``get_name_variants`` lists at most 4)
N_VARIANTS = 4
#: raw: symbols are ``k / N_SYMBOLS`` (the k-th distinct value of its kind seen this episode)
N_SYMBOLS = 32
#: the tools writing on the current record (masked when there is none, or it is not active: the
#: tool rejects every write to a locked record with ``patient_not_active``)
RECORD_TOOLS = frozenset({"update_patient", "add_coverage", "link_gp", "add_contact", "record_consent"})
#: what ``create_patient`` copies from the form
CREATE_FIELDS = ("given_name", "family_name", "dob", "sex", "address_line", "city", "postcode", "phone")
REFER_REASONS = ("ambiguous_match", "deceased_match", "identity_conflict")
_TODAY = re.compile(r"Today is (\d{4}-\d{2}-\d{2})")


def member(text: Any) -> str:
    """A member id as compared: stripped, upper case."""
    return str(text or "").strip().upper()


def squash(text: Any) -> str:
    """An address part as compared: folded, spaces removed."""
    return fold(text).replace(" ", "")


class RegistrationDesk(Desk):
    """What the agent has read of its form, the index and the records it opened or created."""

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        self.form_id = str((brief.get("params") or {}).get("intake_form_id", ""))
        found = _TODAY.search(str(brief.get("instructions", "")))
        self.today: str | None = found.group(1) if found and parse_date(found.group(1)) else None
        self.rules_read = False
        self.form: dict[str, Any] | None = None
        self._form_values: dict[str, str] = {}  # the form's values as compared (form_value), set with it
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
        #: raw: kind -> normalised value -> symbol
        self.symbols: dict[str, dict[str, int]] = {}

    # -- what was read, and what it implies --------------------------------------------------
    def form_value(self, key: str) -> str:
        """The form's ``key`` as a string, ``""`` when blank or absent (or no form read)."""
        return self._form_values.get(key, "")

    @property
    def rec(self) -> dict[str, Any] | None:
        return self.records.get(self.current) if self.current else None

    def active(self) -> bool:
        return self.rec is not None and self.rec.get("status") == "active"

    def variants_pending(self) -> bool:
        if self.form is None or self.results is None:
            return False
        given, family, dob = fold(self.form_value("given_name")), fold(self.form_value("family_name")), self.form_value("dob")
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

    def minor(self) -> bool:
        rec = self.rec
        if not rec or not self.today or not parse_date(str(rec.get("dob", ""))):
            return False
        return age_on(rec["dob"], self.today) < MINOR_AGE

    def card_ok(self) -> bool:
        c, rec = self.card, self.rec
        return bool(c and rec and c.get("valid") and fold(c.get("family_name")) == fold(rec.get("family_name"))
                    and c.get("dob") == rec.get("dob"))

    def roster(self) -> list[dict[str, Any]] | None:
        rec = self.rec
        return self.rosters.get((fold(rec.get("family_name")), str(rec.get("dob")))) if rec else None

    def roster_member(self) -> dict[str, Any] | None:
        """The member lookup_member found for the current record: the first active one whose
        given name agrees with the record's (observed variants allowed), else the first listed
        (which then fails :meth:`_roster_ok`). A look-alike (same family name and date of birth)
        may be listed before it."""
        roster, rec = self.roster(), self.rec
        if not roster:
            return None
        given = str((rec or {}).get("given_name", ""))
        return next((m for m in roster if m.get("status") == "active"
                     and given_equivalent(str(m.get("given_name", "")), given, self.variants)), roster[0])

    def roster_ok(self) -> bool:
        m, rec = self.roster_member(), self.rec
        return bool(m and rec and m.get("status") == "active"
                    and given_equivalent(str(m.get("given_name", "")), str(rec.get("given_name", "")), self.variants))

    def payer_coverages(self) -> list[dict[str, Any]]:
        payer = self.form_value("payer_id")
        return [c for c in (self.rec or {}).get("coverages", ()) if payer and c.get("payer_id") == payer
                and c.get("status") == "active"]

    def coverage_missing(self) -> bool:
        if not self.rec or not self.form_value("payer_id"):
            return False
        m = self.roster_member()
        ids = {member(self.form_value("member_id")), member(m.get("member_id") if m else "")} - {""}
        return not any(member(c.get("member_id")) in ids for c in self.payer_coverages())

    def gp_linked(self) -> bool:
        practice = self.form_value("gp_practice_id")
        return bool(practice) and any(g.get("practice_id") == practice and g.get("status") == "active"
                                      for g in (self.rec or {}).get("gp_links", ()))

    def contact(self, role: str) -> dict[str, Any] | None:
        name = self.form_value(f"{role}_name")
        return next((c for c in (self.rec or {}).get("contacts", ())
                     if c.get("role") == role and name and fold(c.get("name")) == fold(name)), None)

    def contact_id(self, j: int) -> str | None:
        contacts = (self.rec or {}).get("contacts") or ()
        return str(contacts[j]["id"]) if j < len(contacts) and contacts[j].get("id") else None

    def guardian_contact_id(self) -> str | None:
        rec = self.rec or {}
        added = [c for c in rec.get("contacts", ()) if c.get("role") == "guardian" and c.get("added")]
        on_file = self.contact("guardian")
        chosen = added[-1] if added else on_file
        return str(chosen["id"]) if chosen and chosen.get("id") else None

    def address_differs(self) -> bool:
        rec = self.rec
        if not self.form or rec is None:
            return False
        return any(squash(self.form_value(f)) != squash(rec.get(f)) for f in ADDRESS_FIELDS)

    def address_evidence(self) -> list[str]:
        return [str(e["id"]) for e in (self.form or {}).get("evidence", ()) if e.get("field") == "address" and e.get("id")]

    @derived
    def match_ids(self) -> frozenset[str]:
        """The ids of the candidates (:attr:`matches`)."""
        return frozenset(str(m["id"]) for m in self.matches)

    # -- the facts and raw tiers' reads --------------------------------------------------------
    def searched(self) -> bool:
        return self.form is not None and self.results is not None

    def slot(self, i: int) -> dict[str, Any] | None:
        """The ``i``-th search result once every page was read."""
        results = self.results
        return results[i] if self.form is not None and results is not None and i < len(results) else None

    def identifier_same(self, r: Mapping[str, Any] | None) -> bool:
        """A result's identifier is the one written on the form (digits compared)."""
        ident = digits(self.form_value("identifier"))
        return r is not None and bool(ident) and str(r.get("identifier", "")) == ident

    def consents_written(self) -> int:
        return int((self.rec or {}).get("consents_written", 0))

    def names_equivalent(self, a: Any, b: Any) -> bool:
        return given_equivalent(str(a or ""), str(b or ""), self.variants)  # observed variants only (never None)

    def covered_with(self, member_id: Any) -> bool:
        m = member(member_id)
        return bool(m) and any(member(c.get("member_id")) == m for c in self.payer_coverages())

    # -- raw: episode symbols ------------------------------------------------------------------
    def symbol_values(self) -> Iterator[tuple[str, str]]:
        """Every ``(kind, normalised value)`` the raw tier shows, in its feature order."""
        f, rec = self.form_value, self.rec or {}
        yield from (("name", fold(f("given_name"))), ("name", fold(f("family_name"))), ("phone", phone_key(f("phone"))))
        yield from (("address", squash(f(k))) for k in ADDRESS_FIELDS)
        yield from (("member", member(f("member_id"))), ("contact", fold(f("guardian_name"))),
                    ("contact", fold(f("next_of_kin_name"))))
        for w in ("given_name", "family_name"):
            yield from (("name", fold(v)) for v in self.variants.get(fold(f(w)), ())[:N_VARIANTS])
        for i in range(N_SLOTS):
            r = self.slot(i) or {}
            yield from (("name", fold(r.get("given_name"))), ("name", fold(r.get("family_name"))))
        yield from (("name", fold(rec.get("given_name"))), ("name", fold(rec.get("family_name"))),
                    ("phone", phone_key(rec.get("phone"))))
        yield from (("address", squash(rec.get(k))) for k in ADDRESS_FIELDS)
        yield from (("member", member(c.get("member_id"))) for c in (rec.get("coverages") or ())[:N_COVERAGES])
        yield from (("contact", fold(c.get("name"))) for c in (rec.get("contacts") or ())[:N_CONTACTS])
        yield "name", fold((self.card or {}).get("family_name"))
        for m in (self.roster() or [])[:N_ROSTER]:
            yield from (("member", member(m.get("member_id"))), ("name", fold(m.get("given_name"))))

    @derived
    def named(self) -> bool:
        """Every value the raw tier shows has its symbol (new values named in feature order, so a
        symbol depends on the history only); run once per step, when a raw feature first asks."""
        for kind, text in self.symbol_values():
            self.sym(kind, text)
        return True

    def sym(self, kind: str, text: str) -> float:
        """The symbol of ``text`` among the ``kind`` values seen / :data:`N_SYMBOLS` (0 if empty)."""
        if not text:
            return 0.0
        table = self.symbols.setdefault(kind, {})
        code = table.setdefault(text, len(table) + 1)
        return min(1.0, code / N_SYMBOLS)

    # -- observing --------------------------------------------------------------------------
    def observe(self, action: str, call: dict[str, Any], result: dict[str, Any]) -> None:  # noqa: C901
        tool = call.get("tool")
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
            self._form_values = {k: str(v or "") for k, v in got.items()}
        elif tool == "get_rules":
            self.rules_read = True
        elif tool == "get_name_variants":
            self.variants[fold(str(got.get("name", "")))] = tuple(got.get("variants") or ())
            self.names_read["given" if action.endswith("[given]") else "family"] = True
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
        if tool in ("get_intake_form", "search_patients", "get_name_variants"):
            self._recompute_matches()
