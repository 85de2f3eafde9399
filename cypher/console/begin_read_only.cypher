// The console runs every statement inside a read-only transaction unless --write:
// Kuzu itself refuses CREATE/SET/DELETE/MERGE/DROP/ALTER/COPY FROM there.
BEGIN TRANSACTION READ ONLY
