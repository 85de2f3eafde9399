// Identity of some keys by primary key (refresh after a commit).
// An UNWIND of primary-key matches is planned as a scan (~10 ms at 100k rows, any count): for a
// handful of ids the one-id statements cost ~0.3-1.5 ms each, see mirror.SINGLE_LOOKUPS.
UNWIND $ids AS i
MATCH (k:Key {id: i})
RETURN k.id AS id, k.namespace AS namespace, k.text AS text, k.key_type AS key_type
