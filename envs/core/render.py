"""Text views of an episode for ``render_mode="ansi"`` (and ``"human"``, which prints them) and
for people playing a task (``backoffice play``): the last step's tool, arguments, a summary of
its result and the step count, instead of raw JSON.

Only what the agent itself has seen goes in (the brief, the calls and their results): never a
grade, a check or an expected value before the episode ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from backoffice.envs.core.canonical import dumps


def short(value: Any, width: int = 80) -> str:
    """``value`` as compact JSON (text as it is), cut to ``width`` characters with an ellipsis."""
    text = value if isinstance(value, str) else dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(1, width - 3)] + "..."


def summarize(result: Any, width: int = 100, items: int = 8) -> list[str]:
    """A few lines that say what a tool result holds: scalars as they are, lists by their length
    and first entries, nested objects by their keys."""
    if not isinstance(result, Mapping):
        return [short(result, width)]
    lines = []
    for key in sorted(result)[:items]:
        value = result[key]
        if isinstance(value, list):
            head = f"[{len(value)} item{'s' if len(value) != 1 else ''}]"
            lines.append(f"{key}: {head}" + (f" {short(value[0], width - len(key) - len(head) - 4)}, ..." if value else ""))
        elif isinstance(value, Mapping):
            lines.append(f"{key}: {short(value, width - len(key) - 2)}")
        else:
            lines.append(f"{key}: {short(value, width - len(key) - 2)}")
    if len(result) > items:
        lines.append(f"... {len(result) - items} more field(s)")
    return lines


def render_reset(domain: str, task_id: str, brief: Mapping[str, Any], limit: int | None, allowed: Sequence[str]) -> str:
    """The start of an episode: task, instructions, the allowed tools and the step limit."""
    lines = [f"{domain} {task_id}: step 0/{limit if limit is not None else '?'}"]
    instructions = brief.get("instructions") if isinstance(brief, Mapping) else None
    if instructions:
        lines.append(f"  brief: {short(instructions, 240)}")
    lines.append(f"  tools: {', '.join(allowed)}")
    return "\n".join(lines) + "\n"


def render_step(domain: str, task_id: str, record: Mapping[str, Any], limit: int | None, done: bool) -> str:
    """One step of the trace: ``step n/limit``, the call, ok or the error code and message, the
    changed ids and a summary of the result."""
    tool = record.get("tool")
    call = "(invalid action)" if tool is None else f"{tool}({short(record.get('args') or {}, 160)})"
    lines = [f"{domain} {task_id}: step {record['step']}/{limit if limit is not None else '?'}{' (episode over)' if done else ''}",
             f"  > {call}"]
    result = record.get("result")
    if record.get("result_status") == "ok":
        lines.append("  < ok")
        lines.extend(f"    {line}" for line in summarize(result))
    else:
        message = result.get("message") if isinstance(result, Mapping) else None
        lines.append(f"  < error {record.get('error_code')}: {short(message or '', 200)}")
    if record.get("changed_ids"):
        lines.append(f"  changed: {', '.join(record['changed_ids'])}")
    return "\n".join(lines) + "\n"
