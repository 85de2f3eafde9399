CREATE (:KeymemMigration {name: $name, applied_at: $at})
