"""What an error's hint can say only with the command's App at hand, worked out only on that
error's path: "did you mean ...?" for a topic, group or context that does not exist (the
closest existing name, as git and kubectl users expect), and `kctl local start` for a
context whose bundled broker is not running."""

from __future__ import annotations

import difflib

from kctl.cli._app import App
from kctl.errors import KctlError, NotFoundError, UnreachableError

# A name at most this many characters inserted or deleted away (a transposition is two)
# is suggested, fewer for short names: `ordres` is 2 from `orders`; two names that share
# only a long middle part are not close.
MOST_EDITS = 4
# The lookup is an extra request on an error's path: it must not hold the error back long.
LOOKUP_SECONDS = 2.0


def for_app(app: App, error: KctlError) -> KctlError:
    """`error` with what its hint can say with `app` at hand (see the module docstring)."""
    if isinstance(error, NotFoundError):
        return with_suggestion(app, error)
    if isinstance(error, UnreachableError):
        return with_local_broker(app, error)
    return error


def with_local_broker(app: App, error: UnreachableError) -> KctlError:
    """`error` with a hint to start the bundled broker when the context is the one `kctl
    local start` saved and the broker in its data directory is not running."""
    try:
        context = app.config_file.contexts.get(app.settings.context or "")
    except KctlError:
        return error
    if context is None or context.local_data_dir is None:
        return error
    from pathlib import Path

    from kctl.local import default_data_dir, status

    directory = Path(context.local_data_dir)
    if status(directory).state == "running":
        return error
    where = "" if directory == default_data_dir(app.env) else f" --data-dir {directory}"
    return error.but(hint=f"the bundled broker of context {context.name} is not running: kctl local start{where} starts it")


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
    return error.but(hint=hint)  # type: ignore[return-value]  # but() keeps the class


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
