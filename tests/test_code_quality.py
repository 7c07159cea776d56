"""The import contract as tests (lint and types run before the tests, in scripts/test.sh)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


def test_only_console_ui_imports_textual() -> None:
    """Importing every non-UI module must not load Textual (checked in a fresh interpreter)."""
    code = (
        "import importlib, pkgutil, sys, console\n"
        "for m in pkgutil.walk_packages(console.__path__, 'console.'):\n"
        "    if m.name in ('console.ui', 'console.__main__') or m.name.startswith('console.ui.'):\n"
        "        continue\n"
        "    importlib.import_module(m.name)\n"
        "    assert 'textual' not in sys.modules, m.name\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


def test_no_textual_import_statement_outside_ui() -> None:
    offenders = []
    for path in (ROOT / "src" / "console").rglob("*.py"):
        if "ui" in path.relative_to(ROOT / "src" / "console").parts[:1]:
            continue
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith(("import textual", "from textual")):
                offenders.append(f"{path}: {stripped}")
    assert not offenders, offenders


def test_the_console_paints_at_120_fps_unless_told_otherwise() -> None:
    """Textual reads TEXTUAL_FPS once, at import: console.ui sets its default before importing Textual."""
    code = "import console.ui, textual.constants as c; print(c.MAX_FPS)"
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"}
    own = subprocess.run([str(BIN / "python"), "-c", code], capture_output=True, text=True, env=env, check=True)
    told = subprocess.run(
        [str(BIN / "python"), "-c", code], capture_output=True, text=True, env={**env, "TEXTUAL_FPS": "30"}, check=True
    )
    assert (own.stdout.strip(), told.stdout.strip()) == ("120", "30")
