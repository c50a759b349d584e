"""Build and verify a domain's release from its generator.

Task ``i`` of a split is generated from a seed derived from ``(domain, split, i)``: train and
heldout draw from different seed streams. The defect tags are dealt to a released split's tasks
in a seeded random order (:func:`task_tag`), every tag equally often, so a task's id or position
says nothing of its tag; a generated task draws its tag from a hash of its index. Rebuilding
reproduces every file byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from backoffice.envs.core.canonical import derive_seed, dumps, hash_obj
from backoffice.envs.core.domain import Domain, Generated
from backoffice.envs.core.release import BLOCK_SIZE, BLOCKED_FILES, FILES, SPLITS, Task, read_jsonl_gz, write_jsonl_gz
from backoffice.envs.core.store import Snapshot
from backoffice.envs.core.trees import probe

SPLIT_LETTER = {"train": "T", "heldout": "H", "generated": "G"}


def make_task_id(domain: Domain, split: str, index: int) -> str:
    """The id of task ``index`` of ``split`` (``APR-T0001``, ``APR-G0042``)."""
    return f"{domain.prefix}-{SPLIT_LETTER[split]}{index:04d}"

#: the version of the released seed states; bumped with an entry in CHANGELOG.md whenever the
#: grading contract or the generators change what a release means
RELEASE_VERSION = "v2"


def task_seed(domain: str, split: str, index: int) -> int:
    """The generator seed of task ``index`` of ``split`` (disjoint streams per split)."""
    return derive_seed("backoffice-gym", domain, split, index)


#: the residues of an index an attacker may read off a task id (index mod 2 ... mod 24)
ID_MODULI = tuple(range(2, 25))
#: how many seeded deals of the tags :func:`task_tag` draws before keeping the most balanced
DEAL_CANDIDATES = 256


#: which columns of :func:`index_features` are numeric (threshold splits); the rest are categorical
ID_NUMERIC = (True, *(False for _ in range(4 + len(ID_MODULI))))


def index_features(index: int) -> list[int]:
    """What a task id shows of its index: the index, its four digits and the index mod 2 … 24."""
    return [index, *(int(d) for d in f"{index:04d}"[-4:]), *(index % m for m in ID_MODULI)]


def _imbalance(tags: list[int], n_tags: int) -> float:
    """Sum over every categorical id feature (digits, residues) of the chi-square statistic of
    its association with the tag: 0 when every value of every feature holds the same tag mix."""
    total = 0.0
    columns = list(zip(*(index_features(i)[1:] for i in range(len(tags)))))
    for column in columns:
        table: dict[int, list[int]] = {}
        for value, tag in zip(column, tags):
            table.setdefault(value, [0] * n_tags)[tag] += 1
        for counts in table.values():
            expected = sum(counts) / n_tags
            total += sum((c - expected) ** 2 / expected for c in counts)
    return total


#: of the most tag-balanced deals, how many are generated to weigh their outcome classes
CLASS_CANDIDATES = 4


@lru_cache(maxsize=64)
def _tag_deals(domain: str, split: str, size: int, n_tags: int) -> tuple[tuple[int, ...], ...]:
    """The :data:`CLASS_CANDIDATES` deals of the tags (an index into the domain's tags per task)
    whose id features are least associated with the tag, best first.

    Each candidate deal orders the tasks by a keyed hash and deals the tags in turn along that
    order, so every tag is dealt equally often and no tag follows an index or its residues; of
    ``DEAL_CANDIDATES`` such deals the least associated are kept (re-randomisation for balance: a
    chance association of a residue class with a tag is an id that says something)."""
    scored = []
    for k in range(DEAL_CANDIDATES):
        order = sorted(range(size), key=lambda i: derive_seed("tag-deal", domain, split, k, i))
        tags = [0] * size
        for rank, i in enumerate(order):
            tags[i] = rank % n_tags
        scored.append((_imbalance(tags, n_tags), k, tuple(tags)))
    scored.sort()
    return tuple(tags for _, _, tags in scored[:CLASS_CANDIDATES])


#: tasks the deal generated to weigh its candidates, kept for :func:`make_task` during a build
_GENERATED: dict[tuple[str, str, str, int, str, int | None], Generated] = {}


def _generated(domain: Domain, split: str, index: int, tag: str, variant: int | None = None) -> Generated:
    key = (domain.name, domain.generator_version, split, index, tag, variant)
    gen = _GENERATED.get(key)
    if gen is None:
        gen = _GENERATED[key] = _generate(domain, task_seed(domain.name, split, index), tag, variant)
    return gen


def _generate(domain: Domain, seed: int, tag: str, variant: int | None, scale: int = 1) -> Generated:
    """``domain.generate``, given the variant only where the release deals one."""
    if variant is None:
        return domain.generate(seed, tag) if scale == 1 else domain.generate(seed, tag, scale=scale)
    return domain.generate(seed, tag, scale=scale, variant=variant)


def _variants(domain: Domain, deal: tuple[int, ...]) -> tuple[int | None, ...]:
    """The variant of each task of a deal (:attr:`Domain.variants`): the k-th task of a tag with
    n declared variants, in index order, gets ``k % n``; ``None`` for the other tags."""
    seen: dict[int, int] = {}
    out: list[int | None] = []
    for t in deal:
        n = domain.variants.get(domain.defect_tags[t])
        if n:
            out.append(seen.get(t, 0) % n)
            seen[t] = seen.get(t, 0) + 1
        else:
            out.append(None)
    return tuple(out)


#: the tree depths of the id attacker the deals are weighed against (``tests/integrity/test_integrity.py``)
ID_TREE_DEPTHS = (1, 2, 3, 4, 6)


@lru_cache(maxsize=16)
def _release_deals(domain: Domain) -> dict[str, tuple[int, ...]]:
    """The tag (an index into the domain's tags) of each task of each released split: of the most
    tag-balanced deals of each split (:func:`_tag_deals`), the pair whose outcomes the task ids
    predict least. The outcome follows the tag only in part, so a residue class can still hold
    more of one outcome: the id attacker (a tree fitted on train over the id features, scored on
    heldout, at every depth of :data:`ID_TREE_DEPTHS`) is run on each pair's generated outcome
    classes, and the pair whose best depth gains least over the class prior is kept."""
    tags = domain.defect_tags
    candidates = {split: _tag_deals(domain.name, split, domain.sizes[split], len(tags)) for split in SPLITS}

    def rows(split: str, deal: tuple[int, ...]) -> list[tuple[list[int], str]]:
        variants = _variants(domain, deal)
        return [(index_features(i), str(_generated(domain, split, i, tags[t], variants[i]).key.get("outcome_class")))
                for i, t in enumerate(deal)]

    train = [rows("train", d) for d in candidates["train"]]
    heldout = [rows("heldout", d) for d in candidates["heldout"]]
    pairs = [(a, b) for a in range(len(train)) for b in range(len(heldout))]

    def worst_gain(pair: tuple[int, int]) -> float:
        return max(probe(train[pair[0]], heldout[pair[1]], ID_NUMERIC, depth=d).gain for d in ID_TREE_DEPTHS)

    a, b = min(pairs, key=lambda pair: (worst_gain(pair), pair))
    return {"train": candidates["train"][a], "heldout": candidates["heldout"][b]}


def task_tag(domain: Domain, split: str, index: int) -> str:
    """The defect tag of task ``index`` of ``split``: in a released split, as :func:`_deal`
    dealt them (each tag equally often, none tied to an index, its digits or residues, nor is
    the outcome); a generated task's tag is a keyed hash of ``(domain, index)``. A released
    split's tags are its answer keys' first ``defect_tags`` (cheaper to read than to deal)."""
    tags = domain.defect_tags
    size = domain.sizes.get(split) if split in SPLITS else None
    if size is None or not 0 <= index < size:
        return tags[derive_seed("tag", domain.name, split, index) % len(tags)]
    return tags[_release_deals(domain)[split][index]]


def make_task(domain: Domain, split: str, index: int, scale: int = 1) -> tuple[Task, Snapshot, dict[str, Any]]:
    """Generate one task: its public part, its world snapshot and its answer key.

    ``scale`` > 1 builds the same task in a world about ``scale`` times the released size (the
    domain generator's ``scale`` option: more distractor rows, the same answer), for
    benchmarks and stress tests; released tasks are built at scale 1."""
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    seed = task_seed(domain.name, split, index)
    tag = task_tag(domain, split, index)
    released = split in SPLITS and 0 <= index < domain.sizes.get(split, 0)
    variant = _variants(domain, _release_deals(domain)[split])[index] if released and domain.variants else None
    if scale != 1:
        gen = _generate(domain, seed, tag, variant, scale)
    elif released:
        gen = _generated(domain, split, index, tag, variant)
    else:
        gen = domain.generate(seed, tag)
    task_id = make_task_id(domain, split, index)
    body = dict(gen.task)
    task = Task.from_json({
        **body, "task_id": task_id, "domain": domain.name, "split": split, "seed": seed,
        "snapshot_id": task_id,
    })
    bad = [t for t in task.allowed_tools if t not in domain.toolkit.tools]
    if bad:
        raise ValueError(f"{task_id}: allowed_tools names unknown tools {bad}")
    if domain.tables:
        drawn = set(gen.snapshot) - {"clock"}
        if drawn != set(domain.tables):
            raise ValueError(f"{task_id}: the snapshot's tables differ from the domain's declared tables: "
                             f"{sorted(drawn ^ set(domain.tables))}")
    key = {"task_id": task_id, **gen.key}
    return task, Snapshot(task_id, gen.snapshot), key


def build_release(domain: Domain, out_dir: Path, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Write ``out_dir/<domain>/`` (manifest, tasks, snapshots, keys); return the manifest."""
    n_tags = len(domain.defect_tags)
    for split in SPLITS:
        if domain.sizes[split] < 20 * n_tags:
            raise ValueError(f"{domain.name}: {split} needs >= {20 * n_tags} tasks for 20 per defect tag")
    tasks, snaps, keys, entries = [], [], [], []
    for split in SPLITS:
        for i in range(domain.sizes[split]):
            task, snap, key = make_task(domain, split, i)
            tasks.append(task.to_json())
            snaps.append({"snapshot_id": snap.snapshot_id, "tables": snap.to_json()})
            keys.append(key)
            entries.append({
                "task_id": task.task_id, "split": split, "snapshot_id": snap.snapshot_id,
                "snapshot_hash": snap.content_hash(), "row_counts": snap.row_count(),
                "task_hash": hash_obj({k: v for k, v in task.to_json().items() if k not in ("task_id", "split", "snapshot_id")}),
            })
            if progress:
                progress(1)
    folder = out_dir / domain.name
    folder.mkdir(parents=True, exist_ok=True)
    digests, blocks = {}, {}
    for name, records in (("tasks.jsonl.gz", tasks), ("snapshots.jsonl.gz", snaps), ("keys.jsonl.gz", keys)):
        size = BLOCK_SIZE if name in BLOCKED_FILES else None
        digests[name], offsets = write_jsonl_gz(folder / name, records, block_size=size)
        if offsets is not None:
            blocks[name] = {"size": size, "offsets": offsets}
    for done in [k for k in _GENERATED if k[0] == domain.name]:  # the build is done with them
        del _GENERATED[done]
    manifest = {
        "release": RELEASE_VERSION,
        "domain": domain.name,
        "generator_version": domain.generator_version,
        "splits": {s: domain.sizes[s] for s in SPLITS},
        "defect_tags": list(domain.defect_tags),
        "files": digests,
        "blocks": blocks,
        "tasks": entries,
    }
    (folder / "manifest.json").write_bytes(dumps(manifest) + b"\n")
    return manifest


def verify_release(domain: Domain, root: Path) -> list[str]:
    """Problems found comparing ``root/<domain>`` with a fresh build (empty list: identical)."""
    import tempfile

    problems = []
    folder = root / domain.name
    with tempfile.TemporaryDirectory() as tmp:
        fresh = build_release(domain, Path(tmp))
        for name in FILES + ("manifest.json",):
            a, b = folder / name, Path(tmp) / domain.name / name
            if not a.exists():
                problems.append(f"{name}: missing")
            elif name.endswith(".gz"):
                if list(read_jsonl_gz(a)) != list(read_jsonl_gz(b)):
                    problems.append(f"{name}: content differs from a fresh build")
                elif a.read_bytes() != b.read_bytes():
                    problems.append(f"{name}: same content, different compressed bytes")
            elif a.read_bytes() != b.read_bytes():
                problems.append(f"{name}: differs from a fresh build")
        del fresh
    return problems
