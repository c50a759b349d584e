"""The name index behind ``find_people``: who matches a name query, without scanning ``people``.

``find_people(name)`` matches a person when the query (stripped, case-insensitive) is a
substring of their name, or when the query's last word is their surname (the last word of their
name). Neither is an equality on a field, so the store's secondary indexes cannot answer it; a
:class:`NameIndex` built once per snapshot (and shared by every store of it) can:

- the surname part is a dict look-up: ``surname -> ids``;
- a query without spaces lies inside one word of the name: the words of the vocabulary
  (the distinct words of every name, bounded by the names in use, not by the number of
  people) that contain it, then ``word -> ids``;
- a query with spaces starts with the end of a word and ends with the start of a word: the
  words with that prefix (a range of the sorted vocabulary, by bisection) or the words with
  that suffix (a range of the sorted reversed vocabulary), whichever names fewer people, and
  each of those people checked against the full query.

So a query costs O(log vocabulary + matching people), not O(people). ``people`` is reference
data no desk tool writes; rows an episode did write anyway are merged in from the store's
diff (O(rows written)), so the answer always equals the plain scan (:func:`matches`). The index
also remembers its latest answers (:meth:`NameIndex.cached_search`) and the rows
``find_people`` shows (:meth:`NameIndex.summary`), which the tool reads while the episode has
written no person.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from typing import Any

from backoffice.envs.core.store import Snapshot, Store

__all__ = ["NameIndex", "find_people_ids", "matches", "name_index"]


def _query(name: str) -> tuple[str, str]:
    """The normalised query and its last word (the query itself when it has no word)."""
    query = name.strip().lower()
    words = query.split()
    return query, (words[-1] if words else query)


def matches(name: str, person_name: str) -> bool:
    """The ``find_people`` predicate: ``name`` (a query) matches ``person_name``."""
    query, last = _query(name)
    lowered = person_name.lower()
    return query in lowered or lowered.split()[-1] == last


def _prefixed(sorted_words: list[str], prefix: str) -> Iterable[str]:
    """The words of ``sorted_words`` starting with ``prefix`` (a contiguous range)."""
    i = bisect_left(sorted_words, prefix)
    while i < len(sorted_words) and sorted_words[i].startswith(prefix):
        yield sorted_words[i]
        i += 1


class NameIndex:
    """Word and surname indexes over the ``people`` of one snapshot (see the module doc)."""

    def __init__(self, people: Mapping[str, Mapping[str, Any]]):
        self.lowered: dict[str, str] = {}
        by_word: dict[str, list[str]] = {}
        by_surname: dict[str, list[str]] = {}
        for pid, row in people.items():  # id order: every id list below is sorted
            lowered = row["name"].lower()
            self.lowered[pid] = lowered
            words = lowered.split()
            for word in dict.fromkeys(words):
                by_word.setdefault(word, []).append(pid)
            by_surname.setdefault(words[-1] if words else "", []).append(pid)
        self.by_word = by_word
        self.by_surname = by_surname
        self.words = sorted(by_word)
        self.reversed_words = sorted(w[::-1] for w in by_word)
        self.ids = list(people)
        self._people = people
        self._searches: dict[str, list[str]] = {}
        self._summaries: dict[str, dict[str, Any]] = {}

    def _with_words(self, words: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for word in words:
            out.update(self.by_word[word])
        return out

    def search(self, name: str) -> list[str]:
        """Sorted ids of the snapshot's people matching ``name`` (the :func:`matches` predicate)."""
        query, last = _query(name)
        if not query:
            return list(self.ids)  # the empty query is a substring of every name
        hits = set(self.by_surname.get(last, ()))
        words = query.split()
        if len(words) == 1 and words[0] == query:
            # no whitespace: the query lies inside one word of the name
            hits.update(self._with_words(w for w in self.words if query in w))
        else:
            # candidates from the rarer side (a word ending like the query's first word, or one
            # starting like its last word), each checked against the whole query
            ends = list(_prefixed(self.words, words[-1]))
            starts = [w[::-1] for w in _prefixed(self.reversed_words, words[0][::-1])]
            side = min(ends, starts, key=lambda ws: sum(len(self.by_word[w]) for w in ws))
            hits.update(pid for pid in self._with_words(side) if query in self.lowered[pid])
        return sorted(hits)

    def cached_search(self, name: str) -> list[str]:
        """:meth:`search`, remembered per query (the latest :data:`SEARCH_CACHE` distinct
        queries): the returned list is shared, treat it as read-only."""
        hit = self._searches.get(name)
        if hit is None:
            if len(self._searches) >= SEARCH_CACHE:
                self._searches.clear()
            hit = self._searches[name] = self.search(name)
        return hit

    def summary(self, pid: str) -> dict[str, Any]:
        """``find_people``'s row for the snapshot's person ``pid`` (built once; read-only)."""
        out = self._summaries.get(pid)
        if out is None:
            row = self._people[pid]
            out = self._summaries[pid] = {k: row[k] for k in SUMMARY_FIELDS}
        return out


#: the distinct queries a :class:`NameIndex` remembers (a bound on its memory, not on results)
SEARCH_CACHE = 256
#: the fields of a person ``find_people`` returns
SUMMARY_FIELDS = ("id", "name", "title", "department", "email")


def name_index(snapshot: Snapshot) -> NameIndex:
    """The :class:`NameIndex` of ``snapshot``'s people, built on first use and kept as long as
    the snapshot (:meth:`Snapshot.memo`)."""
    return snapshot.memo("approvals.name_index", lambda snap: NameIndex(snap.table("people")))


def find_people_ids(store: Store, name: str) -> list[str]:
    """Sorted ids of the live people matching ``name``: the snapshot's index, merged with the
    people rows the episode wrote (none, through the desk's tools)."""
    ids = name_index(store.snapshot).search(name)
    changed = store.written_ids("people")
    if not changed:
        return ids
    written = set(changed)
    kept = [pid for pid in ids if pid not in written]
    for pid in sorted(changed):
        row = store.get("people", pid)
        if row is not None and matches(name, row["name"]):
            kept.append(pid)
    return sorted(kept)
