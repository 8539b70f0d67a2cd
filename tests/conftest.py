"""Makes ``tests/_robust_helpers.py`` importable as ``robust_helpers`` (the suite runs in importlib mode)."""
import importlib.util
import sys
from pathlib import Path

_path = Path(__file__).with_name("_robust_helpers.py")
_spec = importlib.util.spec_from_file_location("robust_helpers", _path)
_module = importlib.util.module_from_spec(_spec)
sys.modules["robust_helpers"] = _module
_spec.loader.exec_module(_module)
