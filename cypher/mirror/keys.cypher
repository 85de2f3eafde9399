// Identity of some keys by primary key (refresh after a commit).
UNWIND $ids AS i
MATCH (k:Key {id: i})
RETURN k.id AS id, k.namespace AS namespace, k.text AS text, k.key_type AS key_type
