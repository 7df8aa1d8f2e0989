"""kctl feature: the cluster's feature flags (metadata.version, group.version, ...)."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, yes_option
from kctl.errors import UsageError
from kctl.output.spec import Column, TableSpec


def _level(feature: str, level: int | None) -> str | None:
    from kctl.admin.cluster.features import version_name

    if level is None:
        return None
    name = version_name(feature, level)
    return f"{level} ({name})" if name else str(level)


FEATURE_TABLE = TableSpec(
    (
        Column("name", "FEATURE"),
        Column("finalized_level", "FINALIZED", get=lambda f: _level(f.name, f.finalized_level)),
        Column("supported_min_level", "SUPPORTED-MIN", get=lambda f: _level(f.name, f.supported_min_level)),
        Column("supported_max_level", "SUPPORTED-MAX", get=lambda f: _level(f.name, f.supported_max_level)),
        Column("finalized_epoch", "EPOCH", align="right", wide=True),
        Column("brokers_differ", "BROKERS-DIFFER", wide=True),
    )
)
UPDATE_TABLE = TableSpec(
    (
        Column("feature", "FEATURE"),
        Column("from_level", "FROM", get=lambda u: _level(u.feature, u.from_level)),
        Column("to_level", "TO", get=lambda u: _level(u.feature, u.to_level)),
        Column("upgrade_type", "TYPE"),
        Column("status", "STATUS"),
        Column("error", "ERROR", wide=True),
    )
)


@click.group(cls=LazyGroup, aliases={"ls": "list", "describe": "list"})
def feature():
    """Feature flags: what the cluster has finalized and what its brokers support."""


@feature.command("list")
@global_options
@pass_app
def list_(app: App):
    """List feature flags: the finalized level and the range the brokers support.

    Like kafka-features describe, but every broker is asked: SUPPORTED-MIN and
    SUPPORTED-MAX are the range all of them support (empty when one does not know the
    feature), which is how far a rolling upgrade may finalize; BROKERS-DIFFER
    (-o wide) says the brokers' own ranges differ. A feature at level 0 is not
    finalized (disabled). metadata.version levels carry Kafka's name (33 (4.4-IV2)).

    \b
    Examples:
      kctl feature list
      kctl feature list -o json | \\
          jq -r '.[] | select(.name == "metadata.version") | .finalized_version'
    """
    from kctl.admin.cluster.features import describe_features

    found = describe_features(app.session)
    app.out.table(found, FEATURE_TABLE)
    if not found:
        app.note("the cluster reports no feature flags")


def _update_command(verb: str):
    """upgrade and downgrade: the same flags, plan, confirmation and report."""

    def decorate(function):
        decorators = [
            click.option("--feature", "features", multiple=True, metavar="NAME=LEVEL",
                         help="A feature and its new level (repeatable); metadata.version also takes 4.4-IV2 or a release (4.4)."),
            click.option("--dry-run", is_flag=True, help="Have the controller validate the change; nothing changes."),
            yes_option,
            global_options,
            pass_app,
        ]
        if verb == "upgrade":
            decorators.insert(1, click.option("--release-version", metavar="X.Y",
                                              help="Every feature to the level Kafka's release X.Y gives it (as kafka-features upgrade --release-version)."))
        else:
            decorators.insert(1, click.option("--unsafe", is_flag=True, help="Allow a downgrade that may lose metadata (Kafka's UNSAFE_DOWNGRADE)."))
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return decorate


def _run_update(app: App, current, targets: dict[str, int], *, downgrade: bool, unsafe: bool, dry_run: bool, yes: bool) -> None:
    from kctl.admin.cluster.features import plan_updates, update_features
    from kctl.errors import PartialFailure

    plan = plan_updates(current, targets, downgrade=downgrade, unsafe=unsafe)
    changes = [u for u in plan if u.status == "planned"]
    if not changes:
        app.out.table(plan, UPDATE_TABLE)
        app.note("every feature is already at its level; nothing to change")
        return
    summary = ", ".join(f"{u.feature} {u.from_level}->{u.to_level}" for u in changes)
    if not dry_run:
        if not app.quiet and app.stdin_is_tty and not yes:
            app.out.table(plan, UPDATE_TABLE)
        kind = "UNSAFE downgrade" if unsafe else ("downgrade" if downgrade else "upgrade")
        app.confirm(f"{kind.capitalize()} {summary}?", yes=yes, action=f"{kind} features ({summary})")
    results = update_features(app.session, plan, validate_only=dry_run)
    app.out.table(results, UPDATE_TABLE)
    failed = [r for r in results if r.status == "failed"]
    for result in failed:
        app.error_line(result.error or f"unable to update feature {result.feature}")
    if failed:
        raise PartialFailure(action="update features", cause=f"{len(failed)} of {len(changes)} failed")


@feature.command("upgrade")
@_update_command("upgrade")
def upgrade(app: App, features: tuple[str, ...], release_version: str | None, dry_run: bool, yes: bool):
    """Raise finalized feature levels, after showing the change and asking.

    Kafka applies the change on every broker at once and refuses a level a broker does
    not support; the whole request succeeds or fails. Features already at their level
    are left alone; a level below the finalized one is refused (use `feature
    downgrade`). --dry-run has the controller validate it.

    \b
    Examples:
      kctl feature upgrade --release-version 4.4 --dry-run
      kctl feature upgrade --feature group.version=1 --yes
      kctl feature upgrade --feature metadata.version=4.4-IV2        # asks first
    """
    from kctl.admin.cluster.features import describe_features, parse_updates, release_levels

    if bool(features) == bool(release_version):
        raise UsageError(action="upgrade features", cause="give --feature NAME=LEVEL (repeatable) or --release-version X.Y")
    targets = release_levels(release_version) if release_version else parse_updates(features)
    current = describe_features(app.session)
    if release_version:
        # A release only moves features up: one the cluster does not know, or has at a
        # higher level already, is left as it is.
        levels = {f.name: f.finalized_level for f in current}
        targets = {name: level for name, level in targets.items() if name in levels and level >= levels[name]}
    _run_update(app, current, targets, downgrade=False, unsafe=False, dry_run=dry_run, yes=yes)


@feature.command("downgrade")
@_update_command("downgrade")
def downgrade(app: App, features: tuple[str, ...], unsafe: bool, dry_run: bool, yes: bool):
    """Lower finalized feature levels (level 0 disables a feature), after asking.

    A safe downgrade is refused by the controller when it would lose metadata;
    --unsafe allows that. Kafka 4.x does not downgrade metadata.version. A level above
    the finalized one is refused (use `feature upgrade`).

    \b
    Examples:
      kctl feature downgrade --feature transaction.version=1 --dry-run
      kctl feature downgrade --feature eligible.leader.replicas.version=0 --yes
    """
    from kctl.admin.cluster.features import describe_features, parse_updates

    if not features:
        raise UsageError(action="downgrade features", cause="give --feature NAME=LEVEL (repeatable)")
    targets = parse_updates(features)
    _run_update(app, describe_features(app.session), targets, downgrade=True, unsafe=unsafe, dry_run=dry_run, yes=yes)
