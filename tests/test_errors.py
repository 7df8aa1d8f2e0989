"""The exit-status table is complete, unique and documented in --help."""

from __future__ import annotations

from kctl.errors import EXIT_CODE_MEANINGS, ExitCode


def test_every_exit_code_is_documented():
    assert set(EXIT_CODE_MEANINGS) == set(ExitCode)


def test_nagios_statuses_keep_their_numbers():
    # Health and status commands report through 0-3; scripts depend on these numbers.
    assert (ExitCode.OK, ExitCode.ERROR, ExitCode.CRITICAL, ExitCode.UNKNOWN) == (0, 1, 2, 3)


def test_help_lists_exit_statuses(kctl):
    result = kctl("--help")
    assert result.exit_code == 0
    for code, meaning in EXIT_CODE_MEANINGS.items():
        assert f"{int(code):>3}  {meaning}" in result.stdout
