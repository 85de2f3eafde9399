// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// keymem export: every key (of one namespace unless $any_ns), in a stable order.
MATCH (k:Key) WHERE $any_ns OR k.namespace = $namespace
RETURN k.id AS id, k.namespace AS namespace, k.text AS text, k.key_type AS key_type,
       k.created_at AS created_at, k.last_hit_at AS last_hit_at
ORDER BY k.namespace, k.id
