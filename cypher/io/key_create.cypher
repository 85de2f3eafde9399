CREATE (:Key {id: $id, namespace: $namespace, text: $text, norm: $norm, key_type: $key_type,
              created_at: $created_at, last_hit_at: $last_hit_at, lasting_links: 0})
