MATCH (k:Key) RETURN k.id AS id, k.namespace AS namespace, k.text AS text, k.key_type AS key_type
