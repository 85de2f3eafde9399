// FalkorDB: every KeyVec node (a change of embedding dimension re-embeds into new ones).
MATCH (v:KeyVec) DELETE v
