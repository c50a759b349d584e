"""The engine shared by every domain. It knows no domain."""

from backoffice.envs.core.canonical import dumps, dumps_ascii, hash_obj, loads
from backoffice.envs.core.domain import Domain, Episode, Generated
from backoffice.envs.core.env import BackofficeEnv
from backoffice.envs.core.release import Release, Task, load_release
from backoffice.envs.core.store import Snapshot, Store
from backoffice.envs.core.tools import NoArgs, Tool, ToolArgs, ToolContext, ToolError, Toolkit

__all__ = [
    "BackofficeEnv", "Domain", "Episode", "Generated", "NoArgs", "Release", "Snapshot", "Store",
    "Task", "Tool", "ToolArgs", "ToolContext", "ToolError", "Toolkit", "dumps", "dumps_ascii",
    "hash_obj", "load_release", "loads",
]
