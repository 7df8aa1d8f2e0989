"""Static shell completion scripts for bash, zsh and fish, generated from the command tree.

The scripts carry the whole tree as data (paths, aliases, options, choices), so completing
runs no Python. Context names are read from the config file by the script itself.

All three resolve the command path the same way: walk the words typed so far, skip
options (and the value of an option that takes one), map aliases (`topics` -> `topic`,
`ls` -> `list`) and descend while the word names a sub-command.
"""

from __future__ import annotations

from kctl.devtools.tree import CommandInfo, walk

HEADER = "Generated from the command tree by `python -m kctl.devtools gen-docs`; do not edit."

# The config file's context tables: [contexts."name"] as kctl writes them, [contexts.name] by hand.
_SED_CONTEXTS = (
    "sed -n -e 's/^\\[contexts\\.\"\\([^\"]*\\)\"\\][[:space:]]*$/\\1/p' "
    "-e 's/^\\[contexts\\.\\([A-Za-z0-9_-]*\\)\\][[:space:]]*$/\\1/p'"
)


def _key(path: tuple[str, ...]) -> str:
    # The root is "kctl", not "": zsh cannot hold an empty key in an associative array.
    return " ".join(("kctl", *path))


class _Tables:
    """The tree as flat string tables, the form every shell can hold."""

    def __init__(self, commands: list[CommandInfo]):
        self.paths = [_key(c.path) for c in commands]
        self.subs: dict[str, list[tuple[str, str]]] = {}
        self.aliases: dict[str, str] = {}
        self.opts: dict[str, list[str]] = {}
        self.value_opts: dict[str, list[str]] = {}
        self.choices: dict[str, list[str]] = {}
        # "key|flag" or "key" (first argument) -> what its value names: context, topic,
        # group or broker ("@kind" in the scripts).
        self.value_kinds: dict[str, str] = {}
        self.arg_choices: dict[str, list[str]] = {}
        self.arg_kinds: dict[str, str] = {}
        summaries = {_key(c.path): c.summary for c in commands}
        for c in commands:
            key = _key(c.path)
            self.subs[key] = [(s, summaries.get(_key((*c.path, s)), "")) for s in c.subcommands if _key((*c.path, s)) in summaries]
            for alias, target in sorted(c.aliases.items()):
                self.aliases[f"{key}|{alias}"] = target
            self.opts[key] = sorted({f for o in c.options for f in o.flags})
            self.value_opts[key] = sorted({f for o in c.options if o.takes_value for f in o.flags})
            for o in c.options:
                for flag in o.flags:
                    if o.choices:
                        self.choices[f"{key}|{flag}"] = list(o.choices)
                    if o.value_kind == "property":
                        self.choices[f"{key}|{flag}"] = _property_names()
                    elif o.value_kind in ("config-setting", "config-key"):
                        self.choices[f"{key}|{flag}"] = _config_names(o.value_kind == "config-setting")
                    elif o.value_kind:
                        self.value_kinds[f"{key}|{flag}"] = o.value_kind
            if c.arguments:
                first = c.arguments[0]
                if first.choices:
                    self.arg_choices[key] = list(first.choices)
                if first.value_kind:
                    self.arg_kinds[key] = first.value_kind
        self.commands = commands


def _property_names() -> list[str]:
    """-X completes the common librdkafka properties (`kctl -X help`), as KEY=."""
    from kctl.config.properties import COMMON_PROPERTIES

    return [f"{name}=" for name, _text in COMMON_PROPERTIES]


def _config_names(setting: bool) -> list[str]:
    """Kafka's topic and broker config names (those the bundled broker knows, which are
    Kafka's): as KEY= for --set and -c, as KEY for --delete and -k."""
    from kctl.broker.configs import BROKER_CONFIGS, TOPIC_CONFIGS

    return [f"{name}=" if setting else name for name in sorted({*TOPIC_CONFIGS, *BROKER_CONFIGS})]


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _assoc(name: str, mapping: dict[str, str], zsh: bool) -> list[str]:
    lines = [f"{name}=("]
    if zsh:  # zsh's portable form is alternating keys and values
        lines += [f"    {_sh_quote(k)} {_sh_quote(v)}" for k, v in sorted(mapping.items())]
    else:
        lines += [f"    [{_sh_quote(k)}]={_sh_quote(v)}" for k, v in sorted(mapping.items())]
    lines.append(")")
    return lines


def _common_tables(t: _Tables, declare: str) -> list[str]:
    zsh = declare.startswith("typeset")
    lines = [f"{declare} __kctl_known __kctl_aliases __kctl_subs __kctl_opts __kctl_value_opts __kctl_choices __kctl_argchoices"]
    lines += _assoc("__kctl_known", {p: "1" for p in t.paths}, zsh)
    lines += _assoc("__kctl_aliases", t.aliases, zsh)
    lines += _assoc("__kctl_subs", {k: " ".join(s for s, _ in v) for k, v in t.subs.items() if v}, zsh)
    lines += _assoc("__kctl_opts", {k: " ".join(v) for k, v in t.opts.items() if v}, zsh)
    lines += _assoc("__kctl_value_opts", {k: " " + " ".join(v) + " " for k, v in t.value_opts.items() if v}, zsh)
    choices = {k: " ".join(v) for k, v in t.choices.items()}
    choices.update({k: f"@{kind}" for k, kind in t.value_kinds.items()})
    lines += _assoc("__kctl_choices", choices, zsh)
    argchoices = {k: " ".join(v) for k, v in t.arg_choices.items()}
    argchoices.update({k: f"@{kind}" for k, kind in t.arg_kinds.items()})
    lines += _assoc("__kctl_argchoices", argchoices, zsh)
    return lines


_CONTEXTS_FN = f"""__kctl_contexts() {{
    local file="${{KCTL_CONFIG:-${{XDG_CONFIG_HOME:-$HOME/.config}}/kctl/config.toml}}"
    [ -r "$file" ] && {_SED_CONTEXTS} "$file"
}}"""


# The completion logic, in the shell syntax bash and zsh share (associative arrays,
# [[ ]], local): the candidates for the word being completed, one per line.
# Arguments: the current word, the previous word, then the words after `kctl` before it.
# (No variable is called `path`: in zsh that is $PATH, and kctl and sed must stay found.)
_CANDIDATES_FN = r"""__kctl_candidates() {
    local cur="$1" prev="$2" cmd="kctl" word next skip=0 found=""
    # `printf '%s\n' $found` below must split the list into words in zsh too.
    [[ -n "$ZSH_VERSION" ]] && setopt localoptions shwordsplit
    shift 2
    for word in "$@"; do
        if (( skip )); then skip=0; continue; fi
        if [[ "$word" == -* ]]; then
            [[ "$word" != *=* && "${__kctl_value_opts[$cmd]}" == *" $word "* ]] && skip=1
            continue
        fi
        word="${__kctl_aliases[$cmd|$word]:-$word}"
        next="$cmd $word"
        [[ -n "${__kctl_known[$next]}" ]] && cmd="$next"
    done
    if [[ "$prev" == -* && "${__kctl_value_opts[$cmd]}" == *" $prev "* ]]; then
        found="${__kctl_choices[$cmd|$prev]}"
    elif [[ "$cur" == -* ]]; then
        found="${__kctl_opts[$cmd]}"
    elif [[ -n "${__kctl_subs[$cmd]}" ]]; then
        found="${__kctl_subs[$cmd]}"
    else
        found="${__kctl_argchoices[$cmd]}"
    fi
    if [[ "$found" == "@context" ]]; then
        __kctl_contexts
    elif [[ "$found" == @* ]]; then
        # Topic, group and broker names from the cluster this command line would use;
        # kctl answers within 0.3 s, with nothing when the cluster does not answer.
        kctl __names "${found#@}" -- "$@" 2>/dev/null
    elif [[ -n "$found" ]]; then
        printf '%s\n' $found
    fi
}"""


def _shared(t: _Tables, declare: str) -> list[str]:
    return [*_common_tables(t, declare), "", _CONTEXTS_FN, "", _CANDIDATES_FN, ""]


def render_bash(t: _Tables) -> str:
    lines = [f"# bash completion for kctl. {HEADER}", "", *_shared(t, "declare -gA")]
    lines.append(
        r"""_kctl() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev=""
    (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"
    local words
    words="$(__kctl_candidates "$cur" "$prev" "${COMP_WORDS[@]:1:COMP_CWORD-1}")"
    COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -F _kctl kctl"""
    )
    return "\n".join(lines) + "\n"


def render_zsh(t: _Tables) -> str:
    lines = ["#compdef kctl", f"# zsh completion for kctl. {HEADER}", "", *_shared(t, "typeset -gA")]
    lines.append(
        r"""_kctl() {
    local choices
    choices="$(__kctl_candidates "${words[CURRENT]}" "${words[CURRENT-1]}" "${(@)words[2,CURRENT-1]}")"
    [[ -n "$choices" ]] && compadd -- ${(f)choices}
}

if [[ "$funcstack[1]" == "_kctl" ]]; then
    _kctl "$@"
else
    compdef _kctl kctl
fi"""
    )
    return "\n".join(lines) + "\n"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def render_fish(t: _Tables) -> str:
    lines = [f"# fish completion for kctl. {HEADER}", ""]
    lines.append("function __kctl_contexts")
    lines.append("    set -l file $KCTL_CONFIG")
    lines.append("    if test -z \"$file\"")
    lines.append("        set -l base $XDG_CONFIG_HOME")
    lines.append("        test -z \"$base\"; and set base $HOME/.config")
    lines.append("        set file $base/kctl/config.toml")
    lines.append("    end")
    lines.append(f"    test -r \"$file\"; and {_SED_CONTEXTS} \"$file\"")
    lines.append("end")
    lines.append("")
    lines.append("function __kctl_names -a kind")
    lines.append("    kctl __names $kind -- (commandline -opc)[2..-1] 2>/dev/null")
    lines.append("end")
    lines.append("")
    lines.append("function __kctl_value_opts -a path")
    lines.append("    switch $path")
    for key, flags in sorted(t.value_opts.items()):
        if flags:
            lines.append(f"        case {_fish_quote(key)}")
            lines.append("            echo " + " ".join(_fish_quote(f) for f in flags))
    lines.append("    end")
    lines.append("end")
    lines.append("")
    lines.append("function __kctl_path")
    lines.append("    set -l tokens (commandline -opc)")
    lines.append("    set -l path kctl")
    lines.append("    set -l skip 0")
    lines.append("    set -l known " + " ".join(_fish_quote(p) for p in t.paths))
    lines.append("    for word in $tokens[2..-1]")
    lines.append("        if test $skip -eq 1; set skip 0; continue; end")
    lines.append("        if string match -q -- '-*' $word")
    lines.append("            if not string match -q -- '*=*' $word; and contains -- $word (__kctl_value_opts \"$path\")")
    lines.append("                set skip 1")
    lines.append("            end")
    lines.append("            continue")
    lines.append("        end")
    lines.append("        switch \"$path|$word\"")
    for key, target in sorted(t.aliases.items()):
        lines.append(f"            case {_fish_quote(key)}")
        lines.append(f"                set word {_fish_quote(target)}")
    lines.append("        end")
    lines.append("        set -l next \"$path $word\"")
    lines.append("        contains -- $next $known; and set path $next")
    lines.append("    end")
    lines.append("    echo $path")
    lines.append("end")
    lines.append("")
    lines.append("function __kctl_at -a want")
    lines.append("    test (__kctl_path) = \"$want\"")
    lines.append("end")
    lines.append("")
    lines.append("complete -c kctl -f")
    for c in t.commands:
        key = _key(c.path)
        cond = f"__kctl_at {_fish_quote(key)}"
        for name, summary in t.subs.get(key, []):
            lines.append(f"complete -c kctl -n {_fish_quote(cond)} -a {_fish_quote(name)} -d {_fish_quote(summary)}")
        for o in c.options:
            parts = [f"complete -c kctl -n {_fish_quote(cond)}"]
            for flag in o.flags:
                if flag.startswith("--"):
                    parts.append(f"-l {_fish_quote(flag[2:])}")
                else:
                    parts.append(f"-s {_fish_quote(flag[1:])}")
            if o.takes_value:
                parts.append("-x")
                if o.choices:
                    parts.append(f"-a {_fish_quote(' '.join(o.choices))}")
                elif o.value_kind == "property":
                    parts.append(f"-a {_fish_quote(' '.join(_property_names()))}")
                elif o.value_kind in ("config-setting", "config-key"):
                    parts.append(f"-a {_fish_quote(' '.join(_config_names(o.value_kind == 'config-setting')))}")
                elif o.value_kind == "context":
                    parts.append("-a '(__kctl_contexts)'")
                elif o.value_kind:
                    parts.append(f"-a '(__kctl_names {o.value_kind})'")
            if o.help:
                parts.append(f"-d {_fish_quote(o.help.splitlines()[0][:80])}")
            lines.append(" ".join(parts))
        if c.arguments and not c.is_group:
            first = c.arguments[0]
            if first.choices:
                lines.append(f"complete -c kctl -n {_fish_quote(cond)} -a {_fish_quote(' '.join(first.choices))}")
            elif first.value_kind == "context":
                lines.append(f"complete -c kctl -n {_fish_quote(cond)} -a '(__kctl_contexts)'")
            elif first.value_kind:
                lines.append(f"complete -c kctl -n {_fish_quote(cond)} -a '(__kctl_names {first.value_kind})'")
    return "\n".join(lines) + "\n"


RENDERERS = {"bash": render_bash, "zsh": render_zsh, "fish": render_fish}
FILENAMES = {"bash": "kctl.bash", "zsh": "kctl.zsh", "fish": "kctl.fish"}


def render_completion(shell: str, commands: list[CommandInfo] | None = None) -> str:
    return RENDERERS[shell](_Tables(commands if commands is not None else walk()))
