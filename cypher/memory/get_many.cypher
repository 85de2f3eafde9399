// Memories by id. Measured on 10k memories: IN costs ~2 ms for 10 ids and ~8 ms for 100,
// an UNWIND of primary-key matches costs more; for a handful of ids, callers look each one
// up with memory/get instead (~0.5 ms each). See navigate.fetch.
MATCH (m:Memory)
WHERE m.id IN $ids
RETURN m
