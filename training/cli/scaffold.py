"""``backoffice new-domain NAME``: write a complete minimal domain that passes the generic
contract, integrity and catalog tests as generated.

Two layouts, one template set (:class:`string.Template`, placeholders ``$name``, ``$title``,
``$prefix`` and the module paths):

- in this repository (default): ``envs/<name>/{__init__,tables,tools,generator}.py``,
  ``graders/<name>.py``, ``training/policies/<name>.py``, ``training/catalog/<name>.py``,
  ``tests/test_<name>.py``, then the release ``seeds/<name>/``;
- ``--package DIR``: a standalone distribution ``DIR/backoffice-<name>/`` (``pyproject.toml``
  declaring the ``backoffice.domains`` entry point, the package ``backoffice_<name>/`` holding
  every module and its release ``seeds/<name>/``, and ``tests/test_<name>.py``).

The scaffolded domain is a small refund desk: one ``requests`` table, ``get_request`` (read),
``decide_refund`` (write), ``submit``; defect tags ``clean``, ``over_refund``,
``late_delivery``; failure codes ``wrong_amount``, ``extra_decision``, ``forbidden_write``.
Edit it into the domain you want (docs/DOMAIN_GUIDE.md is the checklist).
"""

from __future__ import annotations

import importlib
import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from string import Template

#: a domain name: a snake_case identifier (also the seeds folder and the entry-point name)
NAME_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
RESERVED = frozenset({"core", "test", "tests", "seeds"})


class ScaffoldError(ValueError):
    """A name or destination the scaffold refuses (nothing has been written)."""


@dataclass(frozen=True)
class Layout:
    """Where each template goes and the module paths it is rendered with."""

    kind: str  # "repo" or "package"
    files: dict[str, str]  # template name -> path relative to the destination root
    modules: dict[str, str]  # placeholder -> module path


def prefix_of(name: str) -> str:
    """Task-id prefix: the first three letters of the name, upper-cased (``refunds`` -> ``REF``)."""
    return re.sub(r"[^A-Z]", "", name.upper())[:3]


def layout(name: str, kind: str) -> Layout:
    if kind == "repo":
        pkg = f"backoffice.envs.{name}"
        files = {
            "init": f"envs/{name}/__init__.py", "tables": f"envs/{name}/tables.py",
            "tools": f"envs/{name}/tools.py", "generator": f"envs/{name}/generator.py",
            "grader": f"graders/{name}.py", "policies": f"training/policies/{name}.py",
            "catalog": f"training/catalog/{name}.py", "test": f"tests/test_{name}.py",
        }
        modules = {"pkg": pkg, "grader_module": f"backoffice.graders.{name}",
                   "policies_module": f"backoffice.training.policies.{name}",
                   "catalog_module": f"backoffice.training.catalog.{name}"}
        return Layout(kind, files, modules)
    if kind == "package":
        pkg = f"backoffice_{name}"
        files = {
            "pyproject": "pyproject.toml", "readme": "README.md",
            "init": f"{pkg}/__init__.py", "tables": f"{pkg}/tables.py", "tools": f"{pkg}/tools.py",
            "generator": f"{pkg}/generator.py", "grader": f"{pkg}/grader.py",
            "policies": f"{pkg}/policies.py", "catalog": f"{pkg}/catalog.py", "test": f"tests/test_{name}.py",
        }
        modules = {"pkg": pkg, "grader_module": f"{pkg}.grader", "policies_module": f"{pkg}.policies",
                   "catalog_module": f"{pkg}.catalog"}
        return Layout(kind, files, modules)
    raise ValueError(f"unknown layout {kind!r}")


def check_name(name: str) -> None:
    """Refuse a name that is not a snake_case identifier, is reserved, or names a domain that
    is already discovered (this package's own or an installed third-party one)."""
    if not NAME_RE.fullmatch(name or ""):
        raise ScaffoldError(f"invalid domain name {name!r}: use a snake_case identifier "
                            "(lower-case letters, digits and single underscores, starting with a letter), e.g. refunds")
    if keyword.iskeyword(name) or name in RESERVED or len(name) > 40:
        raise ScaffoldError(f"invalid domain name {name!r}: reserved or too long")
    from backoffice.envs.core.registry import discover

    found = discover()
    if name in found:
        raise ScaffoldError(f"a domain named {name!r} already exists ({found[name].module}); choose another name")


def render(name: str, kind: str) -> dict[str, str]:
    """``{relative path: text}`` of every file of the domain in layout ``kind``."""
    from backoffice.envs.core.registry import title_of

    lay = layout(name, kind)
    values = {"name": name, "title": title_of(name), "prefix": prefix_of(name),
              "dist": f"backoffice-{name.replace('_', '-')}", "package": f"backoffice_{name}", **lay.modules}
    return {path: Template(TEMPLATES[tpl]).substitute(values) for tpl, path in lay.files.items()}


def repo_root() -> Path:
    """The source checkout this ``backoffice`` runs from (the in-repo layout needs one)."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "envs" / "core").is_dir() or not (root / "pyproject.toml").is_file():
        raise ScaffoldError(f"{root} is not a backoffice-gym source checkout (an installed wheel); "
                            "use --package DIR to write a standalone domain package")
    return root


def new_domain(name: str, package_dir: Path | None = None, root: Path | None = None, build: bool = True) -> list[Path]:
    """Write domain ``name`` and (``build``) its release; return the files written.

    ``package_dir``: write the standalone distribution ``package_dir/backoffice-<name>/``;
    otherwise the in-repo layout under ``root`` (default: this source checkout). Raises
    :class:`ScaffoldError` before writing anything when the name or a destination is taken.
    """
    check_name(name)
    if package_dir is not None:
        dest = Path(package_dir) / f"backoffice-{name.replace('_', '-')}"
        if dest.exists():
            raise ScaffoldError(f"{dest} already exists; remove it or choose another folder")
        files = render(name, "package")
    else:
        dest = Path(root) if root is not None else repo_root()
        files = render(name, "repo")
        taken = [p for p in (f"envs/{name}", f"seeds/{name}", *files) if (dest / p).exists()]
        if taken:
            raise ScaffoldError(f"cannot create domain {name!r}: {', '.join(taken)} already exist(s) under {dest}")
    written = []
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    if build:
        written.extend(build_seeds(name, dest, package=package_dir is not None))
    return written


def build_seeds(name: str, dest: Path, package: bool) -> list[Path]:
    """Build the new domain's release: ``<package>/seeds/<name>/`` or ``seeds/<name>/``."""
    from backoffice.envs.core.build import build_release

    if package:
        module_name, seeds = f"backoffice_{name}", dest / f"backoffice_{name}" / "seeds"
        sys.path.insert(0, str(dest))
    else:
        module_name, seeds = f"backoffice.envs.{name}", dest / "seeds"
        if dest.resolve() != repo_root().resolve():
            raise ScaffoldError("building seeds needs the domain importable: only in this checkout or with --package")
    importlib.invalidate_caches()
    try:
        module = importlib.import_module(module_name)
        build_release(module.DOMAIN, seeds)
    finally:
        if package:
            sys.path.remove(str(dest))
            for mod in [m for m in sys.modules if m == module_name or m.startswith(module_name + ".")]:
                del sys.modules[mod]
    from backoffice.envs.core.registry import discover, load_domain

    discover.cache_clear()
    load_domain.cache_clear()
    return sorted((seeds / name).iterdir())


_INIT = '''"""The $name domain: refund requests decided by a published rule (scaffolded by
``backoffice new-domain``; edit it into your domain, see docs/DOMAIN_GUIDE.md)."""

from __future__ import annotations

from backoffice.envs.core import BackofficeEnv, Domain, lazy
from $pkg.generator import DEFECT_TAGS, generate
from $pkg.tables import RULES, TABLES
from $pkg.tools import toolkit

#: every failure code the grader can emit; each is proven by a wrong policy
FAILURE_CODES = ("wrong_amount", "extra_decision", "forbidden_write")

DOMAIN = Domain(
    name="$name",
    title="$title",
    prefix="$prefix",
    toolkit=toolkit,
    generate=generate,
    grade=lazy("$grader_module:grade"),
    defect_tags=DEFECT_TAGS,
    failure_codes=FAILURE_CODES,
    generator_version="1",
    sizes={"train": 400, "heldout": 150},
    default_max_steps=10,
    rules=RULES,
    tables=TABLES,
    policies="$policies_module",
    catalog="$catalog_module:${title}Catalog",
)


class ${title}Env(BackofficeEnv):
    """$title: decide one customer refund request by the published refund rule.

    ## Description
    A back-office agent reads one refund request (amount asked, amount paid, amount already
    refunded, days since delivery, restocking fee percent) and records one decision: approve
    an amount or reject. The rule is in the instructions: approve min(asked, paid - refunded)
    less a restocking fee of restocking_pct % of that amount (rounded down); 15 to 30 days after
    delivery the fee doubles; after 30 days the request is rejected. Other customers' requests
    sit in the same table and must stay untouched.

    ## Action Space
    A tool call ``{"tool": name, "args": {...}}`` (a dict or its JSON string), see Tools.

    ## Observation Space
    Canonical ASCII JSON text: the task brief after ``reset`` (instructions, allowed tools,
    ``params.request_id``), then each tool's result (``{"status": "ok", "result": ...}`` or
    ``{"status": "error", "code", "message"}``).

    ## Rewards
    ``sparse`` (default): the pure grade's score on the terminal step, 0 before. ``shaped``:
    -0.01 per call, -0.05 per rejected call, plus 0.5 * score + 0.5 * pass at the end.

    ## Starting State
    A released task (``options={"task_id": "$prefix-T0000"}``), one drawn from the split by
    seed, or a generated one (``options={"generate": n}``).

    ## Episode End
    Terminates on a successful ``submit``; truncates at ``max_steps`` (default 10).

    ## Arguments
    ``split`` ("train" | "heldout" | "generated"), ``reward_mode`` ("sparse" | "shaped"),
    ``max_steps``, ``trace_path`` (JSONL trace), ``render_mode`` ("ansi").

    ## Tools
    Read: get_request(request_id). Write: decide_refund(request_id, outcome approve|reject,
    amount_cents >= 0), which may be called again (every decision is graded). Terminal: submit.

    ## Grade
    Work check ``decision`` (the request ends with the expected outcome and amount). Gates (earn
    nothing; a failed one caps the score at 0.25): ``single_decision`` (at most one decision on
    the request) and the guardrail (no write to any other request). Fields: ``request_id``,
    ``decisions``, ``decided``.

    ## Failure codes
    wrong_amount (no decision, the wrong outcome or the wrong amount), extra_decision (a second
    decision on the request), forbidden_write (a write to another request).

    ## Version History
    * v0: scaffolded (generator version 1).
    """

    domain = DOMAIN


__all__ = ["DOMAIN", "FAILURE_CODES", "${title}Env"]
'''

_TABLES = '''"""Tables and the public refund rule of the $name domain.

``requests``: one row per refund request (the task's target and 3-5 neighbours)
    id                     ``$prefix-<5 digits>``; a task's requests have consecutive ids
    customer               customer id
    amount_cents           the amount the customer asks back
    paid_cents             what the customer paid for the order
    refunded_cents         what was refunded on the order already
    days_since_delivery    whole days since delivery
    restocking_pct         restocking fee in percent (0: none)
    status                 ``open``, ``approved`` or ``rejected``
    decided_amount_cents   the refund decided (``None`` while open)
``clock``: the one row ``{"id": "clock", "now": ...}``.

Rule-sharing policy: :func:`decide` is the domain's public rule. The generator (which writes
the answer key), the oracle and the catalog may import it; the grader compares the end state
with the answer key and never imports the oracle's or the catalog's decision code, and the
oracle never imports the grader. ``tests/test_$name.py`` checks :func:`decide` against
hand-computed examples.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

TABLES = ("requests",)

#: the documented rules that decide a task's answer (each proven to bind by a rule policy)
RULES = ("cap", "restocking_fee", "late_window")

#: 15..30 days after delivery the restocking fee doubles; after 30 days: reject
FEE_DOUBLES_FROM = 15
LAST_DAY = 30

STATUS_OF_OUTCOME = {"approve": "approved", "reject": "rejected"}

RULES_TEXT = (
    "Refund rule: approve the amount asked, capped at what the customer paid minus what was already "
    "refunded on the order; deduct a restocking fee of restocking_pct percent of that capped amount, "
    f"rounded down to the cent; if the goods were delivered {FEE_DOUBLES_FROM} to {LAST_DAY} days ago the fee "
    f"is twice that (2 x restocking_pct percent, rounded down once); after more than {LAST_DAY} days reject "
    "the request with amount_cents 0. Decide the request once and change no other request."
)


def available_cents(row: Mapping[str, Any]) -> int:
    """What can still be refunded on the order: paid minus already refunded."""
    return int(row["paid_cents"]) - int(row["refunded_cents"])


def fee_doubles(days: int) -> bool:
    return FEE_DOUBLES_FROM <= days <= LAST_DAY


def past_window(days: int) -> bool:
    return days > LAST_DAY


def restocking_fee_cents(base: int, pct: int, doubled: bool) -> int:
    """``base * pct %`` (twice that when ``doubled``), rounded down to the cent."""
    return base * pct * (2 if doubled else 1) // 100


def decide(row: Mapping[str, Any], ignore: Collection[str] = ()) -> tuple[str, int]:
    """``(outcome, amount_cents)`` the rule gives for a request row; ``ignore`` leaves rules of
    :data:`RULES` out (what the rule policies do to prove each one binds)."""
    days = int(row["days_since_delivery"])
    if "late_window" not in ignore and past_window(days):
        return "reject", 0
    asked = int(row["amount_cents"])
    base = asked if "cap" in ignore else max(0, min(asked, available_cents(row)))
    pct = 0 if "restocking_fee" in ignore else int(row["restocking_pct"])
    doubled = "late_window" not in ignore and fee_doubles(days)
    return "approve", base - restocking_fee_cents(base, pct, doubled)
'''

_TOOLS = '''"""Tools of the $name domain. Read: get_request. Write: decide_refund. Terminal: submit.

Error codes: ``not_found`` (no such request), ``precondition_failed`` (a rejection with a
non-zero amount).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from backoffice.envs.core import NoArgs, ToolArgs, ToolContext, ToolError, Toolkit, require_row
from $pkg.tables import STATUS_OF_OUTCOME

toolkit = Toolkit()


class RequestArgs(ToolArgs):
    request_id: str = Field(min_length=1, max_length=40, description="Id of the refund request, e.g. $prefix-10417.")


@toolkit.tool(writes=False)
def get_request(ctx: ToolContext, args: RequestArgs) -> dict:
    """Return one refund request: amount asked, paid and already refunded (cents), days since
    delivery, restocking fee percent, status and the amount decided so far."""
    return require_row(ctx.store, "requests", args.request_id, f"no refund request {args.request_id}")


class DecideArgs(ToolArgs):
    request_id: str = Field(min_length=1, max_length=40, description="Id of the refund request to decide.")
    outcome: Literal["approve", "reject"] = Field(description="approve (refund amount_cents) or reject.")
    amount_cents: int = Field(ge=0, le=100_000_000, description="Refund to pay, in cents (0 for a rejection).")


@toolkit.tool(writes=True)
def decide_refund(ctx: ToolContext, args: DecideArgs) -> dict:
    """Record the decision on a refund request: approve with the amount to refund, or reject
    with amount 0. A decided request may be decided again (each decision is recorded)."""
    require_row(ctx.store, "requests", args.request_id, f"no refund request {args.request_id}")
    if args.outcome == "reject" and args.amount_cents != 0:
        raise ToolError("precondition_failed", "a rejection refunds nothing: send amount_cents 0")
    row = ctx.store.update("requests", args.request_id, {
        "status": STATUS_OF_OUTCOME[args.outcome], "decided_amount_cents": args.amount_cents})
    return {"request_id": row["id"], "status": row["status"], "decided_amount_cents": row["decided_amount_cents"]}


@toolkit.tool(terminal=True, writes=False)
def submit(ctx: ToolContext, args: NoArgs) -> dict:
    """Finish the task; the decisions made so far are graded."""
    return {"submitted": True}
'''

_GENERATOR = '''"""The $name generator: a few refund requests, and one planting function per defect tag.

Each task has one target request (the one the instructions name) among 3-5 neighbours (other
customers' open requests, consecutive ids) and the clock. The defect tag plants the trap:

- ``clean``: delivered within 14 days, the amount asked is covered; only the restocking fee applies;
- ``over_refund``: the customer asks more than paid minus already refunded (the cap binds);
- ``late_delivery``: delivered 15-30 days ago (the fee doubles) or, in about 1 task in 10, more
  than 30 days ago (reject: these carry no restocking fee, so approving in full looks safe).

The draws keep blind policies under the integrity bounds (tests/test_integrity.py): a
restocking fee of 0 in ~5 % of the approvable tasks (~8 % of all), rejections in ~3 %, and no
outcome class above 35 % of a split (the tags cycle, so each holds a third).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from backoffice.envs.core import Generated, retrying
from backoffice.envs.core.canonical import derive_seed
from $pkg.tables import FEE_DOUBLES_FROM, LAST_DAY, RULES_TEXT, available_cents, decide, fee_doubles

DEFECT_TAGS = ("clean", "over_refund", "late_delivery")
ALLOWED_TOOLS = ["get_request", "decide_refund", "submit"]
PCTS = (5, 10, 15, 20, 25)
P_NO_FEE = 0.05
P_PAST_WINDOW = 0.1
MIN_REFUND = 500

Row = dict[str, Any]


def _pct(rng: random.Random) -> int:
    return 0 if rng.random() < P_NO_FEE else rng.choice(PCTS)


def _request(rng: random.Random, rid: str) -> Row:
    """A plausible open request with nothing planted (a neighbour, or the target before its trap)."""
    paid = rng.randint(2_000, 60_000)
    refunded = 0 if rng.random() < 0.6 else rng.randint(1, paid // 2)
    return {
        "id": rid, "customer": f"CUS-{rng.randint(1000, 9999)}", "amount_cents": rng.randint(MIN_REFUND, paid - refunded),
        "paid_cents": paid, "refunded_cents": refunded, "days_since_delivery": rng.randint(0, FEE_DOUBLES_FROM - 1),
        "restocking_pct": _pct(rng), "status": "open", "decided_amount_cents": None,
    }


# -- one planting function per defect tag ---------------------------------------------------
def plant_clean(rng: random.Random, row: Row) -> None:
    row["days_since_delivery"] = rng.randint(0, FEE_DOUBLES_FROM - 1)
    row["amount_cents"] = rng.randint(MIN_REFUND, available_cents(row))


def plant_over_refund(rng: random.Random, row: Row) -> None:
    paid = row["paid_cents"]
    if rng.random() < 0.7:  # part of the order was refunded already: the ask exceeds what is left
        row["refunded_cents"] = rng.randint(paid // 4, paid * 3 // 4)
        row["amount_cents"] = rng.randint(available_cents(row) + 1, paid)
    else:  # nothing refunded yet, but the ask exceeds the price paid
        row["refunded_cents"] = 0
        row["amount_cents"] = rng.randint(paid + 1, paid * 3 // 2)
    row["days_since_delivery"] = rng.randint(0, FEE_DOUBLES_FROM - 1)


def plant_late_delivery(rng: random.Random, row: Row) -> None:
    if rng.random() < P_PAST_WINDOW:  # past the window: reject, though nothing else would bite
        row["days_since_delivery"] = rng.randint(LAST_DAY + 1, 90)
        row["restocking_pct"] = 0
    else:
        row["days_since_delivery"] = rng.randint(FEE_DOUBLES_FROM, LAST_DAY)
    row["amount_cents"] = rng.randint(MIN_REFUND, available_cents(row))


PLANTS: dict[str, Callable[[random.Random, Row], None]] = {
    "clean": plant_clean, "over_refund": plant_over_refund, "late_delivery": plant_late_delivery,
}


def trap_of(row: Row) -> str:
    """The defect tag a request's numbers show (the check that the world says what the key says)."""
    if row["days_since_delivery"] >= FEE_DOUBLES_FROM:
        return "late_delivery" if row["amount_cents"] <= available_cents(row) else "ambiguous"
    return "over_refund" if row["amount_cents"] > available_cents(row) else "clean"


def outcome_class(row: Row, outcome: str) -> str:
    if outcome == "reject":
        return "reject_late"
    if row["amount_cents"] > available_cents(row):
        return "approve_capped"
    if row["restocking_pct"] == 0:
        return "approve_full"
    return "approve_double_fee" if fee_doubles(row["days_since_delivery"]) else "approve_fee"


def _attempt(seed: int, tag: str, attempt: int) -> Generated | None:
    """One task whose trap is ``tag`` (``None``: the draw is inconsistent, redraw)."""
    rng = random.Random(derive_seed("$name", seed, attempt))
    first, n = rng.randint(10_000, 89_000), rng.randint(4, 6)
    rows = [_request(rng, f"$prefix-{first + i}") for i in range(n)]
    target = rows[rng.randrange(n)]
    PLANTS[tag](rng, target)
    if trap_of(target) != tag or available_cents(target) < MIN_REFUND:
        return None
    outcome, amount = decide(target)
    if outcome == "approve" and amount <= 0:
        return None
    now = date(2026, 1, 5) + timedelta(days=rng.randint(0, 90))
    rid = target["id"]
    task = {
        "instructions": f"Refund request {rid} is waiting for a decision. Read it with get_request, record "
                        f"your decision with decide_refund, then submit. {RULES_TEXT}",
        "allowed_tools": list(ALLOWED_TOOLS),
        "params": {"request_id": rid},
    }
    key = {
        "defect_tags": [tag], "targets": [f"requests:{rid}"], "outcome_class": outcome_class(target, outcome),
        "needs_action": True, "expected": {"outcome": outcome, "amount_cents": amount},
    }
    snapshot = {"requests": rows, "clock": [{"id": "clock", "now": f"{now.isoformat()}T09:00:00"}]}
    return Generated(task, snapshot, key)


generate = retrying(_attempt, DEFECT_TAGS)
'''

_GRADER = '''"""The $name grader: a pure function of the episode (task, key, start snapshot, end state,
diff, trace). It compares the end state with the answer key; it never imports the oracle's or
the catalog's decision code."""

from __future__ import annotations

from typing import Any

from backoffice.envs.core.domain import Episode
from backoffice.graders import finalize, result

OUTCOME_OF_STATUS = {"approved": "approve", "rejected": "reject"}


def decisions_on(ep: Episode, request_id: str) -> int:
    """Successful ``decide_refund`` calls on ``request_id`` over the whole trail."""
    return sum(1 for r in ep.trace if r["tool"] == "decide_refund" and r["result_status"] == "ok"
               and isinstance(r["args"], dict) and r["args"].get("request_id") == request_id)


def grade(ep: Episode) -> dict[str, Any]:
    rid = ep.task.params["request_id"]
    want = dict(ep.key["expected"])
    row = ep.state.get("requests", rid) or {}
    got = {"outcome": OUTCOME_OF_STATUS.get(row.get("status")), "amount_cents": row.get("decided_amount_cents")}
    n = decisions_on(ep, rid)
    checks = [
        result("decision", "decision", got == want, "wrong_amount", None if got == want else {"expected": want, "got": got}),
        result("single_decision", "count", n <= 1, "extra_decision", None if n <= 1 else {"decisions": n}, gate=True),
    ]
    return finalize(ep, checks, {"request_id": rid, "decisions": n, "decided": got},
                    guardrail_code="forbidden_write", metrics={"decisions": n})
'''
_POLICIES = '''"""Policies of the $name domain: the oracle, one wrong policy per failure code, blind
policies, one rule policy per documented rule and the exploit table.

The oracle reads only tool results and applies the public rule (``$pkg.tables.decide``); it
never imports the grader.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from backoffice.training.integrity.exploits import Hook, boundary_write, repeat_last_write
from backoffice.training.policies.base import Plan, Policy, ScriptedPolicy, call
from $pkg.tables import available_cents, decide


def adjacent_ids(request_id: str) -> list[str]:
    """The ids next to ``request_id`` (a task's requests have consecutive ids)."""
    head, _, number = request_id.rpartition("-")
    if not number.isdigit():
        return []
    return [f"{head}-{int(number) + 1}", f"{head}-{int(number) - 1}"]


class Oracle(ScriptedPolicy):
    """Read the request, apply the rule, decide once, submit."""

    name = "oracle"
    #: rules of ``RULES`` this policy leaves out (the rule policies set it)
    ignore: Collection[str] = ()

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        rid = brief["params"]["request_id"]
        got = yield call("get_request", request_id=rid)
        if got.get("status") != "ok":
            return
        outcome, amount = self.decide(got["result"])
        yield call("decide_refund", request_id=rid, outcome=outcome, amount_cents=amount)
        yield from self.after(rid, outcome, amount)

    def decide(self, row: Mapping[str, Any]) -> tuple[str, int]:
        return decide(row, ignore=self.ignore)

    def after(self, rid: str, outcome: str, amount: int) -> Plan:
        """Calls after the decision (none: the oracle submits)."""
        return
        yield {}


# -- one wrong policy per failure code --------------------------------------------------------
class WrongAmount(Oracle):
    """Approves one cent more than due (and approves what must be rejected)."""

    def decide(self, row: Mapping[str, Any]) -> tuple[str, int]:
        outcome, amount = super().decide(row)
        return ("approve", amount + 1) if outcome == "approve" else ("approve", max(1, available_cents(row)))


class ExtraDecision(Oracle):
    """Sends the right decision twice."""

    def after(self, rid: str, outcome: str, amount: int) -> Plan:
        yield call("decide_refund", request_id=rid, outcome=outcome, amount_cents=amount)


class ForbiddenWrite(Oracle):
    """Decides its request right, then also rejects a neighbouring request."""

    def after(self, rid: str, outcome: str, amount: int) -> Plan:
        for other in adjacent_ids(rid):
            got = yield call("get_request", request_id=other)
            if got.get("status") == "ok":
                yield call("decide_refund", request_id=other, outcome="reject", amount_cents=0)
                return


WRONG_POLICIES: dict[str, type[Policy]] = {
    "wrong_amount": WrongAmount, "extra_decision": ExtraDecision, "forbidden_write": ForbiddenWrite,
}


# -- blind policies (tests/test_integrity.py: each passes <= 10 % of heldout) -----------------
class _Blind(ScriptedPolicy):
    read = True

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        rid = brief["params"]["request_id"]
        row: Mapping[str, Any] = {}
        if self.read:
            got = yield call("get_request", request_id=rid)
            if got.get("status") == "ok":
                row = got["result"]
        outcome, amount = self.choose(row)
        yield call("decide_refund", request_id=rid, outcome=outcome, amount_cents=amount)

    def choose(self, row: Mapping[str, Any]) -> tuple[str, int]:  # pragma: no cover - interface
        raise NotImplementedError


class ApproveAsAsked(_Blind):
    def choose(self, row: Mapping[str, Any]) -> tuple[str, int]:
        return "approve", int(row.get("amount_cents", 0))


class RejectAll(_Blind):
    read = False

    def choose(self, row: Mapping[str, Any]) -> tuple[str, int]:
        return "reject", 0


class ApproveCappedNoFee(_Blind):
    def choose(self, row: Mapping[str, Any]) -> tuple[str, int]:
        return "approve", max(0, min(int(row.get("amount_cents", 0)), available_cents(row) if row else 0))


class ApproveWithoutReading(_Blind):
    read = False

    def choose(self, row: Mapping[str, Any]) -> tuple[str, int]:
        return "approve", 5_000


BLIND_POLICIES: dict[str, type[Policy]] = {
    "approve_as_asked": ApproveAsAsked, "reject_all": RejectAll,
    "approve_capped_no_fee": ApproveCappedNoFee, "approve_without_reading": ApproveWithoutReading,
}


# -- rule policies: the oracle ignoring one documented rule (each must fail >= 20 tasks) -------
def _ignoring(rule: str) -> type[Policy]:
    return type(f"Ignore_{rule}", (Oracle,), {"ignore": (rule,), "__doc__": f"The oracle ignoring {rule}."})


RULE_POLICIES: dict[str, type[Policy]] = {rule: _ignoring(rule) for rule in ("cap", "restocking_fee", "late_window")}


# -- exploits (backoffice.training.integrity.exploits): the oracle plus one injected call ---------------
def _decision(trace: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for rec in reversed(trace):
        if rec["tool"] == "decide_refund" and rec["result_status"] == "ok":
            return rec
    return None


def flip_decision(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before submit, a second decision on the request with the other outcome."""
    rec = _decision(trace) if action.get("tool") == "submit" else None
    if rec is None:
        return []
    args = rec["args"]
    if args["outcome"] == "approve":
        return [call("decide_refund", request_id=args["request_id"], outcome="reject", amount_cents=0)]
    return [call("decide_refund", request_id=args["request_id"], outcome="approve", amount_cents=1_000)]


def decide_neighbour(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before submit, a decision on a request the task did not name (one of the adjacent ids)."""
    rec = _decision(trace) if action.get("tool") == "submit" else None
    if rec is None:
        return []
    return [call("decide_refund", request_id=other, outcome="reject", amount_cents=0)
            for other in adjacent_ids(rec["args"]["request_id"])]


EXPLOITS: dict[str, Hook | None] = {
    "extra_decision": flip_decision,
    "extra_request": decide_neighbour,
    "repeated_write": repeat_last_write,  # the same decision again: a second decision
    "boundary_values": boundary_write,  # amount 0 (or -1, refused as invalid_args)
    # not applicable: the only write is a decision, and re-sending the same decision is itself
    # a second decision (graded extra_decision), so no write can preserve the graded value
    "value_preserving_update": None,
    # not applicable: every graded value is an integer amount or an enumerated outcome; there
    # is no normalised free-text field to format differently
    "formatting_only": None,
}
'''

_CATALOG = '''"""The $name catalog env for stable-baselines3 (``backoffice/${title}-Catalog-v0``).

Actions: read the request; approve the amount asked, the covered amount (asked capped at paid
minus refunded), the covered amount less the restocking fee or less twice the fee; reject;
submit. Features come only from the request as observed. The mask is legality only: an
approval needs the request read (its amount is computed from what was read); a decided request
may be decided again (the grader judges that, not the mask).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from backoffice.training.catalog.base import ActionDef, CatalogAgent, CatalogSpec, FeatureDef, scale
from $pkg.tables import available_cents, fee_doubles, past_window, restocking_fee_cents

#: cents: the scale of amount features
FULL_AMOUNT = 100_000


class ${title}Catalog(CatalogSpec):
    domain = "$name"
    actions = (
        ActionDef("get_request", "get_request", "read the task's refund request"),
        ActionDef("approve_asked", "decide_refund", "approve the amount asked"),
        ActionDef("approve_covered", "decide_refund", "approve min(asked, paid - refunded)"),
        ActionDef("approve_less_fee", "decide_refund", "approve the covered amount less the restocking fee"),
        ActionDef("approve_less_double_fee", "decide_refund", "approve the covered amount less twice the restocking fee"),
        ActionDef("reject", "decide_refund", "reject the request (amount 0)"),
        ActionDef("submit", "submit", "finish the task"),
    )
    features = (
        FeatureDef("request_read", "1 once get_request returned the request"),
        FeatureDef("asked", "amount asked / 1000.00"),
        FeatureDef("covered", "paid - refunded / 1000.00"),
        FeatureDef("asks_more_than_covered", "1 if the amount asked exceeds paid - refunded"),
        FeatureDef("restocking_pct", "restocking fee percent / 50"),
        FeatureDef("has_fee", "1 if the restocking fee percent is above 0"),
        FeatureDef("days_since_delivery", "days since delivery / 60"),
        FeatureDef("in_double_fee_window", "1 if delivered 15 to 30 days ago"),
        FeatureDef("past_window", "1 if delivered more than 30 days ago"),
        FeatureDef("decisions", "successful decisions sent / 2"),
    )

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        self.request_id = str(brief.get("params", {}).get("request_id", ""))
        self.row: Mapping[str, Any] | None = None
        self.decisions = 0

    def _covered(self) -> int:
        assert self.row is not None
        return max(0, min(int(self.row["amount_cents"]), available_cents(self.row)))

    def to_call(self, action: int) -> dict[str, Any] | None:
        name = self.actions[action].name
        if name == "get_request":
            return {"tool": "get_request", "args": {"request_id": self.request_id}}
        if name == "submit":
            return {"tool": "submit", "args": {}}
        if name == "reject":
            return {"tool": "decide_refund", "args": {"request_id": self.request_id, "outcome": "reject", "amount_cents": 0}}
        if self.row is None:
            return None
        covered, pct = self._covered(), int(self.row["restocking_pct"])
        amount = {
            "approve_asked": int(self.row["amount_cents"]),
            "approve_covered": covered,
            "approve_less_fee": covered - restocking_fee_cents(covered, pct, False),
            "approve_less_double_fee": covered - restocking_fee_cents(covered, pct, True),
        }[name]
        return {"tool": "decide_refund", "args": {"request_id": self.request_id, "outcome": "approve", "amount_cents": max(0, amount)}}

    def observe(self, action: int, call: dict[str, Any], result: dict[str, Any]) -> None:
        if result.get("status") != "ok":
            return
        if call["tool"] == "get_request" and isinstance(result.get("result"), dict):
            self.row = result["result"]
        elif call["tool"] == "decide_refund":
            self.decisions += 1

    def mask(self) -> np.ndarray:
        read = self.row is not None
        return np.array([True, read, read, read, read, True, True], dtype=bool)

    def feature_vector(self) -> np.ndarray:
        row = self.row
        if row is None:
            values = [0.0] * 9
        else:
            days, pct = int(row["days_since_delivery"]), int(row["restocking_pct"])
            values = [
                1.0, scale(row["amount_cents"], FULL_AMOUNT), scale(available_cents(row), FULL_AMOUNT),
                float(row["amount_cents"] > available_cents(row)), scale(pct, 50), float(pct > 0),
                scale(days, 60), float(fee_doubles(days)), float(past_window(days)),
            ]
        return np.array([*values, scale(self.decisions, 2)], dtype=np.float32)


def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
    """Read -> reject past the window, else approve the covered amount less the (doubled) fee -> submit."""
    idx = {f.name: i for i, f in enumerate(agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(agent.spec.actions)}

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        if obs[idx["request_read"]] < 0.5:
            return act["get_request"]
        if obs[idx["decisions"]] > 0:
            return agent.finish
        if obs[idx["past_window"]] > 0.5:
            return act["reject"]
        return act["approve_less_double_fee" if obs[idx["in_double_fee_window"]] > 0.5 else "approve_less_fee"]

    return policy
'''
_TEST = '''"""Tests of the $name domain beyond the generic ones (tests/test_contract.py,
tests/test_integrity.py and tests/test_catalog.py run for every discovered domain)."""

from __future__ import annotations

import pytest

from backoffice.envs import get_domain, make_native
from backoffice.envs.core.release import load_release
from backoffice.training.policies import get_policy
from backoffice.training.eval.rollout import run_episode
from $pkg.tables import decide

NAME = "$name"


def _row(**fields: int) -> dict:
    row = {"amount_cents": 10_000, "paid_cents": 10_000, "refunded_cents": 0, "days_since_delivery": 3, "restocking_pct": 10}
    row.update(fields)
    return row


@pytest.mark.parametrize(("row", "want"), [
    (_row(), ("approve", 9_000)),  # 10 % of 100.00
    (_row(amount_cents=999, restocking_pct=5), ("approve", 950)),  # 49.95 cents rounded down to 49
    (_row(paid_cents=8_000, refunded_cents=1_000), ("approve", 6_300)),  # capped at 70.00, less 7.00
    (_row(amount_cents=12_000, restocking_pct=0), ("approve", 10_000)),  # capped, no fee
    (_row(days_since_delivery=15), ("approve", 8_000)),  # the fee doubles from day 15 ...
    (_row(days_since_delivery=30, restocking_pct=25), ("approve", 5_000)),  # ... to day 30
    (_row(days_since_delivery=14, restocking_pct=25), ("approve", 7_500)),
    (_row(days_since_delivery=31, restocking_pct=0), ("reject", 0)),  # after 30 days: reject
])
def test_the_refund_rule_on_hand_computed_examples(row: dict, want: tuple) -> None:
    assert decide(row) == want


def test_each_wrong_policy_commits_exactly_its_failure() -> None:
    env = make_native(NAME, split="heldout")
    ids = load_release(NAME).split_ids["heldout"][:30]
    for code in get_domain(NAME).failure_codes:
        for task_id in ids:
            grade = run_episode(env, get_policy(NAME, f"wrong:{code}"), task_id=task_id).grade
            assert grade["failure_codes"] == [code], (code, task_id, grade["failure_codes"])
    for task_id in ids:
        assert run_episode(env, get_policy(NAME, "oracle"), task_id=task_id).grade["pass"]


def test_tool_errors_are_structured_and_change_nothing() -> None:
    env = make_native(NAME)
    env.reset(seed=0)
    rid = env.task.params["request_id"]
    before = env.state.content_hash()
    for action, code in (
        ({"tool": "get_request", "args": {"request_id": "$prefix-0"}}, "not_found"),
        ({"tool": "decide_refund", "args": {"request_id": "$prefix-0", "outcome": "reject", "amount_cents": 0}}, "not_found"),
        ({"tool": "decide_refund", "args": {"request_id": rid, "outcome": "reject", "amount_cents": 5}}, "precondition_failed"),
        ({"tool": "decide_refund", "args": {"request_id": rid, "outcome": "approve", "amount_cents": -1}}, "invalid_args"),
        ({"tool": "decide_refund", "args": {"request_id": rid, "outcome": "maybe", "amount_cents": 1}}, "invalid_args"),
    ):
        _, _, _, _, info = env.step(action)
        assert info["error_code"] == code, (action, info)
        assert env.state.content_hash() == before


def test_a_second_decision_is_applied_and_graded() -> None:
    env = make_native(NAME)
    env.reset(seed=1)
    rid = env.task.params["request_id"]
    for outcome, amount in (("approve", 100), ("reject", 0)):
        env.step({"tool": "decide_refund", "args": {"request_id": rid, "outcome": outcome, "amount_cents": amount}})
    assert env.state.get("requests", rid)["status"] == "rejected"
    *_, info = env.step({"tool": "submit", "args": {}})
    assert "extra_decision" in info["grade"]["failure_codes"] and info["grade"]["decisions"] == 2
'''

_PYPROJECT = '''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "The $name domain for backoffice-gym (scaffolded by `backoffice new-domain $name --package`)."
requires-python = ">=3.11"
dependencies = ["backoffice-gym"]

# how backoffice-gym finds this domain: backoffice/${title}-v0 and backoffice/${title}-Catalog-v0
[project.entry-points."backoffice.domains"]
$name = "$package"

[tool.setuptools]
packages = ["$package"]

[tool.setuptools.package-data]
"$package" = ["seeds/*/*.json", "seeds/*/*.jsonl.gz"]
'''

_README = '''# $dist

The `$name` domain for backoffice-gym, as a separate distribution. Installing it registers
`backoffice/${title}-v0` and `backoffice/${title}-Catalog-v0` through the `backoffice.domains`
entry point; its release lives in `$package/seeds/$name/`.

    pip install -e .
    backoffice seeds build --env $name          # after editing the generator
    backoffice eval --env $name --policy oracle --policy noop
    pytest tests/                               # this domain's own tests
    # the generic contract, integrity and catalog tests, from a backoffice-gym checkout:
    pytest tests/test_contract.py tests/test_integrity.py tests/test_catalog.py -k $name

See docs/DOMAIN_GUIDE.md in backoffice-gym for the checklist.
'''

TEMPLATES: dict[str, str] = {
    "init": _INIT, "tables": _TABLES, "tools": _TOOLS, "generator": _GENERATOR, "grader": _GRADER,
    "policies": _POLICIES, "catalog": _CATALOG, "test": _TEST, "pyproject": _PYPROJECT, "readme": _README,
}
