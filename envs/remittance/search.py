"""Indexed search of the receivables: the same hits as a scan with :func:`item_matches`, without
the scan.

A query hits an item when its normalised claim ref equals the query, contains it (queries of 4+
characters) or lies within two typing errors of it (optimal-string-alignment distance), when its
invoice equals the query, or when its patient name contains it (4+ characters); see
:func:`backoffice.envs.remittance.tables.item_matches`, which stays the definition.
:class:`SearchIndex` finds the items a query hits without looking at the others:

- **within two edits**: if ``osa(q, r) <= 2``, an optimal alignment turns ``q`` into ``r`` with at
  most two edits, and deleting characters gives a common string: a substitution deletes its
  character on both sides (at the same position), a transposition ``xy``/``yx`` deletes ``x`` on
  both (at position ``i + 1`` of ``q`` and ``i`` of ``r``), an insertion or a deletion deletes on
  one side. So at most two characters go on each side, and when two go on both, there is no
  insertion or deletion and the deleted positions pair up, in order, with ``q``'s position equal
  to ``r``'s or one more. The index holds every deletion variant of every ref (46 for a
  9-character ref) encoded as an integer in sorted numpy arrays, the two-deletion variants with
  their deleted positions; a query looks up its own variants, keeping a two-deletion match of
  a two-deletion variant only when the positions pair up. The few candidates are then checked
  with :func:`osa_distance`. Refs the encoding cannot hold (other characters than ``0-9A-Z`` or
  longer than :data:`MAX_ENCODED`) are checked for every query.
- **substring** (refs and names): a string containing the query contains each of its 4-grams;
  the candidates are the posting list of the query's rarest 4-gram, checked with ``in``.
- **invoice**: a dictionary of normalised invoice numbers.

:meth:`SearchIndex.matches` remembers its last :data:`QUERY_MEMO` answers: they are a pure
function of the index (immutable, one per snapshot) and the query, and an episode, and every
later episode of the same task, asks again for the same refs.

:func:`search_store` (the tool's search) takes the index of the snapshot and adds the rows the
episode inserted; every hit is checked once more on its live row with :func:`item_matches`.
:class:`NearIndex` is the small incremental form of the first bullet (a dictionary of deletion
variants, without positions) that the generator uses to keep refs apart.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from backoffice.envs.remittance.tables import SEARCH_LIMIT, item_matches, norm, osa_distance, search_order_key

if TYPE_CHECKING:
    from backoffice.envs.core.store import Snapshot, Store

#: edits (optimal string alignment) within which a claim ref matches a query
MAX_EDITS = 2
#: length of the n-grams of the substring index (the substring rules need 4+ characters)
GRAM = 4
#: the longest string whose variants are encoded: ``int(s, 36) * 16 + len(s)`` stays below 2**63
MAX_ENCODED = 11
#: answers :meth:`SearchIndex.matches` remembers (per index, so per snapshot)
QUERY_MEMO = 256
_ENCODABLE = re.compile(r"[0-9A-Z]*")
#: ASCII byte -> base-36 digit (only ``0-9A-Z`` are ever looked up)
_DIGIT = np.zeros(256, dtype=np.int64)
for _i, _ch in enumerate("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
    _DIGIT[ord(_ch)] = _i


def deletion_variants(s: str) -> set[str]:
    """Every string obtained from ``s`` by deleting at most :data:`MAX_EDITS` (two) characters,
    ``s`` included."""
    n = len(s)
    out = {s}
    out.update([s[:i] + s[i + 1:] for i in range(n)])
    out.update([s[:i] + s[i + 1:j] + s[j + 1:] for i in range(n) for j in range(i + 1, n)])
    return out


def encodable(s: str) -> bool:
    """Can :func:`encode` hold ``s`` (only ``0-9A-Z``, at most :data:`MAX_ENCODED` characters)?"""
    return len(s) <= MAX_ENCODED and _ENCODABLE.fullmatch(s) is not None


def encode(s: str) -> int:
    """An encodable string as an integer, one-to-one: its base-36 value and its length."""
    return (int(s, 36) if s else 0) * 16 + len(s)


class _Ways:
    """The ways to delete at most :data:`MAX_EDITS` characters from a string of one length that
    leave at most :data:`MAX_ENCODED` of them: ``matrix @ digits + lens`` encodes the variants
    (:func:`encode`, ``digits`` the string's base-36 digits), ``gone`` counts the deleted
    characters and ``first``/``second`` are their positions (-1 when not deleted)."""

    def __init__(self, length: int):
        rows: list[list[int]] = []
        gone: list[tuple[int, ...]] = []
        for d in range(min(MAX_EDITS, length) + 1):
            if length - d > MAX_ENCODED:
                continue
            for deleted in itertools.combinations(range(length), d):
                kept = [c for c in range(length) if c not in deleted]
                row = [0] * length
                for place, c in enumerate(reversed(kept)):
                    row[c] = 16 * 36 ** place
                rows.append(row)
                gone.append(deleted)
        self.matrix = np.array(rows, dtype=np.int64).reshape(len(rows), length)
        self.gone = np.array([len(g) for g in gone], dtype=np.int64)
        self.lens = length - self.gone
        self.first = np.array([g[0] if len(g) > 0 else -1 for g in gone], dtype=np.int32)
        self.second = np.array([g[1] if len(g) > 1 else -1 for g in gone], dtype=np.int32)


@lru_cache(maxsize=64)
def _ways(length: int) -> _Ways:
    return _Ways(length)


class NearIndex:
    """A growing set of strings that answers "is a member within two edits of ``s``?" from
    their deletion variants (a dictionary), checking the few candidates with
    :func:`osa_distance`: the same answer as comparing ``s`` with every member."""

    def __init__(self, members: Iterable[str] = ()):
        self._members: set[str] = set()
        self._by_variant: dict[str, list[str]] = {}
        for m in members:
            self.add(m)

    def __contains__(self, s: object) -> bool:
        return s in self._members

    def __len__(self) -> int:
        return len(self._members)

    def add(self, s: str) -> None:
        if s in self._members:
            return
        self._members.add(s)
        for v in deletion_variants(s):
            self._by_variant.setdefault(v, []).append(s)

    def near(self, s: str) -> list[str]:
        """The members within :data:`MAX_EDITS` edits of ``s``, sorted."""
        found = {m for v in deletion_variants(s) for m in self._by_variant.get(v, ())}
        return sorted(m for m in found if osa_distance(s, m) <= MAX_EDITS)

    def any_near(self, s: str) -> bool:
        """Is some member within :data:`MAX_EDITS` edits of ``s``?"""
        seen: set[str] = set()
        for v in deletion_variants(s):
            for m in self._by_variant.get(v, ()):
                if m not in seen:
                    seen.add(m)
                    if osa_distance(s, m) <= MAX_EDITS:
                        return True
        return False


def _grams(s: str) -> set[str]:
    return {s[i:i + GRAM] for i in range(len(s) - GRAM + 1)}


_GRAM_PLACES = 36 ** np.arange(GRAM - 1, -1, -1, dtype=np.int64)


class _GramIndex:
    """Which strings may contain a query of :data:`GRAM`+ characters: those containing its
    rarest :data:`GRAM`-gram (a string containing the query contains each of its grams). The
    grams of strings of ``0-9A-Z`` are encoded in a sorted numpy array; those of other strings
    sit in a dictionary."""

    def __init__(self, strings: Sequence[str]):
        self._strings = strings
        self._longest = max((len(s) for s in strings), default=0)
        self._exact: dict[str, list[int]] = {}  # a query as long as the longest string can only equal it
        for pos, s in enumerate(strings):
            if len(s) == self._longest:
                self._exact.setdefault(s, []).append(pos)
        self._other: dict[str, list[int]] = {}
        by_length: dict[int, list[int]] = {}
        for pos, s in enumerate(strings):
            if len(s) < GRAM:
                continue
            if _ENCODABLE.fullmatch(s) is not None:
                by_length.setdefault(len(s), []).append(pos)
            else:
                for g in sorted(_grams(s)):
                    self._other.setdefault(g, []).append(pos)
        grams: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        for length in sorted(by_length):
            positions = np.array(by_length[length], dtype=np.int32)
            raw = np.frombuffer("".join(strings[p] for p in by_length[length]).encode("ascii"), dtype=np.uint8)
            digits = _DIGIT[raw].reshape(len(positions), length)
            starts = length - GRAM + 1
            codes = np.stack([digits[:, i:i + GRAM] @ _GRAM_PLACES for i in range(starts)], axis=1)  # (string, start)
            grams.append(codes.ravel())
            owners.append(np.repeat(positions, starts))
        if grams:
            allg, allo = np.concatenate(grams), np.concatenate(owners)
            order = np.argsort(allg, kind="stable")
            self._codes, self._owners = allg[order], allo[order]
        else:
            self._codes, self._owners = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)

    def containing(self, q: str) -> set[int]:
        """Positions of the strings that contain ``q`` (``len(q) >= GRAM``)."""
        if len(q) >= self._longest:  # only a string as long as q can contain it: an equal one
            return set(self._exact.get(q, ()))
        candidates: list[int] = []
        grams = sorted(_grams(q))
        best: Sequence[int] | None = None
        for g in grams:  # the strings outside 0-9A-Z
            found = self._other.get(g)
            if not found:
                best = ()
                break
            if best is None or len(found) < len(best):
                best = found
        candidates += best or ()
        if len(self._codes) and _ENCODABLE.fullmatch(q) is not None:  # the strings of 0-9A-Z
            keys = np.array([int(g, 36) for g in grams], dtype=np.int64)  # as encoded: base-36 digits
            lo = np.searchsorted(self._codes, keys, side="left")
            counts = np.searchsorted(self._codes, keys, side="right") - lo
            k = int(np.argmin(counts))
            candidates += self._owners[lo[k]:lo[k] + counts[k]].tolist()
        strings = self._strings
        return {p for p in candidates if q in strings[p]}


class _Variants:
    """Encoded deletion variants in a sorted array: per variant, the position of the item it
    belongs to, the positions deleted and the characters deleted there (base-36 digits; -1 when
    fewer were deleted)."""

    def __init__(self, parts: list[tuple[np.ndarray, ...]]):
        if parts:
            cols = [np.concatenate(col) for col in zip(*parts, strict=True)]
            order = np.argsort(cols[0], kind="stable")
            self.values, self.owners, self.first, self.second, self.char1, self.char2 = (c[order] for c in cols)
        else:
            self.values = np.zeros(0, dtype=np.int64)
            self.owners = self.first = self.second = self.char1 = self.char2 = np.zeros(0, dtype=np.int32)

    def find(self, keys: np.ndarray, first: np.ndarray, second: np.ndarray, char1: np.ndarray,
             char2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(owners, sure)`` of the variants equal to ``keys`` (with repeats), for keys that
        deleted ``first``/``second`` (-1: not) holding ``char1``/``char2``. A two-deletion key
        matches a two-deletion variant only when the deleted positions pair up, in order, as a
        substitution (the same position) or a transposition (the key's one more, the same
        character). ``sure``: at most two characters deleted in all, so the two strings are
        within two edits."""
        empty = np.zeros(0, dtype=np.int32)
        if not len(self.values) or not len(keys):
            return empty, empty.astype(bool)
        lo = np.searchsorted(self.values, keys, side="left")
        counts = np.searchsorted(self.values, keys, side="right") - lo
        total = int(counts.sum())
        if not total:
            return empty, empty.astype(bool)
        # the entries lo[k] .. lo[k] + counts[k] - 1 of every key k, in one array
        entries = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)
        kf, ks = np.repeat(first, counts), np.repeat(second, counts)
        vf, vs = self.first[entries], self.second[entries]
        d1, d2 = kf - vf, ks - vs
        paired = (((d1 == 0) | ((d1 == 1) & (np.repeat(char1, counts) == self.char1[entries])))
                  & ((d2 == 0) | ((d2 == 1) & (np.repeat(char2, counts) == self.char2[entries]))))
        deleted = (kf >= 0).astype(np.int8) + (ks >= 0) + (vf >= 0) + (vs >= 0)
        keep = (ks < 0) | (vs < 0) | paired
        return self.owners[entries[keep]], (deleted <= MAX_EDITS)[keep]


class SearchIndex:
    """Which of ``items`` a normalised query hits (:func:`item_matches`), judged on their
    claim refs, invoices and names as they were when the index was built."""

    def __init__(self, items: Sequence[Mapping[str, Any]]):
        self.size = len(items)
        self._refs = [norm(it["claim_ref"]) for it in items]
        self._names = [norm(it["patient_name"]) for it in items]
        self._invoices: dict[str, list[int]] = {}
        self._memo: dict[str, tuple[int, ...]] = {}
        self._ref_grams, self._name_grams = _GramIndex(self._refs), _GramIndex(self._names)
        self._misc: list[int] = []  # refs the variant arrays cannot hold: checked for every query
        by_length: dict[int, list[int]] = {}
        for pos, (it, ref) in enumerate(zip(items, self._refs, strict=True)):
            self._invoices.setdefault(norm(it["invoice"]), []).append(pos)
            if encodable(ref):
                by_length.setdefault(len(ref), []).append(pos)
            else:
                self._misc.append(pos)
        parts: list[tuple[np.ndarray, ...]] = []
        for length in sorted(by_length):
            positions = np.array(by_length[length], dtype=np.int32)
            raw = np.frombuffer("".join(self._refs[p] for p in by_length[length]).encode("ascii"), dtype=np.uint8)
            digits = _DIGIT[raw].reshape(len(positions), length)
            ways, n = _ways(length), len(positions)
            values = digits @ ways.matrix.T + ways.lens  # (item, way)
            parts.append((values.ravel(), np.repeat(positions, len(ways.lens)),
                          np.tile(ways.first, n), np.tile(ways.second, n),
                          _deleted_chars(digits, ways.first).ravel(), _deleted_chars(digits, ways.second).ravel()))
        self._variants = _Variants(parts)

    def _near(self, q: str) -> set[int]:
        """Positions whose ref is within :data:`MAX_EDITS` edits of ``q``."""
        found: set[int] = {p for p in self._misc if osa_distance(q, self._refs[p]) <= MAX_EDITS}
        if len(q) > MAX_ENCODED + MAX_EDITS:
            return found  # a common variant would be longer than any encoded ref
        if _ENCODABLE.fullmatch(q) is not None:  # every variant of q is encodable but the longest
            ways = _ways(len(q))
            digits = _DIGIT[np.frombuffer(q.encode("ascii"), dtype=np.uint8)]
            keys = ways.matrix @ digits + ways.lens
            first, second = ways.first, ways.second
            # (where a way deletes nothing, -1 reads the last digit: find never compares it)
            char1, char2 = digits[first].astype(np.int32), digits[second].astype(np.int32)
        else:  # other characters: only variants that delete all of them are encodable
            listed = sorted((encode(v), d) for d, v in _variants_with_positions(q) if encodable(v))
            if not listed:
                return found
            keys = np.array([k for k, _ in listed], dtype=np.int64)
            first = np.array([d[0] if d else -1 for _, d in listed], dtype=np.int32)
            second = np.array([d[1] if len(d) > 1 else -1 for _, d in listed], dtype=np.int32)
            char1, char2 = (np.array([_char_code(q, int(i)) for i in col], dtype=np.int32) for col in (first, second))
        owners, sure = self._variants.find(keys, first, second, char1, char2)
        found.update(owners[sure].tolist())
        found.update(p for p in set(owners[~sure].tolist()) if p not in found and osa_distance(q, self._refs[p]) <= MAX_EDITS)
        return found

    def matches(self, q: str) -> tuple[int, ...]:
        """Sorted positions of the items the normalised query ``q`` hits (the last
        :data:`QUERY_MEMO` answers are remembered)."""
        hit = self._memo.get(q)
        if hit is not None:
            return hit
        if len(q) < 3:
            return ()  # item_matches rejects every item
        found = self._near(q)  # equal refs included (no edit)
        found.update(self._invoices.get(q, ()))
        if len(q) >= GRAM:
            found.update(self._ref_grams.containing(q))
            found.update(self._name_grams.containing(q))
        hit = tuple(sorted(found))
        if len(self._memo) >= QUERY_MEMO:
            del self._memo[next(iter(self._memo))]  # the oldest answer
        self._memo[q] = hit
        return hit


def _deleted_chars(digits: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``digits[:, p]`` for each deleted position ``p`` (-1 where none is)."""
    if not digits.shape[1]:  # the empty string: nothing to delete
        return np.full((digits.shape[0], len(positions)), -1, dtype=np.int32)
    return np.where(positions >= 0, digits[:, np.maximum(positions, 0)], -1).astype(np.int32)


def _char_code(s: str, i: int) -> int:
    """The base-36 digit of ``s[i]`` (-1 for no position, -2 for a character outside ``0-9A-Z``)."""
    if i < 0:
        return -1
    ch = s[i]
    return int(_DIGIT[ord(ch)]) if _ENCODABLE.fullmatch(ch) else -2


def _variants_with_positions(s: str) -> list[tuple[tuple[int, ...], str]]:
    """``(deleted positions, variant)`` for every way to delete at most two characters."""
    n = len(s)
    out: list[tuple[tuple[int, ...], str]] = [((), s)]
    out += [((i,), s[:i] + s[i + 1:]) for i in range(n)]
    out += [((i, j), s[:i] + s[i + 1:j] + s[j + 1:]) for i in range(n) for j in range(i + 1, n)]
    return out


def _ranked(hits: list[Mapping[str, Any]], task_seed: int, limit: int | None) -> list[Mapping[str, Any]]:
    hits.sort(key=lambda it: (search_order_key(task_seed, it["id"]), it["id"]))
    return hits[:limit]


class ItemSearch:
    """Search over a list of item dicts (the generator's world while it is drawn): the items
    themselves are returned, with the ids they carry at query time."""

    def __init__(self, items: Sequence[Mapping[str, Any]]):
        self.items = list(items)
        self.index = SearchIndex(self.items)

    def search(self, query: str, task_seed: int, payer_id: str = "", limit: int = SEARCH_LIMIT) -> list[Mapping[str, Any]]:
        """The items hit by ``query`` in the seeded order, at most ``limit`` of them."""
        q = norm(query)
        hits = [it for it in (self.items[p] for p in self.index.matches(q)) if not payer_id or it["payer_id"] == payer_id]
        return _ranked(hits, task_seed, limit)


def search_items(items: Iterable[Mapping[str, Any]], query: str, task_seed: int, payer_id: str = "",
                 limit: int = SEARCH_LIMIT) -> list[Mapping[str, Any]]:
    """Items hit by ``query`` in the seeded order (at most ``limit``)."""
    return ItemSearch(list(items)).search(query, task_seed, payer_id, limit)


# -- the index of a snapshot's receivables, shared by every store of the snapshot --------------------
#: the fields a search reads
SEARCHED = ("claim_ref", "invoice", "patient_name")


def _build_snapshot_index(snapshot: Snapshot) -> tuple[SearchIndex, tuple[str, ...]]:
    table = snapshot.table("open_items")
    ids = tuple(table)
    return SearchIndex([table[i] for i in ids]), ids


def snapshot_index(snapshot: Snapshot) -> tuple[SearchIndex, tuple[str, ...]]:
    """The search index of a snapshot's ``open_items`` and the item id of each position, built
    on first use and kept with the snapshot (an immutable snapshot's index never goes stale)."""
    index: tuple[SearchIndex, tuple[str, ...]] = snapshot.memo(("remittance", "search_index"), _build_snapshot_index)
    return index


def search_live(store: Store, query: str, task_seed: int, payer_id: str = "", limit: int | None = SEARCH_LIMIT
                ) -> list[Mapping[str, Any]]:
    """:func:`search_store` without the copies: the live rows themselves (read-only: never
    mutate them), for a caller that only reads them; ``limit`` None: every hit."""
    q = norm(query)
    if len(q) < 3:
        return []
    index, ids = snapshot_index(store.snapshot)
    base = store.snapshot.table("open_items")
    hits: list[Mapping[str, Any]] = []
    for p in index.matches(q):
        rid = ids[p]
        row = store.peek("open_items", rid)
        if row is None or (payer_id and row["payer_id"] != payer_id):
            continue
        if row is not (old := base[rid]) and any(row[f] != old[f] for f in SEARCHED) and not item_matches(q, row):
            continue
        hits.append(row)
    if not payer_id:  # patient items carry no payer: a payer filter excludes them
        # the rows the episode inserted (ids not in the snapshot) that are patient items
        for rid in store.written_ids("open_items"):
            if rid not in base:
                row = store.peek("open_items", rid)
                if row is not None and row.get("responsibility") == "patient" and item_matches(q, row):
                    hits.append(row)
    return _ranked(hits, task_seed, limit)


def search_store(store: Store, query: str, task_seed: int, payer_id: str = "", limit: int | None = SEARCH_LIMIT) -> list[dict[str, Any]]:
    """The live ``open_items`` rows hit by ``query`` in the seeded order, at most ``limit``
    (copies): the same rows as :func:`search_items` over every live row, at a cost that does not
    grow with the table.

    The snapshot's hits come from :func:`snapshot_index`; the rows the episode inserted are the
    patient items (``transfer_to_patient``, the only insert), read from the store's written ids
    (O(rows written)); an episode never changes a searched field of an existing item (only
    balances and statuses), and a live row whose searched fields differ from the snapshot's
    would be judged again with :func:`item_matches`."""
    return [dict(h) for h in search_live(store, query, task_seed, payer_id, limit)]
