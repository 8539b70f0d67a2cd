"""Fixtures of the LLM back-end tests: the local chat-completions server."""
import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("llm_chat_server", Path(__file__).with_name("chat_server.py"))
chat_server = importlib.util.module_from_spec(_spec)
sys.modules["llm_chat_server"] = chat_server
_spec.loader.exec_module(chat_server)


@pytest.fixture
def server():
    with chat_server.ChatServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAISE_LLM_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
