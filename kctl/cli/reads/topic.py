"""The topic reads, `topic list` and `topic describe`: their bodies and tables, free of
click so the console script runs them without it (kctl.cli.direct); kctl.cli.topic
declares their options and help."""

from __future__ import annotations

from kctl.cli._app import App
from kctl.cli._batch import report_documents
from kctl.output.spec import Column, DocumentSpec, Field, Section, TableSpec

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    import re

    from kctl.admin.topics.models import PartitionInfo

TOPIC_TABLE = TableSpec(
    (
        Column("name", "NAME"),
        Column("partitions", "PARTITIONS", align="right"),
        Column("replication_factor", "REPLICATION-FACTOR", align="right"),
        Column("internal", "INTERNAL"),
        Column("config_overrides", "OVERRIDES", align="right", wide=True),
        Column("under_replicated_partitions", "UNDER-REPLICATED", align="right", wide=True),
        Column("offline_partitions", "OFFLINE", align="right", wide=True),
        Column("topic_id", "TOPIC-ID", wide=True),
    )
)

def _size(p: PartitionInfo) -> str | None:
    from kctl.sizes import format_bytes

    return format_bytes(p.size_bytes)


PARTITION_TABLE = TableSpec(
    (
        Column("partition", "PARTITION", align="right"),
        Column("leader", "LEADER", align="right"),
        Column("leader_epoch", "EPOCH", align="right"),
        Column("replicas", "REPLICAS"),
        Column("isr", "ISR"),
        Column("offline_replicas", "OFFLINE-REPLICAS"),
        Column("earliest_offset", "LOG-START-OFFSET", align="right"),
        Column("latest_offset", "LOG-END-OFFSET", align="right"),
        Column("under_replicated", "UNDER-REPLICATED", wide=True),
        Column("offline", "OFFLINE", wide=True),
    )
)
DETAIL_COLUMNS = (
    Column("size_bytes", "SIZE", get=_size, align="right"),
    Column("adding_replicas", "ADDING"),
    Column("removing_replicas", "REMOVING"),
)



# Shown where the cluster reports eligible leader replicas (KIP-966).
ELR_COLUMNS = (Column("elr", "ELR"), Column("last_known_elr", "LAST-KNOWN-ELR"))
# Shown when a described topic has tiered storage.
TIERED_COLUMNS = (
    Column("earliest_local_offset", "EARLIEST-LOCAL", align="right"),
    Column("latest_tiered_offset", "LATEST-TIERED", align="right"),
)
LOCAL_SIZE = Column("size_bytes", "LOCAL-SIZE", get=_size, align="right")
TIERED_FIELDS = (
    Field("retention_ms", "RETENTION-MS"),
    Field("retention_bytes", "RETENTION-BYTES"),
    Field("local_retention_ms", "LOCAL-RETENTION-MS"),
    Field("local_retention_bytes", "LOCAL-RETENTION-BYTES"),
)

TOPIC_DOCUMENT = DocumentSpec(
    fields=(
        Field("name", "NAME"),
        Field("topic_id", "TOPIC-ID"),
        Field("internal", "INTERNAL"),
        Field("partitions", "PARTITIONS", get=lambda t: len(t.partitions)),
        Field("replication_factor", "REPLICATION-FACTOR"),
        Field("remote_storage", "REMOTE-STORAGE"),
    ),
    sections=(Section("partitions", "PARTITIONS", PARTITION_TABLE),),
)


def list_(app: App, regex: re.Pattern[str] | None, internal: bool, filters: tuple[str, ...], with_overrides: bool, tiered: bool,
          count_overrides: bool) -> None:
    from kctl.admin.topics.topics import list_topics

    count = count_overrides or app.out.format == "wide"
    topics = list_topics(
        app.session, regex=regex, include_internal=internal, filters=filters, with_overrides=with_overrides, count_overrides=count,
        with_topic_ids=app.out.shows(TOPIC_TABLE, "topic_id"), tiered=tiered,
    )
    app.out.table(topics, TOPIC_TABLE)


def describe(app: App, names: tuple[str, ...], detail: bool) -> None:
    from kctl.admin.topics.topics import describe_topics, uncompacted_topics

    found, errors = describe_topics(app.session, names, detail=detail)
    if errors and not found:
        error = next(iter(errors.values()))
        if len(errors) == 1:
            raise error
        raise error.but(action=f"describe topics {', '.join(errors)}")
    tiered = [t.name for t in found if t.remote_storage]
    columns = PARTITION_TABLE.columns
    if any(p.elr is not None for t in found for p in t.partitions):
        columns += ELR_COLUMNS
    if detail:
        columns += DETAIL_COLUMNS
    if tiered:
        columns += TIERED_COLUMNS + (() if detail else (LOCAL_SIZE,))
    fields = TOPIC_DOCUMENT.fields + (TIERED_FIELDS if tiered else ())
    spec = DocumentSpec(fields=fields, sections=(Section("partitions", "PARTITIONS", TableSpec(columns)),))
    for name in tiered:
        app.note(f"note: {name} keeps older segments in remote storage, whose size Kafka does not report through its API "
                 f"(the brokers' JMX metric kafka.server:type=BrokerTopicMetrics,name=RemoteLogSizeBytes,topic={name})")
    for name in uncompacted_topics(app.session, found):
        app.note(f"note: {name} has cleanup.policy=compact but its brokers run no log cleaner "
                 "(log.cleaner.enable=false): its records are not compacted")
    report_documents(app, found, errors, spec, "describe topics", len(names))
