"""Man pages (section 1) generated from the command tree: kctl.1, one page per noun
(kctl-topic.1) and one per command (kctl-topic-create.1).

Help text paragraphs become .PP paragraphs; click's `\\b` (no-rewrap) paragraphs, such
as Examples, become preformatted .nf blocks. Output is deterministic (no dates).
"""

from __future__ import annotations

from kctl import __version__
from kctl.devtools.tree import CommandInfo, OptionInfo, walk
from kctl.errors import EXIT_CODE_MEANINGS

ENVIRONMENT = (
    ("KCTL_BOOTSTRAP_SERVERS", "Brokers to bootstrap from, as -b."),
    ("KCTL_CONTEXT", "The context to use, as --context."),
    ("KCTL_CONFIG", "Path of the config file (default $XDG_CONFIG_HOME/kctl/config.toml)."),
    ("KCTL_OUTPUT", "Default output format, as -o."),
    ("KCTL_TIMEOUT", "Default timeout in seconds, as --timeout."),
    ("KCTL_DEBUG", "Set to 1 for client logs and tracebacks, as --debug."),
    ("KCTL_X_<KEY>", "A librdkafka property, as -X; dots in KEY written as underscores (KCTL_X_SASL_PASSWORD)."),
    ("XDG_CONFIG_HOME", "Where the config file lives (default ~/.config)."),
    ("NO_COLOR", "When set, tables are never coloured."),
)


def escape(text: str) -> str:
    """Escape text for roff: backslashes, hyphens, and control characters at line starts."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def _paragraphs(help_text: str) -> list[str]:
    out: list[str] = []
    for block in help_text.strip().split("\n\n"):
        block = block.strip("\n")
        if not block.strip():
            continue
        if block.lstrip().startswith("\b"):
            body = block.lstrip()[1:].lstrip("\n")
            lines = body.split("\n")
            indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
            out.append(".PP\n.nf\n" + "\n".join(escape(x[indent:]) for x in lines) + "\n.fi")
        else:
            out.append(".PP\n" + escape(" ".join(x.strip() for x in block.split("\n"))))
    return out


def _option(o: OptionInfo) -> str:
    flags = ", ".join(f"\\fB{escape(f)}\\fR" for f in o.flags)
    if o.takes_value:
        value = " | ".join(o.choices) if o.choices else o.metavar
        flags += f" \\fI{escape(value)}\\fR"
    return f".TP\n{flags}\n{escape(o.help)}"


def _page_name(info: CommandInfo) -> str:
    return "-".join(("kctl", *info.path))


def _header(name: str) -> str:
    return f'.TH {escape(name.upper())} 1 "" "kctl {__version__}" "kctl manual"'


def _global_flags(root: CommandInfo) -> set[str]:
    return {f for o in root.options for f in o.flags}


def root_page(root: CommandInfo, commands: list[CommandInfo]) -> str:
    nouns = [c for c in commands if len(c.path) == 1]
    parts = [
        _header("kctl"),
        ".SH NAME",
        "kctl \\- administer Apache Kafka clusters",
        ".SH SYNOPSIS",
        "\\fBkctl\\fR [\\fIGLOBAL OPTIONS\\fR] \\fINOUN\\fR \\fIVERB\\fR [\\fIARGS\\fR] [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        *_paragraphs(root.help),
        ".SH GLOBAL OPTIONS",
        ".PP",
        "Accepted before the noun and after the verb; a value given after the verb wins.",
        *[_option(o) for o in root.options],
        ".SH COMMANDS",
        *[f".TP\n\\fB{escape(_page_name(c))}\\fR(1)\n{escape(c.summary)}" for c in nouns],
        ".SH ENVIRONMENT",
        *[f".TP\n\\fB{escape(name)}\\fR\n{escape(text)}" for name, text in ENVIRONMENT],
        ".SH FILES",
        ".TP",
        "\\fI$XDG_CONFIG_HOME/kctl/config.toml\\fR",
        "Contexts (see \\fBkctl\\-context\\fR(1)); created with mode 0600 since it may hold credentials.",
        ".SH EXIT STATUS",
        *[f".TP\n\\fB{int(code)}\\fR\n{escape(text)}" for code, text in EXIT_CODE_MEANINGS.items()],
        ".SH SEE ALSO",
        ", ".join(f"\\fB{escape(_page_name(c))}\\fR(1)" for c in nouns),
    ]
    return "\n".join(parts) + "\n"


def command_page(info: CommandInfo, commands: list[CommandInfo], global_flags: set[str]) -> str:
    name = _page_name(info)
    words = " ".join(("kctl", *info.path))
    if info.is_group:
        synopsis = f"\\fB{escape(words)}\\fR \\fIVERB\\fR [\\fIARGS\\fR] [\\fIOPTIONS\\fR]"
    else:
        args = " ".join(f"\\fI{escape(a.metavar)}\\fR" for a in info.arguments)
        synopsis = f"\\fB{escape(words)}\\fR [\\fIOPTIONS\\fR] {args}".rstrip()
    parts = [
        _header(name),
        ".SH NAME",
        f"{escape(name)} \\- {escape(info.summary)}",
        ".SH SYNOPSIS",
        synopsis,
        ".SH DESCRIPTION",
        *_paragraphs(info.help or info.summary),
    ]
    if info.is_group:
        children = [c for c in commands if c.path[:-1] == info.path and len(c.path) == len(info.path) + 1]
        parts.append(".SH COMMANDS")
        if children:
            parts += [f".TP\n\\fB{escape(_page_name(c))}\\fR(1)\n{escape(c.summary)}" for c in children]
        else:
            parts += [".PP", "None yet."]
    own = [o for o in info.options if not set(o.flags) & global_flags and "--help" not in o.flags]
    if own:
        parts += [".SH OPTIONS", *[_option(o) for o in own]]
    if not info.is_group:
        parts += [".PP", "The global options of \\fBkctl\\fR(1) are accepted too."]
    parts += [
        ".SH EXIT STATUS",
        ".PP",
        "0 on success; see \\fBkctl\\fR(1) for every status.",
        ".SH SEE ALSO",
        ", ".join(
            f"\\fB{escape(p)}\\fR(1)" for p in ["kctl", *(["-".join(("kctl", *info.path[:-1]))] if len(info.path) > 1 else [])]
        ),
    ]
    return "\n".join(parts) + "\n"


def render_pages(commands: list[CommandInfo] | None = None) -> dict[str, str]:
    """file name -> page text, for every command in the tree."""
    commands = commands if commands is not None else walk()
    root = commands[0]
    global_flags = _global_flags(root)
    pages = {"kctl.1": root_page(root, commands)}
    for info in commands[1:]:
        pages[f"{_page_name(info)}.1"] = command_page(info, commands, global_flags)
    return pages
