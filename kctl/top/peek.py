"""The record peek of `kctl top`: the last records of one partition, read once and never
committed (kctl.records.consume with the tail position, as `record consume --from -N`),
decoded through the schema registry when the context has one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kctl.timespec import format_instant

RECORDS = 20
SHOWN_BYTES = 200  # of a key or value; the peek is a glance, `record consume` reads it all


def last_records(session: Any, topic: str, partition: int, *, count: int = RECORDS, decoder: Any = None) -> list[dict[str, Any]]:
    from kctl.admin.topics.offsets import PartitionSelector
    from kctl.records.consume import ConsumeOptions, consume
    from kctl.records.position import LATEST, Position

    messages: list[Any] = []
    options = ConsumeOptions(selectors=[PartitionSelector(topic=topic, ranges=((partition, partition),))], start=Position("tail", tail=count),
                             end=Position(LATEST), commit=False)
    consume(session, options, messages.extend)
    return [{"offset": m.offset(), "timestamp": format_instant(m.timestamp()[1]) or "",
             "key": _shown(m, "key", decoder), "value": _shown(m, "value", decoder)} for m in messages]


def _shown(message: Any, field: str, decoder: Any) -> str:
    from kctl.records.serdes import ENCODER

    found = decoder.decode(message, field) if decoder is not None else None
    if found is not None:
        text = ENCODER.encode(found.data)
    else:
        data = message.key() if field == "key" else message.value()
        if data is None:
            return "null"
        text = data.decode("utf-8", "backslashreplace")
    text = text.replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= SHOWN_BYTES else text[:SHOWN_BYTES] + "..."


def reader(session: Any, registry: Callable[[], Any] | None) -> Callable[[str, int], list[dict[str, Any]]]:
    """What the peek screen calls: with a registry (the context names one), keys and
    values in its wire format are decoded (auto: bytes when a record has no schema id)."""
    decoder = None

    def read(topic: str, partition: int) -> list[dict[str, Any]]:
        from kctl.admin.client.session import AdminSession

        nonlocal decoder
        if decoder is None and registry is not None:
            from kctl.records.serdes import RecordDecoder

            decoder = RecordDecoder(registry(), key_format="auto", value_format="auto")
        # A session of its own: the sampler thread is using the other's connections.
        own = AdminSession(session.settings)
        try:
            return last_records(own, topic, partition, decoder=decoder)
        finally:
            own.close()

    return read
