"""Plugins: code that adds tools, services and loop hooks (seed 003 ch. 10).

A plugin is a ``register(api: PluginApi)`` function found through an entry point (group
``xclaw.plugins``) or in a folder with ``xclaw.plugin.json`` / ``openclaw.plugin.json``.
``xclaw.plugins.extensions.load_extensions`` loads the enabled ones with the skills.
"""

from xclaw.plugins.api import PluginApi, Service

__all__ = ["PluginApi", "Service"]
