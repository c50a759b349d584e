"""Generator of sufficiency tasks: ``generate(seed, defect_tag) -> Generated``, pure in its arguments.

A task is one case in an intake queue among neighbouring cases. The generator decides the
state of every required item (valid, valid but suspicious-looking, absent, failing one
condition, covered by a held record, with a held record that fails a condition), scripts the
applicant's replies, then *simulates the correct review rounds* with :func:`rules.assess` to
write the answer key (per-round missing / satisfied / satisfiable items and the end state).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from backoffice.envs.core import Generated
from backoffice.envs.sufficiency.rules import assess
from backoffice.envs.sufficiency.tables import (
    CASE_TYPES, INTAKE_QUEUE, SLA_DAYS, add_days, days_between, decision_queue, queue_rows, requirement_rows, routing_rows,
)

DEFECT_TAGS = (
    "complete_on_arrival", "missing_item", "expired_document", "unsigned_document", "name_mismatch",
    "illegible_document", "held_record_available", "stale_held_record", "reply_incomplete",
    "reply_invalid", "awaiting_applicant", "wrong_queue_route",
)

#: The single-condition flaw of a document, and the defect tag it shows up as.
FLAW_TAG = {
    "absent": "missing_item", "expired": "expired_document", "unsigned": "unsigned_document",
    "name": "name_mismatch", "illegible": "illegible_document",
}
CONDITION_TAG = {
    "presence": "missing_item", "age": "expired_document", "signature": "unsigned_document",
    "name_match": "name_mismatch", "legibility": "illegible_document",
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

MAX_ROUNDS = 5


class _Rng:
    """``random.Random`` with a few helpers that never depend on set or dict order."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq: Any) -> Any:
        seq = list(seq)
        return seq[self.r.randrange(len(seq))]

    def sample(self, seq: Any, k: int) -> list[Any]:
        seq = list(seq)
        return self.r.sample(seq, min(k, len(seq)))


# -- the world ---------------------------------------------------------------------------------
class _World:
    """Accumulates the rows of one snapshot."""

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
    return [r for r in requirement_rows() if r["case_type"] == case_type]


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
    out = ["absent", "illegible"]
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
    routing = next(r for r in routing_rows() if r["id"] == case_type)
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


# -- the task ----------------------------------------------------------------------------------
#: outcome classes by the number of replies the case needs before its release
RELEASE_CLASSES = ("release_now", "release_after_reply", "release_after_two_replies", "release_after_three_replies")
#: defect tags whose trap is a flaw of one document at the first review
FLAW_TAGS = ("missing_item", "expired_document", "unsigned_document", "name_mismatch", "illegible_document")


def _bad_replies(rng: _Rng, tag: str) -> int:
    """How many unusable replies (incomplete or invalid) come before a good one.

    Balanced so that no outcome class dominates a split: one, two or three replies."""
    if tag in ("reply_incomplete", "reply_invalid"):
        return rng.pick((1, 2, 2))
    if tag == "awaiting_applicant":
        return rng.pick((1, 1, 2))
    return rng.pick((0, 0, 0, 0, 0, 1, 1, 1, 2, 2))


def generate(seed: int, defect_tag: str) -> Generated:
    """One case whose trap is ``defect_tag`` (see ``DEFECT_TAGS``), with its answer key."""
    if defect_tag not in DEFECT_TAGS:
        raise ValueError(f"unknown defect tag {defect_tag!r}")
    rng = _Rng(seed)
    today = (date(2026, 1, 5) + timedelta(days=rng.int(0, 330))).isoformat()
    world = _World(rng, today)
    # the task's own case number comes from the task seed (9 digits, neighbours have 5), so a
    # case id names one task of the release: ``reset(options={"case_id": ...})`` relies on it
    number = 100_000_000 + seed % 900_000_000
    cid = f"CASE-{number}"
    case_type = rng.pick(sorted(CASE_TYPES))
    reqs = _items(case_type)
    routing = next(r for r in routing_rows() if r["id"] == case_type)
    name, applicant = world.person()
    tag = defect_tag

    # 1. the state of every required item at the first review, and the shape of the replies
    state = {r["item_type"]: "valid" for r in reqs}
    single_round = tag == "complete_on_arrival"
    bad_replies = 0 if single_round else _bad_replies(rng, tag)
    #: the kind of each unusable reply: "incomplete" (an item left out) or "invalid" (one is flawed)
    bad_kinds = [
        "incomplete" if (tag == "reply_incomplete" and k == 0) else
        "invalid" if (tag == "reply_invalid" and k == 0) else rng.pick(("incomplete", "invalid"))
        for k in range(bad_replies)
    ]
    never_complete = tag == "awaiting_applicant"

    def gap_items(n: int, eligible: Callable[[dict[str, Any]], bool] = lambda r: True) -> list[dict[str, Any]]:
        pool = [r for r in reqs if state[r["item_type"]] == "valid" and eligible(r)]
        return rng.sample(pool, min(n, len(pool)))

    def add_gap(req: dict[str, Any], flaw: str | None = None) -> None:
        state[req["item_type"]] = flaw or rng.pick(_flaws_for(req))

    if tag == "complete_on_arrival":
        if rng.chance(0.3):  # complete once a valid held record is attached
            state[gap_items(1, lambda r: r["accept_held_record"])[0]["item_type"]] = "held_valid"
    elif tag == "missing_item":
        add_gap(gap_items(1)[0], "absent")
    elif tag == "expired_document":
        if rng.chance(0.4):  # valid today, expired by the time the reply to another request arrives
            first = gap_items(1, lambda r: r["max_age_days"] is not None)[0]
            state[first["item_type"]] = "boundary"
            add_gap(gap_items(1)[0])
        else:
            add_gap(gap_items(1, lambda r: r["max_age_days"] is not None)[0], "expired")
    elif tag == "unsigned_document":
        add_gap(gap_items(1, lambda r: r["signature_required"])[0], "unsigned")
    elif tag == "name_mismatch":
        add_gap(gap_items(1, lambda r: r["name_must_match"])[0], "name")
    elif tag == "illegible_document":
        add_gap(gap_items(1)[0], "illegible")
    elif tag == "held_record_available":
        state[gap_items(1, lambda r: r["accept_held_record"])[0]["item_type"]] = "held_valid"
        add_gap(gap_items(1)[0])
    elif tag == "stale_held_record":
        state[gap_items(1)[0]["item_type"]] = "held_stale"
    elif tag in ("reply_incomplete", "awaiting_applicant"):
        for req in gap_items(2 if tag == "reply_incomplete" or rng.chance(0.5) else 1):
            add_gap(req)
    elif tag == "reply_invalid":
        for req in gap_items(rng.int(1, 2)):
            add_gap(req)
    elif tag == "wrong_queue_route":
        add_gap(gap_items(1)[0])
    if not single_round:
        # a second, independent trap now and then: a held record covers another item, or a
        # document valid today expires before the reply arrives (the next review is on a new date)
        if tag not in ("wrong_queue_route",) and rng.chance(0.25):
            extra = gap_items(1, lambda r: r["accept_held_record"])
            if extra:
                state[extra[0]["item_type"]] = "held_valid"
        if "boundary" not in state.values() and rng.chance(0.12):
            extra = gap_items(1, lambda r: r["max_age_days"] is not None)
            if extra:
                state[extra[0]["item_type"]] = "boundary"

    # 2. the case and its documents
    if tag == "wrong_queue_route":
        threshold = routing["senior_threshold_cents"]
        amount = rng.pick((threshold, threshold + rng.int(1, 900), threshold - rng.int(1, 900)))
    else:
        amount = rng.int(15_000, 2 * routing["senior_threshold_cents"])
    opened = add_days(today, -rng.int(1, 6))
    case = {
        "id": cid, "case_type": case_type, "applicant_id": applicant, "applicant_name": name,
        "amount_cents": amount, "status": "in_review", "queue": INTAKE_QUEUE, "clock_state": "running",
        "opened_on": opened, "sla_due_on": add_days(opened, SLA_DAYS), "paused_at": None, "review_round": 0,
        "released_at": None,
    }
    world.tables["cases"].append(case)
    docs: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    for req in reqs:
        item, st = req["item_type"], state[req["item_type"]]
        if st in ("valid", "boundary"):
            lookalike = rng.chance(0.5)
            boundary = st == "boundary" or (single_round and lookalike and req["max_age_days"] is not None and rng.chance(0.5))
            if lookalike and rng.chance(0.4):  # an old unusable copy beside the good one
                docs.append(_doc_fields(rng, req, name, opened, rng.pick([f for f in _flaws_for(req) if f != "absent"])))
            docs.append(_doc_fields(rng, req, name, today, None, lookalike=lookalike, boundary=boundary, received=opened))
        elif st in FLAW_TAG and st != "absent":
            docs.append(_doc_fields(rng, req, name, today, st, received=opened))
        elif st == "held_valid":
            if rng.chance(0.4):
                docs.append(_doc_fields(rng, req, name, today, rng.pick([f for f in _flaws_for(req) if f != "absent"]), received=opened))
            held.append(_doc_fields(rng, req, name, today, None))
        elif st == "held_stale":
            bad = [f for f in _flaws_for(req) if f in ("expired", "name", "illegible")]
            flaw = None if not req["accept_held_record"] else rng.pick(bad)
            held.append(_doc_fields(rng, req, name, today, flaw))
    # held records that cover nothing (attaching them is an irrelevant attachment):
    # a valid record of an item already covered, an otherwise valid record of an item the
    # rules do not let held records cover, a stale record of an item that is still needed
    if rng.chance(0.6):
        for req in rng.sample([r for r in reqs if r["accept_held_record"] and state[r["item_type"]] == "valid"], 1):
            held.append(_doc_fields(rng, req, name, today, None))
    gaps = [r for r in reqs if state[r["item_type"]] in FLAW_TAG]
    if rng.chance(0.45):
        for req in rng.sample([r for r in gaps if not r["accept_held_record"]], 1):
            held.append(_doc_fields(rng, req, name, today, None))
    if rng.chance(0.4):
        for req in rng.sample([r for r in gaps if r["accept_held_record"]], 1):
            held.append(_doc_fields(rng, req, name, today, rng.pick([f for f in _flaws_for(req) if f in ("expired", "name", "illegible")])))
    for k, fields in enumerate(docs, start=1):
        world.tables["documents"].append({
            "id": f"DOC-{number}-{k:02d}", "case_id": cid, **fields, "source": "applicant",
            "held_record_id": None, "received_at": f"{opened}T{rng.int(9, 17):02d}:00:00", "review_round": 0,
        })
    for fields in held:
        world.tables["held_records"].append({
            "id": world.held_id(), "applicant_id": applicant, **fields,
            "source_system": SOURCE_SYSTEMS[fields["item_type"]],
        })
    expected_queue = decision_queue(routing, amount)
    if tag == "wrong_queue_route":
        wrong = routing["standard_queue"] if expected_queue == routing["senior_queue"] else routing["senior_queue"]
        world.tables["notes"].append({
            "id": f"NT-{number}-01", "case_id": cid, "author": "intake_desk", "written_at": f"{opened}T18:00:00",
            "text": f"Phoned the applicant about the amount. Once the papers are in order this goes to {wrong}.",
        })
    elif rng.chance(0.3):
        world.tables["notes"].append({
            "id": f"NT-{number}-01", "case_id": cid, "author": "intake_desk", "written_at": f"{opened}T18:00:00",
            "text": "Applicant prefers contact by email.",
        })
    for n in world.numbers[1:1 + rng.int(3, 5)]:
        _neighbour(world, n)

    # 3. the scripted replies, then the correct rounds
    by_item = {q["item_type"]: q for q in reqs}

    def reply(r: int, missing: list[str]) -> list[tuple[str, str | None]] | None:
        if r < bad_replies:
            if bad_kinds[r] == "incomplete":
                keep = rng.sample(missing, len(missing) - 1)
                out = [(i, None) for i in sorted(keep)]
                unasked = [i for i in sorted(by_item) if i not in missing]
                if not out and unasked:  # nothing asked for, only a copy of something on file
                    out.append((rng.pick(unasked), None))
                return out
            bad = rng.pick(missing)
            return [(i, rng.pick([f for f in _flaws_for(by_item[i]) if f != "absent"]) if i == bad else None) for i in missing]
        if never_complete:
            return None
        out = [(i, None) for i in missing]
        unasked = [i for i in sorted(by_item) if i not in missing]
        if unasked and rng.chance(0.2):  # an unrequested copy of something already on file
            out.append((rng.pick(unasked), None))
        return out

    sim = _simulate(world, case, reqs, reply)
    rounds = sim["rounds"]
    _check_shape(tag, rounds, bad_replies)

    # 4. the answer key
    last = rounds[-1]
    released = last["action"] == "release"
    seen_tags = _tags_seen(rounds, world, applicant)
    tags = [tag] + sorted(t for t in seen_tags if t != tag)
    conditions = sorted({c for rd in rounds for cs in rd["failures"].values() for c in cs})
    if any(rd["satisfiable_from_records"] for rd in rounds):
        conditions.append("held_record")
    if tag == "wrong_queue_route":
        conditions.append("routing_threshold")
    # the SLA: each answered request pauses the clock from the request to the reply (then resumed)
    # (a count of days, so that no date the tools will compute is written in the key)
    sla_paused_days = sum(days_between(prev["review_at"], nxt["review_at"]) for prev, nxt in zip(rounds, rounds[1:]))
    expected = {
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
    if released:
        outcome = RELEASE_CLASSES[min(len(rounds) - 1, len(RELEASE_CLASSES) - 1)]
    else:
        outcome = "awaiting_applicant"
    key = {
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
    label = CASE_TYPES[case_type]["label"]
    task = {
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
    snapshot = dict(world.tables)
    snapshot["clock"] = [{"id": "clock", "now": f"{today}T09:00:00"}]
    return Generated(task=task, snapshot=snapshot, key=key)


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
