// Bookkeeping for ordered, named migration steps (applied before every other step).
CREATE NODE TABLE IF NOT EXISTS KeymemMigration(name STRING PRIMARY KEY, applied_at DOUBLE);
