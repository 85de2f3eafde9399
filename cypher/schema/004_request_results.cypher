// Results of the daemon's mutating calls, by the request id their client sent (keymem/memory/requests.py).
// A client that lost the daemon mid-call retries once with the same id; the write recorded its
// result here in its own transaction, so the retry gets that result instead of running again.
// digest: sha256 of the method and its arguments (a reused id with other arguments is refused);
// result: the answer as JSON; at: when it was recorded (POSIX seconds). Rows older than an hour
// are deleted by the periodic sweep and at most MAX_REQUESTS are kept.
CREATE NODE TABLE IF NOT EXISTS Request(id STRING PRIMARY KEY, digest STRING, result STRING, at DOUBLE);
