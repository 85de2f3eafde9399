// keymem: heavy (a whole-table read: it runs alone, see Store._read)
MATCH (m:Memory) WITH count(m) AS all_memories, count(CASE WHEN NOT m.active THEN 1 END) AS superseded
OPTIONAL MATCH (a:Alias) WITH all_memories, superseded, count(a) AS aliases
OPTIONAL MATCH (p:PendingAlias) WITH all_memories, superseded, aliases, count(p) AS pending_aliases
OPTIONAL MATCH ()-[r:RELATED_TO]->() RETURN all_memories, superseded, aliases, pending_aliases, count(r) AS related
