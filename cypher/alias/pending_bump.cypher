MERGE (p:PendingAlias {id: $id}) ON CREATE SET p.key_id = $key_id, p.query = $query, p.count = 1, p.last_at = $now ON MATCH SET p.count = p.count + 1, p.last_at = $now RETURN p.count AS count
