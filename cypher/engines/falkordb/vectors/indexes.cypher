// FalkorDB: keymem builds no vector index on this engine (Capabilities.vector_index), so none is listed.
UNWIND [] AS none RETURN none AS table_name, none AS index_name
