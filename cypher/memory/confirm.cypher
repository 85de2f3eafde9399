MATCH (m:Memory) WHERE m.id = $id
SET m.depth = CASE WHEN m.depth + $step > 1.0 THEN 1.0 ELSE m.depth + $step END,
    m.last_confirmed_at = $now, m.confirmation_count = m.confirmation_count + 1,
    m.evidence = $evidence, m.updated_at = $now
