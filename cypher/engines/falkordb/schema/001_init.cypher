// FalkorDB: labels and relationship types need no tables (properties are schemaless). Range indexes
// on the ids every lookup starts from. Unique constraints are not created yet: keymem's one writer
// per store keeps ids and names unique (KeyName, MemoryNorm) as on LadybugDB.
CREATE INDEX FOR (m:Meta) ON (m.name);
CREATE INDEX FOR (k:Key) ON (k.id);
CREATE INDEX FOR (a:Alias) ON (a.id, a.key_id);
CREATE INDEX FOR (m:Memory) ON (m.id);
CREATE INDEX FOR (p:PendingAlias) ON (p.id, p.key_id);
CREATE INDEX FOR (n:KeyName) ON (n.id, n.key_id);
CREATE INDEX FOR (n:MemoryNorm) ON (n.id, n.memory_id)
