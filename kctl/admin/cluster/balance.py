"""Balancing a cluster: which replicas to move, and which replica to prefer as leader, so
that replicas, disk bytes and leaders even out over the brokers with the least data moved
(`kctl cluster balance`, issue 71), from what the Admin API tells alone: no broker
metrics, no capacity file, no service (what Cruise Control needs).

The goals, in priority order, as Cruise Control orders its own:

1. rack safety (hard): no move puts two replicas of a partition in one rack (while there
   are as many racks as replicas; fewer racks, no more in one than an even spread), and
   partitions already unsafe are fixed first;
   A broker whose every log dir is cordoned (KIP-1066) receives nothing.
2. disk limit (hard, where the brokers report their disks' capacity, KIP-827): no broker
   above --disk-threshold of its capacity at any step, counting every replica it receives
   before any it gives up; brokers above it are offloaded;
3. replica count: every broker within REPLICA_BAND of the mean;
4. disk bytes: every broker within DISK_BAND of its share (the mean, or in proportion to
   capacity where every broker reports it), moving no more than what brokers lack: the
   lower bound is the sum over brokers of what each holds below its share;
5. leaders: preferred leaders (the first replica) evened out by reordering replicas, which
   moves no data, then a preferred leader election.

A lower goal's move never breaks a higher goal. Each move takes one replica from one
broker to another; a replica moved is not moved again. The plan is a function of its
input: the same cluster gives the same plan (sorted keys, no randomness).

A partition being reassigned, without a leader or with a replica on a broker that is not
alive is left as it is (and said).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kctl.admin.cluster.layout import BrokerFacts, ClusterFacts, PartitionFacts, read_facts, replicas_and_leaders
from kctl.admin.cluster.replication import PartitionMove

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from kctl.admin.client.session import AdminSession

GOALS = ("replicas", "disk", "leaders")
# Aims inside the targets (bytes 0.90-1.10x, replicas and leaders 0.75-1.25x):
# sizes change while the moves run, and counts are whole numbers.
DISK_BAND = 0.05
REPLICA_BAND = 0.10
# A plan that leaves a broker further than these from the mean says so (Cruise Control's
# default balance thresholds: 1.10 for disk, 1.25 for replica and leader counts).
UNMET_DISK = 0.10
UNMET_COUNT = 0.25
# Below this many bytes off its share a broker is balanced, however small the cluster.
MIN_DISK_GAP = 1 << 20
DEFAULT_DISK_THRESHOLD = 0.80
# How many replicas of a broker are looked at for one (source, destination) pair before
# giving up on it: bounds a plan's time on large clusters.
SCAN_LIMIT = 4096

Key = tuple[str, int]


@dataclass(frozen=True, kw_only=True)
class Options:
    goals: tuple[str, ...] = GOALS
    # Only partitions of these topics move (all when None).
    topics: frozenset[str] | None = None
    # Only these brokers receive replicas (every live broker when None).
    destinations: frozenset[int] | None = None
    # Stop adding moves before this many bytes would move.
    max_move_bytes: int | None = None
    disk_threshold: float = DEFAULT_DISK_THRESHOLD


@dataclass(frozen=True, kw_only=True)
class BrokerBalance:
    broker: int
    rack: str | None
    bytes_before: int
    bytes_after: int
    # Its share of the bytes: what the disk goal aims at.
    bytes_target: int
    replicas_before: int
    replicas_after: int
    leaders_before: int
    leaders_after: int
    capacity_bytes: int | None
    used_bytes_after: int | None
    bytes_in: int
    bytes_out: int


@dataclass(frozen=True, kw_only=True)
class Skew:
    """max/mean of a measure over the live brokers, before and after the plan."""

    measure: str
    before: float
    after: float


@dataclass(frozen=True, kw_only=True)
class PlannedMove:
    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]
    size_bytes: int
    # Bytes copied: the size once per replica added.
    bytes_moved: int
    # rack | disk-limit | replicas | disk | leaders: the goal that moved it first.
    reason: str

    @property
    def move(self) -> PartitionMove:
        return PartitionMove(topic=self.topic, partition=self.partition, current=self.current, target=self.target)


@dataclass(frozen=True, kw_only=True)
class BalancePlan:
    moves: tuple[PlannedMove, ...]
    brokers: tuple[BrokerBalance, ...]
    bytes_moved: int
    # The least any plan must move to bring every broker up to its share.
    lower_bound_bytes: int
    skew: tuple[Skew, ...]
    # Partitions whose preferred leader does not lead now, or will not once moved: a
    # preferred election after the moves.
    elect: tuple[Key, ...]
    # Partitions left as they are: being reassigned, without a leader, on a dead broker.
    left_alone: int
    # Goals the plan could not meet, one line each.
    unmet: tuple[str, ...]


def lower_bound(sizes: Mapping[int, int], targets: Mapping[int, int]) -> int:
    """The bytes any plan must move: what each broker lacks of its share."""
    return sum(max(0, targets[b] - sizes.get(b, 0)) for b in targets)


def rack_excess(replicas: Iterable[int], racks: Mapping[int, str | None], rack_count: int) -> int:
    """How many replicas share a rack beyond an even spread (0: rack-safe); 0 without racks."""
    if rack_count < 2:
        return 0
    listed = list(replicas)
    most = math.ceil(len(listed) / rack_count)
    counts = Counter(racks.get(b) for b in listed)
    return sum(max(0, n - most) for n in counts.values())


class _Planner:
    def __init__(self, brokers: Mapping[int, BrokerFacts], partitions: Iterable[PartitionFacts], options: Options):
        self.options = options
        self.brokers = dict(sorted(brokers.items()))
        self.live = sorted(self.brokers)
        self.racks = {b: f.rack for b, f in self.brokers.items()}
        # Racks count only when every broker has one (Kafka's rule for rack-aware placement).
        self.rack_count = len(set(self.racks.values())) if self.racks and all(self.racks.values()) else 0
        allowed = self.options.destinations
        # A cordoned broker (every log dir cordoned, KIP-1066) takes nothing.
        self.destinations = [b for b in self.live if (allowed is None or b in allowed) and not self.brokers[b].cordoned]
        self.facts = {(p.topic, p.partition): p for p in sorted(partitions, key=lambda p: (p.topic, p.partition))}
        self.target: dict[Key, list[int]] = {k: list(p.replicas) for k, p in self.facts.items()}
        self.reason: dict[Key, str] = {}
        live = set(self.live)
        self.movable = {
            k for k, p in self.facts.items()
            if not p.moving and p.leader is not None and p.leader in live and all(b in live for b in p.replicas)
            and (options.topics is None or p.topic in options.topics)
        }
        self.left_alone = sum(1 for k, p in self.facts.items()
                              if k not in self.movable and (options.topics is None or p.topic in options.topics))
        self.count, self.leaders_before = replicas_and_leaders(self.facts.values(), self.live)
        self.size_on: dict[int, int] = dict.fromkeys(self.live, 0)
        for p in self.facts.values():
            for b in p.replicas:
                if b in live:
                    self.size_on[b] += p.size_bytes
        self.size_before = dict(self.size_on)
        self.count_before = dict(self.count)
        self.incoming: dict[int, int] = dict.fromkeys(self.live, 0)
        self.outgoing: dict[int, int] = dict.fromkeys(self.live, 0)
        self.bytes_moved = 0
        # Each broker's replicas that may move, by size (smallest first); those moved off
        # are in `gone`.
        self.by_size: dict[int, list[tuple[int, Key]]] = {b: [] for b in self.live}
        for k in sorted(self.movable):
            for b in self.facts[k].replicas:
                self.by_size[b].append((self.facts[k].size_bytes, k))
        for listed in self.by_size.values():
            listed.sort()
        self.sizes_of = {b: [s for s, _ in listed] for b, listed in self.by_size.items()}
        self.gone: set[tuple[Key, int]] = set()
        self.stale = dict.fromkeys(self.live, 0)
        self.front = dict.fromkeys(self.live, 0)
        # Per (source, destination): where in the source's list the last scan stopped.
        self.cursor: dict[tuple[int, int], int] = {}
        self.unmet: list[str] = []
        self.full_budget = False
        total = sum(self.size_on.values())
        capacities = [self.brokers[b].capacity_bytes for b in self.live]
        if all(capacities) and capacities:
            weights = {b: self.brokers[b].capacity_bytes or 0 for b in self.live}
        else:
            weights = dict.fromkeys(self.live, 1)
        whole = sum(weights.values()) or 1
        self.share = {b: total * weights[b] // whole for b in self.live}
        mean_count = sum(self.count.values()) / len(self.live) if self.live else 0
        self.count_low = math.floor(mean_count * (1 - REPLICA_BAND))
        self.count_high = max(math.ceil(mean_count * (1 + REPLICA_BAND)), math.ceil(mean_count))

    # -- the state --------------------------------------------------------------------

    def room(self, b: int) -> float:
        """Bytes broker `b` may still receive under the disk threshold (unbounded when its
        capacity is unknown), counting all it receives and none it gives up."""
        facts = self.brokers[b]
        if facts.capacity_bytes is None or facts.used_bytes is None:
            return math.inf
        return self.options.disk_threshold * facts.capacity_bytes - facts.used_bytes - self.incoming[b]

    def over_threshold(self, b: int) -> float:
        """Bytes broker `b` holds above the disk threshold once its moves are done."""
        facts = self.brokers[b]
        if facts.capacity_bytes is None or facts.used_bytes is None:
            return 0
        return facts.used_bytes + self.incoming[b] - self.outgoing[b] - self.options.disk_threshold * facts.capacity_bytes

    def can_move(self, key: Key, source: int, destination: int, *, fixing_racks: bool = False) -> bool:
        replicas = self.target[key]
        if destination in replicas or (key, source) in self.gone or source not in replicas:
            return False
        size = self.facts[key].size_bytes
        if size > self.room(destination):
            return False
        budget = self.options.max_move_bytes
        if budget is not None and self.bytes_moved + size > budget:
            self.full_budget = True
            return False
        if self.rack_count:
            change = self.rack_change(replicas, source, destination)
            if change > 0 or (fixing_racks and change == 0):
                return False
        return True

    def rack_change(self, replicas: list[int], source: int, destination: int) -> int:
        """How rack_excess changes when `source`'s replica goes to `destination`: only
        their two racks change (a plan checks this for every move it considers)."""
        leaving, joining = self.racks[source], self.racks[destination]
        if leaving == joining:
            return 0
        most = -(-len(replicas) // self.rack_count)
        left = sum(1 for b in replicas if self.racks[b] == leaving)
        joined = sum(1 for b in replicas if self.racks[b] == joining)
        return (max(0, joined + 1 - most) - max(0, joined - most)) + (max(0, left - 1 - most) - max(0, left - most))

    def apply(self, key: Key, source: int, destination: int, reason: str) -> None:
        size = self.facts[key].size_bytes
        replicas = self.target[key]
        replicas[replicas.index(source)] = destination
        self.reason.setdefault(key, reason)
        self.gone.add((key, source))
        self.gone.add((key, destination))  # a replica moved is not moved again
        self.stale[source] += 1
        if self.stale[source] > 64 and self.stale[source] * 2 > len(self.by_size[source]):
            self._compact(source)
        self.size_on[source] -= size
        self.size_on[destination] += size
        self.count[source] -= 1
        self.count[destination] += 1
        self.incoming[destination] += size
        self.outgoing[source] += size
        self.bytes_moved += size

    def _compact(self, broker: int) -> None:
        """Drop the replicas moved off `broker` from its list: scans skip them, and on a
        large cluster the moves of one goal leave thousands at one end (measured: without
        this, 100,000 partitions took minutes)."""
        kept = [(size, key) for size, key in self.by_size[broker] if (key, broker) not in self.gone]
        self.by_size[broker] = kept
        self.sizes_of[broker] = [size for size, _ in kept]
        self.stale[broker] = 0
        self.front[broker] = 0
        for pair in [pair for pair in self.cursor if pair[0] == broker]:
            del self.cursor[pair]

    def candidates(self, source: int, *, below: float = math.inf, above: float | None = None, smallest: bool = False):
        """`source`'s movable replicas (size, key): the largest not above `below` first;
        or, with `above`, the smallest larger than it first; or the smallest first."""
        listed, sizes = self.by_size[source], self.sizes_of[source]
        if smallest:
            # The smallest go first, so the moved pile up at the front: skip them once.
            front = self.front[source]
            while front < len(listed) and (listed[front][1], source) in self.gone:
                front += 1
            self.front[source] = front
            order: Iterable[int] = range(front, len(listed))
        elif above is not None:
            order = range(bisect_right(sizes, above), len(listed))
        else:
            top = bisect_right(sizes, below) if below != math.inf else len(listed)
            order = range(top - 1, -1, -1)
        scanned = 0
        for index in order:
            size, key = listed[index]
            if (key, source) in self.gone:
                continue
            scanned += 1
            if scanned > SCAN_LIMIT:
                return
            yield size, key

    # -- the goals --------------------------------------------------------------------

    def fix_racks(self) -> None:
        if not self.rack_count:
            return
        unfixed = 0
        for key in sorted(self.movable):
            while rack_excess(self.target[key], self.racks, self.rack_count):
                counts = Counter(self.racks[b] for b in self.target[key])
                crowded = [b for b in self.target[key] if counts[self.racks[b]] > 1]
                source = max(crowded, key=lambda b: (self.size_on[b] - self.share[b], b))
                options = [d for d in self.destinations if self.can_move(key, source, d, fixing_racks=True)]
                if not options:
                    unfixed += 1
                    break
                destination = min(options, key=lambda d: (self.count[d] >= self.count_high, self.size_on[d] - self.share[d], d))
                self.apply(key, source, destination, "rack")
        if unfixed:
            self.unmet.append(f"rack safety: {unfixed} partition(s) keep two replicas in one rack (no broker in another rack can take them)")

    def offload_full(self) -> None:
        for source in self.live:
            while self.over_threshold(source) > 0:
                moved = False
                for _size, key in self.candidates(source):
                    options = [d for d in self.destinations if d != source and self.can_move(key, source, d)]
                    if options:
                        destination = min(options, key=lambda d: (self.size_on[d] - self.share[d], d))
                        self.apply(key, source, destination, "disk-limit")
                        moved = True
                        break
                if not moved:
                    self.unmet.append(f"disk limit: broker {source} stays above {self.options.disk_threshold:.0%} of its capacity "
                                      "(no broker has room for its replicas)")
                    break

    def even_replicas(self) -> None:
        """Replicas from brokers above the count band to those below, the smallest first
        (moving little data), keeping each broker's bytes within its band when one can."""
        dead_keeping: set[tuple[int, int]] = set()
        dead: set[tuple[int, int]] = set()
        while True:
            over = [b for b in self.live if self.count[b] > self.count_high]
            under = [b for b in self.destinations if self.count[b] < self.count_low]
            if not over and not under:
                return
            sources = sorted(over or [b for b in self.live if self.count[b] > self.count_low], key=lambda b: (-self.count[b], b))
            destinations = sorted(under or [b for b in self.destinations if self.count[b] < self.count_high],
                                  key=lambda b: (self.count[b], b))
            if not (self._move_one(sources, destinations, keep_bytes=True, dead=dead_keeping)
                    or self._move_one(sources, destinations, keep_bytes=False, dead=dead)):
                return

    def _move_one(self, sources: list[int], destinations: list[int], *, keep_bytes: bool, dead: set[tuple[int, int]]) -> bool:
        """Move the smallest replica that can go from one of `sources` to one of
        `destinations` (tried in order). A pair with nothing to move is `dead` for the
        rest of the phase, and each pair's scan goes on from where its last one stopped:
        what could not move from a broker to another rarely can later (measured: rescanning
        made 100,000 partitions take 30 s instead of 3)."""
        for source in sources:
            listed = self.by_size[source]
            for destination in destinations:
                if destination == source or (source, destination) in dead:
                    continue
                index = max(self.front[source], self.cursor.get((source, destination), 0))
                scanned = 0
                while index < len(listed) and scanned < SCAN_LIMIT:
                    size, key = listed[index]
                    if (key, source) in self.gone:
                        index += 1
                        continue
                    scanned += 1
                    if keep_bytes and (self.size_on[destination] + size > self.share[destination] + self.tolerance(destination)
                                       or self.size_on[source] - size < self.share[source] - self.tolerance(source)):
                        break  # the smallest does not fit: no larger one will
                    if self.can_move(key, source, destination):
                        self.cursor[(source, destination)] = index + 1
                        self.apply(key, source, destination, "replicas")
                        return True
                    index += 1
                self.cursor[(source, destination)] = index
                dead.add((source, destination))
        return False

    def tolerance(self, b: int) -> float:
        return max(DISK_BAND * self.share[b], MIN_DISK_GAP)

    def even_bytes(self) -> None:
        """Bytes from brokers above their share to those below: for each pair, the
        largest replica that fits what both lack (no byte moved beyond the lower bound),
        else the move that most reduces how far both are from their shares."""
        keep_counts = "replicas" in self.options.goals
        while True:
            gap = {b: self.size_on[b] - self.share[b] for b in self.live}
            if all(abs(gap[b]) <= self.tolerance(b) for b in self.live if gap[b] > 0 or b in self.destinations):
                return
            sources = sorted((b for b in self.live if gap[b] > 0), key=lambda b: (-gap[b], b))
            destinations = sorted((b for b in self.destinations if gap[b] < 0), key=lambda b: (gap[b], b))
            pairs = [(s, d) for s in sources for d in destinations]
            blocked = [(s, d) for s, d in pairs
                       if keep_counts and (self.count[d] + 1 > self.count_high or self.count[s] - 1 < self.count_low)]
            free = [pair for pair in pairs if pair not in blocked]
            found = self._fitting(free, gap)
            if found is None:
                swap = self._swapping(blocked, gap)
                if swap is not None:
                    self.apply(*swap[0], "disk")
                    self.apply(*swap[1], "disk")
                    continue
                found = self._overshooting(free, gap)
            if found is None:
                return
            self.apply(*found, "disk")

    def _fitting(self, pairs: list[tuple[int, int]], gap: Mapping[int, int]) -> tuple[Key, int, int] | None:
        for source, destination in pairs:
            for size, key in self.candidates(source, below=min(gap[source], -gap[destination])):
                if size == 0:
                    break
                if self.can_move(key, source, destination):
                    return key, source, destination
        return None

    def _swapping(self, pairs: list[tuple[int, int]], gap: Mapping[int, int]) -> tuple[tuple[Key, int, int], tuple[Key, int, int]] | None:
        """For a pair whose replica counts are at the band's edge: a large replica one way
        and a small one back (counts unchanged): the largest that fits what both lack, else
        the smallest beyond it when that still brings both closer to their shares."""
        for source, destination in pairs:
            over, lack = gap[source], -gap[destination]
            fit = min(over, lack)
            for small_size, small in self.candidates(destination, smallest=True):
                if small_size * 4 > fit:
                    break  # only a small replica back: what goes back moves too
                if not self.can_move(small, destination, source):
                    continue
                choices = (self.candidates(source, below=fit + small_size), self.candidates(source, above=fit + small_size))
                for choice in choices:
                    for size, key in choice:
                        if size <= small_size:
                            break
                        if key == small or not self.can_move(key, source, destination):
                            continue
                        net = size - small_size
                        if over + lack - abs(over - net) - abs(lack - net) > MIN_DISK_GAP:
                            return (key, source, destination), (small, destination, source)
                        break
                break
        return None

    def _overshooting(self, pairs: list[tuple[int, int]], gap: Mapping[int, int]) -> tuple[Key, int, int] | None:
        best, gain = None, 0
        for source, destination in pairs:
            over, lack = gap[source], -gap[destination]
            for size, key in self.candidates(source, above=min(over, lack)):
                if size >= over + lack:
                    break
                if self.can_move(key, source, destination):
                    # How much closer the two get to their shares (sum of distances).
                    better = over + lack - abs(over - size) - abs(lack - size)
                    if better > gain:
                        best, gain = (key, source, destination), better
                    break  # the smallest that fits is this pair's best
        return best if gain > MIN_DISK_GAP else None

    def even_leaders(self) -> None:
        lead = Counter({b: 0 for b in self.live})
        for replicas in self.target.values():
            if replicas and replicas[0] in lead:
                lead[replicas[0]] += 1
        mean = sum(lead.values()) / len(self.live) if self.live else 0
        high = math.ceil(mean)
        for _ in range(3):
            changed = False
            for key in sorted(self.movable):
                replicas = self.target[key]
                first = replicas[0]
                if lead[first] <= high:
                    continue
                best = min(replicas[1:], key=lambda b: (lead[b], b), default=None)
                if best is None or lead[best] + 1 > lead[first] - 1:
                    continue
                replicas.remove(best)
                replicas.insert(0, best)
                lead[first] -= 1
                lead[best] += 1
                self.reason.setdefault(key, "leaders")
                changed = True
            if not changed:
                break

    # -- the plan ---------------------------------------------------------------------

    def plan(self) -> BalancePlan:
        goals = self.options.goals
        if len(self.live) > 1:
            if "replicas" in goals or "disk" in goals:
                self.fix_racks()
                self.offload_full()
            # Bytes first with big replicas, then counts with small ones, then bytes again
            # for what the small ones changed.
            if "disk" in goals:
                self.even_bytes()
            if "replicas" in goals:
                self.even_replicas()
            if "disk" in goals:
                self.even_bytes()
            if "leaders" in goals:
                self.even_leaders()
        self._judge()
        moves = []
        for key, replicas in self.target.items():
            facts = self.facts[key]
            if tuple(replicas) == facts.replicas:
                continue
            added = sum(1 for b in replicas if b not in facts.replicas)
            moves.append(PlannedMove(topic=key[0], partition=key[1], current=facts.replicas, target=tuple(replicas),
                                     size_bytes=facts.size_bytes, bytes_moved=added * facts.size_bytes,
                                     reason=self.reason.get(key, "leaders")))
        elect = tuple(k for k, replicas in self.target.items()
                      if k in self.movable and replicas and self.facts[k].leader != replicas[0])
        leaders_before, leaders_after = self.leaders_before, self._leaders_after()
        return BalancePlan(moves=tuple(moves), brokers=self._brokers(leaders_before, leaders_after),
                           bytes_moved=sum(m.bytes_moved for m in moves), lower_bound_bytes=lower_bound(self.size_before, self.share),
                           skew=self._skew(leaders_before, leaders_after), elect=elect,
                           left_alone=self.left_alone, unmet=tuple(dict.fromkeys(self.unmet)))

    def _judge(self) -> None:
        """The goals the plan leaves unmet (further from the mean than UNMET_*), as the
        brokers will stand after it."""
        goals = self.options.goals
        budget = " within --max-move" if self.full_budget else ""
        mean_count = sum(self.count.values()) / len(self.live) if self.live else 0
        if "replicas" in goals and mean_count:
            out = [b for b in self.live if abs(self.count[b] - mean_count) > UNMET_COUNT * mean_count
                   and (self.count[b] > mean_count or b in self.destinations)]
            if out:
                self.unmet.append("replica count: " + ", ".join(f"broker {b} {self.count[b] / mean_count:.2f}x the mean" for b in out)
                                  + ": no move left that keeps the goals above it" + budget)
        if "disk" in goals:
            out = [b for b in self.live if abs(self.size_on[b] - self.share[b]) > max(UNMET_DISK * self.share[b], MIN_DISK_GAP)
                   and (self.size_on[b] > self.share[b] or b in self.destinations)]
            if out:
                self.unmet.append("disk bytes: " + ", ".join(
                    f"broker {b} {self.size_on[b] / max(self.share[b], 1):.2f}x its share" for b in out)
                    + ": no replica left whose move brings them closer" + budget)

    def _leaders_after(self) -> Counter[int]:
        """Partitions each broker leads once the plan's preferred leaders are elected."""
        lead: Counter[int] = Counter({b: 0 for b in self.live})
        for key, facts in self.facts.items():
            leader = self.target[key][0] if key in self.movable else facts.leader
            if leader is not None and leader in lead:
                lead[leader] += 1
        return lead

    def _brokers(self, before: Mapping[int, int], after: Mapping[int, int]) -> tuple[BrokerBalance, ...]:
        rows = []
        for b in self.live:
            facts = self.brokers[b]
            used = None if facts.used_bytes is None else facts.used_bytes + self.incoming[b] - self.outgoing[b]
            rows.append(BrokerBalance(broker=b, rack=facts.rack, bytes_before=self.size_before[b], bytes_after=self.size_on[b],
                                      bytes_target=self.share[b], replicas_before=self.count_before[b], replicas_after=self.count[b],
                                      leaders_before=before[b], leaders_after=after[b], capacity_bytes=facts.capacity_bytes,
                                      used_bytes_after=used, bytes_in=self.incoming[b], bytes_out=self.outgoing[b]))
        return tuple(rows)

    def _skew(self, before: Mapping[int, int], after: Mapping[int, int]) -> tuple[Skew, ...]:
        def ratio(values: Mapping[int, float]) -> float:
            mean = sum(values.values()) / len(values) if values else 0
            return round(max(values.values()) / mean, 3) if mean else 1.0

        return (Skew(measure="bytes", before=ratio(self.size_before), after=ratio(self.size_on)),
                Skew(measure="replicas", before=ratio(self.count_before), after=ratio(self.count)),
                Skew(measure="leaders", before=ratio(before), after=ratio(after)))


def plan_balance(brokers: Mapping[int, BrokerFacts], partitions: Iterable[PartitionFacts], options: Options | None = None) -> BalancePlan:
    """The plan that balances `partitions` over the live `brokers` (see the module's goals)."""
    return _Planner(brokers, partitions, options or Options()).plan()


def plan_cluster(session: AdminSession, options: Options | None = None) -> tuple[BalancePlan, ClusterFacts]:
    """The plan for the cluster `session` reaches, and the facts it was made from. Unknown topics or brokers in `options`: an
    error naming them, before anything is planned."""
    from kctl.admin.client.errors import no_such_topic
    from kctl.errors import NotFoundError

    options = options or Options()
    facts = read_facts(session, action="plan a balance")
    for topic in sorted(options.topics or ()):
        if not facts.metadata.has(topic):
            raise no_such_topic(f"balance topic {topic}", topic)
    unknown = sorted(set(options.destinations or ()) - set(facts.brokers))
    if unknown:
        raise NotFoundError(action="balance onto broker(s) " + ", ".join(map(str, unknown)),
                            cause=f"no such live broker (brokers: {', '.join(map(str, sorted(facts.brokers)))})")
    return plan_balance(facts.brokers, facts.partitions, options), facts
