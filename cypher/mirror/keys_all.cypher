// Every key's identity, as one row of parallel lists.
MATCH (k:Key)
RETURN collect(k.id) AS ids, collect(k.namespace) AS namespaces, collect(k.text) AS texts,
       collect(k.key_type) AS types
