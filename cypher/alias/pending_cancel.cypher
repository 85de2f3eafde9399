MATCH (p:PendingAlias) WHERE p.key_id = $key_id DELETE p
