CALL CREATE_VECTOR_INDEX('KeyVec', 'keyvec_hnsw', 'vec', metric := 'cosine')
