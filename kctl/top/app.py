"""The Textual application of `kctl top`: a title line, a banner when the data is stale,
one view at a time (overview, groups, topics, brokers, partitions), a group's drill-down,
a record peek, the keys.

The screen never waits on the cluster: the sampler thread (kctl.sampling) replaces the
latest Frame, and a timer on the screen's side picks it up. No key changes the cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import ContentSwitcher, DataTable, Input, Static

from kctl.top import views
from kctl.top.model import ConnectorRow, Frame, GroupRow, PartitionRow
from kctl.top.table import Table

VIEWS = ("overview", "groups", "topics", "brokers", "partitions", "connectors")
VIEW_KEYS = {"o": "overview", "g": "groups", "t": "topics", "b": "brokers", "p": "partitions", "c": "connectors"}
# `:name` as in k9s: the views and a few aliases.
COMMANDS = {**{v: v for v in VIEWS}, **{v.rstrip("s"): v for v in VIEWS}, **VIEW_KEYS, "cg": "groups", "consumers": "groups"}
KEYS_HELP = """\
kctl top: a live, read-only view of the cluster (no key changes it)

  o g t b p c  overview, groups, topics, brokers, partitions, connectors (or 1-6)
  :groups      the same, typed as in k9s (:topics, :brokers, :partitions, :connectors)
  enter        groups: drill into the group; partitions: peek at its last records
  escape       back, or clear the filter
  /            filter the rows of this view (by name)
  s  S         sort by the next column / reverse the order (or select a header)
  u m a x      partitions: only under-replicated, under min ISR, at min ISR, offline
  ?            these keys
  q  ctrl+c    quit

Data is sampled every --interval on its own thread; trends cover --window.
A red banner says when the cluster could not be read, and how old the data shown is.
"""


def _style(key: str, row: Any) -> str:
    """Colour what needs attention (the terminal's own palette; none with NO_COLOR)."""
    if key == "direction":
        return {"falling behind": "bold red", "stalled": "yellow", "catching up": "green", "unreadable": "red"}.get(row.direction, "")
    if key == "status" and isinstance(row, PartitionRow):
        return {"offline": "bold red", "under-min-isr": "red", "under-replicated": "yellow", "at-min-isr": "yellow"}.get(row.status, "")
    if key == "state" and isinstance(row, ConnectorRow):
        return {"FAILED": "bold red", "PAUSED": "yellow", "STOPPED": "yellow", "UNASSIGNED": "yellow"}.get(row.state, "")
    if key == "failed" and isinstance(row, ConnectorRow) and row.failed:
        return "bold red"
    if key == "stuck" and getattr(row, "stuck", None):
        return "yellow"
    if key == "alive" and not row.alive:
        return "bold red"
    if key == "under_replicated" and isinstance(getattr(row, key), int) and row.under_replicated:
        return "yellow"
    if key == "out_of_isr" and row.out_of_isr:
        return "yellow"
    return ""


def _group_key(row: GroupRow) -> str:
    return row.group


class TopApp(App[int]):
    TITLE = "kctl top"
    # Keys go to the app's bindings until a view's table takes the focus (the prompt is
    # only focusable while shown).
    AUTO_FOCUS = None
    CSS = """
    #title { height: 1; background: $panel; color: $text; }
    #banner { height: auto; background: $error; color: $text; display: none; }
    #banner.shown { display: block; }
    #views { height: 1fr; }
    #status { dock: bottom; height: 1; color: $text-muted; }
    #overview { padding: 1 2; }
    #prompt { height: 1; border: none; padding: 0 1; display: none; }
    #prompt.shown { display: block; }
    DataTable { height: 1fr; }
    """
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
        Binding("question_mark", "keys", "keys"),
        Binding("slash", "prompt('/')", "filter"),
        Binding("colon", "prompt(':')", "command"),
        Binding("escape", "back", "back", show=False),
        Binding("s", "sort", "sort"),
        Binding("S", "reverse", "reverse", show=False),
        *(Binding(k, f"view('{v}')", v, show=False) for k, v in VIEW_KEYS.items()),
        *(Binding(str(i + 1), f"view('{v}')", v, show=False) for i, v in enumerate(VIEWS)),
        *(Binding(k, f"only('{flag}')", label, show=False) for k, (flag, label) in views.PARTITION_FILTERS.items()),
    ]

    def __init__(self, sampler: Any, *, target: str, interval: float, window: float, peek: Callable[[str, int], Sequence[Any]] | None = None,
                 debug: bool = False):
        # The terminal's own colours (its ANSI palette, not Textual's truecolor theme), and
        # none at all with NO_COLOR (Textual reads it).
        super().__init__(ansi_color=True)
        self.theme = "ansi-dark"
        self.show_tracebacks = debug
        # The unexpected error that ended the application, if one did.
        self.crash: BaseException | None = None
        self.sampler = sampler
        self.target = target
        self.interval = interval
        self.window_seconds = window
        self.peek = peek
        self.frame: Frame | None = None
        self.took = 0.0  # seconds the frame's sample took
        self.view = "overview"
        self.prompt_kind = ""  # "/" (filter) or ":" (a view's name) while the prompt is open

    def compose(self) -> ComposeResult:
        # Kept by reference: App.query_one looks in the screen on top, which is the
        # drill-down or the peek while they are open, and the timers run all along.
        self.title_line, self.banner, self.status = Static(id="title"), Static(id="banner"), Static(id="status")
        self.overview_text = Static(id="overview-text")
        self.prompt = Input(id="prompt", disabled=True)
        self.tables = {
            "groups": Table(views.GROUPS, lambda f: f.groups, _group_key, _style, id="groups"),
            "topics": Table(views.TOPICS, lambda f: f.topics, lambda r: r.topic, _style, id="topics"),
            "brokers": Table(views.BROKERS, lambda f: f.brokers, lambda r: str(r.broker), _style, id="brokers"),
            "partitions": Table(views.PARTITIONS, lambda f: f.partitions, lambda r: f"{r.topic}:{r.partition}", _style, id="partitions"),
            "connectors": Table(views.CONNECTORS, lambda f: f.connectors, lambda r: r.connector, _style,
                                lambda f: f.connectors_note, id="connectors"),
        }
        self.switcher = ContentSwitcher(initial="overview", id="views")
        yield self.title_line
        yield self.banner
        with self.switcher:
            yield VerticalScroll(self.overview_text, id="overview")
            yield from self.tables.values()
        yield self.status
        yield self.prompt

    def _handle_exception(self, error: Exception) -> None:
        # Textual's hook for an unhandled error (private; Textual is pinned below 9): it
        # leaves the screen and prints a traceback with locals. kctl says one line instead
        # (kctl.top.run raises it as a KctlError) and leaves the traceback to --debug.
        self.crash = error
        super()._handle_exception(error)
        if not self.show_tracebacks:
            self._exit_renderables.clear()

    def on_mount(self) -> None:
        self._show_title()
        self._show_overview()
        self.set_interval(0.2, self._poll)
        self.set_interval(1.0, self._tick)

    # -- data ------------------------------------------------------------------------------

    def _poll(self) -> None:
        latest = self.sampler.latest
        if latest is not None and latest.value is not self.frame:
            self.took = latest.duration
            self.show_frame(latest.value)

    def show_frame(self, frame: Frame) -> None:
        self.frame = frame
        self._show_title()
        self._show_overview()
        for table in self.tables.values():
            table.show(frame)
        if isinstance(self.screen, GroupScreen):
            self.screen.show(frame)
        self._tick()

    def _tick(self) -> None:
        """The banner and the status line, which age even when no sample arrives."""
        banner = self.banner
        age = self.sampler.age()
        failing = self.sampler.last_attempt_ok is False
        if failing:
            since = "no data yet" if age is None else f"data shown is {age:.0f}s old"
            banner.update(f"cluster unreachable, {since}; sampling again every {self.interval:g}s: {self.sampler.last_error}")
        banner.set_class(failing, "shown")
        status = self.status
        if self.frame is None:
            status.update(f"connecting to {self.target}..." if not failing else "")
        else:
            taken = time.strftime("%H:%M:%S", time.localtime(self.frame.taken_at))
            period = self.sampler.period
            every = f"every {self.interval:g}s" if period <= self.interval * 1.1 else f"every {period:.1f}s (a sample takes {self.took:.1f}s)"
            status.update(f"{self.view}  sample {taken} ({self.took:.2f}s), {every}, "
                          f"trends over {_span(self.window_seconds)}   ? keys  q quit")

    def _show_title(self) -> None:
        title = Text(f" kctl top  {self.target}", style="bold")
        if self.frame is not None:
            title.append(f"  cluster {self.frame.cluster_id}  ")
            colour = {"OK": "green", "WARNING": "yellow", "CRITICAL": "bold red"}.get(self.frame.health, "")
            title.append(self.frame.health, style=colour)
        self.title_line.update(title)

    def _show_overview(self) -> None:
        frame = self.frame
        if frame is None:
            self.overview_text.update(f"waiting for the first sample of {self.target}...")
            return
        width = max(len(label) for label, _, _ in frame.overview)
        body = Text()
        for label, value, attention in frame.overview:
            body.append(f"{label:<{width}}  ")
            body.append(value + "\n", style="bold yellow" if attention else "")
        if frame.reasons:
            body.append("\n")
            for reason in frame.reasons:
                body.append(f"{frame.health}: {reason}\n", style="yellow" if frame.health == "WARNING" else "red")
        for error in frame.errors[:5]:
            body.append(f"{error}\n", style="red")
        self.overview_text.update(body)

    # -- keys ------------------------------------------------------------------------------

    def current_table(self) -> Table | None:
        if self.view == "overview":
            return None
        return self.tables[self.view]

    def action_view(self, name: str) -> None:
        if isinstance(self.screen, (GroupScreen, PeekScreen)):
            self.pop_screen()
        self.view = name
        self.switcher.current = name
        table = self.current_table()
        if table is not None:
            table.rebuild()
            table.focus()
        self._tick()

    def action_sort(self) -> None:
        table = self._focused_table()
        if table is not None:
            table.sort_by()

    def action_reverse(self) -> None:
        table = self._focused_table()
        if table is not None and table.sort_column:
            table.sort_by(table.sort_column)

    def action_only(self, flag: str) -> None:
        table = self.current_table()
        if self.view != "partitions" or table is None:
            return
        table.only ^= {flag}
        table.rebuild()
        labels = [label for f, label in views.PARTITION_FILTERS.values() if f in table.only]
        self.notify("only " + ", ".join(labels) if labels else "every partition", timeout=2)

    def action_prompt(self, kind: str) -> None:
        if self.screen is not self.screen_stack[0]:
            return  # the prompt is the views' (the drill-down and the peek have none)
        prompt = self.prompt
        prompt.placeholder = "filter rows by name" if kind == "/" else "groups, topics, brokers, partitions, connectors, overview"
        prompt.value = ""
        self.prompt_kind = kind
        prompt.disabled = False
        prompt.add_class("shown")
        prompt.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.prompt_kind == "/":
            table = self._focused_table()
            if table is not None:
                table.filter_text = event.value
                table.rebuild()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        kind = self.prompt_kind
        self._close_prompt()
        if kind == ":":
            word = event.value.strip().lstrip(":").lower()
            if word in ("q", "quit", "q!"):
                self.exit(0)
            elif word in COMMANDS:
                self.action_view(COMMANDS[word])
            elif word:
                self.notify(f"no view {word!r}: groups, topics, brokers, partitions, overview", severity="warning", timeout=3)

    def _close_prompt(self) -> None:
        prompt = self.prompt
        prompt.remove_class("shown")
        prompt.disabled = True
        table = self._focused_table()
        if table is not None:
            table.focus()

    async def action_back(self) -> None:
        # Textual's App has an (async) action_back of its own: escape is the views' here.
        prompt = self.prompt
        if prompt.has_class("shown"):
            if self.prompt_kind == "/":
                table = self._focused_table()
                if table is not None:
                    table.filter_text = ""
                    table.rebuild()
            self._close_prompt()
            return
        table = self.current_table()
        if table is not None and table.filter_text:
            table.filter_text = ""
            table.rebuild()

    def action_keys(self) -> None:
        self.push_screen(KeysScreen())

    def _focused_table(self) -> Table | None:
        if isinstance(self.screen, GroupScreen):
            return self.screen.table
        if isinstance(self.screen, PeekScreen):
            return None
        return self.current_table()

    def on_table_selected(self, event: Table.Selected) -> None:
        table, row = event.table, event.row
        if self.frame is None:
            return
        if table.id == "groups":
            self.push_screen(GroupScreen(row.group, self.frame))
        elif table.id == "partitions" and self.peek is not None:
            self.push_screen(PeekScreen(row.topic, row.partition, self.peek))


class GroupScreen(Screen):
    """One group's partitions: owner, offsets, lag, each with its own trend."""

    BINDINGS = [Binding("escape", "app.pop_screen", "back")]

    def __init__(self, group: str, frame: Frame):
        super().__init__()
        self.group = group
        self.table = Table(views.GROUP_PARTITIONS, self._rows, lambda r: f"{r.topic}:{r.partition}", _style, id="group-partitions")
        self.first = frame

    def compose(self) -> ComposeResult:
        yield Static(id="group-title")
        yield self.table
        yield Static(id="group-notes")
        yield Static("escape back   s sort   ? keys   q quit", id="group-status")

    def on_mount(self) -> None:
        self.show(self.first)
        self.table.focus()

    def _rows(self, frame: Frame) -> Sequence[Any]:
        return frame.group_partitions(self.group) or ()

    def show(self, frame: Frame) -> None:
        row = next((g for g in frame.groups if g.group == self.group), None)
        title = Text(f" group {self.group}", style="bold")
        if row is None:
            title.append("  (gone from the cluster)", style="yellow")
        else:
            title.append(f"  {row.type}  {row.state}  {row.members} member(s)  lag {views.count(row.lag)}  "
                         f"{views.seconds(row.lag_seconds)}  {row.direction}  {row.trend}")
        self.query_one("#group-title", Static).update(title)
        self.table.show(frame)
        # Why a lagging partition's LAG-TIME is unknown ("-"), the first few.
        notes = [f"{r.topic}:{r.partition}: {r.lag_seconds_note}" for r in self._rows(frame) if r.lag_seconds_note]
        text = ("LAG-TIME unknown for " + "; ".join(notes[:3]) + (f"; +{len(notes) - 3} more" if len(notes) > 3 else "")) if notes else ""
        self.query_one("#group-notes", Static).update(Text(text, style="yellow"))


class PeekScreen(Screen):
    """The last records of one partition, read once in a worker thread (read-only)."""

    BINDINGS = [Binding("escape", "app.pop_screen", "back")]

    def __init__(self, topic: str, partition: int, peek: Callable[[str, int], Sequence[Any]]):
        super().__init__()
        self.topic, self.partition, self.peek = topic, partition, peek

    def compose(self) -> ComposeResult:
        yield Static(Text(f" last records of {self.topic}:{self.partition}", style="bold"), id="peek-title")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="peek")
        yield Static("reading...", id="peek-status")

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exit_on_error=False)

    def _read(self) -> None:
        try:
            rows = self.peek(self.topic, self.partition)
        except Exception as exc:  # noqa: BLE001 - shown on the screen, not raised
            message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            self.app.call_from_thread(self._failed, message)
            return
        self.app.call_from_thread(self._show, rows)

    def _failed(self, message: str) -> None:
        if not self.is_attached:  # left before the records came
            return
        self.query_one("#peek-status", Static).update(Text(message, style="red"))

    def _show(self, rows: Sequence[Any]) -> None:
        if not self.is_attached:  # left before the records came
            return
        table = self.query_one("#peek", DataTable)
        for c in views.RECORDS:
            table.add_column(c.header, key=c.key)
        for row in rows:
            table.add_row(*(Text(c.format(row.get(c.key)), no_wrap=True) for c in views.RECORDS))
        self.query_one("#peek-status", Static).update(f"{len(rows)} record(s)   escape back")
        table.focus()


class KeysScreen(ModalScreen):
    BINDINGS = [Binding("escape", "app.pop_screen", "close"), Binding("question_mark", "app.pop_screen", "close"),
                Binding("q", "app.pop_screen", "close")]
    CSS = "KeysScreen { align: center middle; } #keys { width: auto; height: auto; padding: 1 2; border: round $accent; background: $panel; }"

    def compose(self) -> ComposeResult:
        yield Static(KEYS_HELP, id="keys")


def _span(seconds: float) -> str:
    return f"{seconds / 60:g}m" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g}s"
