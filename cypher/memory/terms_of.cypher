// The BM25 terms, state and content of some memories by id (another daemon's writes, on catch-up).
UNWIND $ids AS i
MATCH (m:Memory {id: i})
RETURN m.id AS id, m.namespace AS namespace, m.active AS active, m.terms AS terms, m.content AS content
