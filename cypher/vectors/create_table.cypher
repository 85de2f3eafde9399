// Key vectors live in a 1:1 table beside Key: an indexed vector cannot be SET in Kuzu 0.11,
// and a change of embedding dimension drops and recreates this table only.
CREATE NODE TABLE IF NOT EXISTS KeyVec(id STRING PRIMARY KEY, namespace STRING, vec FLOAT[{{dim}}]);
