// Ranking metadata and links of some memories by primary key (refresh after a commit).
UNWIND $ids AS i
MATCH (m:Memory {id: i})
OPTIONAL MATCH (k:Key)-[l:LINKS]->(m)
RETURN m.id AS id, m.namespace AS namespace, m.active AS active, coalesce(m.expires_at, -1.0) AS expires,
       m.depth AS depth, m.last_confirmed_at AS confirmed, m.created_at AS created,
       m.decay_profile AS decay_profile, m.confirmation_count AS confirmations,
       collect(k.id) AS keys, collect(l.weight) AS weights
