// Before a memory is deleted (memory/delete): its keys stop counting it among their lasting links.
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $id AND l.m_active AND l.m_expires_at IS NULL
SET k.lasting_links = k.lasting_links - 1
