// keymem: heavy (a whole-table read: it runs alone, see Store._read)
MATCH (a:Alias) WHERE a.learned AND a.hits = 0 AND a.created_at < $before
RETURN a.id AS id, a.namespace AS namespace, a.norm AS norm, a.text AS text, a.key_id AS key_id
