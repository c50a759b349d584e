"""Agent-facing surfaces: the one-episode Session and the servers and adapters built on it (MCP, chat loop, OpenAI-compatible client, TRL, verifiers) and `backoffice play`."""
