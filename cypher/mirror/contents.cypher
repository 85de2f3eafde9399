// Content of some memories by primary key: only what is shown is read from the store.
UNWIND $ids AS i
MATCH (m:Memory {id: i})
RETURN m.id AS id, m.content AS content
