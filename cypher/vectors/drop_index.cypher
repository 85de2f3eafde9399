CALL DROP_VECTOR_INDEX('KeyVec', 'keyvec_hnsw')
