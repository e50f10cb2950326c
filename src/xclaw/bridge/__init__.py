"""``xclaw bridge``: an OpenAI-compatible HTTP API in front of any configured xclaw model.

    schema           what a client may send to /v1/chat/completions (pydantic)
    responses        what a client may send to /v1/responses, and its input items as Messages
    params           which parameters are applied, passed to the model, accepted, or refused
                     (a parameter that would be ignored is a 400 naming it)
    convert          OpenAI messages and function tools -> xclaw Messages and ToolSpecs
    served           one model as served: its FIFO queue (browser-backed / chat-holding /
                     serialize=True models), protocol resends, stop sequences
    chats            conversation identity from the request: which far-side chat (a web page's)
                     answers which client, through any wrapper (``ChatHolder``, ``ModelChain``)
    stops            ``stop`` applied to any model's text
    reply            model events -> chat.completion / chat.completion.chunk objects, usage
    responses_reply  model events -> a Responses ``response`` object / its stream events
    errors           OpenAI-shaped error answers with stable codes, redacted
    token            the bearer token file (0600, printed once)
    app              the FastAPI app and its token guard
    server           uvicorn: loopback binding, graceful shutdown

Tools are the client's: the bridge tells the model about them and hands its calls back as
``tool_calls`` / ``function_call`` items; it never runs one. Models without a tool channel
(``TextProtocolModel``) carry them through the XML protocol.
"""

from __future__ import annotations

from xclaw.bridge.app import create_app
from xclaw.bridge.served import needs_serial
from xclaw.bridge.token import BridgeToken, default_token_path, load_or_create_token

__all__ = [
    "BridgeToken",
    "create_app",
    "default_token_path",
    "load_or_create_token",
    "needs_serial",
]
