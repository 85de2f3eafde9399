// Identity of one key by primary key (refresh after a commit; a handful of ids).
MATCH (k:Key) WHERE k.id = $id
RETURN k.id AS id, k.namespace AS namespace, k.text AS text, k.key_type AS key_type
