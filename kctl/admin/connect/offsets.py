"""A connector's offsets (KIP-875): read, alter, reset, and undo, as `group reset-offsets`
does for groups: a plan first (current and new offsets side by side), and on --execute
an undo journal written before anything changes, then the change and a read-back.

Connect alters offsets only of a STOPPED connector whose tasks are gone: kctl stops it
(waiting for the tasks) and puts it back in its previous state only when asked.

Offsets are Connect's own shapes: a sink's partition is {"kafka_topic", "kafka_partition"}
and its offset {"kafka_offset"}; a source's are whatever the connector writes (a
FileStreamSource: {"filename"} and {"position"}, the bytes read).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kctl import journal
from kctl.admin.connect import connectors
from kctl.admin.connect.rest import ConnectClient, path
from kctl.config.file import state_dir
from kctl.errors import InvalidError, KctlError, UsageError
from kctl.polling import poll


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorOffset:
    partition: dict[str, Any]
    offset: dict[str, Any] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetChange:
    partition: dict[str, Any]
    current: dict[str, Any] | None
    new: dict[str, Any] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetsPlan:
    connector: str
    type: str
    # The connector's state when planned (put back after an --execute with --resume).
    state: str
    # alter | reset | undo
    action: str
    changes: tuple[OffsetChange, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetsResult:
    connector: str
    action: str
    journal: str
    # The connector's state afterwards: STOPPED, or the previous one with --resume.
    state: str
    offsets: tuple[ConnectorOffset, ...]


def journal_dir(env: Mapping[str, str]) -> Path:
    return state_dir(env) / "connect-offsets"


def get(client: ConnectClient, name: str) -> list[ConnectorOffset]:
    answer = client.get(path("connectors", name, "offsets"), action=f"read connector {name!r}'s offsets")
    return sorted((ConnectorOffset(partition=o["partition"], offset=o.get("offset")) for o in answer.get("offsets", [])),
                  key=lambda o: _key(o.partition))


def _key(partition: Mapping[str, Any]) -> str:
    return json.dumps(partition, sort_keys=True)


def read_offsets_file(file: Path) -> list[ConnectorOffset]:
    """Offsets as `offsets get -o json` prints them, or as Connect's API takes them
    ({"offsets": [{"partition": {...}, "offset": {...} or null}, ...]})."""
    try:
        document = json.loads(file.read_bytes())
    except OSError as exc:
        raise InvalidError(action=f"read offsets file {file}", cause=str(exc.strerror)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidError(action=f"read offsets file {file}", cause=f"not JSON: {exc}") from None
    items = document.get("offsets") if isinstance(document, dict) else document
    if not isinstance(items, list) or not items:
        raise InvalidError(action=f"read offsets file {file}", cause="expected a list of {\"partition\": ..., \"offset\": ...} (or {\"offsets\": [...]})")
    out = []
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("partition"), dict) or not (item.get("offset") is None or isinstance(item["offset"], dict)):
            raise InvalidError(action=f"read offsets file {file}", cause=f"entry {index + 1} needs a partition object and an offset object (or null)")
        out.append(ConnectorOffset(partition=item["partition"], offset=item.get("offset")))
    return out


def _planned(client: ConnectClient, name: str) -> tuple[str, str, dict[str, ConnectorOffset]]:
    answer = connectors.status(client, name)
    current = {_key(o.partition): o for o in get(client, name)}
    return answer.get("type", "unknown"), (answer.get("connector") or {}).get("state", ""), current


def plan_alter(client: ConnectClient, name: str, new: Sequence[ConnectorOffset]) -> OffsetsPlan:
    kind, state, current = _planned(client, name)
    changes = tuple(OffsetChange(partition=o.partition, current=current[_key(o.partition)].offset if _key(o.partition) in current else None,
                                 new=o.offset) for o in sorted(new, key=lambda o: _key(o.partition)))
    return OffsetsPlan(connector=name, type=kind, state=state, action="alter", changes=changes)


def plan_reset(client: ConnectClient, name: str) -> OffsetsPlan:
    kind, state, current = _planned(client, name)
    changes = tuple(OffsetChange(partition=o.partition, current=o.offset, new=None) for _, o in sorted(current.items()))
    return OffsetsPlan(connector=name, type=kind, state=state, action="reset", changes=changes)


def plan_undo(client: ConnectClient, name: str, directory: Path, journal_id: str) -> tuple[dict, OffsetsPlan]:
    """Put back what a journalled change replaced: its old offsets, and no offset for a
    partition it added; the plan's state is the connector's before that change (where
    --resume puts it). Only on the Connect cluster and connector it was made on."""
    entry = journal.read(directory, journal_id, "connector offsets change")
    if entry.get("connector") != name or entry.get("connect") != client.url:
        raise UsageError(f"change {entry['id']} was made to connector {entry.get('connector')!r} at {entry.get('connect')}, not {name!r} at {client.url}",
                         hint="an undo runs against the connector the change was made to")
    kind, state, current = _planned(client, name)
    old = {_key(o["partition"]): o for o in entry.get("offsets", [])}
    changes = [OffsetChange(partition=o["partition"], current=current[key].offset if key in current else None, new=o.get("offset"))
               for key, o in sorted(old.items())]
    changes += [OffsetChange(partition=o.partition, current=o.offset, new=None) for key, o in sorted(current.items()) if key not in old]
    return entry, OffsetsPlan(connector=name, type=kind, state=entry.get("state") or state, action="undo", changes=tuple(changes))


def execute(client: ConnectClient, plan: OffsetsPlan, *, directory: Path, command: str, resume: bool = False,
            journaled=lambda journal_id: None) -> OffsetsResult:
    """Journal the offsets the plan replaces, stop the connector (waiting for its tasks),
    change the offsets, read them back, and with `resume` put the connector back in the
    state it was in."""
    name = plan.connector
    old = [{"partition": c.partition, "offset": c.current} for c in plan.changes if c.current is not None]
    journal_id = journal.write(directory, {"connect": client.url, "connector": name, "command": command, "action": plan.action,
                                           "state": plan.state, "offsets": old})
    journaled(journal_id)
    now = connectors.status(client, name)
    if connectors.state_of(now) != "STOPPED" or now.get("tasks"):
        connectors.stop(client, name)
    action = f"{'reset' if plan.action == 'reset' else 'alter'} connector {name!r}'s offsets"
    if plan.action == "reset":
        client.delete(path("connectors", name, "offsets"), action=action)
    else:
        client.patch(path("connectors", name, "offsets"),
                     {"offsets": [{"partition": c.partition, "offset": c.new} for c in plan.changes]}, action=action)
    after = _verified(client, plan)
    state = "STOPPED"
    if resume and plan.state in ("RUNNING", "PAUSED", "FAILED"):
        if plan.state == "PAUSED":
            state = connectors.pause(client, name).state or "PAUSED"
        else:
            state = connectors.resume(client, name).state or "RUNNING"
    return OffsetsResult(connector=name, action=plan.action, journal=journal_id, state=state, offsets=tuple(after))


def _verified(client: ConnectClient, plan: OffsetsPlan) -> list[ConnectorOffset]:
    """The offsets read back until they are the plan's (Connect reads a source's from its
    offsets topic, a moment behind the write)."""
    wanted = {_key(c.partition): c.new for c in plan.changes}

    def done(offsets: list[ConnectorOffset]) -> bool:
        found = {_key(o.partition): o.offset for o in offsets}
        if plan.action == "reset":
            return not found
        return all(found.get(key) == offset for key, offset in wanted.items())

    offsets = poll(lambda: get(client, plan.connector), done, timeout=client.settings.timeout, interval=0.2)
    if not done(offsets):
        raise KctlError(action=f"verify connector {plan.connector!r}'s offsets", cause="Connect reads back other offsets than were written",
                        hint="kctl connect offsets get shows them; the undo journal holds the old ones")
    return offsets
