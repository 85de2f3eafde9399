MATCH (k:Key)
WHERE k.id IN $ids
RETURN k
