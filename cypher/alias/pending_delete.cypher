MATCH (p:PendingAlias) WHERE p.id = $id DELETE p
