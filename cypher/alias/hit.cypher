MATCH (a:Alias) WHERE a.key_id = $key_id AND a.norm = $norm SET a.hits = a.hits + 1, a.last_hit_at = $now
