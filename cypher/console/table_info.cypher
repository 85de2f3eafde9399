// {{table}} is filled with a table name that show_tables() returned (checked as an identifier).
CALL table_info('{{table}}') RETURN *
