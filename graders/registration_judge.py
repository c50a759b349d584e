"""Judging the registration hand-over note, apart from the state-based grade.

The note an agent writes with ``refer_to_human(reason, note)`` is scored by a judge whose result
goes to ``info["judge"]`` and never into ``pass``. Two judges share the
:class:`~backoffice.graders.judge.Judge` protocol:

* :func:`rubric_judge` (the default): deterministic; does the note name the reason, the
  candidate records and the intake form, and say what was (not) done?
* :class:`ModelJudge`: an adapter for a model behind an OpenAI-style chat-completions endpoint.
  It is configured, never required: endpoint, model and key come from its arguments or from
  ``BACKOFFICE_JUDGE_ENDPOINT`` / ``BACKOFFICE_JUDGE_MODEL`` / ``BACKOFFICE_JUDGE_API_KEY``; with
  no key (or no endpoint) it returns ``None`` ("judge not run"), and a failed call also returns
  ``None``, so a judge can never lose a task.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from backoffice.envs.core.domain import Episode
from backoffice.graders.judge import Judge, JudgeResult, RubricJudge

REASON_WORDS = {
    "ambiguous_match": ("ambiguous", "more than one", "two records", "two possible", "multiple", "several", "both records", "cannot tell"),
    "deceased_match": ("deceased", "died", "death", "dead"),
    "identity_conflict": ("conflict", "identifier", "mismatch"),
    "other": (),
}
_DONE = re.compile(
    r"\b(no (records?|changes?|updates?|patient)\b|not (been )?(created|updated|changed|registered|touched|merged)"
    r"|did not|didn't|nothing (was |has been )?(created|changed|updated|done)|left (unchanged|as is|untouched)|on hold|unchanged)",
    re.IGNORECASE,
)
_RECORD_ID = re.compile(r"\bPAT-\d{4}\b")


def _names_reason(text: str, ctx: Mapping[str, Any]) -> bool:
    words = REASON_WORDS.get(str(ctx.get("expected_reason") or ""), ())
    low = text.casefold()
    return bool(words) and any(w in low for w in words)


def _names_candidates(text: str, ctx: Mapping[str, Any]) -> bool:
    ids = list(ctx.get("candidate_ids") or ())
    return all(i in text for i in ids) if ids else bool(_RECORD_ID.search(text))


def _names_form(text: str, ctx: Mapping[str, Any]) -> bool:
    return bool(ctx.get("intake_form_id")) and str(ctx["intake_form_id"]) in text


def _says_what_was_done(text: str, ctx: Mapping[str, Any]) -> bool:
    return bool(_DONE.search(text))


def rubric_judge() -> RubricJudge:
    """The default deterministic judge of a hand-over note (four criteria, equal weight)."""
    return RubricJudge(criteria=(
        ("names_reason", _names_reason),
        ("names_candidates", _names_candidates),
        ("names_intake_form", _names_form),
        ("says_what_was_done", _says_what_was_done),
    ), name="registration_rubric")


Transport = Callable[[str, Mapping[str, str], Mapping[str, Any]], Mapping[str, Any]]


def _http_post(url: str, headers: Mapping[str, str], payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """POST JSON and parse the JSON reply (the default transport; never used by tests)."""
    import urllib.request

    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=dict(headers), method="POST")
    with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 - the endpoint is configured by the user
        return json.loads(resp.read().decode())


@dataclass
class ModelJudge:
    """A model-based judge behind the :class:`Judge` protocol; ``None`` when not configured.

    Args:
        endpoint: chat-completions URL (default ``$BACKOFFICE_JUDGE_ENDPOINT``).
        model: model name (default ``$BACKOFFICE_JUDGE_MODEL``).
        api_key: bearer key (default ``$BACKOFFICE_JUDGE_API_KEY``); without one the judge does not run.
        transport: ``(url, headers, payload) -> reply`` (default an HTTP POST); tests pass a fake.
    """

    endpoint: str | None = None
    model: str | None = None
    api_key: str | None = None
    transport: Transport | None = None
    name: str = "model"

    def __post_init__(self) -> None:
        self.endpoint = self.endpoint or os.environ.get("BACKOFFICE_JUDGE_ENDPOINT") or None
        self.model = self.model or os.environ.get("BACKOFFICE_JUDGE_MODEL") or None
        self.api_key = self.api_key or os.environ.get("BACKOFFICE_JUDGE_API_KEY") or None

    @property
    def configured(self) -> bool:
        return bool(self.api_key and self.endpoint and self.model)

    def prompt(self, text: str, context: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages sent to the model."""
        facts = json.dumps({k: context.get(k) for k in ("intake_form_id", "expected_reason", "reason_given", "candidate_ids")}, sort_keys=True)
        return [
            {"role": "system", "content": (
                "You grade a hospital registration clerk's hand-over note. Criteria: names_reason (the note says why "
                "the form was handed over), names_candidates (it names the candidate patient records), names_intake_form "
                "(it names the intake form), says_what_was_done (it says what was and was not changed). Reply with JSON "
                '{"criteria": {name: true|false}, "score": number in [0,1], "rationale": string}.')},
            {"role": "user", "content": f"Facts: {facts}\nNote:\n{text}"},
        ]

    def judge(self, text: str, context: Mapping[str, Any]) -> JudgeResult | None:
        """Score ``text``; ``None`` when not configured or when the call or its reply fails."""
        if not self.configured:
            return None
        payload = {"model": self.model, "temperature": 0, "messages": self.prompt(text, context),
                   "response_format": {"type": "json_object"}}
        headers = {"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"}
        try:
            reply = (self.transport or _http_post)(str(self.endpoint), headers, payload)
            content = reply["choices"][0]["message"]["content"]
            data = json.loads(content) if isinstance(content, str) else dict(content)
            criteria = {str(k): bool(v) for k, v in sorted(dict(data.get("criteria") or {}).items())}
            score = min(1.0, max(0.0, float(data.get("score", sum(criteria.values()) / len(criteria) if criteria else 0.0))))
            return JudgeResult(self.name, score, criteria, str(data.get("rationale", ""))[:2000])
        except Exception:  # a judge failure is "not run", never a lost task
            return None


def judge_context(episode: Episode, record: Mapping[str, Any]) -> dict[str, Any]:
    """What a judge may know about a referral: the form, the expected reason and candidates."""
    return {
        "intake_form_id": episode.key.get("intake_form_id"),
        "expected_reason": episode.key.get("referral_reason"),
        "reason_given": record["args"].get("reason"),
        "candidate_ids": list(episode.key.get("candidates") or ()),
    }


def judge_episode(episode: Episode, judge: Judge | None = None) -> dict[str, Any] | None:
    """Judge the episode's hand-over note; ``None`` when there is no note or the judge did not run."""
    record = next((r for r in episode.trace if r["tool"] == "refer_to_human" and r["result_status"] == "ok"), None)
    if record is None:
        return None
    judge = judge if judge is not None else DEFAULT_JUDGE
    out = judge.judge(str(record["args"].get("note", "")), judge_context(episode, record))
    return None if out is None else out.to_json()


DEFAULT_JUDGE = rubric_judge()


def judge(episode: Episode, spec: str = "rubric") -> dict[str, Any] | None:
    """The Domain's ``judge`` hook over the hand-over note: ``spec`` ``"rubric"`` (the default,
    deterministic) or ``"model:<name>"`` (a :class:`ModelJudge` of that model; not run, so
    ``None``, without an endpoint and key)."""
    if spec.startswith("model:"):
        return judge_episode(episode, _model_judge(spec.split(":", 1)[1]))
    return judge_episode(episode, DEFAULT_JUDGE)


@lru_cache(maxsize=8)
def _model_judge(model: str) -> ModelJudge:
    return ModelJudge(model=model)
