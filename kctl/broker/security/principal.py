"""The principal of a client authenticated by its TLS certificate (mutual TLS), as Kafka's
DefaultKafkaPrincipalBuilder makes it: `User:` and the certificate subject's distinguished
name in RFC 2253 form (Java's X500Principal.getName()), rewritten by
ssl.principal.mapping.rules (Kafka's SslPrincipalMapper).

A rule is `RULE:pattern/replacement/[L|U]` or `DEFAULT`, rules separated by commas. The
first rule whose pattern (a regular expression) matches the whole name gives the
principal: the name with the pattern replaced by the replacement ($1 for a group), lower-
or upper-cased with L or U. DEFAULT gives the name unchanged. A name no rule matches is
refused, so is the connection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The attribute names Java's RFC 2253 form writes as keywords; others as a dotted OID
# with the value's DER encoding in hex (#...), as X500Principal.getName() does.
_KEYWORDS = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
             "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID"}
_SPECIAL = set(',+"\\<>;')


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if not self.pattern.fullmatch(name):
            return None
        result = self.pattern.sub(self.replacement, name)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


def parse_rules(text: str) -> tuple[Rule, ...]:
    """ssl.principal.mapping.rules; ValueError names what is wrong."""
    rules: list[Rule] = []
    i, text = 0, text.strip()
    while i < len(text):
        while i < len(text) and text[i] in ", \t\n":
            i += 1
        if i >= len(text):
            break
        if text.startswith("DEFAULT", i):
            rules.append(Rule(None))
            i += len("DEFAULT")
        elif text.startswith("RULE:", i):
            pattern, i = _until_slash(text, i + len("RULE:"))
            replacement, i = _until_slash(text, i)
            case = text[i] if i < len(text) and text[i] in "LU" else ""
            i += len(case)
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"ssl.principal.mapping.rules: invalid pattern {pattern!r}: {exc}") from None
            rules.append(Rule(compiled, _python_replacement(replacement), case))
        else:
            raise ValueError(f"ssl.principal.mapping.rules: invalid rule at {text[i:i + 30]!r}: "
                             "each is RULE:pattern/replacement/[LU] or DEFAULT")
        if i < len(text) and text[i] not in ", \t\n":
            raise ValueError(f"ssl.principal.mapping.rules: invalid rule at {text[i:i + 30]!r}")
    return tuple(rules) or (Rule(None),)


def _until_slash(text: str, i: int) -> tuple[str, int]:
    """The text up to the next "/" not escaped by a backslash, and the index after it."""
    out = []
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(text[i:i + 2] if text[i + 1] != "/" else "/")
            i += 2
            continue
        if char == "/":
            return "".join(out), i + 1
        out.append(char)
        i += 1
    raise ValueError(f"ssl.principal.mapping.rules: a rule ends without its closing '/' in {text!r}")


def _python_replacement(java: str) -> str:
    """A Java replacement ($1 a group, \\$ a dollar) as re.sub takes it."""
    out, i = [], 0
    while i < len(java):
        char = java[i]
        if char == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
        elif char == "$" and i + 1 < len(java) and java[i + 1].isdigit():
            j = i + 1
            while j < len(java) and java[j].isdigit():
                j += 1
            out.append(f"\\g<{java[i + 1:j]}>")
            i = j
        else:
            out.append("\\\\" if char == "\\" else char)
            i += 1
    return "".join(out)


def principal_name(name: str, rules: tuple[Rule, ...]) -> str:
    for rule in rules:
        found = rule.apply(name)
        if found is not None:
            return found
    raise ValueError(f"No rules apply to {name}, rules {describe(rules)}")


def describe(rules: tuple[Rule, ...]) -> str:
    return "[" + ", ".join("DEFAULT" if r.pattern is None else f"RULE:{r.pattern.pattern}/.../{r.case}" for r in rules) + "]"


def distinguished_name(certificate_der: bytes) -> str:
    """The certificate subject as Java's X500Principal.getName() writes it (RFC 2253):
    the last RDN first, multi-valued RDNs joined by '+'."""
    from cryptography import x509

    subject = x509.load_der_x509_certificate(certificate_der).subject
    return ",".join("+".join(_attribute(a) for a in rdn) for rdn in reversed(list(subject.rdns)))


def _attribute(attribute) -> str:
    oid = attribute.oid.dotted_string
    keyword = _KEYWORDS.get(oid)
    if keyword is None:
        return f"{oid}=#{_der(attribute).hex()}"
    return f"{keyword}={_escape(str(attribute.value))}"


def _escape(value: str) -> str:
    out = "".join("\\" + c if c in _SPECIAL else c for c in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der(attribute) -> bytes:
    """The attribute value's DER encoding: its string type's tag, length and bytes."""
    tag = attribute._type.value  # cryptography's _ASN1Type: the universal tag number
    text = str(attribute.value)
    content = (text.encode("utf-16-be") if tag == 30 else text.encode("utf-32-be") if tag == 28
               else text.encode("utf-8"))
    length = len(content)
    encoded_length = bytes([length]) if length < 0x80 else (
        bytes([0x80 | ((length.bit_length() + 7) // 8)]) + length.to_bytes((length.bit_length() + 7) // 8, "big"))
    return bytes([tag]) + encoded_length + content
