"""kctl token: delegation tokens (KIP-48) — create, list, describe, renew, expire."""

from __future__ import annotations

from dataclasses import dataclass

import click

from kctl.cli._app import App
from kctl.cli._lazy import LazyGroup
from kctl.cli._options import global_options, pass_app, yes_option
from kctl.errors import NotFoundError, PartialFailure, UsageError
from kctl.output.spec import Column, TableSpec


def _instant(ms: int | None) -> str | None:
    from kctl.timespec import format_instant

    return format_instant(ms)


_COLUMNS = (
    Column("token_id", "TOKEN-ID"),
    Column("owner", "OWNER"),
    Column("renewers", "RENEWERS", get=lambda t: ",".join(t.renewers) or None),
    Column("issued_ms", "ISSUED", get=lambda t: _instant(t.issued_ms)),
    Column("expires_ms", "EXPIRES", get=lambda t: _instant(t.expires_ms)),
    Column("max_ms", "MAX", get=lambda t: _instant(t.max_ms)),
    Column("requester", "REQUESTER", wide=True),
)
TOKEN_TABLE = TableSpec(_COLUMNS)
# create (and describe --show-hmac): the HMAC beside its id, the pair a client needs.
WITH_HMAC = TableSpec((_COLUMNS[0], Column("hmac", "HMAC"), *_COLUMNS[1:]))
EXPIRY_TABLE = TableSpec((Column("token_id", "TOKEN-ID"), Column("expires_ms", "EXPIRES", get=lambda r: _instant(r.expires_ms))))


@dataclass(frozen=True)
class _Expiry:
    """One row of renew/expire: the token (None when named by its HMAC) and its new expiry."""

    token_id: str | None
    expires_ms: int


@click.group(cls=LazyGroup, aliases={"ls": "list"})
def token():
    """Delegation tokens: short-lived SCRAM credentials a principal hands to its jobs."""


def _milliseconds(value: str | None, flag: str) -> int:
    from kctl.timespec import parse_duration

    if value is None:
        return -1
    seconds = parse_duration(value)
    if seconds <= 0:
        raise UsageError(action=f"parse {flag}", cause=f"{value!r} is not a positive duration")
    return int(seconds * 1000)


@token.command("create")
@click.option("--owner", metavar="PRINCIPAL", help="Create it for this principal (User:NAME) rather than yourself: needs CreateTokens on that user (Kafka 3.3+).")
@click.option("--renewer", "renewers", multiple=True, metavar="PRINCIPAL", help="A principal (User:NAME) that may renew and expire it (repeatable).")
@click.option("--max-lifetime", metavar="DURATION", help="Its lifetime at most, e.g. 12h, 7d; default and cap: the cluster's delegation.token.max.lifetime.ms.")
@global_options
@pass_app
def create(app: App, owner: str | None, renewers: tuple[str, ...], max_lifetime: str | None):
    """Create a delegation token: its id and HMAC, shown once.

    The HMAC is not shown again unless asked for (kctl token describe --show-hmac).

    A client authenticates with the token as its owner over SASL/SCRAM: the id as
    sasl.username, the HMAC as sasl.password, and sasl.scram.tokenauth=true (Kafka's
    clients: ScramLoginModule with tokenauth="true"). It expires after the cluster's
    delegation.token.expiry.time.ms (24 h by default) unless renewed, and never lives
    past its max lifetime. The cluster must have delegation.token.secret.key set, and the
    request must come over SASL (not a token's) or mutual TLS.

    \b
    Examples:
      kctl token create --renewer User:scheduler --max-lifetime 7d
      kctl token create -o json > token.json
      kctl -X sasl.mechanism=SCRAM-SHA-512 -X sasl.username="$TOKEN_ID" \\
          -X sasl.password="$HMAC" -X sasl.scram.tokenauth=true topic list
    """
    from kctl.admin.security.tokens import create_token

    made = create_token(app.session, owner=owner, renewers=renewers, max_lifetime_ms=_milliseconds(max_lifetime, "--max-lifetime"))
    app.out.table([made], WITH_HMAC)
    app.note(f"authenticate with it: -X sasl.mechanism=SCRAM-SHA-512 -X sasl.username={made.token_id} "
             "-X sasl.password=<the HMAC> -X sasl.scram.tokenauth=true")


@token.command("list")
@click.option("--owner", "owners", multiple=True, metavar="PRINCIPAL", help="Only tokens this principal (User:NAME) owns or renews (repeatable).")
@global_options
@pass_app
def list_(app: App, owners: tuple[str, ...]):
    """List the delegation tokens you may see.

    Yours, those you renew, and any you have Describe on (or DescribeTokens on their owner).

    \b
    Examples:
      kctl token list
      kctl token list --owner User:alice -o json
    """
    from kctl.admin.security.tokens import describe_tokens

    app.out.table(describe_tokens(app.session, owners=owners), TOKEN_TABLE)


@token.command("describe")
@click.argument("token_ids", nargs=-1, required=True, metavar="TOKEN-ID...")
@click.option("--show-hmac", is_flag=True, help="Show each token's HMAC too (the secret that authenticates with it).")
@global_options
@pass_app
def describe(app: App, token_ids: tuple[str, ...], show_hmac: bool):
    """Show delegation tokens: owner, renewers, expiry, max lifetime.

    Their HMACs too with --show-hmac. A token you may not see is not found (exit 5).

    \b
    Examples:
      kctl token describe "$TOKEN_ID"
      kctl token describe "$TOKEN_ID" --show-hmac -o json
    """
    from kctl.admin.security.tokens import describe_tokens

    wanted = list(dict.fromkeys(token_ids))
    by_id = {t.token_id: t for t in describe_tokens(app.session, with_hmac=show_hmac)}
    found = [by_id[i] for i in wanted if i in by_id]
    missing = [i for i in wanted if i not in by_id]
    errors = [NotFoundError(action="describe delegation token", cause=f"no delegation token {i} (or not one you may see)") for i in missing]
    if errors and not found:
        raise errors[0]
    app.out.table(found, WITH_HMAC if show_hmac else TOKEN_TABLE)
    for error in errors:
        app.error_line(error.message)
    if errors:
        raise PartialFailure(action="describe delegation tokens", cause=f"{len(errors)} of {len(wanted)} not found")


def _hmac(app: App, token_id: str | None, hmac: str | None, action: str) -> bytes:
    """The token's HMAC: --hmac as given, or looked up by the token's id."""
    from kctl.admin.security.tokens import hmac_of, parse_hmac

    if (token_id is None) == (hmac is None):
        raise UsageError(action=action, cause="name the token: its TOKEN-ID or --hmac HMAC (one of them)")
    return parse_hmac(hmac) if hmac is not None else hmac_of(app.session, token_id or "", action)


@token.command("renew")
@click.argument("token_id", required=False, metavar="[TOKEN-ID]")
@click.option("--hmac", metavar="HMAC", help="The token by its HMAC (base64), as kafka-delegation-tokens --renew takes it.")
@click.option("--period", metavar="DURATION", help="Renew for this long, e.g. 12h; default: the cluster's delegation.token.expiry.time.ms. Never past its max lifetime.")
@global_options
@pass_app
def renew(app: App, token_id: str | None, hmac: str | None, period: str | None):
    """Renew a delegation token (as its owner or a renewer).

    Its expiry moves on by --period from now, never past its max lifetime.

    \b
    Examples:
      kctl token renew "$TOKEN_ID"
      kctl token renew --hmac "$HMAC" --period 12h
    """
    from kctl.admin.security.tokens import renew_token

    secret = _hmac(app, token_id, hmac, "renew the delegation token")
    expires = renew_token(app.session, secret, _milliseconds(period, "--period"))
    app.out.table([_Expiry(token_id, expires)], EXPIRY_TABLE)


@token.command("expire")
@click.argument("token_id", required=False, metavar="[TOKEN-ID]")
@click.option("--hmac", metavar="HMAC", help="The token by its HMAC (base64), as kafka-delegation-tokens --expire takes it.")
@click.option("--in", "after", metavar="DURATION", help="Expire it this long from now, e.g. 1h (default: now; the cluster then forgets it).")
@yes_option
@global_options
@pass_app
def expire(app: App, token_id: str | None, hmac: str | None, after: str | None, yes: bool):
    """Expire a delegation token (as its owner or a renewer).

    Clients can no longer authenticate with it once it has expired.

    \b
    Examples:
      kctl token expire "$TOKEN_ID" --in 1h --yes
      kctl token expire --hmac "$HMAC" --yes
    """
    from kctl.admin.security.tokens import expire_token

    action = "expire the delegation token"
    secret = _hmac(app, token_id, hmac, action)
    what = f"delegation token {token_id}" if token_id else "the delegation token of that HMAC"
    app.confirm(f"Expire {what} {'now' if after is None else 'in ' + after}?", yes=yes, action=action)
    expires = expire_token(app.session, secret, _milliseconds(after, "--in"))
    app.out.table([_Expiry(token_id, expires)], EXPIRY_TABLE)
