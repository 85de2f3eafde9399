// Each key's count of lasting links (links to active memories without a TTL) is exact.
MATCH (k:Key)
OPTIONAL MATCH (k)-[l:LINKS]->(m:Memory) WHERE m.active AND m.expires_at IS NULL
WITH k, count(l) AS n
WHERE k.lasting_links IS NULL OR k.lasting_links <> n
RETURN k.id AS id, k.lasting_links AS stored, n
