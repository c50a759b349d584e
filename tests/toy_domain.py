"""A tiny domain used only by engine tests: one counter row that ``bump`` increments."""

from __future__ import annotations

from pydantic import Field

from backoffice.envs.core import BackofficeEnv, Domain, Generated, NoArgs, ToolArgs, ToolContext, ToolError, Toolkit
from backoffice.graders import finalize, run_checks

toolkit = Toolkit()


class BumpArgs(ToolArgs):
    counter_id: str = Field(description="Counter to bump.")
    by: int = Field(1, ge=1, le=10)


@toolkit.tool
def get_counter(ctx: ToolContext, args: BumpArgs) -> dict:
    """Read a counter."""
    row = ctx.store.get("counters", args.counter_id)
    if row is None:
        raise ToolError("not_found", f"no counter {args.counter_id}")
    return row


@toolkit.tool
def bump(ctx: ToolContext, args: BumpArgs) -> dict:
    """Increment a counter; fails (after writing) when it would pass 5, to prove rollback."""
    row = ctx.store.get("counters", args.counter_id)
    if row is None:
        raise ToolError("not_found", f"no counter {args.counter_id}")
    new = ctx.store.update("counters", args.counter_id, {"value": row["value"] + args.by})
    if new["value"] > 5:
        raise ToolError("conflict", "counter would pass 5")
    return new


@toolkit.tool(terminal=True)
def submit(ctx: ToolContext, args: NoArgs) -> dict:
    """Finish."""
    return {"submitted": True}


def generate(seed: int, tag: str) -> Generated:
    target = 1 + seed % 3
    return Generated(
        task={"instructions": f"Bump counter C-1 to {target}.", "allowed_tools": ["get_counter", "bump", "submit"], "params": {"target": target}},
        snapshot={"counters": [{"id": "C-1", "value": 0}, {"id": "C-2", "value": 0}], "clock": [{"id": "clock", "now": "2026-01-05T09:00:00"}]},
        key={"defect_tags": [tag], "targets": ["counters:C-1"], "checks": [
            {"id": "value", "kind": "field_equals", "table": "counters", "row_id": "C-1", "field": "value", "value": target, "failure_code": "wrong_value"}]},
    )


def grade(ep):
    return finalize(ep, run_checks(ep.key["checks"], ep), {"target": ep.task.params["target"]})


DOMAIN = Domain(
    name="toy", title="Toy", prefix="TOY", toolkit=toolkit, generate=generate, grade=grade,
    defect_tags=("plain",), failure_codes=("wrong_value", "forbidden_write"), generator_version="1",
    sizes={"train": 20, "heldout": 20}, default_max_steps=8,
)


class ToyEnv(BackofficeEnv):
    domain = DOMAIN
