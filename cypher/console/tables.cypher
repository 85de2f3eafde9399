CALL show_tables() RETURN name, type ORDER BY name
