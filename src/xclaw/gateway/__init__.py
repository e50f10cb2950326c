"""The gateway (seed 003 ch. 04/05): one server for the CLI, the web UI and chat channels.

``acp`` holds the wire frames, ``gateway`` routes messages to durable sessions, ``auth`` and
``server`` are the HTTP/WebSocket face, ``static/`` is the web UI.
"""
