// Both ends say they have a RELATED_TO edge (schema step 003: the walk asks for RELATED_TO only then).
MATCH (a:Memory), (b:Memory) WHERE a.id = $src AND b.id = $dst
MERGE (a)-[r:RELATED_TO]->(b) ON CREATE SET r.weight = $weight, r.created_at = $now
SET a.has_related = true, b.has_related = true
