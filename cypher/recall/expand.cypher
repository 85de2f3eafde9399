// keymem: no-prepare (Kuzu 0.11 cannot bind $hubs inside the recursive predicate ahead of its value)
// One memory hop from the frontier: through a shared key (Memory<-Key->Memory) or along
// RELATED_TO links, never through a hub key (their fan-out would swamp the expansion).
MATCH p = (s:Memory)-[r:LINKS|RELATED_TO* TRAIL 1..2 (e, n | WHERE NOT n.id IN $hubs)]-(m:Memory)
WHERE s.id IN $frontier AND m.id <> s.id AND m.namespace = $namespace AND m.active
  AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN s.id AS src, m.id AS dst, properties(rels(r), 'weight') AS weights, properties(nodes(r), 'id') AS via
