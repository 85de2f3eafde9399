// FalkorDB: no show_tables(); the labels and relationship types on the graph (sorted by the caller:
// FalkorDB cannot order a UNION). Labels are schemaless, so there is no table_info() to follow.
CALL db.labels() YIELD label RETURN label AS name, 'NODE' AS type
UNION CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType AS name, 'REL' AS type
