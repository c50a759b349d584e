"""The sufficiency rule: which required items a case's documents (and held records) cover.

The domain's public rule helpers: what the rules document (``get_requirements``) says about a
document's validity, computed from observed rows. Pure functions over plain row dicts, shared by
the generator (to write the answer key), the oracle and the catalog (which feed them only what
tools returned). The grader does not use them: it has its own reading of the requirement rows, so
the oracle passing checks the grader independently. Nothing here reads a store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from backoffice.envs.sufficiency.tables import parse_day

#: The validity conditions a requirement can impose (``presence`` = no document at all).
CONDITIONS = ("presence", "legibility", "signature", "name_match", "age", "not_after_review_date", "held_record_not_accepted")


def normalise_name(name: Any) -> str:
    """Names compare ignoring letter case and extra spaces."""
    return " ".join(str(name or "").split()).casefold()


def failed_conditions(doc: Mapping[str, Any], req: Mapping[str, Any], applicant_name: str, today: str) -> list[str]:
    """The conditions ``doc`` fails for requirement ``req`` on the review date ``today``.

    ``doc`` is a document or a held record (same fields); a document attached from a held
    record carries ``source == "held_record"``. An empty list means the document is valid.
    """
    failed = []
    if doc.get("item_type") != req["item_type"]:
        return ["presence"]
    if doc.get("source") == "held_record" and not req["accept_held_record"]:
        failed.append("held_record_not_accepted")
    if not doc.get("legible"):
        failed.append("legibility")
    if req["signature_required"] and not doc.get("signed"):
        failed.append("signature")
    if req["name_must_match"] and normalise_name(doc.get("name_on_document")) != normalise_name(applicant_name):
        failed.append("name_match")
    age = (parse_day(today) - parse_day(str(doc.get("issued_on")))).days
    if age < 0:
        failed.append("not_after_review_date")
    elif req["max_age_days"] is not None and age > req["max_age_days"]:
        failed.append("age")
    return failed


def record_failed_conditions(record: Mapping[str, Any], req: Mapping[str, Any], applicant_name: str, today: str) -> list[str]:
    """The conditions a held record fails for ``req`` if it were attached on ``today``."""
    return failed_conditions({**record, "source": "held_record"}, req, applicant_name, today)


@dataclass(frozen=True)
class Assessment:
    """One review of a case: each required item is satisfied, satisfiable from held records, or missing."""

    satisfied_items: tuple[str, ...]
    satisfiable_from_records: dict[str, tuple[str, ...]]  # item -> valid held record ids
    missing_items: tuple[str, ...]
    failures: dict[str, tuple[str, ...]]  # unsatisfied item -> conditions its documents failed

    @property
    def sufficient(self) -> bool:
        return not self.missing_items and not self.satisfiable_from_records

    def to_json(self) -> dict[str, Any]:
        return {
            "satisfied_items": list(self.satisfied_items),
            "satisfiable_from_records": sorted(self.satisfiable_from_records),
            "missing_items": list(self.missing_items),
        }


def assess(
    requirements: Iterable[Mapping[str, Any]],
    documents: Iterable[Mapping[str, Any]],
    held_records: Iterable[Mapping[str, Any]],
    applicant_name: str,
    today: str,
) -> Assessment:
    """Assess a case on ``today``: ``requirements`` of its case type, its ``documents`` and its
    applicant's ``held_records``. Items come out in requirement order; ids are sorted."""
    reqs = sorted(requirements, key=lambda r: r["item_type"])
    docs = sorted(documents, key=lambda d: d["id"])
    records = sorted(held_records, key=lambda r: r["id"])
    satisfied, missing = [], []
    satisfiable: dict[str, tuple[str, ...]] = {}
    failures: dict[str, tuple[str, ...]] = {}
    for req in reqs:
        item = req["item_type"]
        mine = [d for d in docs if d.get("item_type") == item]
        if any(not failed_conditions(d, req, applicant_name, today) for d in mine):
            satisfied.append(item)
            continue
        failures[item] = tuple(sorted({c for d in mine for c in failed_conditions(d, req, applicant_name, today)})) or ("presence",)
        usable = tuple(
            r["id"] for r in records
            if r.get("item_type") == item and not record_failed_conditions(r, req, applicant_name, today)
        )
        if usable:
            satisfiable[item] = usable
        else:
            missing.append(item)
    return Assessment(tuple(satisfied), satisfiable, tuple(missing), failures)
