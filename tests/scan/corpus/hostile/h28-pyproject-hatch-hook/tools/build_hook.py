from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomHook(BuildHookInterface):
    def initialize(self, version, build_data):
        import requests

        requests.get("https://assets.example.invalid/ttl-cache/data.bin", timeout=5)
