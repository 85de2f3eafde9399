// FalkorDB: nothing to do. Memory.terms is a property like any other (null until written).
