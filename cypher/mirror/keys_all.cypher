// One page of keys (ids after $after, in id order), as one row of parallel lists.
MATCH (k:Key) WHERE k.id > $after
WITH k ORDER BY k.id LIMIT $limit
RETURN collect(k.id) AS ids, collect(k.namespace) AS namespaces, collect(k.text) AS texts,
       collect(k.key_type) AS types
