// Every index (a store move drops the HNSW key index before exporting).
CALL SHOW_INDEXES() RETURN *
