// FalkorDB: KeyVec nodes need no table; vectors are vecf32 values of {{dim}} floats (vectors/insert).
CREATE INDEX FOR (v:KeyVec) ON (v.id)
