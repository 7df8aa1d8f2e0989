"""The reset journal on disk: which entry `--undo last` takes."""

from __future__ import annotations

import os

from kctl.admin.groups.resets import PlannedReset, read_journal, write_journal


def _plan(new: int) -> list[PlannedReset]:
    return [PlannedReset(group="g", topic="t", partition=0, current=5, new=new, delta=new - 5, log_start=0, log_end=9, note=None)]


def test_undo_last_takes_the_entry_written_last_even_within_one_second(tmp_path):
    """Ids name the second they were written in, then a random suffix: two resets in one
    second (a script's) must still undo the later one."""
    first = write_journal(tmp_path, _plan(1), bootstrap="b:9092", command="first")
    second = write_journal(tmp_path, _plan(2), bootstrap="b:9092", command="second")
    # As if the second's random suffix sorted before the first's, in the same second.
    earlier_name = tmp_path / f"{first[:-6]}000000.json"
    os.replace(tmp_path / f"{second}.json", earlier_name)
    stat = (tmp_path / f"{first}.json").stat()
    os.utime(earlier_name, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))
    assert read_journal(tmp_path, "last")["command"] == "second"
    assert read_journal(tmp_path, first)["command"] == "first"
