CALL QUERY_VECTOR_INDEX('KeyVec', 'keyvec_hnsw', $vec, $k)
WITH node, distance
WHERE node.namespace = $namespace
RETURN node.id AS id, 1.0 - distance AS score
ORDER BY score DESC
