"""The table every view of `kctl top` shows: rows drawn only where they are visible.

Textual's DataTable measures and styles every cell it holds: 10,000 groups took 0.3 s to
add and 1.3 s more to lay out at each refresh (measured, Textual 8.2), during which keys
wait. This table keeps the rows as the model gives them (frozen dataclasses) and formats
only the lines on screen (Textual's line API), so a refresh costs a sort and a filter
of the row list, and scrolling or filtering 10,000 rows stays immediate.

It sorts (a column key, reversed or not; select a header), filters by a row's name,
keeps only rows with given flags, drops the columns that do not fit (views.fitting) and
keeps the cursor on the same row across refreshes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kctl.top import views
from kctl.top.views import Column

HEADER = Style(bold=True)
CURSOR = Style(reverse=True)
# Widths are measured over every row up to this many, beyond it from the columns' own
# widths (a cell longer than its column is cut with an ellipsis).
MEASURED_ROWS = 2000


class Table(ScrollView, can_focus=True):
    DEFAULT_CSS = "Table { height: 1fr; overflow-x: hidden; }"
    BINDINGS = [
        Binding("up", "move(-1)", show=False), Binding("down", "move(1)", show=False),
        Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
        Binding("home", "move(-1000000000)", show=False), Binding("end", "move(1000000000)", show=False),
        Binding("enter", "select", show=False),
    ]

    class Selected(Message):
        """Enter on a row."""

        def __init__(self, table: Table, row: Any):
            super().__init__()
            self.table, self.row = table, row

    def __init__(self, columns: Sequence[Column], rows_of: Callable[[Any], Sequence[Any]], key_of: Callable[[Any], str],
                 style_of: Callable[[str, Any], str] = lambda key, row: "",
                 empty_note: Callable[[Any], str | None] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        # What the table says under its header when a frame has no rows for it.
        self.empty_note = empty_note
        self.all_columns = tuple(columns)
        self.rows_of = rows_of
        self.key_of = key_of
        self.style_of = style_of
        self.sort_column: str | None = None
        self.reverse = False
        self.filter_text = ""
        self.only: set[str] = set()  # flags every row shown must have (the partition toggles)
        self.frame: Any = None
        self.shown: tuple[Column, ...] = ()
        self.widths: tuple[int, ...] = ()
        self.rows_shown: list[Any] = []
        self.cursor = 0

    # -- data ------------------------------------------------------------------------------

    def show(self, frame: Any) -> None:
        """Take a new frame's rows (drawn now when the table is on screen)."""
        self.frame = frame
        if self.display:
            self.rebuild()

    def rebuild(self) -> None:
        key = self.current_key()
        rows = list(self.rows_of(self.frame)) if self.frame is not None else []
        if self.filter_text:
            needle = self.filter_text.lower()
            rows = [r for r in rows if needle in self.key_of(r).lower()]
        for flag in self.only:
            rows = [r for r in rows if getattr(r, flag)]
        if self.sort_column:
            rows = views.ordered(rows, self.sort_column, self.reverse)
        self.rows_shown = rows
        self.shown = views.fitting(self.all_columns, self.size.width or self.app.size.width)
        self.widths = self._widths(rows)
        if key is not None:
            self.cursor = next((i for i, r in enumerate(rows) if self.key_of(r) == key), min(self.cursor, len(rows) - 1))
        self.cursor = max(0, min(self.cursor, len(rows) - 1))
        self.virtual_size = Size(self.size.width, len(rows) + 1)
        self._scroll_to_cursor()
        self.refresh()

    def _widths(self, rows: Sequence[Any]) -> tuple[int, ...]:
        measured = rows if len(rows) <= MEASURED_ROWS else None
        widths = []
        for column in self.shown:
            width = cell_len(column.header) + 1  # room for the sort arrow
            if column is self.shown[0]:  # the row's name: measured whatever the count (strings only)
                width = max([width, *(cell_len(self.key_of(r)) for r in rows)])
            elif measured is not None:
                width = max([width, *(cell_len(column.format(getattr(r, column.key))) for r in measured)])
            else:
                width = max(width, column.width)
            widths.append(width)
        # The first column gives way when the others leave it too little room.
        spare = (self.size.width or self.app.size.width) - sum(w + 2 for w in widths[1:]) - 3
        if widths and spare < widths[0]:
            widths[0] = max(cell_len(self.shown[0].header) + 1, spare)
        return tuple(widths)

    def current(self) -> Any | None:
        return self.rows_shown[self.cursor] if 0 <= self.cursor < len(self.rows_shown) else None

    def current_key(self) -> str | None:
        row = self.current()
        return None if row is None else self.key_of(row)

    def cells(self, row: Any) -> list[str]:
        """A row's cells as shown (their text, before padding)."""
        return [c.format(getattr(row, c.key)) for c in self.shown]

    def sort_by(self, key: str | None = None) -> None:
        """Sort by column `key` (again: reversed), or by the next shown column."""
        keys = [c.key for c in self.shown]
        if key is None:
            key = keys[(keys.index(self.sort_column) + 1) % len(keys)] if self.sort_column in keys else keys[0]
            self.reverse = False
        elif key == self.sort_column:
            self.reverse = not self.reverse
        else:
            self.reverse = False
        self.sort_column = key
        self.rebuild()

    # -- drawing ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._full_width(self._line([(c.header + (self._arrow(c)), c) for c in self.shown], HEADER), width)
        index = self.scroll_offset.y + y - 1
        if index >= len(self.rows_shown):
            if index == 0 and self.empty_note is not None and self.frame is not None:
                note = self.empty_note(self.frame)
                if note:
                    return self._full_width([Segment(" " + note)], width)
            return Strip.blank(width)
        row = self.rows_shown[index]
        base = CURSOR if index == self.cursor and self.has_focus else (Style(underline=True) if index == self.cursor else Style())
        segments = self._line([(c.format(getattr(row, c.key)), c) for c in self.shown], base, row)
        return self._full_width(segments, width)

    @staticmethod
    def _full_width(segments: list[Segment], width: int) -> Strip:
        """A line padded (or cut) to the table's whole width: a terminal redraws only the
        cells a line writes, so a shorter line left the previous view's text after it."""
        return Strip(segments).adjust_cell_length(width)

    def _arrow(self, column: Column) -> str:
        return ("v" if self.reverse else "^") if column.key == self.sort_column else ""

    def _line(self, cells: list[tuple[str, Column]], base: Style, row: Any = None) -> list[Segment]:
        segments = [Segment(" ", base)]
        for (text, column), width in zip(cells, self.widths):
            if cell_len(text) > width:
                text = set_cell_size(text, max(0, width - 1)) + "…"
            padded = text.rjust(width) if column.numeric else set_cell_size(text, width)
            style = base
            if row is not None:
                extra = self.style_of(column.key, row)
                if extra:
                    style = base + Style.parse(extra)
            segments += [Segment(padded, style), Segment("  ", base)]
        return segments

    # -- moving ----------------------------------------------------------------------------

    def _scroll_to_cursor(self) -> None:
        rows_on_screen = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + rows_on_screen:
            self.scroll_to(y=self.cursor - rows_on_screen + 1, animate=False)

    def action_move(self, by: int) -> None:
        if self.rows_shown:
            self.cursor = max(0, min(len(self.rows_shown) - 1, self.cursor + by))
            self._scroll_to_cursor()
            self.refresh()

    def action_page(self, pages: int) -> None:
        self.action_move(pages * max(1, self.size.height - 1))

    def action_select(self) -> None:
        row = self.current()
        if row is not None:
            self.post_message(self.Selected(self, row))

    def on_click(self, event: Click) -> None:
        if event.y == 0:  # a header: sort by it (again: reversed)
            x = 1
            for column, width in zip(self.shown, self.widths):
                if x <= event.x < x + width + 2:
                    self.sort_by(column.key)
                    return
                x += width + 2
            return
        index = self.scroll_offset.y + event.y - 1
        if 0 <= index < len(self.rows_shown):
            if index == self.cursor and event.chain >= 2:
                self.action_select()
            self.cursor = index
            self.refresh()

    def on_resize(self) -> None:
        if self.display:
            self.rebuild()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
