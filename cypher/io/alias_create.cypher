CREATE (:Alias {id: $id, key_id: $key_id, namespace: $namespace, text: $text, norm: $norm, learned: $learned,
                hits: $hits, created_at: $created_at, last_hit_at: $last_hit_at})
