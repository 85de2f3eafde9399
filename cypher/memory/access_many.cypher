// Coalesced read_memory accesses (keymem/memory/access.py): one transaction for many reads.
UNWIND $rows AS r
MATCH (m:Memory {id: r.id})
SET m.access_count = m.access_count + r.n,
    m.last_access_at = CASE WHEN m.last_access_at IS NULL OR m.last_access_at < r.at THEN r.at ELSE m.last_access_at END
