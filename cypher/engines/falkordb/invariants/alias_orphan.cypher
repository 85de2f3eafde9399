// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; an OPTIONAL MATCH on the alias's own ALIAS_OF edge instead.
// Alias rows point to an existing key through both key_id and ALIAS_OF.
MATCH (a:Alias) OPTIONAL MATCH (a)-[:ALIAS_OF]->(k:Key) WITH a, count(CASE WHEN k.id = a.key_id THEN 1 END) AS n
WHERE n = 0 RETURN a.id AS id, a.key_id AS target
