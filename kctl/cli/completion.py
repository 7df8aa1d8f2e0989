"""kctl completion: print a shell completion script generated from the command tree."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str):
    """Print the completion script for SHELL.

    The script is generated from the command tree, the same as completions/ in the
    source tree. Commands, options and fixed values complete without running Python;
    topic, group and broker names come from the cluster the command line would use
    (kctl answers within 0.3 s, with nothing when the cluster does not answer), context
    names from the config file. Printed to a terminal, the install line for SHELL
    follows on stderr.

    \b
    Examples:
      mkdir -p ~/.local/share/bash-completion/completions && \\
          kctl completion bash > ~/.local/share/bash-completion/completions/kctl
      mkdir -p ~/.zfunc && kctl completion zsh > ~/.zfunc/_kctl  # ~/.zfunc in fpath, then compinit
      mkdir -p ~/.config/fish/completions && \\
          kctl completion fish > ~/.config/fish/completions/kctl.fish
    """
    import sys

    from kctl.devtools.completions import render_completion

    click.echo(render_completion(shell), nl=False)
    if sys.stdout.isatty():
        click.echo(f"# to install: {INSTALL[shell]}", err=True)


# Install lines that work on a fresh home (the directories may not exist yet).
INSTALL = {
    "bash": "mkdir -p ~/.local/share/bash-completion/completions && kctl completion bash > ~/.local/share/bash-completion/completions/kctl",
    "zsh": "mkdir -p ~/.zfunc && kctl completion zsh > ~/.zfunc/_kctl, and fpath=(~/.zfunc $fpath) before compinit in ~/.zshrc",
    "fish": "mkdir -p ~/.config/fish/completions && kctl completion fish > ~/.config/fish/completions/kctl.fish",
}
