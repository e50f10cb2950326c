"""The ChatGPT web page as a model (seed 000 §4): a ``TextTransport`` for ``TextProtocolModel``.

    transport = ChatGPTWebTransport(ChatGPTWebOptions(mode="pro"), on_takeover=..., on_event=...)
    model = TextProtocolModel(transport, name="chatgpt-web")

Selectors live in ``locators`` (with ``ADAPTER_VERSION``); errors in ``failures``.
"""

from xclaw.models.chatgpt_web.locators import ADAPTER_VERSION
from xclaw.models.chatgpt_web.modes import ModeSelection
from xclaw.models.chatgpt_web.options import (
    DEFAULT_BASE_URL,
    ChatGPTWebOptions,
    DeltaHook,
    TakeoverHook,
    WebTimeouts,
)
from xclaw.models.chatgpt_web.page_state import AuthState, Takeover
from xclaw.models.chatgpt_web.transport import ChatGPTWebTransport

__all__ = [
    "ADAPTER_VERSION",
    "DEFAULT_BASE_URL",
    "AuthState",
    "ChatGPTWebOptions",
    "ChatGPTWebTransport",
    "DeltaHook",
    "ModeSelection",
    "Takeover",
    "TakeoverHook",
    "WebTimeouts",
]
