"""Models reached as plain chat text through the XML protocol (seed 000 §5): a transport
sends text and returns text; ``TextProtocolModel`` turns that into model events."""

from xclaw.models.text.model import TextProtocolModel, xml_demo_model
from xclaw.models.text.transport import (
    ScriptedReply,
    ScriptedTransport,
    TextTransport,
    script_to_xml,
)

__all__ = [
    "ScriptedReply",
    "ScriptedTransport",
    "TextProtocolModel",
    "TextTransport",
    "script_to_xml",
    "xml_demo_model",
]
