// Ranking metadata and links of some memories by primary key (refresh after a commit).
// An UNWIND of primary-key matches is planned as a scan (~10 ms at 100k rows, any count): for a
// handful of ids the one-id statements cost ~0.3-1.5 ms each, see mirror.SINGLE_LOOKUPS.
UNWIND $ids AS i
MATCH (m:Memory {id: i})
OPTIONAL MATCH (k:Key)-[l:LINKS]->(m)
RETURN m.id AS id, m.namespace AS namespace, m.active AS active, coalesce(m.expires_at, -1.0) AS expires,
       m.depth AS depth, m.last_confirmed_at AS confirmed, m.created_at AS created,
       m.decay_profile AS decay_profile, m.confirmation_count AS confirmations,
       collect(k.id) AS keys, collect(l.weight) AS weights
