from gitsync.sync import Sync

__all__ = ["Sync"]
