MATCH (m:KeymemMigration) RETURN m.name AS name
