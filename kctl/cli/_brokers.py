"""The brokers table, shown by `broker list` and `cluster info`."""

from __future__ import annotations

from kctl.output.spec import Column, TableSpec

BROKER_TABLE = TableSpec(
    (
        Column("id", "ID", align="right"),
        Column("host", "HOST"),
        Column("port", "PORT", align="right"),
        Column("rack", "RACK"),
        Column("is_controller", "CONTROLLER"),
    )
)
# `broker list --include-fenced`: the same, and each broker's state.
BROKER_STATE_TABLE = TableSpec((*BROKER_TABLE.columns, Column("state", "STATE")))
