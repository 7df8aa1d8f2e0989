"""The partition read, `partition list`: its body and table, free of click so the console
script runs it without it (kctl.cli.direct); kctl.cli.partition declares its options and
help."""

from __future__ import annotations

from kctl.cli._app import App
from kctl.output.spec import Column, TableSpec


def _status(p) -> str:
    flags = [
        name.replace("_", "-")
        for name in ("offline", "unavailable", "elr_recoverable", "elr_unrecoverable", "under_min_isr", "under_replicated", "at_min_isr")
        if getattr(p, name)
    ]
    # unavailable is implied by offline; say the stronger one once.
    if "offline" in flags and "unavailable" in flags:
        flags.remove("unavailable")
    return ",".join(flags) or "ok"


# Shown where the cluster reports eligible leader replicas (Kafka 3.8+).
ELR_COLUMNS = (Column("elr", "ELR"), Column("last_known_elr", "LAST-KNOWN-ELR"))
PARTITION_TABLE = TableSpec(
    (
        Column("topic", "TOPIC"),
        Column("partition", "PARTITION", align="right"),
        Column("leader", "LEADER", align="right"),
        Column("replicas", "REPLICAS"),
        Column("isr", "ISR"),
        Column("min_isr", "MIN-ISR", align="right"),
        Column("status", "STATUS", get=_status),
        Column("offline_replicas", "OFFLINE-REPLICAS", wide=True),
        Column("under_replicated", "UNDER-REPLICATED", wide=True),
        Column("under_min_isr", "UNDER-MIN-ISR", wide=True),
        Column("at_min_isr", "AT-MIN-ISR", wide=True),
        Column("unavailable", "UNAVAILABLE", wide=True),
        Column("offline", "OFFLINE", wide=True),
        Column("elr_recoverable", "ELR-RECOVERABLE", wide=True),
        Column("elr_unrecoverable", "ELR-UNRECOVERABLE", wide=True),
    )
)


def list_(app: App, topics, regex, filters, leader, internal) -> None:
    from kctl.admin.cluster.partitions import snapshot

    taken = snapshot(app.session, topics=topics, regex=regex, include_internal=internal or bool(topics), filters=filters, leader=leader,
                     with_elr=True)
    spec = PARTITION_TABLE
    if any(p.elr is not None for p in taken.partitions):
        visible = [c for c in spec.columns if not c.wide]
        spec = TableSpec((*visible, *ELR_COLUMNS, *(c for c in spec.columns if c.wide)))
    app.out.table(taken.partitions, spec)
