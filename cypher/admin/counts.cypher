MATCH (k:Key) WITH count(k) AS keys
MATCH (m:Memory) WHERE m.active AND (m.expires_at IS NULL OR m.expires_at > $now) WITH keys, count(m) AS memories
MATCH ()-[l:LINKS]->() RETURN keys, memories, count(l) AS links
