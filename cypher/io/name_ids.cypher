MATCH (n:KeyName) WHERE n.id IN $ids RETURN n.id AS id, n.key_id AS key_id
