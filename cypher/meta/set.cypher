MERGE (m:Meta {name: $name}) SET m.value = $value
