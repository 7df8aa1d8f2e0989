"""What `record consume` and `group lag` say when read_committed stops short of the log
end (and `transaction find-hanging` shows why)."""

from __future__ import annotations

from kctl.cli._app import App


def note_held_back(app: App, pairs) -> None:
    """read_committed stops at a partition's last stable offset; when that is behind the
    log end an open transaction holds it there, and the user should know where to look
    (record consume and group lag with --isolation read_committed)."""
    from kctl.admin.cluster.transactions import held_back

    for topic, partition, stable, end in held_back(app.session, pairs):
        app.note(
            f"note: {topic}:{partition}: read_committed stops at offset {stable}, {end - stable} before the log end: "
            f"an open transaction holds it (kctl transaction find-hanging -t {topic})"
        )
