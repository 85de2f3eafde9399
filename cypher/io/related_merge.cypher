MATCH (a:Memory), (b:Memory) WHERE a.id = $src AND b.id = $dst
MERGE (a)-[r:RELATED_TO]->(b) ON CREATE SET r.weight = $weight, r.created_at = $created_at
