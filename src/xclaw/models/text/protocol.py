"""The XML text protocol of seed 000 §5 and §10, for models reached as plain chat text.

A reply is one ``<agent_response>`` with ``<done>``, an optional ``<message>`` and at most one
``<tool_call name="..."><args>...</args></tool_call>``; the runtime answers with
``<tool_result>`` or ``<protocol_error>`` blocks, and every outbound message ends with one
``<system_reminder>``. Rendering lives in ``protocol_render``, parsing in ``protocol_parse``
(with ``protocol_xml`` for the defused, CDATA-aware tree and ``protocol_args`` for the
schema-driven argument conversion).
"""

from __future__ import annotations

from xclaw.models.text.protocol_parse import (
    MAX_REPLY_CHARS,
    ParsedTurn,
    ProtocolError,
    call_id,
    normalize_reply,
    parse_reply,
)
from xclaw.models.text.protocol_render import (
    REMINDER,
    cdata,
    render_protocol,
    render_reply,
    render_tool,
    serialize_error,
    serialize_tool_result,
    with_reminder,
)

__all__ = [
    "MAX_REPLY_CHARS",
    "REMINDER",
    "ParsedTurn",
    "ProtocolError",
    "call_id",
    "cdata",
    "normalize_reply",
    "parse_reply",
    "render_protocol",
    "render_reply",
    "render_tool",
    "serialize_error",
    "serialize_tool_result",
    "with_reminder",
]
