// FalkorDB: Request nodes (results of mutating calls by request id) need no table; their lookup index.
CREATE INDEX FOR (r:Request) ON (r.id)
