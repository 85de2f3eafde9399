CREATE (:PendingAlias {id: $id, key_id: $key_id, query: $query, count: $count, last_at: $last_at})
