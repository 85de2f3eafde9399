CREATE (:KeyName {id: $id, key_id: $key_id})
