MATCH (p:PendingAlias) WHERE p.id IN $ids RETURN p.id AS id
