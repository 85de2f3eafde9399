CALL show_functions() RETURN DISTINCT name ORDER BY name
