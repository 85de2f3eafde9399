CALL show_connection('{{table}}') RETURN *
