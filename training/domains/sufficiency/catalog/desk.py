"""The sufficiency catalog's one observation state: what the clerk has read of the case, and the
helpers every tier grounds its calls and decides legality with.

One case per task. The agent reads the case, its type's requirements, the applicant's held
records and the case's documents once; from then on it tracks the documents itself (an attach
returns the attached document, a reply returned by ``wait`` lists the uploaded ones, with the new
date), so it re-assesses the case after every change without re-reading. The paginated reads
count as read only after their last page.

The assessment (:meth:`SufficiencyDesk.assessment`) is the rule ``get_requirements`` states,
applied to what the tools returned on the date they reported
(:func:`backoffice.envs.sufficiency.rules.assess`, the clerk's computation, fed only observed
rows): each required item is *satisfied*, *satisfiable* from a held record not yet attached, or
*missing*. Only the conclusions tier shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from functools import lru_cache
from itertools import combinations
from typing import Any

from backoffice.envs.sufficiency.rules import Assessment, assess, normalise_name
from backoffice.envs.sufficiency.tables import parse_day
from backoffice.training.catalog.features import Desk, derived

#: the case types, in a fixed order (one-hot features)
CASE_TYPES = ("disability_claim", "housing_application", "income_support_claim")
CASE_STATUSES = ("in_review", "awaiting_info", "released")
#: the validity conditions an uncovered item can fail (count features)
CONDITIONS = ("presence", "age", "signature", "name_match", "legibility")
READS = ("get_case", "get_requirements", "search_held_records", "list_documents")
PAGED = ("search_held_records", "list_documents")
#: required items per case type (every case type requires 4): the item slots, in the order
#: ``get_requirements`` lists them
N_ITEMS = 4
#: held-record slots (the released tasks hold at most 3 records per applicant)
N_HELD = 4
#: facts: document slots per item slot (the item's newest documents; released tasks reach 4)
N_ITEM_DOCS = 5
#: raw: flat document slots (the released tasks reach 10 documents on a case)
N_DOCS = 12
#: the request subsets of the facts and raw tiers: every non-empty subset of the item slots, by
#: size then slot order
SUBSETS: tuple[tuple[int, ...], ...] = tuple(s for k in range(1, N_ITEMS + 1) for s in combinations(range(N_ITEMS), k))
#: raw: names are ``k / N_SYMBOLS`` (the k-th distinct name seen this episode)
N_SYMBOLS = 32
#: the tools whose ok results bring rows (the case, held records, documents): the only calls
#: after which a row may cite a held record or carry a name not seen before
_ROW_TOOLS = frozenset({"get_case", "search_held_records", "list_documents", "attach_held_record", "wait"})


@lru_cache(maxsize=4096)
def normalised(name: Any) -> str:
    """:func:`normalise_name`, remembered (the raw tier names every row's name after every call)."""
    return normalise_name(name)


def merge(known: list[dict[str, Any]] | None, page: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a list read so far with the rows of its next page (a row already known by its
    id, e.g. a document the agent attached meanwhile, is not added twice)."""
    rows = list(known or [])
    seen = {r.get("id") for r in rows}
    rows.extend(dict(r) for r in page if r.get("id") not in seen)
    return rows


def issued(row: Mapping[str, Any]) -> date | None:
    """A document's or held record's issue date (``None`` when unreadable)."""
    try:
        return parse_day(str(row.get("issued_on")))
    except ValueError:
        return None


class SufficiencyDesk(Desk):
    """What the agent has read of its case, and what its own writes changed."""

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        self.case_id: str = str((brief.get("params") or {}).get("case_id") or "")
        self.case: dict[str, Any] | None = None
        #: the last assessment with what it read (see :meth:`assessment`)
        self._assessed: tuple[tuple[Any, ...], str, Assessment] | None = None
        self.requirements: list[dict[str, Any]] | None = None
        self.routing: dict[str, Any] | None = None
        self.held: list[dict[str, Any]] | None = None
        self.documents: list[dict[str, Any]] | None = None
        #: the cursor of the next page of held records / documents (None: every page read)
        self.held_cursor: str | None = None
        self.documents_cursor: str | None = None
        self.now: str | None = None
        self.status: str | None = None
        self.clock_state: str | None = None
        self.review_round = 0
        self.queue: str | None = None
        self.routed = False
        self.n_requests = 0
        #: a wait on the awaited case was refused: no further reply is expected
        self.no_reply = False
        #: the items of the request made since the last reply (None: none outstanding)
        self.outstanding: tuple[str, ...] | None = None
        #: actions whose call failed since the last successful call (the same call would fail again)
        self.failed: set[str] = set()
        #: held records known to be on the case (attached this episode, or a document citing them)
        self.attached: set[str] = set()
        #: raw: the episode symbol of each normalised name, in the order first seen
        self.symbols: dict[str, int] = {}

    def observe(self, action: str, call: dict[str, Any], result: dict[str, Any]) -> None:
        tool = call.get("tool")
        if result.get("status") != "ok":
            if tool == "wait" and result.get("code") == "precondition_failed" and self.status == "awaiting_info":
                self.no_reply = True
            self.failed.add(action)
            return
        self.failed.clear()
        out = result.get("result") or {}
        args = call.get("args") or {}
        if tool == "get_case":
            self.case = dict(out["case"])
            self.now = out.get("now") or self.now
            self._case_state(self.case)
        elif tool == "get_requirements":
            self.requirements = [dict(r) for r in out["tables"]["items"]]
            self.routing = dict(out["tables"]["routing"])
        elif tool == "search_held_records":
            more = "cursor" in args and self.held is not None
            self.held = merge(self.held if more else None, out["records"])
            self.held_cursor = out.get("next_cursor")
        elif tool == "list_documents":
            more = "cursor" in args and self.documents is not None
            self.documents = merge(self.documents if more else None, out["documents"])
            self.documents_cursor = out.get("next_cursor")
            self.now = out.get("now") or self.now
        elif tool == "attach_held_record":
            document = dict(out["attached"])
            self.attached.add(str(document.get("held_record_id") or args.get("record_id")))
            if self.documents is not None:
                self.documents = merge(self.documents, [document])
        elif tool == "request_items":
            self.n_requests += 1
            self.outstanding = tuple(sorted(args["items"]))
            self._case_state(out.get("case") or {})
        elif tool == "wait":
            self.outstanding = None
            self.now = out.get("now") or self.now
            if self.documents is not None:
                self.documents = merge(self.documents, list(out.get("documents") or []))
            self._case_state(out.get("case") or {})
        elif tool in ("resume_clock", "release_case"):
            self._case_state(out.get("case") or {})
        elif tool == "route_case":
            self.routed = True
            self._case_state(out.get("case") or {})
        if tool not in _ROW_TOOLS:
            return
        # a document citing a held record puts it on the case; the names seen so far get their
        # symbols in a fixed order: the applicant's, the held records', the documents'
        self.attached.update(str(d["held_record_id"]) for d in self.documents or () if d.get("held_record_id"))
        symbols = self.symbols
        for r in ({"name_on_document": (self.case or {}).get("applicant_name")}, *(self.held or ()), *(self.documents or ())):
            name = normalised(r.get("name_on_document"))
            if name and name not in symbols:
                symbols[name] = len(symbols) + 1

    def _case_state(self, row: Mapping[str, Any]) -> None:
        if row.get("status") is not None:
            self.status = str(row["status"])
        if row.get("clock_state") is not None:
            self.clock_state = str(row["clock_state"])
        if row.get("review_round") is not None:
            self.review_round = int(row["review_round"])
        if row.get("queue") is not None:
            self.queue = str(row["queue"])

    # -- derived values (once per step) -------------------------------------------------------
    @derived
    def assessment(self) -> Assessment | None:
        """The case's assessment on the last reported date (``None`` until everything was read)."""
        if (None in (self.case, self.requirements, self.held, self.documents, self.now)
                or self.held_cursor is not None or self.documents_cursor is not None):
            return None
        assert self.case is not None and self.requirements is not None and self.held is not None
        assert self.documents is not None and self.now is not None
        # kept while what it reads is the same: observe replaces these lists and the case, never
        # changes them in place, and the review date is a string
        reads = (self.requirements, self.documents, self.held, self.case)
        kept = self._assessed
        if kept is not None and kept[1] == self.now and all(a is b for a, b in zip(kept[0], reads, strict=True)):
            return kept[2]
        value = assess(self.requirements, self.documents, self.held, str(self.case.get("applicant_name") or ""), self.now[:10])
        self._assessed = (reads, self.now, value)
        return value

    @derived
    def attach_target(self) -> str | None:
        """The conclusions tier's record to attach: the first valid held record of the first item
        (by name) a held record can cover."""
        a = self.assessment()
        if a is None or not a.satisfiable_from_records:
            return None
        return a.satisfiable_from_records[sorted(a.satisfiable_from_records)[0]][0]

    @derived
    def today(self) -> date | None:
        """The review date: the date part of the last reported ``now``."""
        try:
            return parse_day(self.now) if self.now else None
        except ValueError:
            return None

    @derived
    def item_slots(self) -> dict[Any, int]:
        """Item type -> item slot (the first of the listed requirements with that type)."""
        slots: dict[Any, int] = {}
        for i, req in enumerate((self.requirements or ())[:N_ITEMS]):
            slots.setdefault(req.get("item_type"), i)
        return slots

    @derived
    def docs_by_item(self) -> dict[int, list[dict[str, Any]]]:
        """The documents on the case by item slot, in the order known."""
        out: dict[int, list[dict[str, Any]]] = {}
        slots = self.item_slots()
        for d in self.documents or ():
            i = slots.get(d.get("item_type"))
            if i is not None:
                out.setdefault(i, []).append(d)
        return out

    @derived
    def applicant(self) -> str | None:
        """The applicant's normalised name (``None`` before the case was read)."""
        return normalised(self.case.get("applicant_name")) if self.case is not None else None

    # -- observed values ----------------------------------------------------------------------
    def requirement(self, i: int) -> dict[str, Any] | None:
        reqs = self.requirements or ()
        return reqs[i] if i < len(reqs) else None

    def held_record(self, h: int) -> dict[str, Any] | None:
        held = self.held or ()
        return held[h] if h < len(held) else None

    def is_attached(self, record: Mapping[str, Any]) -> bool:
        return str(record.get("id")) in self.attached

    def symbol(self, name: Any) -> float:
        """A name's episode symbol / :data:`N_SYMBOLS` (0 for a name not seen)."""
        k = self.symbols.get(normalised(name), 0)
        return min(k, N_SYMBOLS) / N_SYMBOLS

    # -- legality -----------------------------------------------------------------------------
    def released(self) -> bool:
        return self.status == "released"

    @derived
    def choosing(self) -> bool:
        """What attaching and requesting need beside their argument: a case whose work is not done
        and that is not released."""
        return bool(self.case_id) and self.status != "released"

    def open_for(self, action: str) -> bool:
        """What every action but ``submit`` needs: a case, the work not done (released and
        routed), and not the action whose identical call just failed."""
        return bool(self.case_id) and not (self.routed and self.status == "released") and action not in self.failed
