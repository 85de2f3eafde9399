MATCH (new:Memory), (old:Memory) WHERE new.id = $new_id AND old.id = $old_id
MERGE (new)-[s:SUPERSEDES]->(old) ON CREATE SET s.at = $at
