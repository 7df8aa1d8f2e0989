"""The `fake_signer` fixture: AWS's signer module replaced by the recording stand-in in
this folder, for as long as a test runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parent


@pytest.fixture
def fake_signer(monkeypatch):
    """AWS's signer module replaced by the recording stand-in in tests/security."""
    monkeypatch.syspath_prepend(str(FOLDER))
    for name in [m for m in sys.modules if m.startswith("aws_msk_iam_sasl_signer")]:
        monkeypatch.delitem(sys.modules, name)
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

    MSKAuthTokenProvider.CALLS.clear()
    yield MSKAuthTokenProvider
    # Forgotten for good (monkeypatch would put back what it deleted itself).
    for name in [m for m in sys.modules if m.startswith("aws_msk_iam_sasl_signer")]:
        del sys.modules[name]
