"""Generator of sufficiency tasks: ``generate(seed, defect_tag, scale=1) -> Generated``, pure in its arguments.

A task is one case in an intake queue among neighbouring cases. The generator decides the
state of every required item (valid, valid but suspicious-looking, absent, failing one
condition, covered by a held record, with a held record that fails a condition), scripts the
applicant's replies, then *simulates the correct review rounds* with :func:`rules.assess` to
write the answer key (per-round missing / satisfied / satisfiable items and the end state).

Reading order: :func:`build_world` draws the review date, the id pools, the case type and the
applicant (a :class:`CaseFile`); :data:`PLANTERS` holds one ``_plant_<tag>`` per defect tag,
which sets the state of the items at the first review; then the case, its documents and held
records, notes and neighbours are drawn, the replies scripted (:func:`_reply_script`) and the
rounds simulated; :func:`_key` and :func:`_task` assemble the answer key and the brief. Every
random draw happens in that order (the release is pinned to it). One attempt per task
(no redraw): a draw whose rounds miss the trap is a bug, not a redraw. ``scale`` k > 1 adds
distractor cases after all of that (:func:`_scale_world`), from a stream of their own.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from backoffice.envs.core import Generated
from backoffice.envs.core.canonical import derive_seed
from backoffice.envs.sufficiency.rules import assess
from backoffice.envs.sufficiency.tables import (
    CASE_TYPES,
    INTAKE_QUEUE,
    SLA_DAYS,
    add_days,
    days_between,
    decision_queue,
    queue_rows,
    requirement_rows,
    routing_rows,
)

#: the requirement rows and the routing rule of each case type (the tables never change)
_ITEMS_BY_TYPE: dict[str, tuple[dict[str, Any], ...]] = {
    ct: tuple(r for r in requirement_rows() if r["case_type"] == ct) for ct in sorted(CASE_TYPES)
}
_ROUTING_BY_TYPE: dict[str, dict[str, Any]] = {r["id"]: r for r in routing_rows()}

DEFECT_TAGS = (
    "complete_on_arrival", "missing_item", "expired_document", "unsigned_document", "name_mismatch",
    "illegible_document", "held_record_available", "stale_held_record", "reply_incomplete",
    "reply_invalid", "awaiting_applicant", "wrong_queue_route",
)

#: The single-condition flaw of a document, and the defect tag it shows up as.
FLAW_TAG = {
    "absent": "missing_item", "expired": "expired_document", "future": "expired_document",
    "unsigned": "unsigned_document", "name": "name_mismatch", "illegible": "illegible_document",
}
CONDITION_TAG = {
    "presence": "missing_item", "age": "expired_document", "not_after_review_date": "expired_document",
    "signature": "unsigned_document", "name_match": "name_mismatch", "legibility": "illegible_document",
}

FIRST_NAMES = (
    "Amelia", "Oliver", "Isla", "George", "Ava", "Noah", "Mia", "Arthur", "Ivy", "Leo", "Freya", "Oscar",
    "Grace", "Harry", "Sofia", "Jack", "Lily", "Theo", "Emily", "Samuel", "Nadia", "Tariq", "Priya", "Wei",
    "Chloe", "Daniel", "Ruth", "Kwame", "Marta", "Pavel",
)
SURNAMES = (
    "Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Johnson", "Davies", "Patel", "Robinson",
    "Wright", "Thompson", "Evans", "Walker", "White", "Roberts", "Green", "Hall", "Wood", "Jackson",
    "Clarke", "Okafor", "Nowak", "Khan", "Hughes", "Edwards", "Lewis", "Murphy", "Kaur", "Chen",
)
LANDLORDS = ("Harbour Lettings Ltd", "M. Greaves", "Northgate Homes", "P. Adeyemi", "Riverside Housing Trust")
SOURCE_SYSTEMS = {
    "identity_document": "passport_check", "proof_of_address": "council_tax", "bank_statement": "payments",
    "proof_of_income": "payroll_feed", "bank_details": "payments", "signed_declaration": "previous_claim",
    "tenancy_agreement": "previous_claim", "landlord_reference": "previous_claim",
    "medical_certificate": "previous_claim", "consent_form": "previous_claim",
}
REPLY_MESSAGES = (
    "Please find attached the documents you asked for.",
    "Here you go, sorry for the delay.",
    "Uploading what you requested.",
    "I have scanned the papers you wanted.",
)
PARTIAL_MESSAGES = (
    "This is what I could find so far.",
    "Sending these now; I am still looking for the rest.",
)
#: notes on the distractor cases of a scaled world
NEIGHBOUR_NOTES = (
    "Applicant prefers contact by email.",
    "Called the applicant; documents to follow.",
    "Interpreter needed for any call.",
    "Applicant asked about the expected decision date.",
)

MAX_ROUNDS = 5


#: sequences drawn from as they are (``random.Random`` draws from them by index, exactly as from a list)
_SEQUENCES = (list, tuple, range)


class _Rng:
    """``random.Random`` with a few helpers that never depend on set or dict order."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq: Any) -> Any:
        if not isinstance(seq, _SEQUENCES):
            seq = list(seq)
        return seq[self.r.randrange(len(seq))]

    def sample(self, seq: Any, k: builtins.int) -> list[Any]:  # `int` here is the method above
        """``k`` distinct members (all if fewer). A ``range`` is sampled as it is: the same draws
        as from its list, without building a list of every number in it."""
        if not isinstance(seq, _SEQUENCES):
            seq = list(seq)
        return self.r.sample(seq, min(k, len(seq)))


# -- the world ---------------------------------------------------------------------------------
class _World:
    """Accumulates the rows of one snapshot."""

    #: whether neighbours also carry the rows of a busier desk (notes, scripted replies): only the
    #: distractors of a scaled world (:class:`_Crowd`), never a released one
    busy = False

    def __init__(self, rng: _Rng, today: str):
        self.rng = rng
        self.today = today
        self.numbers = rng.sample(range(10000, 99999), 12)
        self.held_numbers = iter(rng.sample(range(10000, 99999), 30))
        self.tables: dict[str, list[dict[str, Any]]] = {
            "cases": [], "documents": [], "held_records": [], "item_requests": [], "notes": [],
            "_events": [], "_uploads": [],
            "requirements": requirement_rows(), "routing_rules": routing_rows(), "queues": queue_rows(),
        }
        self.used_names: set[str] = set()

    def person(self) -> tuple[str, str]:
        while True:
            name = f"{self.rng.pick(FIRST_NAMES)} {self.rng.pick(SURNAMES)}"
            if name not in self.used_names:
                self.used_names.add(name)
                return name, f"AP-{self.rng.int(10000, 99999)}"

    def held_id(self) -> str:
        return f"HR-{next(self.held_numbers)}"

    def day(self, days_ago: int, ref: str | None = None) -> str:
        return add_days(ref or self.today, -days_ago)


def _items(case_type: str) -> list[dict[str, Any]]:
    """The requirement rows of ``case_type`` (fresh copies, in requirement order)."""
    return [dict(r) for r in _ITEMS_BY_TYPE[case_type]]


def _other_name(rng: _Rng, name: str) -> str:
    first, last = name.split(" ", 1)
    if rng.chance(0.5):
        return f"{first} {rng.pick([s for s in SURNAMES if s != last])}"
    return f"{rng.pick([f for f in FIRST_NAMES if f != first])} {last}"


def _lookalike_name(rng: _Rng, name: str) -> str:
    first, last = name.split(" ", 1)
    return rng.pick((name.upper(), f"{first}  {last}", name.lower()))


def _doc_fields(rng: _Rng, req: dict[str, Any], name: str, ref_day: str, flaw: str | None,
                lookalike: bool = False, boundary: bool = False, young: bool = False,
                received: str | None = None) -> dict[str, Any]:
    """Fields of one document (or held record) for ``req`` that fail exactly ``flaw`` on ``ref_day``;
    a document received on ``received`` was issued that day at the latest."""
    max_age = req["max_age_days"]
    if max_age is None:
        age = rng.int(150, 2500)
    elif boundary:
        age = max_age - rng.int(0, 1)
    elif young:
        age = rng.int(0, 5)
    else:
        age = rng.int(1, max(2, min(max_age - 25, 45)))
    signed = True if req["signature_required"] else rng.chance(0.6)
    holder = name if req["name_must_match"] else rng.pick(LANDLORDS)
    fields = {
        "item_type": req["item_type"], "issued_on": add_days(ref_day, -age), "signed": signed,
        "name_on_document": holder, "legible": True,
    }
    if lookalike and req["name_must_match"] and rng.chance(0.5):
        fields["name_on_document"] = _lookalike_name(rng, name)
    if lookalike and not req["signature_required"]:
        fields["signed"] = False
    if flaw == "expired":
        fields["issued_on"] = add_days(ref_day, -(max_age + rng.int(1, 150)))
    elif flaw == "future":  # dated after the review date (a wrong date on the paper): never valid
        fields["issued_on"] = add_days(ref_day, rng.int(50, 200))  # past every later review too
        return fields
    elif flaw == "unsigned":
        fields["signed"] = False
    elif flaw == "name":
        fields["name_on_document"] = _other_name(rng, name)
    elif flaw == "illegible":
        fields["legible"] = False
    if received is not None and fields["issued_on"] > received[:10]:
        fields["issued_on"] = received[:10]
    return fields


def _flaws_for(req: dict[str, Any]) -> list[str]:
    out = ["absent", "illegible", "future"]
    if req["max_age_days"] is not None:
        out.append("expired")
    if req["signature_required"]:
        out.append("unsigned")
    if req["name_must_match"]:
        out.append("name")
    return sorted(out)


# -- the neighbours ----------------------------------------------------------------------------
def _neighbour(world: _World, number: int) -> None:
    rng = world.rng
    case_type = rng.pick(sorted(CASE_TYPES))
    name, applicant = world.person()
    cid = f"CASE-{number}"
    status = rng.pick(("in_review", "awaiting_info", "released", "in_review"))
    routing = _ROUTING_BY_TYPE[case_type]
    amount = rng.int(20_000, 2 * routing["senior_threshold_cents"])
    queue = decision_queue(routing, amount) if status == "released" else INTAKE_QUEUE
    opened = world.day(rng.int(5, 40))
    world.tables["cases"].append({
        "id": cid, "case_type": case_type, "applicant_id": applicant, "applicant_name": name,
        "amount_cents": amount, "status": status, "queue": queue,
        "clock_state": "paused" if status == "awaiting_info" else "running", "opened_on": opened,
        "sla_due_on": add_days(opened, SLA_DAYS), "paused_at": f"{world.day(1)}T11:00:00" if status == "awaiting_info" else None,
        "review_round": 0,
        "released_at": f"{world.day(rng.int(0, 3))}T15:00:00" if status == "released" else None,
    })
    reqs = _items(case_type)
    for k, req in enumerate(rng.sample(reqs, rng.int(2, len(reqs))), start=1):
        world.tables["documents"].append({
            "id": f"DOC-{number}-{k:02d}", "case_id": cid, **_doc_fields(rng, req, name, opened, rng.pick((None, None, "illegible", "expired" if req["max_age_days"] else None))),
            "source": "applicant", "held_record_id": None, "received_at": f"{opened}T10:00:00", "review_round": 0,
        })
    if status == "awaiting_info":
        world.tables["item_requests"].append({
            "id": f"IR-{number}-01", "case_id": cid, "items": sorted(r["item_type"] for r in rng.sample(reqs, 1)),
            "requested_at": f"{world.day(1)}T11:00:00", "review_round": 0, "status": "open", "answered_at": None,
            "message": None,
        })
    for req in rng.sample([r for r in reqs if r["accept_held_record"]], rng.int(0, 1)):
        world.tables["held_records"].append({
            "id": world.held_id(), "applicant_id": applicant, **_doc_fields(rng, req, name, world.today, None),
            "source_system": SOURCE_SYSTEMS[req["item_type"]],
        })
    if world.busy:
        _busy_desk(world, number, cid, name, reqs, status)


def _busy_desk(world: _World, number: int, cid: str, name: str, reqs: list[dict[str, Any]], status: str) -> None:
    """The rest of a distractor's file on a busier desk: now and then a note, and for a case that
    awaits the applicant, the scripted replies to its request (never delivered to the task's case:
    ``wait`` reads the replies of the case it is given)."""
    rng = world.rng
    if rng.chance(0.08):
        world.tables["notes"].append({
            "id": f"NT-{number}-01", "case_id": cid, "author": "intake_desk",
            "written_at": f"{world.day(rng.int(1, 20))}T17:00:00", "text": rng.pick(NEIGHBOUR_NOTES),
        })
    if status != "awaiting_info":
        return
    by_item = {r["item_type"]: r for r in reqs}
    day = world.today
    for seq in range(1, rng.int(1, 2) + 1):
        day = add_days(day, rng.int(3, 9))
        event_id = f"EV-{number}-{seq}"
        world.tables["_events"].append({
            "id": event_id, "case_id": cid, "seq": seq, "at": f"{day}T{rng.int(10, 16):02d}:00:00",
            "delivered": False, "message": rng.pick(REPLY_MESSAGES),
        })
        for k, item in enumerate(sorted(rng.sample(sorted(by_item), rng.int(1, 2))), start=1):
            world.tables["_uploads"].append({
                "id": f"UP-{number}-{seq}-{k}", "event_id": event_id,
                **_doc_fields(rng, by_item[item], name, day, None, young=True),
            })


class _Crowd(_World):
    """The distractors of a world at scale k: more neighbouring cases drawn by :func:`_neighbour`
    (the code path of the released neighbours) into the same tables, from their own random stream
    so that every draw of the task (and of its scale-1 world) stays as it is. Their case, applicant
    and held record numbers have 6 digits (released neighbours have 5, the task's case 9), so no
    distractor shares an id, an applicant or a key target pattern with the task; their applicants
    may share a name with anyone but the task's applicant. They are *busy* (:func:`_busy_desk`)."""

    busy = True

    def __init__(self, world: _World, seed: int, scale: int, n: int, avoid_name: str):
        if n > 900_000:
            raise ValueError(f"scale {scale} needs {n} distractor cases; at most 900000 fit the 6-digit numbers")
        self.rng = _Rng(derive_seed("sufficiency-scale", seed, scale))
        self.today = world.today
        self.tables = world.tables
        self.used_names = set()
        self.avoid_name = avoid_name
        self.numbers = self.rng.sample(range(100_000, 1_000_000), n)
        self.applicants = iter(self.rng.sample(range(100_000, 1_000_000), n))
        self.held_numbers = iter(self.rng.sample(range(100_000, 1_000_000), n))  # one record at most each

    def person(self) -> tuple[str, str]:
        while True:
            name = f"{self.rng.pick(FIRST_NAMES)} {self.rng.pick(SURNAMES)}"
            if name != self.avoid_name:
                return name, f"AP-{next(self.applicants)}"


# -- the scripted replies and the simulation ---------------------------------------------------
ReplyPlan = Callable[[int, list[str]], "list[tuple[str, str | None]] | None"]


def _simulate(world: _World, case: dict[str, Any], reqs: list[dict[str, Any]], reply: ReplyPlan) -> dict[str, Any]:
    """Play the correct review rounds; write the scripted events; return the expected outcome."""
    rng = world.rng
    number = case["id"].split("-", 1)[1]
    docs = [d for d in world.tables["documents"] if d["case_id"] == case["id"]]
    held = [h for h in world.tables["held_records"] if h["applicant_id"] == case["applicant_id"]]
    by_item = {r["item_type"]: r for r in reqs}
    now = f"{world.today}T09:00:00"
    rounds: list[dict[str, Any]] = []
    outcome = None
    for r in range(MAX_ROUNDS + 1):
        a = assess(reqs, docs, held, case["applicant_name"], now[:10])
        attach = [a.satisfiable_from_records[i][0] for i in sorted(a.satisfiable_from_records)]
        for rid in attach:
            rec = next(h for h in held if h["id"] == rid)
            docs = docs + [{**{k: rec[k] for k in ("item_type", "issued_on", "signed", "name_on_document", "legible")},
                            "id": f"~{rid}", "source": "held_record"}]
        entry = {"round": r, "review_at": now, **a.to_json(), "attach_records": attach,
                 "failures": {k: list(v) for k, v in sorted(a.failures.items())}}
        if not a.missing_items:
            entry.update(action="release", request_items=[])
            rounds.append(entry)
            outcome = "release_now" if r == 0 else "release_after_reply"
            break
        entry.update(request_items=list(a.missing_items))
        uploads = reply(r, list(a.missing_items))
        if uploads is None:
            entry["action"] = "await"
            rounds.append(entry)
            outcome = "awaiting_applicant"
            break
        entry.update(action="request", replied_items=sorted({i for i, _ in uploads}))
        rounds.append(entry)
        day = add_days(now[:10], rng.int(3, 9))
        now = f"{day}T{rng.int(10, 16):02d}:{rng.pick((0, 15, 30, 45)):02d}:00"
        seq = r + 1
        event_id = f"EV-{number}-{seq}"
        complete = {i for i, _ in uploads} >= set(a.missing_items)
        world.tables["_events"].append({
            "id": event_id, "case_id": case["id"], "seq": seq, "at": now, "delivered": False,
            "message": rng.pick(REPLY_MESSAGES if complete else PARTIAL_MESSAGES),
        })
        for k, (item, flaw) in enumerate(uploads, start=1):
            fields = _doc_fields(rng, by_item[item], case["applicant_name"], day, flaw, young=True)
            world.tables["_uploads"].append({"id": f"UP-{number}-{seq}-{k}", "event_id": event_id, **fields})
            docs = docs + [{"id": f"~UP-{number}-{seq}-{k}", "source": "applicant", **fields}]
    if outcome is None:
        raise AssertionError("the scripted replies never settle the case")
    return {"rounds": rounds, "outcome": outcome}


# -- the task's case: the world builder --------------------------------------------------------
#: outcome classes by the number of replies the case needs before its release
RELEASE_CLASSES = ("release_now", "release_after_reply", "release_after_two_replies", "release_after_three_replies")
#: defect tags whose trap is a flaw of one document at the first review
FLAW_TAGS = ("missing_item", "expired_document", "unsigned_document", "name_mismatch", "illegible_document")

Requirement = dict[str, Any]


def _any_item(req: Requirement) -> bool:
    return True


def _accepts_held(req: Requirement) -> bool:
    return bool(req["accept_held_record"])


def _ages(req: Requirement) -> bool:
    return req["max_age_days"] is not None


@dataclass
class CaseFile:
    """The task's case while it is drawn: who applies for what, and the state of every required
    item at the first review (``valid``, ``boundary`` (valid today, expired after a reply), a
    flaw of :data:`FLAW_TAG`, ``held_valid`` or ``held_stale``)."""

    rng: _Rng
    world: _World
    tag: str
    number: int
    case_type: str
    reqs: list[Requirement]
    routing: dict[str, Any]
    name: str
    applicant: str
    state: dict[str, str] = field(default_factory=dict)
    #: how many unusable replies come first, and the kind of each ("incomplete" or "invalid")
    bad_replies: int = 0
    bad_kinds: list[str] = field(default_factory=list)
    amount: int = 0
    opened: str = ""

    @property
    def cid(self) -> str:
        return f"CASE-{self.number}"

    @property
    def today(self) -> str:
        return self.world.today

    @property
    def single_round(self) -> bool:
        return self.tag == "complete_on_arrival"

    @property
    def never_complete(self) -> bool:
        return self.tag == "awaiting_applicant"

    def gap_items(self, n: int, eligible: Callable[[Requirement], bool] = _any_item) -> list[Requirement]:
        """``n`` random items still valid (and ``eligible``)."""
        pool = [r for r in self.reqs if self.state[r["item_type"]] == "valid" and eligible(r)]
        return self.rng.sample(pool, min(n, len(pool)))

    def add_gap(self, req: Requirement, flaw: str | None = None) -> None:
        """Make ``req`` fail ``flaw`` (a random one of its flaws if not given)."""
        self.state[req["item_type"]] = flaw or self.rng.pick(_flaws_for(req))


def build_world(seed: int, tag: str) -> CaseFile:
    """The review date, the world's id pools and the task's case type and applicant."""
    rng = _Rng(seed)
    today = (date(2026, 1, 5) + timedelta(days=rng.int(0, 330))).isoformat()
    world = _World(rng, today)
    # the task's own case number comes from the task seed (9 digits, neighbours have 5), so a
    # case id names one task of the release: ``reset(options={"case_id": ...})`` relies on it
    number = 100_000_000 + seed % 900_000_000
    case_type = rng.pick(sorted(CASE_TYPES))
    reqs = _items(case_type)
    routing = dict(_ROUTING_BY_TYPE[case_type])
    name, applicant = world.person()
    c = CaseFile(rng, world, tag, number, case_type, reqs, routing, name, applicant)
    c.state = {r["item_type"]: "valid" for r in reqs}
    return c


def _bad_replies(rng: _Rng, tag: str) -> int:
    """How many unusable replies (incomplete or invalid) come before a good one.

    Balanced so that no outcome class dominates a split: one, two or three replies."""
    if tag in ("reply_incomplete", "reply_invalid"):
        return rng.pick((1, 2, 2))
    if tag == "awaiting_applicant":
        return rng.pick((1, 1, 2))
    return rng.pick((0, 0, 0, 0, 0, 1, 1, 1, 2, 2))


def _shape_replies(c: CaseFile) -> None:
    """How many unusable replies come first, and what is wrong with each."""
    tag = c.tag
    c.bad_replies = 0 if c.single_round else _bad_replies(c.rng, tag)
    c.bad_kinds = [
        "incomplete" if (tag == "reply_incomplete" and k == 0) else
        "invalid" if (tag == "reply_invalid" and k == 0) else c.rng.pick(("incomplete", "invalid"))
        for k in range(c.bad_replies)
    ]


# -- one planter per defect tag: the state of the items at the first review ---------------------
def _plant_complete_on_arrival(c: CaseFile) -> None:
    if c.rng.chance(0.3):  # complete once a valid held record is attached
        c.state[c.gap_items(1, _accepts_held)[0]["item_type"]] = "held_valid"


def _plant_missing_item(c: CaseFile) -> None:
    c.add_gap(c.gap_items(1)[0], "absent")


def _plant_expired_document(c: CaseFile) -> None:
    if c.rng.chance(0.4):  # valid today, expired by the time the reply to another request arrives
        first = c.gap_items(1, _ages)[0]
        c.state[first["item_type"]] = "boundary"
        c.add_gap(c.gap_items(1)[0])
    elif c.rng.chance(0.5):  # dated after the review date: invalid whatever the age limit
        c.add_gap(c.gap_items(1)[0], "future")
    else:
        c.add_gap(c.gap_items(1, _ages)[0], "expired")


def _plant_unsigned_document(c: CaseFile) -> None:
    c.add_gap(c.gap_items(1, lambda r: r["signature_required"])[0], "unsigned")


def _plant_name_mismatch(c: CaseFile) -> None:
    c.add_gap(c.gap_items(1, lambda r: r["name_must_match"])[0], "name")


def _plant_illegible_document(c: CaseFile) -> None:
    c.add_gap(c.gap_items(1)[0], "illegible")


def _plant_held_record_available(c: CaseFile) -> None:
    c.state[c.gap_items(1, _accepts_held)[0]["item_type"]] = "held_valid"
    c.add_gap(c.gap_items(1)[0])


def _plant_stale_held_record(c: CaseFile) -> None:
    c.state[c.gap_items(1)[0]["item_type"]] = "held_stale"


def _plant_reply_incomplete(c: CaseFile) -> None:
    for req in c.gap_items(2):
        c.add_gap(req)


def _plant_awaiting_applicant(c: CaseFile) -> None:
    for req in c.gap_items(2 if c.rng.chance(0.5) else 1):
        c.add_gap(req)


def _plant_reply_invalid(c: CaseFile) -> None:
    for req in c.gap_items(c.rng.int(1, 2)):
        c.add_gap(req)


def _plant_wrong_queue_route(c: CaseFile) -> None:
    c.add_gap(c.gap_items(1)[0])


PLANTERS: dict[str, Callable[[CaseFile], None]] = {
    "complete_on_arrival": _plant_complete_on_arrival,
    "missing_item": _plant_missing_item,
    "expired_document": _plant_expired_document,
    "unsigned_document": _plant_unsigned_document,
    "name_mismatch": _plant_name_mismatch,
    "illegible_document": _plant_illegible_document,
    "held_record_available": _plant_held_record_available,
    "stale_held_record": _plant_stale_held_record,
    "reply_incomplete": _plant_reply_incomplete,
    "reply_invalid": _plant_reply_invalid,
    "awaiting_applicant": _plant_awaiting_applicant,
    "wrong_queue_route": _plant_wrong_queue_route,
}


def _plant_second_trap(c: CaseFile) -> None:
    """Now and then a second, independent trap: a held record covers another item, or a
    document valid today expires before the reply arrives (the next review is on a new date)."""
    if c.single_round:
        return
    if c.tag not in ("wrong_queue_route",) and c.rng.chance(0.25):
        extra = c.gap_items(1, _accepts_held)
        if extra:
            c.state[extra[0]["item_type"]] = "held_valid"
    if "boundary" not in c.state.values() and c.rng.chance(0.12):
        extra = c.gap_items(1, _ages)
        if extra:
            c.state[extra[0]["item_type"]] = "boundary"


# -- the case, its documents and held records --------------------------------------------------
def _open_case(c: CaseFile) -> dict[str, Any]:
    """The case row (the amount straddles the routing threshold for wrong_queue_route)."""
    rng = c.rng
    threshold = c.routing["senior_threshold_cents"]
    if c.tag == "wrong_queue_route":
        c.amount = rng.pick((threshold, threshold + rng.int(1, 900), threshold - rng.int(1, 900)))
    elif rng.chance(0.15):  # exactly at the threshold: the senior queue
        c.amount = threshold
    else:
        c.amount = rng.int(15_000, 2 * threshold)
    c.opened = add_days(c.today, -rng.int(1, 6))
    case = {
        "id": c.cid, "case_type": c.case_type, "applicant_id": c.applicant, "applicant_name": c.name,
        "amount_cents": c.amount, "status": "in_review", "queue": INTAKE_QUEUE, "clock_state": "running",
        "opened_on": c.opened, "sla_due_on": add_days(c.opened, SLA_DAYS), "paused_at": None, "review_round": 0,
        "released_at": None,
    }
    c.world.tables["cases"].append(case)
    return case


def _usable_flaw(rng: _Rng, req: Requirement, among: tuple[str, ...] | None = None) -> str:
    """A flaw of ``req`` other than absence (one of ``among`` if given)."""
    return rng.pick([f for f in _flaws_for(req) if (f in among if among else f != "absent")])


def _draw_files(c: CaseFile) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The fields of the case's documents and of the applicant's held records, item by item."""
    rng, name, today, opened = c.rng, c.name, c.today, c.opened
    docs: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    for req in c.reqs:
        st = c.state[req["item_type"]]
        if st in ("valid", "boundary"):
            lookalike = rng.chance(0.5)
            boundary = st == "boundary" or (c.single_round and lookalike and req["max_age_days"] is not None and rng.chance(0.5))
            if lookalike and rng.chance(0.4):  # an old unusable copy beside the good one
                docs.append(_doc_fields(rng, req, name, opened, _usable_flaw(rng, req)))
            docs.append(_doc_fields(rng, req, name, today, None, lookalike=lookalike, boundary=boundary, received=opened))
        elif st in FLAW_TAG and st != "absent":
            docs.append(_doc_fields(rng, req, name, today, st, received=opened))
        elif st == "held_valid":
            if rng.chance(0.4):
                docs.append(_doc_fields(rng, req, name, today, _usable_flaw(rng, req), received=opened))
            held.append(_doc_fields(rng, req, name, today, None))
            # a decoy beside it: a record of the same item that fails one condition, so that which
            # record covers the item is read from the records, never from where it is listed
            held.append(_doc_fields(rng, req, name, today, _usable_flaw(rng, req, ("expired", "future", "name", "illegible"))))
        elif st == "held_stale":
            bad = [f for f in _flaws_for(req) if f in ("expired", "name", "illegible")]
            flaw = None if not req["accept_held_record"] else rng.pick(bad)
            held.append(_doc_fields(rng, req, name, today, flaw))
    return docs, held


#: the most records the organisation holds about an applicant (the catalog tiers' held slots)
MAX_HELD = 4


def _draw_irrelevant_records(c: CaseFile, held: list[dict[str, Any]]) -> None:
    """Held records that cover nothing (attaching them is an irrelevant attachment): a valid
    record of an item already covered, an otherwise valid record of an item the rules do not
    let held records cover, a stale record of an item that is still needed; at most
    :data:`MAX_HELD` records in all."""
    rng, name, today = c.rng, c.name, c.today
    kept = len(held)
    if rng.chance(0.6):
        for req in rng.sample([r for r in c.reqs if r["accept_held_record"] and c.state[r["item_type"]] == "valid"], 1):
            held.append(_doc_fields(rng, req, name, today, None))
    gaps = [r for r in c.reqs if c.state[r["item_type"]] in FLAW_TAG]
    if rng.chance(0.45):
        for req in rng.sample([r for r in gaps if not r["accept_held_record"]], 1):
            held.append(_doc_fields(rng, req, name, today, None))
    if rng.chance(0.4):
        for req in rng.sample([r for r in gaps if r["accept_held_record"]], 1):
            held.append(_doc_fields(rng, req, name, today, _usable_flaw(rng, req, ("expired", "name", "illegible"))))
    del held[max(kept, MAX_HELD):]


def _write_files(c: CaseFile, docs: list[dict[str, Any]], held: list[dict[str, Any]]) -> None:
    """The document rows of the case and the held record rows of its applicant."""
    for k, fields in enumerate(docs, start=1):
        c.world.tables["documents"].append({
            "id": f"DOC-{c.number}-{k:02d}", "case_id": c.cid, **fields, "source": "applicant",
            "held_record_id": None, "received_at": f"{c.opened}T{c.rng.int(9, 17):02d}:00:00", "review_round": 0,
        })
    # the ids go to the records in an order of their own stream: where a record is listed (id
    # order) says nothing of which one covers an item
    ids = [c.world.held_id() for _ in held]
    random.Random(derive_seed("sufficiency-held-order", c.number)).shuffle(ids)
    for rid, fields in zip(ids, held):
        c.world.tables["held_records"].append({
            "id": rid, "applicant_id": c.applicant, **fields,
            "source_system": SOURCE_SYSTEMS[fields["item_type"]],
        })


def _write_note(c: CaseFile, expected_queue: str) -> None:
    """A note on the case: for wrong_queue_route, one naming the wrong decision queue."""
    if c.tag == "wrong_queue_route":
        routing = c.routing
        wrong = routing["standard_queue"] if expected_queue == routing["senior_queue"] else routing["senior_queue"]
        text = f"Phoned the applicant about the amount. Once the papers are in order this goes to {wrong}."
    elif c.rng.chance(0.3):
        text = "Applicant prefers contact by email."
    else:
        return
    c.world.tables["notes"].append({
        "id": f"NT-{c.number}-01", "case_id": c.cid, "author": "intake_desk", "written_at": f"{c.opened}T18:00:00",
        "text": text,
    })


# -- the scripted replies ----------------------------------------------------------------------
def _reply_script(c: CaseFile) -> ReplyPlan:
    """The applicant's reply to the request of round ``r``: the bad replies first (an item left
    out, or one item flawed), then complete ones (None: no further reply for awaiting_applicant)."""
    rng = c.rng
    by_item = {q["item_type"]: q for q in c.reqs}

    def reply(r: int, missing: list[str]) -> list[tuple[str, str | None]] | None:
        if r < c.bad_replies:
            if c.bad_kinds[r] == "incomplete":
                keep = rng.sample(missing, len(missing) - 1)
                out: list[tuple[str, str | None]] = [(i, None) for i in sorted(keep)]
                unasked = [i for i in sorted(by_item) if i not in missing]
                if not out and unasked:  # nothing asked for, only a copy of something on file
                    out.append((rng.pick(unasked), None))
                return out
            bad = rng.pick(missing)
            return [(i, _usable_flaw(rng, by_item[i]) if i == bad else None) for i in missing]
        if c.never_complete:
            return None
        out = [(i, None) for i in missing]
        unasked = [i for i in sorted(by_item) if i not in missing]
        if unasked and rng.chance(0.2):  # an unrequested copy of something already on file
            out.append((rng.pick(unasked), None))
        return out

    return reply


# -- the answer key and the task ----------------------------------------------------------------
def _expected(rounds: list[dict[str, Any]], expected_queue: str) -> dict[str, Any]:
    """The end state the correct review reaches, and the rounds that lead to it."""
    last = rounds[-1]
    released = last["action"] == "release"
    # the SLA: each answered request pauses the clock from the request to the reply (then resumed)
    # (a count of days, so that no date the tools will compute is written in the key)
    sla_paused_days = sum(days_between(prev["review_at"], nxt["review_at"]) for prev, nxt in zip(rounds, rounds[1:]))
    return {
        "end_status": "released" if released else "awaiting_info",
        "clock_state": "running" if released else "paused",
        "queue": expected_queue if released else INTAKE_QUEUE,
        "sla_paused_days": sla_paused_days,
        "paused_at": None if released else last["review_at"],
        "replies": len(rounds) - 1,
        "missing_items": rounds[0]["missing_items"],
        "satisfied_items": rounds[0]["satisfied_items"],
        "satisfiable_from_records": rounds[0]["satisfiable_from_records"],
        "rounds": [{k: v for k, v in rd.items() if k not in ("failures", "replied_items")} for rd in rounds],
    }


def _key(c: CaseFile, rounds: list[dict[str, Any]], expected_queue: str) -> dict[str, Any]:
    """The answer key: the defect tags the rounds show, the outcome class and the expected state."""
    tag, cid, number = c.tag, c.cid, c.number
    seen_tags = _tags_seen(rounds, c.world, c.applicant)
    tags = [tag] + sorted(t for t in seen_tags if t != tag)
    conditions = sorted({cond for rd in rounds for cs in rd["failures"].values() for cond in cs})
    if any(rd["satisfiable_from_records"] for rd in rounds):
        conditions.append("held_record")
    if tag == "wrong_queue_route":
        conditions.append("routing_threshold")
    expected = _expected(rounds, expected_queue)
    if rounds[-1]["action"] == "release":
        outcome = RELEASE_CLASSES[min(len(rounds) - 1, len(RELEASE_CLASSES) - 1)]
    else:
        outcome = "awaiting_applicant"
    return {
        "defect_tags": tags,
        "targets": [f"cases:{cid}", f"documents:DOC-{number}-*", f"item_requests:IR-{number}-*",
                    f"notes:NT-{number}-*", f"_events:EV-{number}-*", "clock:clock"],
        "outcome_class": outcome,
        "needs_action": True,
        "case_id": cid,
        "requirement_types": sorted(set(conditions)) or ["none"],
        "item_types": sorted({i for rd in rounds for i in rd["failures"]}),
        "expected": expected,
    }


def _task(c: CaseFile) -> dict[str, Any]:
    """The brief: the same instructions and tools for every task."""
    cid, name = c.cid, c.name
    label = CASE_TYPES[c.case_type]["label"]
    return {
        "instructions": (
            f"Case {cid} ({label}, applicant {name}) is in the intake queue. Check that it holds every "
            f"document its case type requires, each valid on the review date (get_requirements gives the "
            f"items, their conditions and the rules). Cover gaps with records we already hold where the rules "
            f"allow (search_held_records, attach_held_record; attach only records that cover a gap) and ask "
            f"the applicant, once per review, only for what is still missing or invalid (request_items pauses "
            f"the SLA clock). Wait for each reply, restart the clock (resume_clock) and review again on the new "
            f"date. When the case is sufficient, release it and route it once to the decision queue its routing "
            f"rule names. If the applicant has not sent everything and no further reply is expected, leave the "
            f"outstanding request open. Do not touch any other case, then submit."
        ),
        "allowed_tools": [
            "get_case", "list_cases", "get_requirements", "list_documents", "search_held_records",
            "attach_held_record", "request_items", "wait", "resume_clock", "release_case", "route_case",
            "add_note", "submit",
        ],
        "params": {"case_id": cid},
    }


def _attempt(seed: int, defect_tag: str, attempt: int, scale: int = 1) -> Generated:
    """One case whose trap is ``defect_tag`` (see ``DEFECT_TAGS``), with its answer key.

    A single attempt (``attempt`` is unused: the draw is fully determined by ``seed``); a draw
    whose rounds do not show the trap is a generator bug (``AssertionError``), not a redraw.
    At ``scale`` k > 1 the world gets the distractors of :func:`_scale_world` once the task, its
    scale-1 world and its key are drawn."""
    c = build_world(seed, defect_tag)
    _shape_replies(c)
    PLANTERS[defect_tag](c)
    _plant_second_trap(c)
    case = _open_case(c)
    docs, held = _draw_files(c)
    _draw_irrelevant_records(c, held)
    _write_files(c, docs, held)
    expected_queue = decision_queue(c.routing, c.amount)
    _write_note(c, expected_queue)
    n_neighbours = c.rng.int(3, 5)
    for n in c.world.numbers[1:1 + n_neighbours]:
        _neighbour(c.world, n)
    rounds = _simulate(c.world, case, c.reqs, _reply_script(c))["rounds"]
    _check_shape(defect_tag, rounds, c.bad_replies)
    key = _key(c, rounds, expected_queue)
    if scale > 1:
        _scale_world(c, seed, scale, n_neighbours + 1)
    snapshot = dict(c.world.tables)
    snapshot["clock"] = [{"id": "clock", "now": f"{c.today}T09:00:00"}]
    return Generated(task=_task(c), snapshot=snapshot, key=key)


def _scale_world(c: CaseFile, seed: int, scale: int, cases: int) -> None:
    """Grow the world to about ``scale`` times its rows: ``(scale - 1) * cases`` more neighbouring
    cases (``cases``: the scale-1 world's), drawn by :func:`_neighbour` for a :class:`_Crowd`,
    with their documents, held records, requests, notes and scripted replies. None of them is
    the task's case or its applicant's, so the answer key is that of scale 1."""
    crowd = _Crowd(c.world, seed, scale, (scale - 1) * cases, c.name)
    for n in crowd.numbers:
        _neighbour(crowd, n)


def generate(seed: int, defect_tag: str, scale: int = 1) -> Generated:
    """One task whose trap is ``defect_tag`` (one of ``DEFECT_TAGS``), pure in its arguments.

    ``scale`` k >= 1 builds the same task (the same brief and answer key, the same rows of the
    scale-1 world) in a world about k times larger: more neighbouring cases with their
    documents, held records, requests, notes and scripted replies, as distractors. Released
    tasks are built at scale 1. Raises ``ValueError`` for an unknown tag or a scale below 1."""
    if defect_tag not in DEFECT_TAGS:
        raise ValueError(f"unknown defect tag {defect_tag!r}; choose from {', '.join(DEFECT_TAGS)}")
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an int >= 1, got {scale!r}")
    return _attempt(seed, defect_tag, 0, scale)


def _tags_seen(rounds: list[dict[str, Any]], world: _World, applicant: str) -> set[str]:
    """Defect tags the simulated rounds actually exhibit."""
    tags: set[str] = set()
    for rd in rounds:
        for item, conds in rd["failures"].items():
            if item in rd["satisfiable_from_records"]:
                continue
            tags.update(CONDITION_TAG[c] for c in conds if c in CONDITION_TAG)
        if rd["satisfiable_from_records"]:
            tags.add("held_record_available")
    held_items = {h["item_type"] for h in world.tables["held_records"] if h["applicant_id"] == applicant}
    if any(set(rd["missing_items"]) & held_items for rd in rounds):
        tags.add("stale_held_record")
    for prev, nxt in zip(rounds, rounds[1:]):
        asked, sent = set(prev["request_items"]), set(prev["replied_items"])
        if asked - sent:
            tags.add("reply_incomplete")
        if sent & asked & set(nxt["missing_items"]):
            tags.add("reply_invalid")
    if rounds[-1]["action"] == "await":
        tags.add("awaiting_applicant")
    if len(rounds) == 1 and not rounds[0]["missing_items"] and not rounds[0]["satisfiable_from_records"]:
        tags.add("complete_on_arrival")
    return tags


def _check_shape(tag: str, rounds: list[dict[str, Any]], bad_replies: int) -> None:
    """The simulated rounds must show the trap the tag promises (a generator bug otherwise)."""
    n = len(rounds)
    last = rounds[-1]["action"]
    if tag == "complete_on_arrival":
        ok = n == 1 and last == "release"
    elif tag == "awaiting_applicant":
        ok = n >= 2 + bad_replies - 1 and last == "await" and n >= 2
    else:
        ok = n >= 2 + bad_replies and last == "release"
        if tag == "held_record_available":
            ok = ok and bool(rounds[0]["satisfiable_from_records"])
    if not ok:
        raise AssertionError(f"{tag}: simulated rounds do not show the trap: {[r['action'] for r in rounds]}")
