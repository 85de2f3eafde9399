MATCH (k:Key) WHERE k.id = $id SET k.last_hit_at = $now
