import ctypes
import os

_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "native.dll"))
