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
    require_row,
)

__all__ = [
    "MAX_PAGE_SIZE", "PAGE_SIZE", "BackofficeEnv", "Domain", "Episode", "Generated", "NoArgs", "PageArgs", "page", "Release", "Snapshot", "Store",
    "Task", "Tool", "ToolArgs", "ToolContext", "ToolError", "Toolkit", "dumps", "dumps_ascii",
    "hash_obj", "lazy", "load_release", "loads", "require_row", "retrying",
]
