"""Server layer: the MCP surface, the shared daemon that owns the store, the prompt hook.

stdio.py     ``keymem`` bare: the MCP stdio server (starts nothing until a tool call needs the store)
tools.py     the ten tools, the memory_system_prompt prompt, live instructions (thin, pydantic-typed)
http.py      ``keymem serve --http``: the same MCP server over streamable HTTP, its guards, uvicorn
scope.py     what an HTTP caller's token allows (namespaces, read-only), applied to every call
tokens.py    the token file: names, namespaces, SHA-256 of each secret
backends.py  where tool calls go: DaemonBackend (default) or LocalBackend (KEYMEM_DAEMON=off)
aclient.py   the event loop's own connections to the daemon (DaemonBackend's ordinary path)
daemon.py    the one process per data dir that opens the store; Unix socket + token; worker pool; sweeps
host.py      GraphHost: opens MemoryGraph on a background thread and dispatches method names to it
client.py    DaemonClient.call(method, params): starts/reconnects the daemon; reused by the hook and CLI
protocol.py  the newline-delimited JSON wire format, error mapping, private files (stdlib only)
hook.py      ``keymem hook``: the UserPromptSubmit hook (push path)
provenance.py  source = {host_session, host_agent, host_turn} from the host's env and transcripts
"""
