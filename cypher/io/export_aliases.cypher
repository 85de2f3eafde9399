// keymem: heavy (a whole-table read: it runs alone, see Store._read)
MATCH (a:Alias) WHERE $any_ns OR a.namespace = $namespace
RETURN a.id AS id, a.key_id AS key_id, a.text AS text, a.learned AS learned, a.hits AS hits,
       a.created_at AS created_at, a.last_hit_at AS last_hit_at
ORDER BY a.key_id, a.created_at, a.id
