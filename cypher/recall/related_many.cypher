// Explicit RELATED_TO neighbours of the expansion frontier (either direction), active only.
MATCH (s:Memory)-[r:RELATED_TO]-(m:Memory)
WHERE s.id IN $frontier AND m.id <> s.id AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN s.id AS src, m.id AS dst, r.weight AS weight
