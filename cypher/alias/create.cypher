CREATE (:Alias {id: $id, key_id: $key_id, namespace: $namespace, text: $text, norm: $norm, learned: $learned, hits: 0, created_at: $now, last_hit_at: NULL})
