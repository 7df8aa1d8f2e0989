"""Kafka's TOPIC:PARTITIONS selector syntax."""

from __future__ import annotations

import pytest

from kctl.admin.topics.offsets import PartitionSelector, parse_selector
from kctl.errors import UsageError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("orders", PartitionSelector(topic="orders")),
        ("orders:3", PartitionSelector(topic="orders", ranges=((3, 3),))),
        ("orders:0-3,7,9-", PartitionSelector(topic="orders", ranges=((0, 3), (7, 7), (9, None)))),
        ("a.b-c:1", PartitionSelector(topic="a.b-c", ranges=((1, 1),))),
    ],
)
def test_parse(text, expected):
    assert parse_selector(text) == expected


@pytest.mark.parametrize("text", ["orders:", "orders:x", "orders:3-1", ":1", "orders:1,,2"])
def test_bad(text):
    with pytest.raises(UsageError):
        parse_selector(text)


def test_selects():
    selector = parse_selector("t:0-1,5-")
    assert [p for p in range(8) if selector.selects(p)] == [0, 1, 5, 6, 7]
