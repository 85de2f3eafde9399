// Every table of the database (a store move digests KeyVec only where it exists).
CALL show_tables() RETURN name
