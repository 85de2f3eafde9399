// Primary-key lookups, one per id: the cost follows the ids asked for, not the store's size.
UNWIND $ids AS i
MATCH (m:Memory {id: i})
RETURN m
