"""The engine shared by every domain. It knows no domain."""

from backoffice.envs.core.canonical import dumps, dumps_ascii, hash_obj, loads
from backoffice.envs.core.domain import Domain, Episode, Generated, lazy
from backoffice.envs.core.env import BackofficeEnv
from backoffice.envs.core.generation import retrying
from backoffice.envs.core.release import Release, Task, load_release
from backoffice.envs.core.store import Snapshot, Store
from backoffice.envs.core.tools import (
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    NoArgs,
    PageArgs,
    Tool,
    ToolArgs,
    ToolContext,
    ToolError,
    Toolkit,
    page,
    page_result,
    paged_list,
    require_row,
    rule_document,
)

__all__ = [
    "MAX_PAGE_SIZE", "PAGE_SIZE", "BackofficeEnv", "Domain", "Episode", "Generated", "NoArgs", "PageArgs", "page", "page_result", "paged_list", "rule_document", "Release", "Snapshot", "Store",
    "Task", "Tool", "ToolArgs", "ToolContext", "ToolError", "Toolkit", "dumps", "dumps_ascii",
    "hash_obj", "lazy", "load_release", "loads", "require_row", "retrying",
]
