""""Did you mean ...?" for a topic, group or context that does not exist: the closest
existing name, as git and kubectl users expect, asked only on that error's path."""

from __future__ import annotations

import difflib

from kctl.cli._app import App
from kctl.errors import KctlError, NotFoundError

# A name at most this many characters inserted or deleted away (a transposition is two)
# is suggested, fewer for short names: `ordres` is 2 from `orders`; two names that share
# only a long middle part are not close.
MOST_EDITS = 4
# The lookup is an extra request on an error's path: it must not hold the error back long.
LOOKUP_SECONDS = 2.0


def with_suggestion(app: App, error: NotFoundError) -> NotFoundError:
    """`error`, with "did you mean NAME?" leading its hint when a close name exists."""
    resource = error.resource
    if resource is None:
        return error
    try:
        close = closest(resource.name, _names(app, resource.type))
    except KctlError:
        return error  # the lookup failing must not replace the error it is about
    if close is None:
        return error
    hint = f"did you mean {close}?" + (f" ({error.hint})" if error.hint else "")
    return type(error)(error.message, hint=hint, exit_code=error.exit_code, kafka_error=error.kafka_error, resource=resource)


def closest(name: str, names: list[str]) -> str | None:
    """The existing name closest to `name` (case ignored), None when none is close."""
    wanted = name.lower()
    limit = min(MOST_EDITS, max(2, len(wanted) // 3))
    best: tuple[int, str] | None = None
    for candidate in names:
        folded = candidate.lower()
        if candidate == name or abs(len(folded) - len(wanted)) > limit:
            continue
        matched = sum(block.size for block in difflib.SequenceMatcher(None, wanted, folded, autojunk=False).get_matching_blocks())
        edits = len(wanted) + len(folded) - 2 * matched
        if edits <= limit and (best is None or (edits, candidate) < best):
            best = (edits, candidate)
    return best[1] if best else None


def _names(app: App, kind: str) -> list[str]:
    if kind == "context":
        return list(app.config_file.contexts)
    from kctl.admin.client.session import AdminSession
    from kctl.values import replace

    # A session of its own: the command's may be closed by now.
    session = AdminSession(replace(app.settings, timeout=min(app.settings.timeout, LOOKUP_SECONDS)))
    try:
        if kind == "topic":
            from kctl.admin.topics.topics import list_topics

            return [t.name for t in list_topics(session, include_internal=True, with_topic_ids=False)]
        if kind == "group":
            from kctl.admin.groups.protocol import list_groups

            return [g["group_id"] for g in list_groups(session)]
        return []
    finally:
        session.close()
