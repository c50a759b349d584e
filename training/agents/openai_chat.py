"""A chat function for any OpenAI-compatible chat-completions endpoint (the ``llm`` extra).

Settings come from arguments, else from environment variables:

================  ===========================================  =======================================
setting           argument                                     environment variable
================  ===========================================  =======================================
model             ``model``                                    ``BACKOFFICE_LLM_MODEL``
base URL          ``base_url``                                 ``OPENAI_BASE_URL`` (default: OpenAI's)
API key           ``api_key``                                  ``OPENAI_API_KEY`` (``"unused"`` when a
                                                                base URL is set and no key is: local
                                                                servers such as vLLM ignore it)
temperature       ``temperature``                              ``BACKOFFICE_LLM_TEMPERATURE``
================  ===========================================  =======================================

``backoffice eval --policy openai:<model>`` builds :func:`openai_policy` for each episode; the
attempt number is sent as the request ``seed`` so attempts are distinct samples where the
endpoint honours seeds. ``--timeout`` and ``--retries`` set the client's per-request timeout
and retries (``BACKOFFICE_LLM_TIMEOUT``, ``BACKOFFICE_LLM_RETRIES``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from backoffice.training.agents.chat import ChatAgent, ChatReply, Message, ToolCall

INSTALL_HINT = "the OpenAI chat adapter needs the `llm` extra: pip install 'backoffice-gym[llm]'"


class OpenAIChat:
    """``chat(messages, tools) -> ChatReply`` over ``client.chat.completions.create``.

    Raises ``ImportError`` (with the install hint) when ``openai`` is missing and
    ``ValueError`` when no model is given. Errors from the endpoint (after the client's own
    ``max_retries``) propagate: they are infrastructure failures, not agent behaviour.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 temperature: float | None = None, seed: int | None = None, max_tokens: int | None = None,
                 timeout: float | None = None, max_retries: int | None = None, extra_body: Mapping[str, Any] | None = None):
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(INSTALL_HINT) from exc
        self.model = model or os.environ.get("BACKOFFICE_LLM_MODEL")
        if not self.model:
            raise ValueError("no model: pass model= or set BACKOFFICE_LLM_MODEL")
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY") or ("unused" if self.base_url else None)
        if temperature is None and os.environ.get("BACKOFFICE_LLM_TEMPERATURE"):
            temperature = float(os.environ["BACKOFFICE_LLM_TEMPERATURE"])
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body) if extra_body else None
        if timeout is None:
            timeout = float(os.environ.get("BACKOFFICE_LLM_TIMEOUT") or 120.0)
        if max_retries is None:
            max_retries = int(os.environ.get("BACKOFFICE_LLM_RETRIES") or 2)
        self.timeout, self.max_retries = timeout, max_retries
        self.client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=timeout, max_retries=max_retries)

    def request(self, messages: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The keyword arguments of the ``create`` call (only the settings that were given)."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": [_wire(m) for m in messages]}
        if tools:
            kwargs["tools"] = tools
        for name in ("temperature", "seed", "max_tokens", "extra_body"):
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        return kwargs

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> ChatReply:
        response = self.client.chat.completions.create(**self.request(messages, tools))
        usage = _usage(getattr(response, "usage", None))
        if not response.choices:  # recorded as an empty reply (content ""), never sent back as null
            return ChatReply(None, (), "no_choices", usage)
        choice = response.choices[0]
        message = choice.message
        calls = []
        for i, call in enumerate(message.tool_calls or ()):
            fn = getattr(call, "function", None)
            if fn is None:  # a non-function tool call (e.g. "custom"): not one of ours
                calls.append(ToolCall(call.id or f"call_{i}", getattr(call, "type", "") or "", "{}"))
                continue
            calls.append(ToolCall(call.id or f"call_{i}", fn.name or "", fn.arguments or ""))
        return ChatReply(message.content, tuple(calls), getattr(choice, "finish_reason", None), usage)


def _usage(usage: Any) -> dict[str, int] | None:
    """The integer token counts of a response's ``usage`` (``prompt_tokens`` ...)."""
    if usage is None:
        return None
    data = usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
    return {k: int(v) for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool)}


def _wire(message: Message) -> dict[str, Any]:
    """A transcript message as the API expects it (only the chat-completions fields). Content
    is never null: ``""`` for a tool result or an empty reply; an assistant message that calls
    tools and has no text leaves ``content`` out (allowed exactly when ``tool_calls`` is set)."""
    out = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")}
    if out.get("content") is None:
        if out.get("role") == "assistant" and out.get("tool_calls"):
            out.pop("content", None)
        else:
            out["content"] = ""
    return out


def openai_policy(model: str, seed: int = 0, **kwargs: Any) -> ChatAgent:
    """A policy (for ``evaluate``) chatting with ``model`` through :class:`OpenAIChat`."""
    chat = OpenAIChat(model=model, seed=seed, **kwargs)
    return ChatAgent(chat, name=f"openai:{model}", version=model)
