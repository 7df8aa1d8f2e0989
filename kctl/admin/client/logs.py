"""kctl's loggers, with logging imported only by what logs: --debug (kctl.cli.main sets it
up), the tests, and librdkafka's clients (confluent-kafka imports it anyway). A read that
nobody logs does not pay its import (~5 ms, issue 59)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time: ~4 ms of every read
if TYPE_CHECKING:
    from typing import Any


def logger(name: str) -> Any:
    """The logger `name` (under "kctl"), logging imported now."""
    import logging

    kctl = logging.getLogger("kctl")
    if not kctl.handlers:
        # Without a handler, Python's last-resort handler would print kctl's and
        # librdkafka's warnings on stderr.
        kctl.addHandler(logging.NullHandler())
    return logging.getLogger(name)


def debug(name: str, message: str, *args: Any) -> None:
    """`message` at DEBUG on the logger `name`, when logging is in use: nothing has set a
    handler up unless it was imported."""
    if "logging" in sys.modules:
        logger(name).debug(message, *args)
