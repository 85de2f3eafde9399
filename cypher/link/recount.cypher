// Re-derive every key's count of lasting links (schema step 003) where it differs: after console writes.
MATCH (k:Key)
OPTIONAL MATCH (k)-[l:LINKS]->(m:Memory) WHERE m.active AND m.expires_at IS NULL
WITH k, count(l) AS n
WHERE k.lasting_links IS NULL OR k.lasting_links <> n
SET k.lasting_links = n
RETURN count(k) AS n
