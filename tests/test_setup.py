"""Set-up (``make setup``) prints no error and no deprecation banner: the licence is an SPDX
expression (setuptools deprecates the table form, with a banner at every build), the host is
installed without its heavy extras and what it lacks on purpose is not reported as a
conflict (pip prints that as an ERROR). Checked on a fresh venv by hand (docs/install.md)."""
from __future__ import annotations

import importlib.util
import re
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _recipe() -> list[str]:
    """The commands of the Makefile's set-up target, one per line."""
    text = (ROOT / "Makefile").read_text()
    body = text.split("$(BIN)/raise-ahd:", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in body.splitlines()[1:] if line.startswith("\t") and not line.strip().startswith("#")]


def test_the_licence_is_an_spdx_expression_for_a_backend_that_reads_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"  # a string, not the deprecated {text = ...} table
    backend = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    assert backend and int(re.search(r">=\s*(\d+)", backend[0]).group(1)) >= 77  # the first to read it
    assert metadata.metadata("raise-plugin")["License-Expression"] == "MIT"  # as installed


def test_the_host_comes_without_its_heavy_extras_and_no_conflict_is_reported():
    recipe = _recipe()
    host = [line for line in recipe if "$(LLM4AD)" in line]
    ours = [line for line in recipe if "-e '.[test]'" in line]
    assert len(host) == 1 and "--no-deps" in host[0]
    assert len(ours) == 1 and "--no-warn-conflicts" in ours[0]
    assert recipe.index(host[0]) < recipe.index(ours[0])
    for heavy in ("torch", "wandb", "tensorboardX", "ttkbootstrap"):
        assert importlib.util.find_spec(heavy) is None, f"{heavy} was installed"
    assert metadata.version("llm4ad") == "1.11"


def test_every_install_command_the_docs_and_messages_give_names_what_an_index_holds():
    """The plugin is installed from its checkout, not from a package index: `pip install 'raise-plugin[gp]'`
    (docs/gp.md, the gp method's error, the Dask executor's, --jit's help) failed with "No matching
    distribution found for raise-plugin"."""
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "raise_plugin").rglob("*.py")]
    named = re.compile(r"pip install\s+['\"]?raise[-_]plugin")
    offending = [str(p.relative_to(ROOT)) for p in texts if named.search(p.read_text())]
    assert not offending, offending


def test_without_the_host_every_command_says_what_to_install_in_one_line():
    """The plugin's metadata leaves the host out (its own pulls torch), so `pip install .` alone gave every
    `raise-ahd` command, --help included, the traceback of `No module named 'llm4ad'`."""
    import subprocess
    import sys

    said = ("the host llm4ad is not installed: pip install --no-deps llm4ad==1.11 (without its torch and other "
            "extras, which the plugin does not use; docs/install.md)")
    no_host = "import sys; sys.modules['llm4ad'] = None; "  # an import of llm4ad fails, as where it is not installed
    for code in ("from raise_plugin.cli import main; sys.exit(main(['run', '--task', 'obp', '--out', 'never']))",
                 "from raise_plugin.cli import main; sys.exit(main(['--help']))"):
        done = subprocess.run([sys.executable, "-c", no_host + code], capture_output=True, text=True, cwd=ROOT,
                              timeout=60)
        assert (done.returncode, done.stderr) == (2, f"raise-ahd: error: {said}\n"), done.stderr
    assert not (ROOT / "never").exists()
    done = subprocess.run([sys.executable, "-c", no_host + "import raise_plugin as rp; rp.get_task('obp')"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == f"ImportError: {said}"  # from Python: the same words


def test_the_source_distribution_carries_the_whole_suite_and_what_it_reads():
    """setuptools put the top-level test files alone in the sdist, without their conftest, helpers, goldens
    or the docs and examples they read: an unpacked sdist's pytest failed at its first import."""
    lines = {line.strip() for line in (ROOT / "MANIFEST.in").read_text().splitlines()}
    read = {"tests", "docs", "examples", "benchmarks"}  # the folders the suite's files open or import
    assert {f"graft {folder}" for folder in read} <= lines and "include Makefile" in lines
    assert any(line.startswith("global-exclude") and "__pycache__" in line for line in lines)
