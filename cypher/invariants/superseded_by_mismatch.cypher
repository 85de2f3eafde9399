// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// old.superseded_by = new  =>  new.supersedes = old.
MATCH (old:Memory) WHERE old.superseded_by IS NOT NULL
MATCH (new:Memory) WHERE new.id = old.superseded_by AND (new.supersedes IS NULL OR new.supersedes <> old.id)
RETURN old.id AS id, new.id AS target, new.supersedes AS back
