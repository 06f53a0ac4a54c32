"""OpenHands event streams: a JSON list (a saved trajectory), JSON lines, or an object holding the
list under ``history`` / ``events`` (evaluation output).

Shape, from All-Hands-AI/OpenHands ``openhands/events/serialization/event.py`` (``event_to_dict``:
``id``, ``timestamp``, ``source`` user|agent|environment, ``message``, ``cause``,
``tool_call_metadata`` {function_name, tool_call_id}; actions add ``action`` (message, run,
run_ipython, read, write, edit, browse, think, finish, …) and ``args``; observations add
``observation`` (run, read, edit, error, …), ``content``, ``extras`` and ``success``) and
``serialization/observation.py`` (the exit code in ``extras.metadata.exit_code``, formerly
``extras.exit_code``). An observation answers the action whose id is its ``cause``; the call id is
the tool call's own when the event carries one, else ``openhands-<action id>``.

The V1 software-agent-sdk events are read too (``kind``: MessageEvent {llm_message}, ActionEvent
{thought, action, tool_name, tool_call_id}, ObservationEvent {observation, tool_call_id},
AgentErrorEvent, UserRejectObservation), as its ``openhands-sdk/openhands/sdk/event`` describes.
"""

from __future__ import annotations

from typing import Any

from ingestion.formats.base import (
    Collector,
    Message,
    build,
    call_text,
    exit_code,
    looks_failed,
    make_call,
    obj,
    result_text,
    stringify,
    text_of,
    thinking_text,
)

_SKIP_ACTIONS = {"change_agent_state", "system", "recall", "null", "condensation", "condensation_request"}
_SKIP_OBSERVATIONS = {"agent_state_changed", "recall", "null", "condense", "condensation", "think"}
_NOISE_ARGS = {"thought", "confirmation_state", "security_risk", "blocking", "is_static", "cwd", "hidden",
               "impl_source", "is_input", "include_extra", "kernel_init_code", "wait_for_response",
               "image_urls", "file_urls", "translated_ipython_code", "kind"}
V1_KINDS = {"MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent", "UserRejectObservation",
            "SystemPromptEvent", "ConversationStateUpdateEvent", "Condensation", "CondensationRequest",
            "CondensationSummaryEvent", "PauseEvent"}


def claims(row: Any) -> bool:
    if not isinstance(row, dict):
        return False
    if row.get("kind") in V1_KINDS:
        return True
    return "source" in row and (isinstance(row.get("action"), str) or isinstance(row.get("observation"), str))


def events_of(doc: Any) -> list[Any] | None:
    """The event list of an OpenHands document, or None if it is not one."""
    if isinstance(doc, dict):
        doc = next((doc[k] for k in ("history", "events") if isinstance(doc.get(k), list)), None)
    if isinstance(doc, list) and any(claims(e) for e in doc[:50]):
        return doc
    return None


def _code(value: Any) -> int | None:
    if isinstance(value, dict):
        metadata = value.get("metadata")
        for code in (value.get("exit_code"), metadata.get("exit_code") if isinstance(metadata, dict) else None):
            # bool is an int in Python: a `true` flag is no exit code.
            if isinstance(code, int) and not isinstance(code, bool):
                return code
    return None


def _failed(text: str, code: int | None, *flags: Any) -> bool:
    if any(flag is True for flag in flags):
        return True
    if code is None:
        code = exit_code(text)
    return code != 0 if code is not None else looks_failed(text)


class _Stream:
    def __init__(self) -> None:
        self.out = Collector()
        self.call_of: dict[Any, str] = {}  # action event id → its call id

    def action(self, event: dict[str, Any], line: int) -> Message | None:
        kind = stringify(event["action"])
        args = obj(event.get("args"))
        if kind in _SKIP_ACTIONS:
            return None
        if kind == "message":
            role = "user" if event.get("source") == "user" else "assistant"
            return build(role, line, [stringify(args.get("content") or event.get("message") or "")])
        thought = stringify(args.get("thought") or "")
        if kind == "think":
            return build("assistant", line, [thinking_text(thought)])
        if kind in ("finish", "reject"):
            outputs = obj(args.get("outputs"))
            final = args.get("final_thought") or outputs.get("content") or args.get("reason") or event.get("message")
            return build("assistant", line, [thought, stringify(final or "")])
        metadata = obj(event.get("tool_call_metadata"))
        call_id = metadata.get("tool_call_id") or f"openhands-{event.get('id', line)}"
        self.call_of[event.get("id", line)] = call_id
        shown = {k: v for k, v in args.items() if k not in _NOISE_ARGS and v not in (None, "", [], {})}
        return build("assistant", line, [thought, call_text(kind, stringify(shown))], tool_names=[kind],
                     calls=[make_call(call_id, kind, args)])

    def observation(self, event: dict[str, Any], line: int) -> Message | None:
        kind = stringify(event["observation"])
        if kind in _SKIP_OBSERVATIONS:
            return None
        extras = obj(event.get("extras"))
        metadata = obj(event.get("tool_call_metadata"))
        cause = event.get("cause")
        call_id = self.call_of.get(cause) or metadata.get("tool_call_id") or (
            f"openhands-{cause}" if cause is not None else "")
        text = stringify(event.get("content") or event.get("message") or "")
        failed = _failed(text, _code(extras), kind == "error", event.get("success") is False)
        return build("tool", line, [result_text(text or "(no output)", failed)], is_tool_result=True,
                     is_error=failed, call_ids=[call_id] if call_id else [])

    def v1(self, event: dict[str, Any], line: int) -> Message | None:
        kind = event["kind"]
        call_id = event.get("tool_call_id") if isinstance(event.get("tool_call_id"), str) else ""
        if kind == "MessageEvent":
            llm = obj(event.get("llm_message"))
            role = llm.get("role") or ("user" if event.get("source") == "user" else "assistant")
            return build(role if role in ("user", "assistant", "system") else "assistant", line,
                         [text_of(llm.get("content"))])
        if kind == "ActionEvent":
            action = obj(event.get("action"))
            name = stringify(event.get("tool_name") or action.get("kind") or "tool")
            shown = {k: v for k, v in action.items() if k not in _NOISE_ARGS and v not in (None, "", [], {})}
            thought = text_of(event.get("thought")) or stringify(event.get("reasoning_content") or "")
            return build("assistant", line, [thought, call_text(name, stringify(shown))], tool_names=[name],
                         calls=[make_call(call_id or f"openhands-{event.get('id', line)}", name, action)])
        if kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            observation = obj(event.get("observation"))
            text = (text_of(observation.get("content")) or stringify(observation.get("output") or "")
                    or stringify(event.get("error") or event.get("rejection_reason") or ""))
            failed = _failed(text, _code(observation), kind == "AgentErrorEvent", observation.get("is_error"),
                             observation.get("error") is True)
            return build("tool", line, [result_text(text or "(no output)", failed)], is_tool_result=True,
                         is_error=failed, call_ids=[call_id] if call_id else [])
        return None  # system prompt, state updates, condensation, pauses


def parse(rows: list[tuple[int, Any]]) -> Collector:
    stream = _Stream()
    for number, event in rows:
        if not isinstance(event, dict):
            stream.out.bad("not an object")
        elif event.get("kind") in V1_KINDS:
            stream.out.add(stream.v1(event, number))
        elif isinstance(event.get("action"), str):
            stream.out.add(stream.action(event, number))
        elif isinstance(event.get("observation"), str):
            stream.out.add(stream.observation(event, number))
        else:
            stream.out.bad("not an OpenHands event")
    return stream.out
