// A RELATED_TO edge never crosses namespaces.
MATCH (a:Memory)-[:RELATED_TO]->(b:Memory) WHERE a.namespace <> b.namespace RETURN a.id AS src, b.id AS dst
