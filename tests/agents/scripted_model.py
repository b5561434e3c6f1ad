#!/usr/bin/env python3
"""A scripted LLM server for driving real coding agents offline.

Speaks the Anthropic Messages API, OpenAI Chat Completions, the OpenAI
Responses API and Gemini's generateContent (streaming and not), answering each request with the next
matching turn of a JSON scenario, and logs every request body it receives to a
JSONL file so a test can assert what the agent sent. Python 3 stdlib only.

    scripted_model.py --scenario FILE [--port 0] [--log FILE] [--var NAME=VALUE]

The first line on stdout is the base URL (http://127.0.0.1:PORT); Anthropic
and Gemini clients use it as is, OpenAI clients append /v1. See README.md for the
scenario format.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Text that marks an agent's own summarization request (system prompt or
# the last user message). Scenarios may add their own with "compaction_markers".
COMPACTION_MARKERS = [
    "Your task is to create a detailed summary of",  # Claude Code /compact and auto-compact
    "You are a context summarization assistant",  # pi compaction and branch summaries
    "CONTEXT CHECKPOINT COMPACTION",  # Codex
    "You are a context summarization agent",  # opencode
    "distilling chat history into a structured XML <state_snapshot>",  # Gemini CLI (its summary and its check of it)
]

VAR_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ScenarioError(Exception):
    pass


def substitute(value, variables):
    """Replaces ${NAME} in every string of a scenario; unknown names are errors."""
    if isinstance(value, str):

        def repl(m):
            if m.group(1) not in variables:
                raise ScenarioError(f"scenario uses ${{{m.group(1)}}} but no --var {m.group(1)}=… was given")
            return variables[m.group(1)]

        return VAR_PATTERN.sub(repl, value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


def load_scenario(path, variables):
    with open(path, encoding="utf-8") as f:
        scenario = json.load(f)
    if isinstance(scenario, list):
        scenario = {"turns": scenario}
    if not isinstance(scenario.get("turns"), list):
        raise ScenarioError(f"{path}: a scenario is an object with a 'turns' list")
    scenario = substitute(scenario, variables)
    for i, turn in enumerate(scenario["turns"]):
        if ("reply" in turn) == ("error" in turn):
            raise ScenarioError(f"{path}: turn {i} needs exactly one of 'reply' or 'error'")
    return scenario


# ---------------------------------------------------------------- requests


def text_of(content):
    """Concatenated text of a message content in any of the three APIs."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            for key in ("text", "content", "output"):
                if key in block:
                    parts.append(text_of(block[key]))
    return "\n".join(parts)


class Request:
    """What matching needs to know about a request, whatever its API."""

    def __init__(self, api, body):
        self.api = api
        self.body = body
        self.model = body.get("model", "scripted")
        self.stream = bool(body.get("stream"))
        if api == "gemini":
            self.model = body.get("$model", "scripted")
            self.stream = bool(body.get("$stream"))
        self.system = self._system()
        self.messages = body.get("messages") or []
        self.last_user_text = self._last_user_text()
        self.tool_results = self._trailing_tool_results()

    def _system(self):
        if self.api == "anthropic":
            return text_of(self.body.get("system"))
        if self.api == "responses":
            return text_of(self.body.get("instructions"))
        if self.api == "gemini":
            system = self.body.get("systemInstruction") or {}
            return text_of(system.get("parts") if isinstance(system, dict) and "parts" in system else system)
        msgs = self.body.get("messages") or []
        return "\n".join(text_of(m.get("content")) for m in msgs if m.get("role") in ("system", "developer"))

    def _items(self):
        if self.api == "gemini":
            return [{"role": c.get("role"), "content": c.get("parts") or []} for c in self.body.get("contents") or []]
        if self.api == "responses":
            inp = self.body.get("input")
            return [{"role": "user", "content": inp}] if isinstance(inp, str) else (inp or [])
        return self.body.get("messages") or []

    def _last_user_text(self):
        for item in reversed(self._items()):
            if item.get("role") == "user":
                text = text_of(item.get("content"))
                if self.api == "anthropic" and isinstance(item.get("content"), list):
                    text = "\n".join(
                        text_of(b.get("text"))
                        for b in item["content"]
                        if isinstance(b, dict) and b.get("type") == "text"
                    )
                if text.strip():
                    return text
        return ""

    def _trailing_tool_results(self):
        """Ids of the tool results at the end of the request (the answers to the last tool calls)."""
        items = self._items()
        if not items:
            return []
        ids = []
        if self.api == "anthropic":
            last = items[-1]
            if last.get("role") == "user" and isinstance(last.get("content"), list):
                ids = [b.get("tool_use_id") for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
        elif self.api == "gemini":
            last = items[-1]
            if last.get("role") == "user":
                ids = [(p.get("functionResponse") or {}).get("id") for p in last["content"] if isinstance(p, dict) and "functionResponse" in p]
        elif self.api == "chat":
            for m in reversed(items):
                if m.get("role") != "tool":
                    break
                ids.append(m.get("tool_call_id"))
        else:
            for m in reversed(items):
                if m.get("type") != "function_call_output":
                    break
                ids.append(m.get("call_id"))
        return [i for i in ids if i]

    def is_compaction(self, markers):
        haystack = self.system + "\n" + self.last_user_text
        return any(marker in haystack for marker in markers)


def matches(match, request, is_compaction):
    """Whether a turn's 'match' object accepts the request."""
    if bool(match.get("compaction", False)) != is_compaction:
        return False
    if "api" in match and match["api"] != request.api:
        return False
    if "model" in match and match["model"] not in request.model:
        return False
    if "tool_result_for" in match and match["tool_result_for"] not in request.tool_results:
        return False
    if "last_user_contains" in match and match["last_user_contains"] not in request.last_user_text:
        return False
    if "system_contains" in match and match["system_contains"] not in request.system:
        return False
    if "tools" in match and bool(match["tools"]) != bool(request.body.get("tools")):
        return False
    return True


# ---------------------------------------------------------------- replies


def estimate_tokens(text):
    return max(1, math.ceil(len(text) / 4))


def resolve_usage(spec, raw_body, reply):
    """Neutral usage {input, output, cache_read, cache_write}; "auto" = estimated from sizes."""
    if spec is None or spec == "auto":
        spec = {}
    out_text = (reply.get("text") or "") + "".join(json.dumps(c.get("arguments", {})) for c in reply.get("tool_calls", []))
    usage = {
        "input": spec.get("input", "auto"),
        "output": spec.get("output", "auto"),
        "cache_read": spec.get("cache_read", 0),
        "cache_write": spec.get("cache_write", 0),
    }
    if usage["input"] == "auto":
        usage["input"] = max(1, prompt_estimate(raw_body) - usage["cache_read"] - usage["cache_write"])
    if usage["output"] == "auto":
        usage["output"] = estimate_tokens(out_text)
    return usage


def stop_reason(reply):
    if "stop_reason" in reply:
        return reply["stop_reason"]
    return "tool_use" if reply.get("tool_calls") else "end_turn"


def chunks(text, size=24):
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse(event, data):
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def new_id(prefix):
    return prefix + uuid.uuid4().hex[:24]


def tool_call_id(call, api, index):
    if "id" in call:
        return call["id"]
    return {"anthropic": "toolu_", "chat": "call_", "responses": "call_", "gemini": "call_"}[api] + f"scripted{index:02d}"


class Anthropic:
    STOP = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens", "stop": "end_turn", "length": "max_tokens"}

    @staticmethod
    def usage(u):
        return {
            "input_tokens": u["input"],
            "cache_creation_input_tokens": u["cache_write"],
            "cache_read_input_tokens": u["cache_read"],
            "output_tokens": u["output"],
        }

    @classmethod
    def blocks(cls, reply):
        blocks = []
        if reply.get("thinking"):
            blocks.append({"type": "thinking", "thinking": reply["thinking"], "signature": SIGNATURE})
        if reply.get("text"):
            blocks.append({"type": "text", "text": reply["text"]})
        for i, call in enumerate(reply.get("tool_calls", [])):
            blocks.append({"type": "tool_use", "id": tool_call_id(call, "anthropic", i), "name": call["name"], "input": call.get("arguments", {})})
        return blocks

    @classmethod
    def message(cls, request, reply, usage):
        return {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": cls.blocks(reply),
            "stop_reason": cls.STOP.get(stop_reason(reply), stop_reason(reply)),
            "stop_sequence": None,
            "usage": cls.usage(usage),
        }

    @classmethod
    def stream(cls, request, reply, usage):
        msg = cls.message(request, reply, usage)
        start = dict(msg, content=[], stop_reason=None, usage=dict(msg["usage"], output_tokens=1))
        out = [sse("message_start", {"type": "message_start", "message": start}), sse("ping", {"type": "ping"})]
        for index, block in enumerate(msg["content"]):
            if block["type"] == "text":
                out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
                deltas = [{"type": "text_delta", "text": piece} for piece in chunks(block["text"])]
            elif block["type"] == "thinking":
                out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
                deltas = [{"type": "thinking_delta", "thinking": piece} for piece in chunks(block["thinking"])]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            else:
                out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
                deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in chunks(json.dumps(block["input"]))]
            for delta in deltas:
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
            out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        out.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None}, "usage": msg["usage"]}))
        out.append(sse("message_stop", {"type": "message_stop"}))
        return "".join(out)


class Chat:
    STOP = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "stop": "stop", "length": "length"}

    @staticmethod
    def usage(u):
        prompt = u["input"] + u["cache_read"] + u["cache_write"]
        return {
            "prompt_tokens": prompt,
            "completion_tokens": u["output"],
            "total_tokens": prompt + u["output"],
            "prompt_tokens_details": {"cached_tokens": u["cache_read"]},
        }

    @classmethod
    def tool_calls(cls, reply):
        return [
            {"id": tool_call_id(c, "chat", i), "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
            for i, c in enumerate(reply.get("tool_calls", []))
        ]

    @classmethod
    def completion(cls, request, reply, usage):
        message = {"role": "assistant", "content": reply.get("text") or None}
        if reply.get("thinking"):
            message["reasoning_content"] = reply["thinking"]
        if reply.get("tool_calls"):
            message["tool_calls"] = cls.tool_calls(reply)
        return {
            "id": new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [{"index": 0, "message": message, "finish_reason": cls.STOP.get(stop_reason(reply), stop_reason(reply))}],
            "usage": cls.usage(usage),
        }

    @classmethod
    def stream(cls, request, reply, usage):
        full = cls.completion(request, reply, usage)
        base = {"id": full["id"], "object": "chat.completion.chunk", "created": full["created"], "model": full["model"]}

        def chunk(delta, finish=None):
            return sse(None, dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}]))

        out = [chunk({"role": "assistant", "content": ""})]
        if reply.get("thinking"):
            out += [chunk({"reasoning_content": piece}) for piece in chunks(reply["thinking"])]
        if reply.get("text"):
            out += [chunk({"content": piece}) for piece in chunks(reply["text"])]
        for i, call in enumerate(cls.tool_calls(reply)):
            out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}) for piece in chunks(call["function"]["arguments"])]
        out.append(chunk({}, full["choices"][0]["finish_reason"]))
        if (request.body.get("stream_options") or {}).get("include_usage"):
            out.append(sse(None, dict(base, choices=[], usage=full["usage"])))
        out.append("data: [DONE]\n\n")
        return "".join(out)


class Responses:
    @staticmethod
    def usage(u):
        prompt = u["input"] + u["cache_read"] + u["cache_write"]
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": u["cache_read"]},
            "output_tokens": u["output"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + u["output"],
        }

    @classmethod
    def items(cls, reply):
        items = []
        if reply.get("text"):
            items.append({"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": reply["text"], "annotations": []}]})
        for i, call in enumerate(reply.get("tool_calls", [])):
            items.append({"type": "function_call", "id": new_id("fc_"), "status": "completed", "call_id": tool_call_id(call, "responses", i), "name": call["name"], "arguments": json.dumps(call.get("arguments", {}))})
        return items

    @classmethod
    def response(cls, request, reply, usage):
        status = "incomplete" if stop_reason(reply) in ("max_tokens", "length") else "completed"
        return {"id": new_id("resp_"), "object": "response", "created_at": int(time.time()), "status": status, "model": request.model, "output": cls.items(reply), "usage": cls.usage(usage)}

    @classmethod
    def stream(cls, request, reply, usage):
        full = cls.response(request, reply, usage)
        seq = iter(range(1_000_000))

        def ev(kind, **data):
            return sse(kind, dict(type=kind, sequence_number=next(seq), **data))

        out = [ev("response.created", response=dict(full, status="in_progress", output=[], usage=None))]
        for index, item in enumerate(full["output"]):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                out.append(ev("response.output_item.added", output_index=index, item=dict(item, status="in_progress", content=[])))
                out.append(ev("response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part={"type": "output_text", "text": "", "annotations": []}))
                out += [ev("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0, delta=p) for p in chunks(text)]
                out.append(ev("response.output_text.done", item_id=item["id"], output_index=index, content_index=0, text=text))
                out.append(ev("response.content_part.done", item_id=item["id"], output_index=index, content_index=0, part=item["content"][0]))
            else:
                out.append(ev("response.output_item.added", output_index=index, item=dict(item, status="in_progress", arguments="")))
                out += [ev("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=p) for p in chunks(item["arguments"])]
                out.append(ev("response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=item["arguments"]))
            out.append(ev("response.output_item.done", output_index=index, item=item))
        out.append(ev("response.completed" if full["status"] == "completed" else "response.incomplete", response=full))
        return "".join(out)


class Gemini:
    """Gemini's generateContent: `candidates[0].content.parts` (text, thought
    text, `functionCall`), `finishReason`, `usageMetadata`; streamed
    (`streamGenerateContent?alt=sse`) as `data:` chunks of the same shape,
    the usage and the finish reason on the last."""

    STOP = {"end_turn": "STOP", "tool_use": "STOP", "stop": "STOP", "max_tokens": "MAX_TOKENS", "length": "MAX_TOKENS"}

    @staticmethod
    def usage(u):
        prompt = u["input"] + u["cache_read"] + u["cache_write"]
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": u["output"], "totalTokenCount": prompt + u["output"]}
        if u["cache_read"]:
            usage["cachedContentTokenCount"] = u["cache_read"]
        return usage

    @classmethod
    def parts(cls, reply):
        parts = []
        if reply.get("thinking"):
            parts.append({"text": reply["thinking"], "thought": True})
        if reply.get("text"):
            parts.append({"text": reply["text"]})
        for i, call in enumerate(reply.get("tool_calls", [])):
            parts.append({"functionCall": {"id": tool_call_id(call, "gemini", i), "name": call["name"], "args": call.get("arguments", {})}})
        return parts

    @classmethod
    def chunk(cls, request, parts, finish=None, usage=None, response_id=None):
        candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        body = {"candidates": [candidate], "modelVersion": request.model, "responseId": response_id or new_id("")}
        if usage is not None:
            body["usageMetadata"] = usage
        return body

    @classmethod
    def response(cls, request, reply, usage):
        finish = cls.STOP.get(stop_reason(reply), "STOP")
        return cls.chunk(request, cls.parts(reply), finish, cls.usage(usage))

    @classmethod
    def stream(cls, request, reply, usage):
        response_id = new_id("")
        pieces = []
        if reply.get("thinking"):
            pieces += [[{"text": p, "thought": True}] for p in chunks(reply["thinking"])]
        if reply.get("text"):
            pieces += [[{"text": p}] for p in chunks(reply["text"])]
        calls = [p for p in cls.parts(reply) if "functionCall" in p]
        if calls:
            pieces.append(calls)
        pieces = pieces or [[{"text": ""}]]
        out = [cls.chunk(request, p, response_id=response_id) for p in pieces[:-1]]
        finish = cls.STOP.get(stop_reason(reply), "STOP")
        out.append(cls.chunk(request, pieces[-1], finish, cls.usage(usage), response_id))
        return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in out)


# ---------------------------------------------------------------- validation
#
# Every request is checked the way the real providers check it, and refused
# with their own status and wording: a tool result must answer a tool call
# made before it, every tool call must get its result before the
# conversation moves on, and (when the scenario sets "context_window") the
# prompt must fit. The prompt is estimated as request body bytes / 4, the
# same figure "auto" usage reports, so a client that trusts the reported
# usage sees the limit the server enforces.


# What an image costs a real provider, about (Anthropic's cap): its base64
# is never tokenized.
IMAGE_TOKENS = 1600


def _image_data(value):
    """The base64 strings of the images in a request body."""
    if isinstance(value, dict):
        if value.get("type") == "base64" and isinstance(value.get("data"), str):
            yield value["data"]
        url = value.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        if isinstance(url, str) and url.startswith("data:"):
            yield url
        for v in value.values():
            yield from _image_data(v)
    elif isinstance(value, list):
        for v in value:
            yield from _image_data(v)


def prompt_estimate(raw_body):
    """Request bytes / 4, an image counted as a provider counts it."""
    try:
        images = list(_image_data(json.loads(raw_body)))
    except (ValueError, TypeError):
        images = []
    image_bytes = sum(len(d) for d in images)
    return max(1, (len(raw_body) - image_bytes) // 4 + IMAGE_TOKENS * len(images))


def tool_sequence_error(api, body):
    """The provider's words for a broken tool-call sequence, or None."""
    if api == "chat":
        return _chat_sequence_error(body.get("messages") or [])
    if api == "anthropic":
        return _anthropic_sequence_error(body.get("messages") or [])
    if api == "responses":
        inp = body.get("input")
        return _responses_sequence_error(inp if isinstance(inp, list) else [])
    if api == "gemini":
        return _gemini_sequence_error(body.get("contents") or [])
    return None


def _gemini_sequence_error(contents):
    """Gemini's rule: a turn of function responses comes right after the
    turn of function calls, answering each of them."""
    calls = None
    for c in contents:
        parts = [p for p in c.get("parts") or [] if isinstance(p, dict)]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if responses:
            answered = [r.get("id") or r.get("name") for r in responses]
            if calls is None or sorted(answered) != sorted(calls):
                return "Please ensure that function response turn comes immediately after a function call turn. And the number of function response parts should be equal to number of function call parts of the function call turn."
            calls = None
            continue
        if calls:
            break
        made = [p["functionCall"] for p in parts if "functionCall" in p]
        calls = [f.get("id") or f.get("name") for f in made] if c.get("role") == "model" and made else None
    if calls:
        return "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
    return None


def _chat_sequence_error(messages):
    pending, answerable = [], set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            call = m.get("tool_call_id")
            if call not in answerable:
                return f"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[{i}], tool_call_id {call})"
            answerable.discard(call)
            pending = [c for c in pending if c != call]
            continue
        if pending:
            break
        answerable = set()
        if role == "assistant":
            pending = [c.get("id") for c in m.get("tool_calls") or []]
            answerable = set(pending)
    if pending:
        return f"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}"
    return None


def _anthropic_sequence_error(messages):
    convo = [(i, m) for i, m in enumerate(messages) if m.get("role") in ("user", "assistant")]
    previous_uses = set()
    for n, (i, m) in enumerate(convo):
        blocks = m.get("content") if isinstance(m.get("content"), list) else []
        if m.get("role") == "user":
            for j, b in enumerate(blocks):
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") not in previous_uses:
                    return f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {b.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            previous_uses = set()
            continue
        uses = [b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        if uses:
            following = convo[n + 1][1] if n + 1 < len(convo) else None
            following_blocks = following.get("content") if following and isinstance(following.get("content"), list) else []
            answered = {b.get("tool_use_id") for b in following_blocks if isinstance(b, dict) and b.get("type") == "tool_result"}
            missing = [u for u in uses if u not in answered]
            if missing:
                return f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        previous_uses = set(uses)
    return None


def thinking_error(api, body):
    """Anthropic's rule with extended thinking on: in a tool-use loop (the
    last user message holds tool results), the assistant message that made
    the calls must be sent back starting with its thinking block, signature
    and all, as this server wrote it. Returns the provider's words, or None."""
    if api != "anthropic" or (body.get("thinking") or {}).get("type") != "enabled":
        return None
    messages = body.get("messages") or []
    last = messages[-1] if messages else None
    last_blocks = last.get("content") if last and isinstance(last.get("content"), list) else []
    in_loop = last and last.get("role") == "user" and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in last_blocks
    )
    if not in_loop or len(messages) < 2:
        return None
    i = len(messages) - 2
    assistant = messages[i]
    blocks = assistant.get("content") if isinstance(assistant.get("content"), list) else []
    first = blocks[0] if blocks else {}
    if not isinstance(first, dict) or first.get("type") not in ("thinking", "redacted_thinking"):
        return f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first.get('type') if isinstance(first, dict) else 'text'}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns."
    if first.get("type") == "thinking" and first.get("signature") != SIGNATURE:
        return f"messages.{i}.content.0: Invalid `signature` in `thinking` block"
    return None


# The signature this server gives every thinking block it writes.
SIGNATURE = "scripted"


def _responses_sequence_error(items):
    calls, outputs = [], set()
    for item in items:
        if item.get("type") == "function_call":
            calls.append(item.get("call_id"))
        elif item.get("type") == "function_call_output":
            if item.get("call_id") not in calls:
                return f"No tool call found for function call output with call_id {item.get('call_id')}."
            outputs.add(item.get("call_id"))
    for call in calls:
        if call not in outputs:
            return f"No tool output found for function call {call}."
    return None


def overflow_error(api, tokens, window):
    """(status, body) of each API's context-overflow answer."""
    if api == "anthropic":
        return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": f"prompt is too long: {tokens} tokens > {window} maximum"}}
    if api == "gemini":
        return 400, {"error": {"code": 400, "message": f"The input token count ({tokens}) exceeds the maximum number of tokens allowed ({window}).", "status": "INVALID_ARGUMENT"}}
    if api == "responses":
        return 400, {"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}
    return 400, {"error": {"message": f"This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


def sequence_error_body(api, message):
    if api == "gemini":
        return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    if api == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error", "param": "messages" if api == "chat" else "input", "code": None}}


def rejection(api, body, raw, scenario):
    """(reason, status, body) when a real provider would refuse the request, else None."""
    if scenario.get("validate", True):
        message = tool_sequence_error(api, body)
        if message:
            return "tool_sequence", 400, sequence_error_body(api, message)
        message = thinking_error(api, body)
        if message:
            return "thinking", 400, sequence_error_body(api, message)
    window = scenario.get("context_window")
    if window and prompt_estimate(raw) > window:
        status, error = overflow_error(api, prompt_estimate(raw), window)
        return "context_window", status, error
    return None


APIS = {"anthropic": Anthropic, "chat": Chat, "responses": Responses, "gemini": Gemini}
ROUTES = {
    "/messages": "anthropic",
    "/messages/count_tokens": "count_tokens",
    "/chat/completions": "chat",
    "/responses": "responses",
}
# Gemini's routes name the model and the method: /v1beta/models/{model}:{method}.
GEMINI_ROUTE = re.compile(r"^/(?:v1beta|v1alpha|v1)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")


def gemini_route(path):
    """(api, model, stream) of a Gemini route, or None."""
    m = GEMINI_ROUTE.match(path.split("?", 1)[0].rstrip("/"))
    if not m:
        return None
    model, method = m.groups()
    return ("gemini_count_tokens" if method == "countTokens" else "gemini"), model, method == "streamGenerateContent"

# ---------------------------------------------------------------- server


class Script:
    """The scenario's turns, consumed in order under a lock, and the request log."""

    def __init__(self, scenario, log_path):
        self.scenario = scenario
        self.turns = scenario["turns"]
        self.used = [False] * len(self.turns)
        self.markers = COMPACTION_MARKERS + scenario.get("compaction_markers", [])
        self.lock = threading.Lock()
        self.seq = 0
        self.log = open(log_path, "a", encoding="utf-8") if log_path else None

    def pick(self, request):
        """Index of the first unused turn that matches, or None."""
        is_compaction = request.is_compaction(self.markers)
        for i, turn in enumerate(self.turns):
            if self.used[i] and not turn.get("repeat"):
                continue
            if matches(turn.get("match", {}), request, is_compaction):
                self.used[i] = True
                return i, is_compaction
        return None, is_compaction

    def record(self, entry):
        self.seq += 1
        entry = dict(seq=self.seq, time=round(time.time(), 3), **entry)
        if self.log:
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()
        return entry


LOGGED_HEADERS = ("user-agent", "anthropic-version", "anthropic-beta", "x-app", "content-type", "accept")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script: Script

    def log_message(self, fmt, *args):  # the request log replaces http.server's stderr lines
        pass

    def _route(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.startswith("/v1/"):
            path = path[3:]
        return path

    def _send(self, status, body, content_type="application/json", headers=None):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if content_type == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(data)

    def _headers(self):
        return {k: self.headers[k] for k in LOGGED_HEADERS if self.headers.get(k)}

    def do_GET(self):
        route = self._route()
        with self.script.lock:
            self.script.record({"method": "GET", "path": self.path, "api": "models" if route == "/models" else None, "headers": self._headers()})
        if route == "/models":
            models = self.script.scenario.get("models", ["scripted-model"])
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model", "type": "model", "display_name": m, "created": 0, "owned_by": "scripted"} for m in models], "has_more": False})
        else:
            self._send(404, {"error": {"type": "not_found_error", "message": f"scripted server: no GET {route}"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = self._route()
        api = ROUTES.get(route)
        gemini = gemini_route(self.path)
        if gemini:
            api = gemini[0]
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        with self.script.lock:
            base = {"method": "POST", "path": self.path, "api": api, "bytes": len(raw), "headers": self._headers(), "body": body}
            if api is None or body is None:
                self.script.record(dict(base, status=404 if api is None else 400))
                message = f"scripted server: no POST {route}" if api is None else "request body is not JSON"
                return self._send(404 if api is None else 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            if api == "count_tokens":
                self.script.record(dict(base, status=200))
                return self._send(200, {"input_tokens": prompt_estimate(raw)})
            if api == "gemini_count_tokens":
                self.script.record(dict(base, status=200))
                return self._send(200, {"totalTokens": prompt_estimate(raw)})
            refused = rejection(api, body, raw, self.script.scenario)
            if refused:
                reason, status, error = refused
                self.script.record(dict(base, turn=None, rejected=reason, status=status, error=text_of(error.get("error", {}).get("message"))))
                return self._send(status, error)
            request = Request(api, dict(body, **{"$model": gemini[1], "$stream": gemini[2]}) if gemini else body)
            index, is_compaction = self.script.pick(request)
            turn = self.script.turns[index] if index is not None else {"reply": self.script.scenario.get("fallback", {"text": "(scripted server: no turn left)"})}
            status = turn["error"].get("status", 400) if "error" in turn else 200
            self.script.record(dict(base, turn=index, compaction=is_compaction, unmatched=index is None, stream=request.stream, status=status))
        if "error" in turn:
            err = turn["error"]
            return self._send(status, err.get("body", {}), headers=err.get("headers"))
        reply = turn["reply"]
        usage = resolve_usage(reply.get("usage"), raw, reply)
        api_impl = APIS[api]
        # Claude Code stores the request-id header as the transcript line's requestId.
        headers = {"request-id": new_id("req_")} if api == "anthropic" else None
        if request.stream:
            self._send(200, api_impl.stream(request, reply, usage), "text/event-stream", headers)
        else:
            full = {"anthropic": Anthropic.message, "chat": Chat.completion, "responses": Responses.response, "gemini": Gemini.response}[api]
            self._send(200, full(request, reply, usage), headers=headers)


def parse_vars(pairs):
    variables = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ScenarioError(f"--var wants NAME=VALUE, got {pair!r}")
        variables[name] = value
    return variables


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", required=True, help="scenario JSON file (see README.md)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--log", help="append every request as one JSON line to this file")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="value for ${NAME} in the scenario")
    args = parser.parse_args(argv)
    try:
        scenario = load_scenario(args.scenario, parse_vars(args.var))
    except (OSError, ValueError, ScenarioError) as e:
        print(f"scripted_model: {e}", file=sys.stderr)
        return 2
    Handler.script = Script(scenario, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
