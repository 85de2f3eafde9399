"""Server layer: the MCP surface, the shared daemon that owns the store, the prompt hook.

stdio.py     ``keymem`` bare: the MCP stdio server (starts nothing until a tool call needs the store)
tools.py     the ten tools, the memory_system_prompt prompt, live instructions (thin, pydantic-typed)
backends.py  where tool calls go: DaemonBackend (default) or LocalBackend (KEYMEM_DAEMON=off)
daemon.py    the one process per data dir that opens Kuzu; Unix socket + token; worker pool; sweeps
host.py      GraphHost: opens MemoryGraph on a background thread and dispatches method names to it
client.py    DaemonClient.call(method, params): starts/reconnects the daemon; reused by the hook and CLI
protocol.py  the newline-delimited JSON wire format, error mapping, private files (stdlib only)
hook.py      ``keymem hook``: the UserPromptSubmit hook (push path)
provenance.py  source = {host_session, host_agent, host_turn} from the host's env and transcripts
"""
