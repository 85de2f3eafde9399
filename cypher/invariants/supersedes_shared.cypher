// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Two versions never supersede the same memory.
MATCH (m:Memory) WHERE m.supersedes IS NOT NULL WITH m.supersedes AS target, count(*) AS n WHERE n > 1
RETURN target, n
