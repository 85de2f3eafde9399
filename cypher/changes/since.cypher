// The change records after $after, oldest first (a catch-up; the oldest kept tells whether any were pruned).
MATCH (c:Change) WHERE c.seq > $after
RETURN c.seq AS seq, c.writer AS writer, c.memories AS memories, c.links AS links, c.keys AS keys,
       c.aliases AS aliases, c.everything AS everything
ORDER BY seq
