MATCH (old:Memory), (new:Memory) WHERE old.id = $old_id AND new.id = $new_id
SET old.active = false, old.superseded_by = $new_id, old.depth = old.depth * $factor, old.updated_at = $now
CREATE (new)-[:SUPERSEDES {at: $now}]->(old)
