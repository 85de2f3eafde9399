MATCH (p:PendingAlias) WHERE p.id = $id RETURN p.count AS count
