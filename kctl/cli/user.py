"""kctl user: SCRAM users (list, describe, set-password, delete)."""

from __future__ import annotations

import click

from kctl.cli._app import App
from kctl.cli._batch import report
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, yes_option
from kctl.errors import NotFoundError, PartialFailure, UsageError
from kctl.output.spec import Column, TableSpec

CREDENTIAL_TABLE = TableSpec((Column("user", "USER"), Column("mechanism", "MECHANISM"), Column("iterations", "ITERATIONS", align="right")))
RESULT_TABLE = TableSpec((Column("user", "USER"), Column("mechanism", "MECHANISM"), Column("status", "STATUS"), Column("error", "ERROR")))


def mechanism_option(default_help: str):
    return click.option(
        "-m", "--mechanism", "mechanisms", multiple=True, metavar="MECHANISM",
        help=f"scram-sha-256 or scram-sha-512 (repeatable). {default_help}",
    )


class _Unlisted(click.Argument):
    """An argument left out of usage lines: it exists only to catch a mistake."""

    def get_usage_pieces(self, ctx):
        return []


@click.group(cls=LazyGroup, aliases={"ls": "list", "rm": "delete"})
def user():
    """SCRAM users: the SASL/SCRAM credentials the cluster stores."""


@user.command("list")
@global_options
@pass_app
def list_(app: App):
    """List the users that have SCRAM credentials, one row per mechanism.

    \b
    Examples:
      kctl user list
      kctl user list -o json
    """
    from kctl.admin.security.users import list_users

    app.out.table(list_users(app.session), CREDENTIAL_TABLE)


@user.command("describe")
@click.argument("users", nargs=-1, required=True, metavar="USER...")
@global_options
@pass_app
def describe(app: App, users: tuple[str, ...]):
    """Show users' SCRAM credentials: mechanism and iterations (never a password or hash).

    A user without SCRAM credentials is not found (exit 5).

    \b
    Examples:
      kctl user describe alice
      kctl user describe alice bob -o json
    """
    from kctl.admin.security.users import describe_users

    found, errors = describe_users(app.session, users)
    if errors and not found:
        raise next(iter(errors.values()))
    app.out.table(found, CREDENTIAL_TABLE)
    for error in errors.values():
        app.error_line(error.message)
    if errors:
        raise PartialFailure(action="describe SCRAM users", cause=f"{len(errors)} of {len(set(users))} not found")


@user.command("set-password", context_settings={"ignore_unknown_options": True})
@click.argument("name", metavar="USER")
@click.argument("extra", nargs=-1, type=click.UNPROCESSED, cls=_Unlisted)
@mechanism_option("Default: scram-sha-512.")
@click.option("--iterations", type=click.IntRange(4096, 16384), default=8192, show_default=True, help="SCRAM iterations, 4096 to 16384 (Kafka's limits).")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin (for scripts) instead of a prompt.")
@global_options
@pass_app
def set_password(app: App, name: str, extra: tuple[str, ...], mechanisms: tuple[str, ...], iterations: int, password_stdin: bool):
    """Create a SCRAM user or change its password.

    The password is read from a prompt (asked twice) or, with --password-stdin, from
    stdin; never from the command line, where shell history and `ps` would keep it.
    It is never printed or logged. Creating a credential for each mechanism clients
    use (-m twice) lets them pick either.

    \b
    Examples:
      kctl user set-password alice --password-stdin < alice.pass
      kctl user set-password bob -m scram-sha-256 -m scram-sha-512 --iterations 4096 \\
          --password-stdin < bob.pass
    """
    from kctl.admin.security.users import parse_mechanism
    from kctl.admin.security.users import set_password as set_user_password

    if extra:
        # Never echo the extra words: one of them may well be the password.
        raise UsageError(
            "set-password takes one USER and no password on the command line (shell history would keep it); "
            "type it at the prompt or pass --password-stdin"
        )
    chosen = [parse_mechanism(m) for m in mechanisms] or ["SCRAM-SHA-512"]
    password = _read_password(app, name, password_stdin)
    results, errors = set_user_password(app.session, name, password, list(dict.fromkeys(chosen)), iterations)
    report(app, results, errors, RESULT_TABLE, f"set the password of SCRAM user {name}")


def _read_password(app: App, name: str, from_stdin: bool) -> str:
    if from_stdin:
        password = app.stdin.readline().rstrip("\r\n")
    elif app.stdin_is_tty:
        password = click.prompt(f"Password for {name}", hide_input=True, confirmation_prompt=True, err=True)
    else:
        raise UsageError("no terminal to ask the password at: pass --password-stdin and write it to stdin")
    if not password:
        raise UsageError("the password is empty")
    return password


@user.command("delete")
@click.argument("name", metavar="USER")
@mechanism_option("Default: every mechanism the user has.")
@yes_option
@global_options
@pass_app
def delete(app: App, name: str, mechanisms: tuple[str, ...], yes: bool):
    """Delete a user's SCRAM credentials (all of them, or those of --mechanism).

    Clients that log in as the user with a deleted mechanism are refused from then on;
    its ACLs and quotas stay (delete them with `kctl acl delete --principal User:USER`).

    \b
    Examples:
      kctl user delete alice --yes
      kctl user delete alice -m scram-sha-256 --yes
    """
    from kctl.admin.security.users import delete_credentials, describe_users, parse_mechanism

    found, errors = describe_users(app.session, [name])
    if errors:
        raise errors[name]
    have = [c.mechanism for c in found]
    chosen = [parse_mechanism(m) for m in mechanisms] or have
    missing = [m for m in chosen if m not in have]
    if missing:
        raise NotFoundError(action=f"delete SCRAM user {name}", cause=f"it has no {', '.join(missing)} credential (it has {', '.join(have)})")
    app.confirm(f"Delete the {', '.join(chosen)} credential(s) of user {name}?", yes=yes, action=f"delete SCRAM user {name}")
    results, errors = delete_credentials(app.session, name, chosen)
    report(app, results, errors, RESULT_TABLE, f"delete SCRAM user {name}")
