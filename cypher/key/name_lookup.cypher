// The key a normalised name (or alias, or literal form) belongs to, by KeyName primary key.
MATCH (n:KeyName) WHERE n.id = $id RETURN n.key_id AS key_id
