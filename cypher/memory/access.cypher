MATCH (m:Memory) WHERE m.id = $id SET m.access_count = m.access_count + 1, m.last_access_at = $now
