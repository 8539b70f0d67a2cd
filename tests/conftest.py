"""Test-wide set-up: ``tests/_robust_helpers.py`` importable as ``robust_helpers`` (the suite runs
in importlib mode), and, under CI, property tests with a fixed example sequence so a run is
repeatable (``HYPOTHESIS_PROFILE=dev`` locally explores new examples each run)."""
import importlib.util
import os
import sys
from pathlib import Path

from hypothesis import settings

_path = Path(__file__).with_name("_robust_helpers.py")
_spec = importlib.util.spec_from_file_location("robust_helpers", _path)
_module = importlib.util.module_from_spec(_spec)
sys.modules["robust_helpers"] = _module
_spec.loader.exec_module(_module)

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
