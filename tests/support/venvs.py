"""A fresh virtualenv whose Python also sees this environment's packages (a .pth line):
pip then finds kctl's dependencies installed and downloads nothing, while kctl itself
is installed into the new environment (tests/test_release.py, README's install block)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path


def virtualenv_with_our_dependencies(venv: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "kctl-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv
