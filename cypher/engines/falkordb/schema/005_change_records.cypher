// FalkorDB: ChangeHead and Change nodes need no table; the records are read and pruned by seq.
CREATE INDEX FOR (c:Change) ON (c.seq)
