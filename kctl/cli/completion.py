"""kctl completion: print a shell completion script generated from the command tree."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell):
    """Print the completion script for SHELL.

    The script is generated from the command tree, the same as completions/ in the
    source tree, and needs no Python at completion time.

    \b
    Examples:
      kctl completion bash > ~/.local/share/bash-completion/completions/kctl
      kctl completion zsh > "${fpath[1]}/_kctl"
      kctl completion fish > ~/.config/fish/completions/kctl.fish
    """
    from kctl.devtools.completions import render_completion

    click.echo(render_completion(shell), nl=False)
