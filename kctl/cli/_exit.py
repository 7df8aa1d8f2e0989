"""How a command ends, free of click: a failure rendered as one line (and a hint) on
stderr with its exit status, and the exit itself. kctl.cli.main (the click tree) and
kctl.cli.direct (the reads run without click) end the same way through it."""

from __future__ import annotations

import os
import sys

from kctl.errors import ExitCode, KctlError


def truthy(value: str | None) -> bool:
    """An environment switch (KCTL_DEBUG=1, true, yes, on)."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def render_error(message: str, hint: str | None) -> None:
    sys.stderr.write(f"error: {message}\n")
    if hint:
        from kctl.cli._hints import GLOBAL_FLAGS
        from kctl.errors import render_hint, settings_in

        # A setting no command named (an error before one ran): its flag by its name.
        named = {name: GLOBAL_FLAGS.get(name) or "--" + name.replace("_", "-") for name in settings_in(hint)}
        sys.stderr.write(f"hint: {render_hint(hint, named)}\n")
    sys.stderr.flush()


def failure_status(failure: BaseException, debug: bool) -> int:
    """The exit status of `failure`, rendered on stderr first: a
    KctlError's own; Ctrl-C 130; a reader that went away (`kctl ... | head`) 0, quietly,
    as other Unix tools do; anything else an internal error (1). A traceback only with
    --debug."""
    if isinstance(failure, KctlError):
        if debug:
            import traceback

            traceback.print_exception(failure)
        render_error(failure.message, failure.hint)
        return failure.exit_code
    if isinstance(failure, KeyboardInterrupt):
        render_error("interrupted", None)
        return ExitCode.INTERRUPTED
    if isinstance(failure, BrokenPipeError):
        silence_stdout()
        return ExitCode.OK
    if debug:
        import traceback

        traceback.print_exception(failure)
    render_error(f"internal error: {type(failure).__name__}: {failure}", "rerun with --debug for the traceback")
    return ExitCode.ERROR


def finish(code: int, *, console_script: bool) -> None:
    """Exit with `code`."""
    if code == ExitCode.INTERRUPTED:
        # Ctrl-C: what stdout still buffers is dropped, not written to a reader that may
        # not read it for a long time (a slow pipe, a paused pager): the exit is now.
        silence_stdout()
    if console_script:
        _fast_exit(int(code))
    sys.exit(int(code))


def _fast_exit(code: int) -> None:
    """Exit without tearing down the interpreter and librdkafka's threads (~15 ms).

    Only for the console script: every client is closed or flushed by its command
    before this point, and nothing registered with atexit needs to run.
    """
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        silence_stdout()
    try:
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    os._exit(code)


def silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
