"""``backoffice new-domain NAME``: write a complete minimal domain that passes every generic
test of the suite as generated.

The templates are real files of a working domain named ``refunds`` (``scaffold-template/``
beside this module: linted with the rest of the code, and exactly what the scaffold test
renders and runs). Rendering renames it: the module paths of the layout, then ``refunds`` ->
NAME, ``Refunds`` -> its title, ``REF`` -> its task-id prefix. Two layouts:

- in this repository (default): ``envs/<name>/{__init__,tables,tools,generator}.py``,
  ``graders/<name>.py``, ``training/domains/<name>/{__init__,policies,catalog}.py``,
  ``tests/domains/<name>/test_<name>.py``, then the release ``seeds/<name>/``;
- ``--package DIR``: a standalone distribution ``DIR/backoffice-<name>/`` (``pyproject.toml``
  declaring the ``backoffice.domains`` entry point, the package ``backoffice_<name>/`` holding
  every module and its release ``seeds/<name>/``, and ``tests/test_<name>.py``).

The scaffolded domain is a small refund desk: ``requests`` and the ``desk``'s rule values;
``get_rules`` (one rule document), ``list_requests`` (paginated), ``get_request``,
``decide_refund``, ``submit``; defect tags ``clean`` and ``over_refund``; failure codes
``wrong_amount``, ``extra_decision``, ``forbidden_write``; a catalog with one tier. Edit it into
the domain you want (docs/DOMAIN_GUIDE.md is the checklist).
"""

from __future__ import annotations

import importlib
import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path

#: a domain name: a snake_case identifier (also the seeds folder and the entry-point name)
NAME_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
RESERVED = frozenset({"core", "test", "tests", "seeds"})


class ScaffoldError(ValueError):
    """A name or destination the scaffold refuses (nothing has been written)."""


#: the templates: the files of a working domain named ``refunds``
TEMPLATE_ROOT = Path(__file__).resolve().parent / "scaffold-template"
#: the template domain's name, title and task-id prefix, which rendering replaces
TEMPLATE_NAME, TEMPLATE_TITLE, TEMPLATE_PREFIX = "refunds", "Refunds", "REF"


@dataclass(frozen=True)
class Layout:
    """Where each template file goes and which module paths replace the template's."""

    kind: str  # "repo" or "package"
    files: dict[str, str]  # template path -> path relative to the destination root
    modules: dict[str, str]  # the template's module path -> this layout's


def prefix_of(name: str) -> str:
    """Task-id prefix: the first three letters of the name, upper-cased (``refunds`` -> ``REF``)."""
    return re.sub(r"[^A-Z]", "", name.upper())[:3]


def template_files() -> list[str]:
    """Every template file, relative to :data:`TEMPLATE_ROOT` (caches left out)."""
    return sorted(str(p.relative_to(TEMPLATE_ROOT)) for p in TEMPLATE_ROOT.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def layout(name: str, kind: str) -> Layout:
    t = TEMPLATE_NAME
    files: dict[str, str] = {}
    if kind == "repo":
        for rel in template_files():
            if not rel.startswith("package/"):
                files[rel] = rel.replace(f"/{t}/", f"/{name}/").replace(f"/{t}.py", f"/{name}.py").replace(f"test_{t}.py", f"test_{name}.py")
        modules = {f"backoffice.envs.{t}": f"backoffice.envs.{name}", f"backoffice.graders.{t}": f"backoffice.graders.{name}",
                   f"backoffice.training.domains.{t}": f"backoffice.training.domains.{name}"}
        return Layout(kind, files, modules)
    if kind == "package":
        pkg = f"backoffice_{name}"
        for rel in template_files():
            if rel.startswith(f"envs/{t}/"):
                files[rel] = f"{pkg}/{rel.rsplit('/', 1)[1]}"
            elif rel == f"graders/{t}.py":
                files[rel] = f"{pkg}/grader.py"
            elif rel.startswith(f"training/domains/{t}/") and not rel.endswith("__init__.py"):
                files[rel] = f"{pkg}/{rel.rsplit('/', 1)[1]}"
            elif rel.startswith("package/"):
                files[rel] = rel.removeprefix("package/")
            elif rel == f"tests/domains/{t}/test_{t}.py":
                files[rel] = f"tests/test_{name}.py"
        modules = {f"backoffice.envs.{t}": pkg, f"backoffice.graders.{t}": f"{pkg}.grader",
                   f"backoffice.training.domains.{t}": pkg, f"backoffice-{t}": f"backoffice-{name.replace('_', '-')}",
                   f"backoffice_{t}": pkg}
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
    """``{relative path: text}`` of every file of the domain in layout ``kind``: the template
    files with the layout's module paths, then the template's name, title and prefix, replaced."""
    from backoffice.envs.core.registry import title_of

    lay = layout(name, kind)
    modules = sorted(lay.modules.items(), key=lambda kv: -len(kv[0]))
    words = ((re.compile(rf"(?<![A-Za-z0-9]){TEMPLATE_NAME}(?![A-Za-z0-9])"), name),
             (re.compile(TEMPLATE_TITLE), title_of(name)), (re.compile(rf"\b{TEMPLATE_PREFIX}\b"), prefix_of(name)))
    out = {}
    for rel, dest in lay.files.items():
        text = (TEMPLATE_ROOT / rel).read_text()
        for old, new in modules:
            text = text.replace(old, new)
        for pattern, new in words:
            text = pattern.sub(new, text)
        out[dest] = text
    return out


def repo_root() -> Path:
    """The source checkout this ``backoffice`` runs from (the in-repo layout needs one)."""
    root = Path(__file__).resolve().parents[2]
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
