// A superseded version is never active.
MATCH (m:Memory) WHERE m.superseded_by IS NOT NULL AND m.active RETURN m.id AS id, m.superseded_by AS target
