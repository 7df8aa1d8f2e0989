"""The security metadata a Kafka cluster keeps in its metadata log — SCRAM credentials,
ACLs, client quotas and delegation tokens — kept here in `security.json` in the data
directory.

Every change is written (temp file, fsync, rename) before it is answered, so what a client
was told succeeded survives kill -9; a write the disk refuses leaves memory and file as
they were and the request is answered with an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kctl.broker.security.scram import Credential
from kctl.broker.storage.manager import StorageError, atomic_write

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypedDict

    # security.json's shape. Its fixed-shape arrays (an ACL, an entity's (type, name) pair) are
    # described as tuples, which is how they are unpacked; json.loads gives them as lists.
    _AclRow = tuple[int, str, int, str, str, int, int]

    class _QuotaJson(TypedDict):
        entity: list[tuple[str, str | None]]
        values: dict[str, float]

    class _TokenJson(TypedDict):
        owner: str
        requester: str
        renewers: list[str]
        issued: int
        expiry: int
        max: int

    class _SecurityJson(TypedDict, total=False):
        scram: dict[str, dict[str, dict[str, str | int]]]  # user -> mechanism -> Credential.to_json()
        acls: list[_AclRow]
        quotas: list[_QuotaJson]
        tokens: dict[str, _TokenJson]  # token id -> its information (never its HMAC)

FILE = "security.json"


@dataclass(frozen=True, slots=True)
class Acl:
    """One ACL binding, codes as on the wire (Kafka's AclOperation, ResourceType, ...)."""
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def to_json(self) -> list[int | str]:
        return [self.resource_type, self.resource_name, self.pattern_type, self.principal,
                self.host, self.operation, self.permission_type]


@dataclass(frozen=True, slots=True)
class Token:
    """A delegation token's information, as Kafka's TokenInformation holds it; its HMAC is
    not kept: it is made again from the id and delegation.token.secret.key."""
    token_id: str
    owner: str  # principals as Type:Name
    requester: str
    renewers: tuple[str, ...]
    issued_ms: int
    expiry_ms: int
    max_ms: int

    def to_json(self) -> dict[str, object]:
        return {"owner": self.owner, "requester": self.requester, "renewers": list(self.renewers),
                "issued": self.issued_ms, "expiry": self.expiry_ms, "max": self.max_ms}

    @classmethod
    def from_json(cls, token_id: str, data: _TokenJson) -> Token:
        return cls(token_id, data["owner"], data["requester"], tuple(data["renewers"]), int(data["issued"]),
                   int(data["expiry"]), int(data["max"]))


# A client quota entity: ((entity_type, name or None for the default), ...) sorted by type.
Entity = tuple[tuple[str, str | None], ...]


class SecurityStore:
    def __init__(self, data_dir: Path):
        self.path = data_dir / FILE
        self.credentials: dict[tuple[str, str], Credential] = {}  # (user, mechanism)
        self.acls: set[Acl] = set()
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.tokens: dict[str, Token] = {}
        self.listeners: list[Callable[[], None]] = []  # told after every change of the ACLs

    def open(self) -> None:
        try:
            data: _SecurityJson = json.loads(self.path.read_text())
            self.credentials = {(user, mechanism): Credential.from_json(c)
                                for user, mechanisms in data.get("scram", {}).items()
                                for mechanism, c in mechanisms.items()}
            self.acls = {Acl(*entry) for entry in data.get("acls", [])}
            self.quotas = {tuple((t, n) for t, n in q["entity"]): dict(q["values"])
                           for q in data.get("quotas", [])}
            self.tokens = {token_id: Token.from_json(token_id, t) for token_id, t in data.get("tokens", {}).items()}
        except FileNotFoundError:
            return
        except (ValueError, KeyError, TypeError) as exc:
            raise StorageError(f"{self.path} is corrupt: {exc}") from None

    def _save(self, credentials: dict[tuple[str, str], Credential], acls: set[Acl],
              quotas: dict[Entity, dict[str, float]], tokens: dict[str, Token]) -> None:
        scram: dict[str, dict[str, dict[str, str | int]]] = {}
        for (user, mechanism), credential in sorted(credentials.items()):
            scram.setdefault(user, {})[mechanism] = credential.to_json()
        data = {"scram": scram, "acls": sorted(a.to_json() for a in acls),
                "quotas": [{"entity": [list(e) for e in entity], "values": values}
                           for entity, values in sorted(quotas.items(), key=lambda i: repr(i[0]))],
                "tokens": {token_id: token.to_json() for token_id, token in sorted(tokens.items())}}
        atomic_write(self.path, json.dumps(data, indent=0))

    def update(self, credentials: dict[tuple[str, str], Credential] | None = None, acls: set[Acl] | None = None,
               quotas: dict[Entity, dict[str, float]] | None = None, tokens: dict[str, Token] | None = None) -> None:
        """Replace any of the four, durably first (OSError: nothing changed)."""
        new = (self.credentials if credentials is None else credentials,
               self.acls if acls is None else acls,
               self.quotas if quotas is None else quotas,
               self.tokens if tokens is None else tokens)
        self._save(*new)
        self.credentials, self.acls, self.quotas, self.tokens = new
        if acls is not None:
            for listener in self.listeners:
                listener()
