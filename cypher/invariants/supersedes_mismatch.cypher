// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// new.supersedes = old  =>  old.superseded_by = new.
MATCH (new:Memory) WHERE new.supersedes IS NOT NULL
MATCH (old:Memory) WHERE old.id = new.supersedes AND (old.superseded_by IS NULL OR old.superseded_by <> new.id)
RETURN new.id AS id, old.id AS target, old.superseded_by AS back
