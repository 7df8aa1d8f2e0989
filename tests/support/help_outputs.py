"""What each `--help` example prints, kept beside the examples' test and compared with it.

tests/support/help_outputs/<command>.txt lists a command's examples in their `--help` order, each
as `$ <example>` followed by its standard output as the test's world makes it
(tests/support/help_world.py), normalised: the test's addresses, directories, times, durations,
rates, sizes on disk and generated ids replaced by fixed words. An example whose output cannot be the
same twice (records consumed with their timestamps, a live bar, a broker's own choice of
leaders) says so in one line, `# not compared: <why>`, instead of an output.

The files are written by the examples' test itself: `KCTL_UPDATE_HELP_OUTPUTS=1 pytest
tests/test_help_examples.py` records what every example printed; an example whose new
output differs from the one recorded is marked `# not compared: differs between runs`, so
running it three times leaves only outputs that came out the same three times. Without
the variable the test compares, and test_every_example_has_its_expected_output fails
when a file no longer lists its command's examples (a stale file, like a stale man page).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent / "help_outputs"
NOT_COMPARED = "# not compared: "
DIFFERS = "differs between runs"
UPDATE = "KCTL_UPDATE_HELP_OUTPUTS"


def updating() -> bool:
    return os.environ.get(UPDATE, "") not in ("", "0")


def file_for(path: tuple[str, ...]) -> Path:
    return DIRECTORY / f"{'-'.join(path) or 'kctl'}.txt"


def load(path: tuple[str, ...]) -> list[tuple[str, str]]:
    """[(example, expected output or `# not compared: ...`)] in the file's order."""
    target = file_for(path)
    if not target.exists():
        return []
    entries: list[tuple[str, list[str]]] = []
    for line in target.read_text().splitlines():
        if line.startswith("$ "):
            entries.append((line[2:], []))
        elif entries:
            entries[-1][1].append(line)
    return [(example, "\n".join(lines).rstrip("\n")) for example, lines in entries]


def save(path: tuple[str, ...], entries: list[tuple[str, str]]) -> None:
    DIRECTORY.mkdir(exist_ok=True)
    file_for(path).write_text("".join(f"$ {example}\n{output}\n" if output else f"$ {example}\n" for example, output in entries))


def merged(old: list[tuple[str, str]], new: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The entries to keep after a run that printed `new`: a recorded output the run
    did not print again becomes `not compared`; a reason given stays."""
    before = dict(old)
    result = []
    for example, output in new:
        recorded = before.get(example)
        if output.startswith(NOT_COMPARED) or recorded is None:
            result.append((example, output))
        elif recorded.startswith(NOT_COMPARED):
            result.append((example, recorded))
        else:
            result.append((example, output if recorded == output else NOT_COMPARED + DIFFERS))
    return result


# Whatever a run makes anew, replaced by what it stands for.
_PATTERNS = (
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b1[6-9]\d{11}\b"), "<epoch-ms>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\b(127\.0\.0\.1|localhost):\d{2,5}\b"), "localhost:<port>"),
    # Kafka's base64 ids (cluster, topic, member): 22 characters, capitals and small
    # letters (a digit is not a sign: 2.4% of random ids have none, and a CI run met one).
    (re.compile(r"(?<![\w.-])(?=[\w-]*[A-Z])(?=[\w-]*[a-z])[A-Za-z0-9_-]{22}(?![\w.-])"), "<id>"),
    (re.compile(r"\b\d+(\.\d+)?( ?ms| ?s)\b"), "<duration>"),
    # How long a look took, and how far apart two were (kctl doctor): a loaded run's are longer.
    (re.compile(r'("(?:window_)?seconds":)\d+(\.\d+)?'), r"\1<duration>"),
    (re.compile(r"^(WINDOW-SECONDS\s+)\d+(\.\d+)?$", re.M), r"\1<duration>"),
    (re.compile(r"[\d,.]+ (records|MB|MiB|KiB|bytes)/s\b"), r"<rate> \1/s"),
    # Sizes on disk: a partition's depends on how the producer batched the world's records
    # (a loaded CI run sent one partition's ten in two batches: 706 B where 645 B was recorded).
    (re.compile(r"\b\d+(\.\d+)? (B|KiB|MiB|GiB)\b"), "<size>"),
)


def normalised(output: str, *, bootstrap: str, directories: dict[str, str]) -> str:
    """`output` without what differs from run to run (see the module's doc); `directories`
    maps this run's absolute paths to the words that stand for them."""
    text = output.replace(bootstrap, "localhost:9092")
    for port in re.findall(r":(\d+)", bootstrap):  # brokers' ports in columns of their own
        text = re.sub(rf"(?<![\d.:]){port}(?!\d)", "<port>", text)
    for absolute, word in sorted(directories.items(), key=lambda item: -len(item[0])):
        text = text.replace(absolute, word)
    for pattern, word in _PATTERNS:
        text = pattern.sub(word, text)
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")
