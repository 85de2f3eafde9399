CREATE (:Key {id: $id, namespace: $namespace, text: $text, norm: $norm, key_type: $key_type, created_at: $now, last_hit_at: NULL,
       lasting_links: 0})
