// FalkorDB: nothing to create (labels need no table). This step runs at every open, and FalkorDB's
// CREATE INDEX has no IF NOT EXISTS, so KeymemMigration (a handful of nodes) stays unindexed.
