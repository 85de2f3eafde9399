MATCH (a:Alias) WHERE a.key_id IN $ids RETURN a.key_id AS key_id, a.id AS id, a.text AS text, a.learned AS learned, a.hits AS hits ORDER BY a.created_at, a.id
