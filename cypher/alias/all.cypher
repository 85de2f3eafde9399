// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every alias's key and text, oldest first: loads the in-memory alias index (index/aliases.py).
MATCH (a:Alias) RETURN a.key_id AS key_id, a.text AS text ORDER BY a.created_at, a.id
