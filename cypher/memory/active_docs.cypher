// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// One page of the visible memories' contents (ids after $after, in id order), as one row of
// parallel lists (re-tokenising for the BM25 index; the key texts come from memory/key_texts_range).
// Joining the keys here made one 20k page need more than 104 MiB of buffer pool at 100k memories.
MATCH (m:Memory) WHERE m.id > $after AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
WITH m ORDER BY m.id LIMIT $limit
RETURN collect(m.id) AS ids, collect(m.namespace) AS namespaces, collect(m.content) AS contents
